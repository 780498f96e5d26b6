import Crypto
import Foundation

/// The server's side of the page's one WebSocket (RFC 6455): the handshake's answer, text
/// frames out, and the client's frames read only as far as the server needs them (a close, a
/// ping). Client frames are small: one longer than `maxFrame` ends the connection.
enum LiveSocket {
    static let maxFrame = 4096

    /// `Sec-WebSocket-Accept` for a request's `Sec-WebSocket-Key`.
    static func accept(key: String) -> String {
        let digest = Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        return Data(digest).base64EncodedString()
    }

    /// Whether a GET asks for a WebSocket this server speaks (version 13, with a key).
    static func isUpgrade(_ h: HTTPHead) -> Bool {
        h.fields["upgrade"]?.lowercased() == "websocket"
            && h.fields["connection"]?.lowercased().split(separator: ",").contains { $0.trimmingSpaces == "upgrade" } == true
            && h.fields["sec-websocket-version"] == "13" && h.fields["sec-websocket-key"] != nil
    }

    /// A frame from the server: FIN, the opcode, the payload unmasked.
    static func frame(_ opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            out.append(UInt8(payload.count))
        } else if payload.count <= 0xffff {
            out += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        } else {
            out.append(127)
            for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: UInt64(payload.count) >> (8 * UInt64(i)))) }
        }
        return out + payload
    }

    /// A client's frame at the start of `bytes`: its opcode, payload (unmasked) and length;
    /// nil while incomplete; throws for a frame the server refuses (unmasked, too long).
    static func clientFrame(_ bytes: [UInt8]) throws(HTTPHead.Problem) -> (opcode: UInt8, payload: [UInt8], length: Int)? {
        guard bytes.count >= 2 else { return nil }
        guard bytes[1] & 0x80 != 0 else { throw .malformed("a client frame without a mask") }
        var length = Int(bytes[1] & 0x7f)
        var at = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            at = 4
        } else if length == 127 {
            throw .tooLarge
        }
        guard length <= maxFrame else { throw .tooLarge }
        guard bytes.count >= at + 4 + length else { return nil }
        let mask = Array(bytes[at..<(at + 4)])
        at += 4
        var payload = Array(bytes[at..<(at + length)])
        for i in payload.indices { payload[i] ^= mask[i & 3] }
        return (bytes[0] & 0x0f, payload, at + length)
    }
}
