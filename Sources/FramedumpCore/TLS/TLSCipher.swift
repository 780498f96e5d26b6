import Crypto
import Foundation
import _CryptoExtras
#if canImport(CryptoBoringWrapper)
// swift-crypto's own BoringSSL AEAD context (public, built with `Crypto` on every platform but
// Apple's): set up once per direction and key, where the one-shot `AES.GCM.open` sets up a new
// one, and goes through unspecialized generic wrappers, for every record. See docs/dependencies.md.
import CryptoBoringWrapper
#endif

/// A cipher suite as the record layer needs it: how records are protected, with which key
/// sizes, and which hash drives the key schedule. Only what framedump can decrypt is listed;
/// any other suite is shown by name or number and its records are left encrypted.
package struct TLSSuite: Sendable {
    enum Protection: Sendable { case aesGCM, chaCha20Poly1305, aesCBC }
    package enum Hash: Sendable { case sha1, sha256, sha384 }

    let code: UInt16
    let name: String
    let protection: Protection
    let keyLength: Int
    /// TLS 1.3 and ChaCha20: the 12-byte IV; TLS 1.2 GCM: the 4-byte salt; CBC: none used
    /// (TLS 1.1 and later carry an explicit IV per record).
    let ivLength: Int
    /// The HMAC of a CBC suite (0 for AEAD).
    let mac: Hash?
    /// The PRF's or HKDF's hash.
    let prf: Hash
    let tls13: Bool

    var macLength: Int {
        switch mac { case .sha1?: 20; case .sha256?: 32; case .sha384?: 48; case nil: 0 }
    }

    package static let all: [UInt16: TLSSuite] = {
        let list = [
            TLSSuite(code: 0x1301, name: "TLS_AES_128_GCM_SHA256", protection: .aesGCM, keyLength: 16, ivLength: 12, mac: nil, prf: .sha256, tls13: true),
            TLSSuite(code: 0x1302, name: "TLS_AES_256_GCM_SHA384", protection: .aesGCM, keyLength: 32, ivLength: 12, mac: nil, prf: .sha384, tls13: true),
            TLSSuite(code: 0x1303, name: "TLS_CHACHA20_POLY1305_SHA256", protection: .chaCha20Poly1305, keyLength: 32, ivLength: 12, mac: nil, prf: .sha256, tls13: true),
            TLSSuite(code: 0xC02F, name: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", protection: .aesGCM, keyLength: 16, ivLength: 4, mac: nil, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC030, name: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", protection: .aesGCM, keyLength: 32, ivLength: 4, mac: nil, prf: .sha384, tls13: false),
            TLSSuite(code: 0xC02B, name: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", protection: .aesGCM, keyLength: 16, ivLength: 4, mac: nil, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC02C, name: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", protection: .aesGCM, keyLength: 32, ivLength: 4, mac: nil, prf: .sha384, tls13: false),
            TLSSuite(code: 0x009C, name: "TLS_RSA_WITH_AES_128_GCM_SHA256", protection: .aesGCM, keyLength: 16, ivLength: 4, mac: nil, prf: .sha256, tls13: false),
            TLSSuite(code: 0x009D, name: "TLS_RSA_WITH_AES_256_GCM_SHA384", protection: .aesGCM, keyLength: 32, ivLength: 4, mac: nil, prf: .sha384, tls13: false),
            TLSSuite(code: 0x009E, name: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", protection: .aesGCM, keyLength: 16, ivLength: 4, mac: nil, prf: .sha256, tls13: false),
            TLSSuite(code: 0x009F, name: "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", protection: .aesGCM, keyLength: 32, ivLength: 4, mac: nil, prf: .sha384, tls13: false),
            TLSSuite(code: 0xCCA8, name: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", protection: .chaCha20Poly1305, keyLength: 32, ivLength: 12, mac: nil, prf: .sha256, tls13: false),
            TLSSuite(code: 0xCCA9, name: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", protection: .chaCha20Poly1305, keyLength: 32, ivLength: 12, mac: nil, prf: .sha256, tls13: false),
            TLSSuite(code: 0xCCAA, name: "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", protection: .chaCha20Poly1305, keyLength: 32, ivLength: 12, mac: nil, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC027, name: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha256, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC028, name: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha384, prf: .sha384, tls13: false),
            TLSSuite(code: 0xC023, name: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha256, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC024, name: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha384, prf: .sha384, tls13: false),
            TLSSuite(code: 0xC013, name: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC014, name: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC009, name: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0xC00A, name: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0x002F, name: "TLS_RSA_WITH_AES_128_CBC_SHA", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0x0035, name: "TLS_RSA_WITH_AES_256_CBC_SHA", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0x003C, name: "TLS_RSA_WITH_AES_128_CBC_SHA256", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha256, prf: .sha256, tls13: false),
            TLSSuite(code: 0x003D, name: "TLS_RSA_WITH_AES_256_CBC_SHA256", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha256, prf: .sha256, tls13: false),
            TLSSuite(code: 0x0033, name: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0x0039, name: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha1, prf: .sha256, tls13: false),
            TLSSuite(code: 0x0067, name: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256", protection: .aesCBC, keyLength: 16, ivLength: 16, mac: .sha256, prf: .sha256, tls13: false),
            TLSSuite(code: 0x006B, name: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256", protection: .aesCBC, keyLength: 32, ivLength: 16, mac: .sha256, prf: .sha256, tls13: false),
        ]
        return Dictionary(uniqueKeysWithValues: list.map { ($0.code, $0) })
    }()

    /// A suite's name, or its number for one framedump does not know.
    static func name(_ code: UInt16) -> String {
        all[code]?.name ?? "0x" + String(code, radix: 16, uppercase: true).leftPadded(to: 4)
    }
}

extension String {
    func leftPadded(to n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}

/// The key schedules, through swift-crypto's HMAC and HKDF (no primitive is written here).
package enum TLSKeySchedule {
    /// HMAC with the suite's hash.
    package static func hmac(_ h: TLSSuite.Hash, key: [UInt8], _ parts: [[UInt8]]) -> [UInt8] {
        func run<H: HashFunction>(_: H.Type) -> [UInt8] {
            var m = HMAC<H>(key: SymmetricKey(data: key))
            for p in parts { m.update(data: p) }
            return Array(m.finalize())
        }
        switch h {
        case .sha1: return run(Insecure.SHA1.self)
        case .sha256: return run(SHA256.self)
        case .sha384: return run(SHA384.self)
        }
    }

    /// TLS 1.2's PRF (RFC 5246 §5): P_hash(secret, label + seed), `length` bytes.
    static func prf(_ h: TLSSuite.Hash, secret: [UInt8], label: String, seed: [UInt8], length: Int) -> [UInt8] {
        let s = Array(label.utf8) + seed
        var a = s, out: [UInt8] = []
        while out.count < length {
            a = hmac(h, key: secret, [a])
            out += hmac(h, key: secret, [a, s])
        }
        return Array(out.prefix(length))
    }

    /// TLS 1.0 and 1.1's PRF (RFC 2246 §5, RFC 4346 §5): P_MD5 over the secret's first half
    /// XOR P_SHA1 over its second half (the halves share the middle byte of an odd length).
    static func prf10(secret: [UInt8], label: String, seed: [UInt8], length: Int) -> [UInt8] {
        let s = Array(label.utf8) + seed
        let half = (secret.count + 1) / 2
        func p<H: HashFunction>(_: H.Type, _ key: ArraySlice<UInt8>) -> [UInt8] {
            let k = SymmetricKey(data: Array(key))
            var a = s, out: [UInt8] = []
            while out.count < length {
                a = Array(HMAC<H>.authenticationCode(for: a, using: k))
                var m = HMAC<H>(key: k)
                m.update(data: a)
                m.update(data: s)
                out += Array(m.finalize())
            }
            return Array(out.prefix(length))
        }
        let md5 = p(Insecure.MD5.self, secret.prefix(half)), sha1 = p(Insecure.SHA1.self, secret.suffix(half))
        return zip(md5, sha1).map { $0 ^ $1 }
    }

    /// The key block of a TLS 1.0-1.2 connection (RFC 5246 §6.3): the version picks the PRF.
    package static func keyBlock(_ s: TLSSuite, version: UInt16, master: [UInt8], serverRandom: [UInt8],
                         clientRandom: [UInt8]) -> [UInt8] {
        let length = TLSRecordKeys.keyBlockLength(s, version: version)
        if version == 0x0300 { return ssl3KeyBlock(master: master, seed: serverRandom + clientRandom, length: length) }
        if version >= 0x0303 {
            return prf(s.prf, secret: master, label: "key expansion", seed: serverRandom + clientRandom, length: length)
        }
        return prf10(secret: master, label: "key expansion", seed: serverRandom + clientRandom, length: length)
    }

    /// SSL 3.0's key block (RFC 6101 §6.2.2): MD5(master + SHA1("A" + master + randoms)),
    /// then with "BB", "CCC", ... until there are `length` bytes.
    static func ssl3KeyBlock(master: [UInt8], seed: [UInt8], length: Int) -> [UInt8] {
        var out: [UInt8] = []
        var n = 1
        while out.count < length && n <= 26 {
            var inner = Insecure.SHA1()
            inner.update(data: [UInt8](repeating: 0x40 + UInt8(n), count: n))
            inner.update(data: master)
            inner.update(data: seed)
            var outer = Insecure.MD5()
            outer.update(data: master)
            outer.update(data: Array(inner.finalize()))
            out += Array(outer.finalize())
            n += 1
        }
        return Array(out.prefix(length))
    }

    /// SSL 3.0's record MAC (RFC 6101 §5.2.3.1) with SHA-1: hash(secret + pad_2 +
    /// hash(secret + pad_1 + sequence number + type + length + content)).
    package static func ssl3MAC(secret: [UInt8], sequence: UInt64, type: UInt8, content: [UInt8]) -> [UInt8] {
        var inner = Insecure.SHA1()
        inner.update(data: secret)
        inner.update(data: [UInt8](repeating: 0x36, count: 40))
        inner.update(data: withUnsafeBytes(of: sequence.bigEndian) { Array($0) } + [type, UInt8(content.count >> 8 & 0xff), UInt8(content.count & 0xff)])
        inner.update(data: content)
        var outer = Insecure.SHA1()
        outer.update(data: secret)
        outer.update(data: [UInt8](repeating: 0x5c, count: 40))
        outer.update(data: Array(inner.finalize()))
        return Array(outer.finalize())
    }

    /// TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1) with an empty context.
    static func expandLabel(_ h: TLSSuite.Hash, secret: [UInt8], label: String, length: Int) -> [UInt8] {
        let full = Array(("tls13 " + label).utf8)
        let info = [UInt8(length >> 8), UInt8(length & 0xff), UInt8(full.count)] + full + [0]
        func run<H: HashFunction>(_: H.Type) -> [UInt8] {
            HKDF<H>.expand(pseudoRandomKey: SymmetricKey(data: secret), info: info, outputByteCount: length)
                .withUnsafeBytes { Array($0) }
        }
        switch h {
        case .sha1: return run(Insecure.SHA1.self)
        case .sha256: return run(SHA256.self)
        case .sha384: return run(SHA384.self)
        }
    }

    static func hashLength(_ h: TLSSuite.Hash) -> Int {
        switch h { case .sha1: 20; case .sha256: 32; case .sha384: 48 }
    }
}

/// One direction's record protection at one moment: the key, the IV, the MAC key, the record
/// sequence number. Opening a record allocates its plaintext (one buffer per record).
struct TLSRecordKeys {
    let suite: TLSSuite
    let key: SymmetricKey
    let iv: [UInt8]
    let macKey: [UInt8]
    var sequence: UInt64 = 0
    /// TLS 1.2 CBC with the encrypt-then-MAC extension (RFC 7366).
    var encryptThenMAC = false
    /// TLS 1.0 CBC: no IV in the record; each record's IV is the last ciphertext block of the
    /// one before (the first's, the key block's IV).
    var chainedIV: [UInt8]?
    /// SSL 3.0: its own MAC, and padding of any bytes (only its length is given).
    var ssl3 = false
    /// TLS 1.3: the traffic secret these keys came from (for a KeyUpdate).
    var secret: [UInt8] = []
    /// The AEAD suites' kept context (nil for CBC, and where swift-crypto has none to lend).
    private let context: TLSAEADContext?

    /// TLS 1.3 keys from a traffic secret.
    init(tls13 suite: TLSSuite, secret: [UInt8]) {
        self.suite = suite
        self.secret = secret
        key = SymmetricKey(data: TLSKeySchedule.expandLabel(suite.prf, secret: secret, label: "key", length: suite.keyLength))
        iv = TLSKeySchedule.expandLabel(suite.prf, secret: secret, label: "iv", length: 12)
        macKey = []
        context = TLSAEADContext(suite, key: key)
    }

    /// TLS 1.0-1.2 keys for one side from the key block (RFC 5246 §6.3).
    init(tls12 suite: TLSSuite, version: UInt16, keyBlock k: [UInt8], client: Bool, encryptThenMAC: Bool) {
        self.suite = suite
        let m = suite.macLength, e = suite.keyLength, v = Self.ivLength(suite, version: version)
        macKey = Array(k[(client ? 0 : m)..<(client ? m : 2 * m)])
        let ks = 2 * m + (client ? 0 : e)
        key = SymmetricKey(data: Array(k[ks..<(ks + e)]))
        let vs = 2 * m + 2 * e + (client ? 0 : v)
        iv = Array(k[vs..<(vs + v)])
        if suite.protection == .aesCBC && version < 0x0302 { chainedIV = iv }
        ssl3 = version == 0x0300
        self.encryptThenMAC = encryptThenMAC
        context = TLSAEADContext(suite, key: key)
    }

    /// The IV bytes each side takes from the key block: the AEAD salt or IV; for CBC, TLS
    /// 1.0's first IV (TLS 1.1 and later send one in every record).
    static func ivLength(_ s: TLSSuite, version: UInt16) -> Int {
        s.protection != .aesCBC ? s.ivLength : version < 0x0302 ? 16 : 0
    }

    static func keyBlockLength(_ s: TLSSuite, version: UInt16) -> Int {
        2 * s.macLength + 2 * s.keyLength + 2 * ivLength(s, version: version)
    }

    /// The next generation after a KeyUpdate (RFC 8446 §7.2).
    func updated() -> TLSRecordKeys {
        TLSRecordKeys(tls13: suite, secret: TLSKeySchedule.expandLabel(suite.prf, secret: secret, label: "traffic upd",
                                                                        length: TLSKeySchedule.hashLength(suite.prf)))
    }

    /// The record's plaintext (TLS 1.3: the inner plaintext, content type and padding still on),
    /// or nil when it does not authenticate. `header`: the 5 record-header bytes; `scratch`:
    /// the stream's buffer for the sealed box (reused: no allocation but the plaintext's).
    mutating func open(header: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, scratch: inout [UInt8]) -> Data? {
        defer { sequence &+= 1 }
        switch suite.protection {
        case .aesGCM where suite.tls13, .chaCha20Poly1305 where suite.tls13:
            return aead(body: body, aad: header, scratch: &scratch) { n in self.xorNonce(into: &n) }
        case .chaCha20Poly1305:
            guard body.count >= 16 else { return nil }
            let aad = tls12AAD(header, length: body.count - 16)
            return aad.withUnsafeBytes { a in aead(body: body, aad: a, scratch: &scratch) { n in self.xorNonce(into: &n) } }
        case .aesGCM:
            // TLS 1.2 GCM: an 8-byte explicit nonce before the ciphertext.
            guard body.count >= 8 + 16 else { return nil }
            let aad = tls12AAD(header, length: body.count - 8 - 16)
            let explicit = UnsafeRawBufferPointer(rebasing: body[0..<8])
            return aad.withUnsafeBytes { a in
                aead(body: UnsafeRawBufferPointer(rebasing: body[8...]), aad: a, scratch: &scratch) { n in
                    n.append(contentsOf: self.iv)
                    n.append(contentsOf: explicit)
                }
            }
        case .aesCBC:
            guard chainedIV != nil else { return cbc(header: header, body: body).map { Data($0) } }
            // TLS 1.0: the chain goes on from this record's last block, whether or not it opens.
            let cipherEnd = body.count - (encryptThenMAC ? suite.macLength : 0)
            defer { if cipherEnd >= 16 { chainedIV = Array(body[(cipherEnd - 16)..<cipherEnd]) } }
            return cbc(header: header, body: body).map { Data($0) }
        }
    }

    /// The 12-byte nonce: the IV XOR the sequence number (RFC 8446 §5.3, RFC 7905).
    private func xorNonce(into n: inout [UInt8]) {
        let start = n.count
        n.append(contentsOf: iv)
        for i in 0..<8 { n[start + 11 - i] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(i))) }
    }

    /// TLS 1.2's additional data, which its MAC covers too: sequence number, type, version, length.
    private func tls12AAD(_ header: UnsafeRawBufferPointer, length: Int) -> [UInt8] {
        var a = withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
        a += [header[0], header[1], header[2], UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
        return a
    }

    /// AEAD through the kept context where there is one (nonce in `scratch`, ciphertext and tag
    /// copied into the context's buffer), else through swift-crypto's sealed box in its
    /// combined form (nonce, ciphertext, tag) laid out in `scratch`.
    private func aead(body: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, scratch: inout [UInt8],
                      nonce: (inout [UInt8]) -> Void) -> Data? {
        guard body.count >= 16 else { return nil }
        scratch.removeAll(keepingCapacity: true)
        nonce(&scratch)
        if let context { return context.open(body: body, aad: aad, nonce: scratch) }
        scratch.append(contentsOf: body)
        let chacha = suite.protection == .chaCha20Poly1305
        let key = self.key
        return scratch.withUnsafeMutableBytes { p -> Data? in
            let combined = Data(bytesNoCopy: p.baseAddress!, count: p.count, deallocator: .none)
            do {
                if chacha { return try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: combined), using: key, authenticating: aad) }
                return try AES.GCM.open(AES.GCM.SealedBox(combined: combined), using: key, authenticating: aad)
            } catch {
                return nil
            }
        }
    }

    /// AES-CBC with HMAC, MAC-then-encrypt (RFC 5246 §6.2.3.2) or encrypt-then-MAC (RFC 7366).
    /// The padding and the MAC are both checked; either failing fails the record.
    private func cbc(header: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer) -> [UInt8]? {
        let m = suite.macLength
        var cipher = body
        // TLS 1.1 and later: the IV is the ciphertext's first block; TLS 1.0: the chain's.
        let ivInRecord = chainedIV == nil ? 16 : 0
        if encryptThenMAC {
            guard body.count >= ivInRecord + 16 + m else { return nil }
            cipher = UnsafeRawBufferPointer(rebasing: body[0..<(body.count - m)])
            let expected = TLSKeySchedule.hmac(suite.mac!, key: macKey, [tls12AAD(header, length: cipher.count), Array(cipher)])
            guard expected.elementsEqual(body[(body.count - m)...]) else { return nil }
        }
        guard cipher.count >= ivInRecord + 16, cipher.count % 16 == 0,
              let iv = try? AES._CBC.IV(ivBytes: chainedIV ?? Array(cipher[0..<16])),
              let plain = try? AES._CBC.decrypt(Array(cipher[ivInRecord...]), using: key, iv: iv, noPadding: true) else { return nil }
        var p = Array(plain)
        let pad = Int(p.last!)
        if ssl3 {
            guard pad < 16, pad + 1 <= p.count else { return nil }
        } else {
            guard pad + 1 <= p.count, p[(p.count - pad - 1)...].allSatisfy({ Int($0) == pad }) else { return nil }
        }
        p.removeLast(pad + 1)
        if encryptThenMAC { return p }
        guard p.count >= m else { return nil }
        let content = Array(p[0..<(p.count - m)])
        if ssl3 {
            let expected = TLSKeySchedule.ssl3MAC(secret: macKey, sequence: sequence, type: header[0], content: content)
            return expected.elementsEqual(p[(p.count - m)...]) ? content : nil
        }
        let expected = TLSKeySchedule.hmac(suite.mac!, key: macKey, [tls12AAD(header, length: content.count), content])
        guard expected.elementsEqual(p[(p.count - m)...]) else { return nil }
        return content
    }
}

#if canImport(CryptoBoringWrapper)
/// One direction's AEAD key, scheduled once: BoringSSL's context through swift-crypto. The
/// record is copied into a buffer kept with the context, which a `Data` made with the buffer
/// lends to the context without a copy: a record costs one allocation, its plaintext's. The
/// buffer grows with the largest record seen (at most `TLSRecordLayer.maxRecord`, checked
/// before a record gets here).
final class TLSAEADContext {
    private let context: BoringSSLAEAD.AEADContext
    // (Allocated once the init cannot fail: an init that returns nil runs no deinit, and a
    // buffer allocated before it was lost for every CBC direction, 256 bytes each.)
    @exclusivity(unchecked) private var buffer: UnsafeMutableRawBufferPointer
    @exclusivity(unchecked) private var sealed: Data

    init?(_ suite: TLSSuite, key: SymmetricKey) {
        let cipher: BoringSSLAEAD
        switch (suite.protection, suite.keyLength) {
        case (.aesGCM, 16): cipher = .aes128gcm
        case (.aesGCM, 32): cipher = .aes256gcm
        case (.chaCha20Poly1305, 32): cipher = .chacha20
        default: return nil
        }
        guard let c = try? BoringSSLAEAD.AEADContext(cipher: cipher, key: key) else { return nil }
        context = c
        buffer = .allocate(byteCount: 256, alignment: 16)
        sealed = Data(bytesNoCopy: buffer.baseAddress!, count: buffer.count, deallocator: .none)
    }

    deinit { buffer.deallocate() }

    /// `body`: ciphertext then the 16-byte tag; nil when it does not authenticate.
    func open(body: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: [UInt8]) -> Data? {
        if body.count > buffer.count {
            buffer.deallocate()
            buffer = .allocate(byteCount: max(body.count, 2 * buffer.count), alignment: 16)
            sealed = Data(bytesNoCopy: buffer.baseAddress!, count: buffer.count, deallocator: .none)
        }
        buffer.copyMemory(from: body)
        return try? context.open(combinedCiphertextAndTag: sealed[0..<body.count], nonce: nonce, authenticatedData: aad)
    }
}
#else
/// Apple's platforms: swift-crypto forwards to CryptoKit, and the one-shot API is used.
final class TLSAEADContext {
    init?(_ suite: TLSSuite, key: SymmetricKey) { return nil }
    func open(body: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: [UInt8]) -> Data? { nil }
}
#endif
