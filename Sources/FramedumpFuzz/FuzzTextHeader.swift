import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh text-header`): the bytes cut at each NUL into WebSocket
/// messages of protocols with a text header (`header text { decimal(...) ... }`, port 7710, no
/// handshake), each message's first byte saying its side (bit 0), whether it is binary (bit 1)
/// and which protocol reads it (bits 2-3: digits up to "|", a fixed number of digits, up to
/// CR LF, a binary header beside the text one); the rest is its payload. Through the tree and
/// NDJSON printers (pairing on) and a `-Y` filter on the header's fields. Every NDJSON line
/// must be strict JSON.
public enum FuzzTextHeader {
    static let dissectors = [
        """
        protocol t { websocket; port 7710; header text { decimal("|") cmd; decimal("|") seq; } message_id = cmd; text json; pair_by seq; }
        Message A = 1 c2s { } Message B = 2 s2c { } Message C = -3 { }
        """,
        """
        protocol t { websocket; port 7710; header text { decimal(1) kind == 4; decimal(2) sub; } message_id = sub; text text; }
        Message A = 12 { }
        """,
        """
        protocol t { websocket; port 7710; header text { decimal(crlf) n; decimal("::") m; } message_id = n; text raw; }
        Message A = 0 { }
        """,
        """
        protocol t { websocket; port 7710; header { uint8 cmd; varint len; } header text { decimal(" ") cmd; } message_id = cmd; text json; body text; }
        Message A = 7 { }
        """,
    ]
    nonisolated(unsafe) static let schemas = dissectors.enumerated().map { i, d in try! DissectorLoader.parse(text: d, file: "t\(i).dissector") }
    /// Each dissector's filter names only its own fields (`-Y` refuses a field a protocol lacks).
    static let filterTexts = ["t.cmd == 1 || t.seq < 0 || msg.id == 12", "t.kind == 4 || t.sub > 5 || msg.id == 12",
                              "t.n > 5 || t.m < 0 || msg.id == 0", "t.cmd == 7 || msg.id == 7"]
    nonisolated(unsafe) static let filters = zip(schemas, filterTexts).map { try! FilterParser.parse($1, protocols: $0) }

    public static func run(_ data: UnsafeRawBufferPointer) {
        guard let head = data.first else { return }
        let which = Int(head >> 2 & 3)
        var runs: [(client: Bool, bytes: [UInt8])] = []
        for piece in Array(data.dropFirst()).split(separator: 0, omittingEmptySubsequences: false).prefix(64) {
            guard let first = piece.first else { continue }
            let client = first & 1 == 0
            runs.append((client, FuzzSocketIO.frame(piece.dropFirst().prefix(65535), client: client, binary: first & 2 != 0)))
        }
        guard !runs.isEmpty else { return }
        for json in [false, true] {
            let out = OutputBuffer(fd: nil)
            let inner: MessageSink = json ? JSONPrinter(output: out, diffable: runs.count & 1 == 1)
                : TreePrinter(output: out, hexDump: true, verbose: true, color: false)
            let sink: MessageSink = head & 1 == 0 ? inner : FilteringSink(inner, filter: filters[which])
            let sessions = SessionManager(protocols: schemas[which], sink: sink)
            FuzzStreams.feed(sessions, runs: runs, piece: 1 << 20, port: 7710)
            if json { FuzzDeframer.checkNDJSON(out.bytes) }
        }
    }
}
