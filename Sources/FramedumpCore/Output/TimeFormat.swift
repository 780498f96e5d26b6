#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How the tree's lines show their time, as tcpdump's `-t` flags do: none (`-t`), seconds since
/// the epoch (`-tt`, framedump's default), the time since the line before (`-ttt`), the date and
/// local time (`-tttt`), the time since the first line (`-ttttt`). NDJSON's `ts` is always the
/// epoch's.
public enum TimeFormat: Sendable, Equatable {
    case none, epoch, delta, date, sinceFirst

    /// From the number of `-t` flags given (none: framedump's default, the epoch).
    public init(tFlags: Int) {
        switch tFlags {
        case 0, 2: self = .epoch
        case 1: self = .none
        case 3: self = .delta
        case 4: self = .date
        default: self = .sinceFirst
        }
    }

    /// The time depends on lines before it: the printer must see every line, in order (one
    /// thread, not connection shards).
    public var needsEveryLine: Bool { self == .delta || self == .sinceFirst }
}

/// The time text of a tree line in a format other than the epoch's, and what it needs to
/// remember (the line before, the first line).
struct TimeText {
    let format: TimeFormat
    var previous: Timestamp?
    var first: Timestamp?

    init(_ format: TimeFormat) { self.format = format }

    /// The time and a space (nothing for `.none`).
    mutating func write(_ ts: Timestamp, to out: OutputBuffer) {
        switch format {
        case .none: return
        case .epoch: out.timestamp(ts)
        case .delta:
            duration(from: previous ?? ts, to: ts, out)
            previous = ts
        case .sinceFirst:
            if first == nil { first = ts }
            duration(from: first!, to: ts, out)
        case .date: date(ts, out)
        }
        out.byte(0x20)
    }

    /// ` HH:MM:SS.uuuuuu` as tcpdump's `-ttt` and `-ttttt` write it: a sign column first (`-`
    /// when the clock went back, else a space).
    private func duration(from a: Timestamp, to b: Timestamp, _ out: OutputBuffer) {
        var micros = (b.seconds &- a.seconds) &* 1_000_000 &+ (Int64(b.nanos) - Int64(a.nanos)) / 1000
        out.byte(micros < 0 ? 0x2d : 0x20)
        if micros < 0 { micros = 0 &- micros }
        let s = micros / 1_000_000
        out.padded(UInt64(s / 3600), width: 2); out.byte(0x3a)
        out.padded(UInt64(s / 60 % 60), width: 2); out.byte(0x3a)
        out.padded(UInt64(s % 60), width: 2); out.byte(0x2e)
        out.padded(UInt64(micros % 1_000_000), width: 6)
    }

    /// `YYYY-MM-DD HH:MM:SS.uuuuuu` in local time (tcpdump's `-tttt`).
    private func date(_ ts: Timestamp, _ out: OutputBuffer) {
        var t = time_t(truncatingIfNeeded: ts.seconds)
        var parts = tm()
        guard localtime_r(&t, &parts) != nil else { out.timestamp(ts); return }
        out.decimal(Int64(parts.tm_year) + 1900); out.byte(0x2d)
        out.padded(UInt64(parts.tm_mon + 1), width: 2); out.byte(0x2d)
        out.padded(UInt64(parts.tm_mday), width: 2); out.byte(0x20)
        out.padded(UInt64(parts.tm_hour), width: 2); out.byte(0x3a)
        out.padded(UInt64(parts.tm_min), width: 2); out.byte(0x3a)
        out.padded(UInt64(parts.tm_sec), width: 2); out.byte(0x2e)
        out.padded(UInt64(ts.nanos / 1000), width: 6)
    }
}
