import Crypto
import Foundation
import _CryptoExtras

/// How a protocol's bodies are encrypted (`cipher aes_cbc key NAME iv "HEX" [when FIELD == N];`).
public struct BodyCipherSpec: Sendable {
    public enum Mode: String, Sendable {
        /// CBC with PKCS#7 padding.
        case cbc
        /// ECB with PKCS#7 padding.
        case ecb
        /// CTR: the IV is the initial 128-bit counter block (or a 96-bit nonce, counter 0).
        case ctr
    }

    public var mode: Mode
    public var keyName: String
    /// 16, 24 or 32 bytes (AES-128/192/256). Never printed.
    public var key: [UInt8]
    public var iv: [UInt8]
    /// Decrypt only frames whose header field (index) has this value; nil: every frame.
    public var condition: (field: Int, value: UInt64)?

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
        default: return "aes-256-ctr"
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

/// Decrypts bodies with swift-crypto's AES into one buffer the decoder reuses for every
/// frame: the frame's header, then the plaintext, so field offsets keep counting from the
/// frame's start (and, after the header, count bytes of the plaintext).
final class BodyCipher {
    let spec: BodyCipherSpec
    let key: SymmetricKey
    var buffer: UnsafeMutableRawBufferPointer
    static let block = 16

    init(_ spec: BodyCipherSpec, maxFrame: Int) {
        self.spec = spec
        key = SymmetricKey(data: spec.key)
        buffer = .allocate(byteCount: 256, alignment: 16)
    }

    deinit { buffer.deallocate() }

    enum Outcome {
        case plain(UnsafeRawBufferPointer)
        case failed(String)
    }

    /// Decrypts `frame[headerSize...]`. The result is valid until the next call.
    func decrypt(_ frame: UnsafeRawBufferPointer, headerSize: Int) -> Outcome {
        let body = UnsafeRawBufferPointer(rebasing: frame[headerSize...])
        if buffer.count < frame.count {
            buffer.deallocate()
            buffer = .allocate(byteCount: frame.count, alignment: 16)
        }
        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: frame[..<headerSize]))
        var plainLength = body.count
        do {
            switch spec.mode {
            case .cbc:
                guard !body.isEmpty, body.count % Self.block == 0 else {
                    return .failed("\(body.count)-byte body is not a whole number of 16-byte AES blocks: cannot be \(spec.name), shown raw")
                }
                let iv = try AES._CBC.IV(ivBytes: spec.iv)
                let d = try AES._CBC.decrypt(body, using: key, iv: iv, noPadding: true)
                d.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[headerSize...]).copyMemory(from: $0) }
                guard let n = unpad(headerSize, body.count) else { return .failed(badPadding) }
                plainLength = n
            case .ecb:
                guard !body.isEmpty, body.count % Self.block == 0 else {
                    return .failed("\(body.count)-byte body is not a whole number of 16-byte AES blocks: cannot be \(spec.name), shown raw")
                }
                UnsafeMutableRawBufferPointer(rebasing: buffer[headerSize..<(headerSize + body.count)]).copyMemory(from: body)
                var at = headerSize
                while at < headerSize + body.count {
                    var block = buffer[at..<(at + Self.block)]
                    try AES.inversePermute(&block, key: key)
                    at += Self.block
                }
                guard let n = unpad(headerSize, body.count) else { return .failed(badPadding) }
                plainLength = n
            case .ctr:
                let nonce = try AES._CTR.Nonce(nonceBytes: spec.iv)
                let d = try AES._CTR.decrypt(body, using: key, nonce: nonce)
                d.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[headerSize...]).copyMemory(from: $0) }
            }
        } catch {
            return .failed("\(spec.name) decryption failed (\(error)): body shown raw")
        }
        return .plain(UnsafeRawBufferPointer(rebasing: buffer[..<(headerSize + plainLength)]))
    }

    var badPadding: String { "bad PKCS#7 padding after \(spec.name) decryption (wrong key or IV?): body shown raw" }

    /// The plaintext's length without its PKCS#7 padding, nil when the padding is not valid.
    func unpad(_ start: Int, _ n: Int) -> Int? {
        let last = Int(buffer[start + n - 1])
        guard last >= 1 && last <= Self.block && last <= n else { return nil }
        for i in (start + n - last)..<(start + n) where buffer[i] != UInt8(last) { return nil }
        return n - last
    }
}
