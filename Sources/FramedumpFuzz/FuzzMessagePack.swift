import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh msgpack`): the bytes as one MessagePack body of a frame, the
/// first byte picking the message (1: no declared fields; 3: an object written as an array,
/// with a nested message and an array of them), through the tree (with hex dump) and NDJSON
/// printers and a `-Y` filter that walks keys, elements and a timestamp. Every NDJSON line must
/// be strict JSON.
public enum FuzzMessagePack {
    static let dissector = """
        protocol mp { port 7600; header { uint16 cmd; uint32 length; } body_length = length; message_id = cmd;
                      max_frame 1048576; body msgpack; }
        Message Any = 1 { }
        Message Move = 3 { Int32 x; Int32 y; Float speed; Pos at; Pos[rest] path; }
        Message Pos { Int32 x; Int32 y; }
        """
    nonisolated(unsafe) static let schemas = try! DissectorLoader.parse(text: dissector, file: "mp.dissector")
    nonisolated(unsafe) static let filter = try! FilterParser.parse(
        "mp.device.os == \"ios\" || mp.at.x > 3 || mp.body contains \"a\" || mp.t == \"2025-11-27T17:25:36.000000000Z\"", protocols: schemas)

    public static func run(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let body = Array(data.dropFirst())
        let n = body.count
        let frame: [UInt8] = [0, first & 2 == 0 ? 1 : 3, UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + body
        for json in [false, true] {
            let out = OutputBuffer(fd: nil)
            let inner: MessageSink = json ? JSONPrinter(output: out, diffable: first & 1 == 1)
                : TreePrinter(output: out, hexDump: true, verbose: true, color: false)
            let sink: MessageSink = first & 4 == 0 ? inner : FilteringSink(inner, filter: filter)
            let sessions = SessionManager(protocols: schemas, sink: sink)
            FuzzStreams.feed(sessions, c2s: frame, s2c: [], piece: 1 << 20, syn: true, port: 7600)
            if json { FuzzDeframer.checkNDJSON(out.bytes) }
        }
    }
}
