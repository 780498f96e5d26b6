import Crypto
import _CryptoExtras
import FramedumpCore

/// The fuzz entry past authentication (`scripts/fuzz.sh tls-sealed`): mutation cannot forge a
/// MAC, so `tls` stops at the first protected record. Here the fuzzer's bytes are the
/// plaintext of records this harness seals with the connection's keys (AES-128-CBC with
/// HMAC-SHA1, TLS_RSA_WITH_AES_128_CBC_SHA), so the record layer opens them and what is inside
/// reaches the layers above: DEFLATE streams (RFC 3749), encrypted handshake messages and
/// alerts, TLS 1.0's chained IVs, SSL 3.0's MAC, the svc deframer.
///
/// Byte 0: the version (SSL 3.0 to TLS 1.2, by its low two bits), DEFLATE (bit 2),
/// encrypt-then-MAC (bit 3, not with SSL 3.0), and how finely the streams are cut (the high
/// nibble). Then records, each a direction (bit 0 of a byte: the server's), a content type
/// (20 to 24, by the same byte's next three bits), a length (one byte) and that many bytes.
package enum FuzzTLSSealed {
    package static func run(_ data: UnsafeRawBufferPointer) { _ = output(data) }

    /// What the run printed (the tree, with hex), for the tests that check the harness reaches
    /// past the records' authentication.
    package static func output(_ data: UnsafeRawBufferPointer) -> String {
        guard data.count >= 1, let schemas = try? DissectorLoader.parse(text: FuzzTLS.dissector, file: "fuzz.dissector") else { return "" }
        let version = 0x0300 + UInt16(data[0] & 3), deflate = data[0] & 4 != 0
        let etm = data[0] & 8 != 0 && version > 0x0300
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: TreePrinter(output: out, hexDump: true, verbose: false, color: false))
        let master = [UInt8](repeating: 0x22, count: 48), serverRandom = [UInt8](repeating: 0x77, count: 32)
        sessions.useTLSKeyLog(TLSKeyLog(lines: ["CLIENT_RANDOM " + String(repeating: "11", count: 32) + " " + String(repeating: "22", count: 48)]))
        guard let suite = TLSSuite.all[0x002F] else { return "" }
        let block = TLSKeySchedule.keyBlock(suite, version: version, master: master, serverRandom: serverRandom,
                                            clientRandom: [UInt8](repeating: 0x11, count: 32))
        var sealers = [Sealer(block: block, client: true, version: version, etm: etm),
                       Sealer(block: block, client: false, version: version, etm: etm)]
        let v = [UInt8(version >> 8), UInt8(version & 0xff)]
        // The server's hello: its version, random, the suite, compression, encrypt-then-MAC.
        var hello: [UInt8] = v + serverRandom + [0, 0x00, 0x2F, deflate ? 1 : 0]
        if etm { hello += [0, 4, 0, 22, 0, 0] }
        let hs: [UInt8] = [2, 0] + FuzzTLS.be16(hello.count) + hello
        // The peers in turn: the client's hello, the server's and its ChangeCipherSpec, the
        // client's; then the records in the order given.
        var runs: [(client: Bool, bytes: [UInt8])] = [(true, FuzzTLS.clientHello),
                                                      (false, [22] + v + FuzzTLS.be16(hs.count) + hs + [20] + v + [0, 1, 1]),
                                                      (true, [20] + v + [0, 1, 1])]
        var at = 1
        while at + 2 <= data.count {
            let kind = data[at], length = Int(data[at + 1])
            at += 2
            let body = Array(UnsafeRawBufferPointer(rebasing: data[at..<min(at + length, data.count)]))
            at += length
            let server = kind & 1 != 0
            runs.append((!server, sealers[server ? 1 : 0].seal(type: 20 + (kind >> 1) % 5, version: v, body)))
        }
        FuzzStreams.feed(sessions, runs: runs, piece: max(1, Int(data[0] >> 4) * 97), port: 7000)
        return out.text
    }

    /// One direction's sealing, as its peer would: MAC-then-encrypt (or encrypt-then-MAC), the
    /// explicit IV of TLS 1.1 and later (zeros), TLS 1.0's and SSL 3.0's chained IVs.
    struct Sealer {
        let macKey: [UInt8]
        let key: SymmetricKey
        var iv: [UInt8]
        let version: UInt16
        let etm: Bool
        var sequence: UInt64 = 0

        init(block k: [UInt8], client: Bool, version: UInt16, etm: Bool) {
            macKey = Array(k[(client ? 0 : 20)..<(client ? 20 : 40)])
            key = SymmetricKey(data: Array(k[(client ? 40 : 56)..<(client ? 56 : 72)]))
            iv = version < 0x0302 ? Array(k[(client ? 72 : 88)..<(client ? 88 : 104)]) : [UInt8](repeating: 0, count: 16)
            self.version = version
            self.etm = etm
        }

        mutating func mac(type: UInt8, version v: [UInt8], _ content: [UInt8]) -> [UInt8] {
            if version == 0x0300 { return TLSKeySchedule.ssl3MAC(secret: macKey, sequence: sequence, type: type, content: content) }
            let seq = withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
            return TLSKeySchedule.hmac(.sha1, key: macKey, [seq + [type] + v + FuzzTLS.be16(content.count), content])
        }

        mutating func seal(type: UInt8, version v: [UInt8], _ content: [UInt8]) -> [UInt8] {
            defer { sequence &+= 1 }
            var plain = content
            if !etm { plain += mac(type: type, version: v, content) }
            let pad = 15 - plain.count % 16
            plain += [UInt8](repeating: UInt8(pad), count: pad + 1)
            guard let ivBox = try? AES._CBC.IV(ivBytes: iv),
                  let sealed = try? AES._CBC.encrypt(plain, using: key, iv: ivBox, noPadding: true) else { return [] }
            var body = (version >= 0x0302 ? iv : []) + Array(sealed)
            // TLS 1.0 and SSL 3.0: the next record's IV is this one's last block.
            if version < 0x0302 { iv = Array(sealed.suffix(16)) }
            if etm { body += mac(type: type, version: v, body) }
            return [type] + v + FuzzTLS.be16(body.count) + body
        }
    }
}
