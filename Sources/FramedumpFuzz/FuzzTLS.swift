import FramedumpCore
/// The fuzz entry of the TLS layer (`scripts/fuzz.sh tls`): arbitrary bytes as both
/// directions of a TCP connection to a dissector's port whose first client bytes are a real
/// ClientHello, decrypted with a key log that has secrets for it, through the record layer,
/// the handshake parser and the svc deframer. Also the key log's line reader.
package enum FuzzTLS {
    package static let dissector = """
        protocol svc { port 7000; tls; header { uint32 serviceId; uint32 bodyLength; } body_length = bodyLength; message_id = serviceId; max_frame 65536; body raw; }
        """

    /// The first byte: where the rest is cut between the client's stream (after the fixed
    /// ClientHello) and the server's; the second: how finely each is cut into segments. The
    /// first 80 bytes are also read as a line of key log.
    package static func run(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 2, let schemas = try? DissectorLoader.parse(text: dissector, file: "fuzz.dissector") else { return }
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: TreePrinter(output: out, hexDump: true, verbose: false, color: false))
        let r = String(repeating: "11", count: 32)
        let log = TLSKeyLog(lines: [
            "CLIENT_RANDOM \(r) " + String(repeating: "22", count: 48),
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET \(r) " + String(repeating: "33", count: 32),
            "SERVER_HANDSHAKE_TRAFFIC_SECRET \(r) " + String(repeating: "44", count: 32),
            "CLIENT_TRAFFIC_SECRET_0 \(r) " + String(repeating: "55", count: 32),
            "SERVER_TRAFFIC_SECRET_0 \(r) " + String(repeating: "66", count: 32),
        ])
        log.add(Array(data.prefix(80)))
        sessions.useTLSKeyLog(log)
        let rest = Array(UnsafeRawBufferPointer(rebasing: data[2...]))
        let split = rest.isEmpty ? 0 : Int(data[0]) * rest.count / 255
        FuzzStreams.feed(sessions, c2s: clientHello + rest[0..<split], s2c: Array(rest[split...]),
                         piece: max(1, Int(data[1]) * 64), syn: true, port: 7000)
    }

    /// A ClientHello with the random 0x11... (SNI fuzz.example, ALPN svc/1, TLS 1.3 and 1.2).
    package static let clientHello: [UInt8] = {
        let sni = Array("fuzz.example".utf8), alpn = Array("svc/1".utf8)
        var ext: [UInt8] = []
        ext += [0, 0] + be16(sni.count + 5) + be16(sni.count + 3) + [0] + be16(sni.count) + sni
        ext += [0, 16] + be16(alpn.count + 3) + be16(alpn.count + 1) + [UInt8(alpn.count)] + alpn
        ext += [0, 43, 0, 5, 4, 3, 4, 3, 3]
        var body: [UInt8] = [3, 3] + [UInt8](repeating: 0x11, count: 32) + [0] + [0, 4, 0x13, 0x01, 0xC0, 0x2F] + [1, 0]
        body += be16(ext.count) + ext
        let hs: [UInt8] = [1, 0] + be16(body.count) + body
        return [22, 3, 1] + be16(hs.count) + hs
    }()

    package static func be16(_ n: Int) -> [UInt8] { [UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] }
}
