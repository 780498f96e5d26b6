import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh deframer`): one connection's traffic for a shipped dissector
/// through the deframer, the decoder and every printer: the tree (plain, and with hex dump,
/// verbose and colour), NDJSON (plain and `--diffable`), each behind the `-z` statistics.
/// Every NDJSON line must be one strict JSON object (`StrictJSON`).
///
/// Input: `[protocol][piece][flags][u16 BE client length][client bytes][server bytes]`. The
/// first byte picks a shipped protocol by port (modulo their number), the second how finely
/// the streams are cut into segments, flags bit 0 starts mid-stream (no SYN).
public enum FuzzDeframer {
    /// Where the shipped dissector files are (`scripts/fuzz.sh` runs from the package root;
    /// the tests point it at theirs).
    nonisolated(unsafe) public static var dissectorDirectory = "Dissectors"

    nonisolated(unsafe) static var loaded: [ProtocolSchema]?

    static var shipped: [ProtocolSchema] {
        if let loaded { return loaded }
        let schemas = (try? DissectorLoader.load(paths: [dissectorDirectory])) ?? []
        precondition(!schemas.isEmpty, "no dissector files in \(dissectorDirectory)")
        loaded = schemas
        return schemas
    }

    static let statistics: [StatisticsKind] = [.msgs, .conv, .rate(nanos: 1_000_000_000), .rate(nanos: 20_000_000), .rtt]

    public static func run(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 5 else { return }
        let protocols = shipped
        let ports = protocols.flatMap(\.ports).sorted()
        guard !ports.isEmpty else { return }
        let port = ports[Int(data[0]) % ports.count]
        let piece = max(1, Int(data[1]))
        let syn = data[2] & 1 == 0
        let rest = Array(UnsafeRawBufferPointer(rebasing: data[5...]))
        let split = min(rest.count, Int(data[3]) << 8 | Int(data[4]))
        let c2s = Array(rest[..<split]), s2c = Array(rest[split...])
        for printer in 0..<4 {
            let out = OutputBuffer(fd: nil)
            let json = printer >= 2
            let inner: MessageSink = json ? JSONPrinter(output: out, diffable: printer == 3)
                : TreePrinter(output: out, hexDump: printer == 1, verbose: printer == 1, color: printer == 1)
            let sink = StatisticsSink(inner: inner, kinds: statistics, output: out, json: json)
            let sessions = SessionManager(protocols: protocols, sink: sink)
            sessions.maxWebSocketMessage = 1 << 16
            FuzzStreams.feed(sessions, c2s: c2s, s2c: s2c, piece: piece, syn: syn, port: port)
            if json { checkNDJSON(out.bytes) }
        }
    }

    /// Traps (for the fuzzer to keep the input) unless every line is one strict JSON object.
    static func checkNDJSON(_ text: [UInt8]) {
        guard let (line, at) = StrictJSON.ndjsonProblem(text) else { return }
        let lines = text.split(separator: 0x0A, omittingEmptySubsequences: false)
        let shown = line - 1 < lines.count ? String(decoding: lines[line - 1].prefix(400), as: UTF8.self) : ""
        preconditionFailure("NDJSON line \(line) is not strict JSON at byte \(at): \(shown)")
    }
}
