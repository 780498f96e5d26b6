import Crypto
import Foundation
import _CryptoExtras

/// An AES step of a body's transform chain (`transform aes_cbc key NAME iv "HEX";`; the older
/// `cipher aes_cbc key NAME iv "HEX" when FIELD == N;` means the same).
public struct BodyCipherSpec: Sendable {
    public enum Mode: String, Sendable {
        /// CBC with PKCS#7 padding.
        case cbc
        /// ECB with PKCS#7 padding.
        case ecb
        /// CTR: the IV is the initial 128-bit counter block (or a 96-bit nonce, counter 0).
        case ctr
        /// GCM: a 12-byte nonce (given, or the body's first 12 bytes) and a 16-byte tag at the
        /// end of the body, checked: a body that fails it is reported, never shown decrypted.
        case gcm
    }

    public var mode: Mode
    public var keyName: String
    /// 16, 24 or 32 bytes (AES-128/192/256). Never printed.
    public var key: [UInt8]
    public var iv: [UInt8]

    package init(mode: Mode, keyName: String, key: [UInt8], iv: [UInt8]) {
        self.mode = mode
        self.keyName = keyName
        self.key = key
        self.iv = iv
    }

    /// `aes-128-cbc` and so on, for the outputs.
    public var name: StaticString {
        switch (key.count, mode) {
        case (16, .cbc): return "aes-128-cbc"
        case (24, .cbc): return "aes-192-cbc"
        case (32, .cbc): return "aes-256-cbc"
        case (16, .ecb): return "aes-128-ecb"
        case (24, .ecb): return "aes-192-ecb"
        case (32, .ecb): return "aes-256-ecb"
        case (16, .ctr): return "aes-128-ctr"
        case (24, .ctr): return "aes-192-ctr"
        case (32, .ctr): return "aes-256-ctr"
        case (16, .gcm): return "aes-128-gcm"
        case (24, .gcm): return "aes-192-gcm"
        default: return "aes-256-gcm"
        }
    }

    /// Parses hex (spaces and colons allowed between bytes); nil when it is not hex.
    public static func hex(_ s: String) -> [UInt8]? {
        var out: [UInt8] = []
        var hi: UInt8? = nil
        for c in s.utf8 {
            if c == 0x20 || c == 0x3a || c == 0x2d { continue }
            guard let v = ProtoLexer.hexValue(c) else { return nil }
            if let h = hi { out.append(h << 4 | UInt8(v)); hi = nil } else { hi = UInt8(v) }
        }
        return hi == nil ? out : nil
    }
}

/// One AES step of a body's transform chain, with swift-crypto: the key is made once, the
/// plaintext written after the frame's header in the chain's output block.
final class AESStep {
    let spec: BodyCipherSpec
    let key: SymmetricKey
    static let block = 16
    static let gcmNonce = 12, gcmTag = 16

    init(_ spec: BodyCipherSpec) {
        self.spec = spec
        key = SymmetricKey(data: spec.key)
    }

    /// Decrypts `body` and appends the plaintext to `out`.
    func run(_ body: UnsafeRawBufferPointer, into out: ByteBlock) -> StepResult {
        let start = out.count
        do {
            switch spec.mode {
            case .cbc:
                guard !body.isEmpty, body.count % Self.block == 0 else { return notBlocks(body.count) }
                let iv = try AES._CBC.IV(ivBytes: spec.iv)
                let d = try AES._CBC.decrypt(body, using: key, iv: iv, noPadding: true)
                d.withUnsafeBytes { out.append($0) }
                return unpad(out, from: start)
            case .ecb:
                guard !body.isEmpty, body.count % Self.block == 0 else { return notBlocks(body.count) }
                out.append(body)
                var at = start
                while at < out.count {
                    var block = UnsafeMutableRawBufferPointer(start: out.base + at, count: Self.block)
                    try AES.inversePermute(&block, key: key)
                    at += Self.block
                }
                return unpad(out, from: start)
            case .ctr:
                let nonce = try AES._CTR.Nonce(nonceBytes: spec.iv)
                let d = try AES._CTR.decrypt(body, using: key, nonce: nonce)
                d.withUnsafeBytes { out.append($0) }
            case .gcm:
                // [12-byte nonce][ciphertext][16-byte tag], or [ciphertext][tag] with the IV given.
                let nonceBytes = spec.iv.isEmpty ? Self.gcmNonce : 0
                guard body.count >= nonceBytes + Self.gcmTag else {
                    return .failed("\(body.count)-byte body is shorter than \(spec.iv.isEmpty ? "a nonce and " : "")a GCM tag: cannot be \(spec.name)")
                }
                let nonce = try AES.GCM.Nonce(data: spec.iv.isEmpty ? Array(body[0..<nonceBytes]) : spec.iv)
                let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: body[nonceBytes..<(body.count - Self.gcmTag)],
                                                tag: body[(body.count - Self.gcmTag)...])
                let d = try AES.GCM.open(box, using: key)
                d.withUnsafeBytes { out.append($0) }
            }
        } catch {
            if spec.mode == .gcm { return .failed("\(spec.name) authentication failed (wrong key, nonce or a damaged body)") }
            return .failed("\(spec.name) decryption failed (\(error))")
        }
        return .ok
    }

    func notBlocks(_ n: Int) -> StepResult {
        .failed("\(n)-byte body is not a whole number of 16-byte AES blocks: cannot be \(spec.name)")
    }

    /// Drops valid PKCS#7 padding from the plaintext that starts at `start`.
    func unpad(_ out: ByteBlock, from start: Int) -> StepResult {
        let n = out.count - start
        let p = out.bytes
        let last = Int(p[out.count - 1])
        guard last >= 1 && last <= Self.block && last <= n else { return badPadding }
        for i in (out.count - last)..<out.count where p[i] != UInt8(last) { return badPadding }
        out.removeLast(last)
        return .ok
    }

    var badPadding: StepResult { .failed("bad PKCS#7 padding after \(spec.name) decryption (wrong key or IV?)") }
}
