import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh socketio`): the bytes cut at each NUL into WebSocket messages
/// of a `text socketio` protocol (port 7700, no handshake), each message's first byte saying
/// its side (bit 0) and whether it is binary (bit 1, an attachment's place), the rest its
/// payload; through the tree and NDJSON printers (pairing on) and a `-Y` filter on an event's
/// name and arguments. Every NDJSON line must be strict JSON.
public enum FuzzSocketIO {
    static let dissector = """
        protocol socketio { websocket "/socket.io/"; port 7700; text socketio; }
        """
    nonisolated(unsafe) static let schemas = try! DissectorLoader.parse(text: dissector, file: "socketio.dissector")
    nonisolated(unsafe) static let filter = try! FilterParser.parse(
        "socketio.event == \"chat\" || socketio.args.name contains \"a\" || socketio.ack > 3 || msg.name == \"attachment\"", protocols: schemas)

    /// A WebSocket frame: FIN, the opcode, and a client's frames masked (with a zero key: the
    /// payload as it is).
    package static func frame(_ payload: ArraySlice<UInt8>, client: Bool, binary: Bool) -> [UInt8] {
        var f: [UInt8] = [binary ? 0x82 : 0x81]
        let mask: UInt8 = client ? 0x80 : 0
        if payload.count < 126 {
            f.append(mask | UInt8(payload.count))
        } else {
            f += [mask | 126, UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff)]
        }
        if client { f += [0, 0, 0, 0] }
        return f + payload
    }

    public static func run(_ data: UnsafeRawBufferPointer) {
        var runs: [(client: Bool, bytes: [UInt8])] = []
        for piece in Array(data).split(separator: 0, omittingEmptySubsequences: false).prefix(64) {
            guard let first = piece.first else { continue }
            let client = first & 1 == 0
            runs.append((client, frame(piece.dropFirst().prefix(65535), client: client, binary: first & 2 != 0)))
        }
        guard !runs.isEmpty else { return }
        for json in [false, true] {
            let out = OutputBuffer(fd: nil)
            let inner: MessageSink = json ? JSONPrinter(output: out, diffable: runs.count & 1 == 1)
                : TreePrinter(output: out, hexDump: true, verbose: true, color: false)
            let sink: MessageSink = runs.count & 2 == 0 ? inner : FilteringSink(inner, filter: filter)
            let sessions = SessionManager(protocols: schemas, sink: sink)
            FuzzStreams.feed(sessions, runs: runs, piece: 1 << 20, port: 7700)
            if json { FuzzDeframer.checkNDJSON(out.bytes) }
        }
    }
}
