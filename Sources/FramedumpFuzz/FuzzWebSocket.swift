import FramedumpCore
/// Fuzz entries for the WebSocket layer (`scripts/fuzz.sh websocket` and `http-head`): each
/// takes arbitrary bytes and must return, whatever they are, without a trap or a hang.
public enum FuzzWebSocket {
    /// The bytes as a WebSocket connection. The first byte chooses: bit 0 negotiates
    /// permessage-deflate, bit 1 starts mid-stream (no handshake), bit 2 keeps no context;
    /// the second byte where the rest is cut between the client's and the server's stream;
    /// the third how finely each stream is cut into segments.
    public static func connection(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 3 else { return }
        let flags = data[0]
        let rest = Array(UnsafeRawBufferPointer(rebasing: data[3...]))
        let split = rest.isEmpty ? 0 : Int(data[1]) % (rest.count + 1)
        let piece = max(1, Int(data[2]))
        var c2s: [UInt8] = [], s2c: [UInt8] = []
        let midStream = flags & 2 != 0
        if !midStream {
            c2s = Array("GET /fuzz HTTP/1.1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".utf8)
            var resp = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
            if flags & 1 != 0 {
                resp += "Sec-WebSocket-Extensions: permessage-deflate" + (flags & 4 != 0 ? "; client_no_context_takeover" : "") + "\r\n"
            }
            s2c = Array((resp + "\r\n").utf8)
        }
        c2s += rest[0..<split]
        s2c += rest[split...]
        run(c2s: c2s, s2c: s2c, piece: piece, syn: !midStream)
    }

    /// The bytes as the head of an HTTP request, then of a response.
    public static func httpHead(_ data: UnsafeRawBufferPointer) {
        _ = HTTPHandshake.parse(data, request: true)
        if case .complete(let h) = HTTPHandshake.parse(data, request: false) {
            _ = DeflateParameters(extensions: h.list("Sec-WebSocket-Extensions"))
            _ = h.isWebSocketUpgrade
        }
        _ = WebSocketFrameHeader.parse(data, at: 0)
    }

    /// Both streams through the reassembler, the session stage and the tree printer.
    static func run(c2s: [UInt8], s2c: [UInt8], piece: Int, syn: Bool) {
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: [], sink: TreePrinter(output: out, hexDump: true, verbose: false, color: false))
        sessions.maxWebSocketMessage = 1 << 16
        FuzzStreams.feed(sessions, c2s: c2s, s2c: s2c, piece: piece, syn: syn, port: 80)
    }
}
