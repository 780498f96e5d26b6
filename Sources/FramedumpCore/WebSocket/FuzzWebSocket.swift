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
        feed(sessions, c2s: c2s, s2c: s2c, piece: piece, syn: syn, port: 80)
    }

    /// One connection's two streams, cut into segments of `piece` bytes, into a session stage.
    static func feed(_ sessions: SessionManager, c2s: [UInt8], s2c: [UInt8], piece: Int, syn: Bool, port: UInt16) {
        var options = ReassemblyOptions()
        options.maxConnections = 4
        let r = Reassembler(options: options, consumer: sessions, isServerPort: { $0 == port })
        let client = Endpoint(IPAddress(v4: 0x0A00_0001), 40000), server = Endpoint(IPAddress(v4: 0x0A00_0002), port)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        func seg(_ up: Bool, _ seq: UInt32, _ flags: TCPFlags, _ b: UnsafeRawBufferPointer) -> TCPSegment {
            TCPSegment(src: up ? client : server, dst: up ? server : client, seq: seq, ack: 0, flags: flags,
                       window: 65535, payload: b, payloadLength: b.count)
        }
        if syn {
            r.add(seg(true, 99, .syn, none), packet: p)
            r.add(seg(false, 499, [.syn, .ack], none), packet: p)
        }
        var i = 0, j = 0
        while i < c2s.count || j < s2c.count {
            if i < c2s.count {
                let n = min(piece, c2s.count - i)
                c2s[i..<(i + n)].withUnsafeBytes { r.add(seg(true, 100 &+ UInt32(truncatingIfNeeded: i), [.psh, .ack], $0), packet: p) }
                i += n
            }
            if j < s2c.count {
                let n = min(piece, s2c.count - j)
                s2c[j..<(j + n)].withUnsafeBytes { r.add(seg(false, 500 &+ UInt32(truncatingIfNeeded: j), [.psh, .ack], $0), packet: p) }
                j += n
            }
        }
        r.finish()
        sessions.sink?.finish()
    }
}
