import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh grpc`): HTTP/2 and gRPC of a `grpc;` protocol (port 50051,
/// no .proto: messages decoded without a schema). The bytes are records, each a 2-byte header
/// (the top bit: the server's side; the rest: its length) and that many bytes of its side's
/// stream, the client's starting with the HTTP/2 preface; fed in order (at most 64 records),
/// through the tree and NDJSON printers (pairing on) and a `-Y` filter on the layer's fields.
/// Every NDJSON line must be strict JSON.
public enum FuzzGRPC {
    static let dissector = """
        protocol g { port 50051; grpc; body protobuf; }
        """
    nonisolated(unsafe) static let schemas = try! DissectorLoader.parse(text: dissector, file: "g.dissector")
    nonisolated(unsafe) static let filter = try! FilterParser.parse(
        "grpc.method contains \"Send\" || grpc.stream > 3 || grpc.compressed", protocols: schemas)

    public static func run(_ data: UnsafeRawBufferPointer) {
        var runs: [(client: Bool, bytes: [UInt8])] = []
        var i = 0
        while i + 2 <= data.count && runs.count < 64 {
            let h = Int(data[i]) << 8 | Int(data[i + 1])
            let n = min(h & 0x7fff, data.count - i - 2)
            runs.append((h & 0x8000 == 0, Array(data[(i + 2)..<(i + 2 + n)])))
            i += 2 + n
        }
        guard !runs.isEmpty else { return }
        for json in [false, true] {
            let out = OutputBuffer(fd: nil)
            let inner: MessageSink = json ? JSONPrinter(output: out, diffable: runs.count & 1 == 1)
                : TreePrinter(output: out, hexDump: true, verbose: true, color: false)
            let sink: MessageSink = runs.count & 2 == 0 ? inner : FilteringSink(inner, filter: filter)
            let sessions = SessionManager(protocols: schemas, sink: sink)
            FuzzStreams.feed(sessions, runs: runs, piece: runs.count & 4 == 0 ? 1 << 20 : 7, port: 50051)
            if json { FuzzDeframer.checkNDJSON(out.bytes) }
        }
    }
}
