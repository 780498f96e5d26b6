/// The transforms that need no library: a repeating XOR key, and Base64 text.
enum ByteSteps {
    /// XORs `body` with `key` repeated from the body's first byte.
    static func xor(_ body: UnsafeRawBufferPointer, key: [UInt8], into out: ByteBlock) -> StepResult {
        guard !key.isEmpty else { return .failed("xor: empty key") }
        let dst = out.reserve(body.count).assumingMemoryBound(to: UInt8.self)
        key.withUnsafeBufferPointer { k in
            var j = 0
            for i in 0..<body.count {
                dst[i] = body[i] ^ k[j]
                j += 1
                if j == k.count { j = 0 }
            }
        }
        out.commit(body.count)
        return .ok
    }

    /// Decodes Base64 (`+/` or `-_`, padding optional, spaces and line breaks skipped).
    static func base64(_ body: UnsafeRawBufferPointer, into out: ByteBlock) -> StepResult {
        let dst = out.reserve(body.count * 3 / 4 + 3).assumingMemoryBound(to: UInt8.self)
        var n = 0, acc: UInt32 = 0, bits = 0, padding = 0
        for (i, c) in body.enumerated() {
            let v: UInt32
            switch c {
            case 0x41...0x5a: v = UInt32(c - 0x41)
            case 0x61...0x7a: v = UInt32(c - 0x61 + 26)
            case 0x30...0x39: v = UInt32(c - 0x30 + 52)
            case 0x2b, 0x2d: v = 62
            case 0x2f, 0x5f: v = 63
            case 0x3d: padding += 1; continue
            case 0x20, 0x09, 0x0d, 0x0a: continue
            default: return .failed("base64: byte 0x\(String(c, radix: 16)) at body offset \(i) is not Base64")
            }
            if padding > 0 { return .failed("base64: data after '=' padding at body offset \(i)") }
            acc = acc << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                dst[n] = UInt8(truncatingIfNeeded: acc >> UInt32(bits))
                n += 1
            }
        }
        out.commit(n)
        // 6 leftover bits (one character of a group) cannot end a valid encoding.
        return bits >= 6 ? .failed("base64: the text ends inside a byte") : .ok
    }
}
