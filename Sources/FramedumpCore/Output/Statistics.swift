/// `-z` statistics, printed at the end of a run (after `-Y`: they count what the filter
/// selected): plain tables, or one JSON object per table with `-T json`.
public enum StatisticsKind: Sendable, Equatable {
    /// Messages and bytes per protocol, message and direction.
    case msgs
    /// Per connection: duration, messages and bytes each way, gaps, malformed reports.
    case conv
    /// Messages per interval of packet time (1 ms to a day).
    case rate(nanos: Int64)
    /// Request/response latency, where a dissector says how responses pair with requests.
    case rtt
    /// A layer's own table (`kcp`: per conversation, retransmissions and round trips).
    case layer(String)

    /// `msgs`, `conv`, `rate` or `rate,SECONDS` (a decimal: `rate,0.02` for 20 ms game ticks).
    public init?(argument: String) {
        let parts = argument.split(separator: ",", maxSplits: 1).map(String.init)
        switch parts[0] {
        case "msgs": self = .msgs
        case "conv": self = .conv
        case "rtt": self = .rtt
        case let name where LayerRegistry.kind(named: name)?.hasStatistics == true: self = .layer(name)
        case "rate":
            guard let n = parts.count > 1 ? Self.nanos(parts[1]) : 1_000_000_000,
                  n >= 1_000_000, n <= 86_400_000_000_000 else { return nil }
            self = .rate(nanos: n)
        default: return nil
        }
    }

    /// A decimal number of seconds as nanoseconds, exactly (`0.02` → 20,000,000); nil if it
    /// is not one or has more than nine decimals.
    static func nanos(_ s: String) -> Int64? {
        let parts = s.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts[0].isEmpty && parts.count > 1 ? 0 : Int64(parts[0]), whole >= 0, whole < 1 << 32 else { return nil }
        var frac: Int64 = 0
        if parts.count > 1 {
            let f = parts[1]
            guard !f.isEmpty, f.count <= 9, f.allSatisfy({ $0.isASCII && $0.isNumber }), let v = Int64(f) else { return nil }
            frac = v
            for _ in f.count..<9 { frac *= 10 }
        }
        return whole * 1_000_000_000 + frac
    }

    /// An interval as the tables show it: `1`, `0.02`.
    static func secondsText(_ nanos: Int64) -> String {
        let whole = nanos / 1_000_000_000, frac = nanos % 1_000_000_000
        guard frac != 0 else { return "\(whole)" }
        var f = String(frac)
        f = String(repeating: "0", count: 9 - f.count) + f
        while f.last == "0" { f.removeLast() }
        return "\(whole).\(f)"
    }
}
