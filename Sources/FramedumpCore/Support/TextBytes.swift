/// Byte-level text checks shared by the decoders, the WebSocket layer and the printers.

public enum UTF8Check {
    /// Length of the valid sequence starting at `i`, or 0 if the bytes there are not valid UTF-8.
    @inline(__always)
    public static func sequenceLength(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int {
        let c0 = b[i]
        if c0 < 0x80 { return 1 }
        let n = b.count
        func cont(_ k: Int) -> Bool { k < n && b[k] & 0xc0 == 0x80 }
        if c0 >= 0xc2 && c0 <= 0xdf { return cont(i + 1) ? 2 : 0 }
        if c0 >= 0xe0 && c0 <= 0xef {
            guard cont(i + 1), cont(i + 2) else { return 0 }
            let c1 = b[i + 1]
            if c0 == 0xe0 && c1 < 0xa0 { return 0 }
            if c0 == 0xed && c1 >= 0xa0 { return 0 }
            return 3
        }
        if c0 >= 0xf0 && c0 <= 0xf4 {
            guard cont(i + 1), cont(i + 2), cont(i + 3) else { return 0 }
            let c1 = b[i + 1]
            if c0 == 0xf0 && c1 < 0x90 { return 0 }
            if c0 == 0xf4 && c1 >= 0x90 { return 0 }
            return 4
        }
        return 0
    }

    public static func isValid(_ b: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < b.count {
            // ASCII eight bytes at a time (most text on the wire).
            while i + 8 <= b.count {
                let high = b.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080
                if high != 0 { i += high.trailingZeroBitCount >> 3; break }
                i += 8
            }
            if i >= b.count { break }
            // Three-byte characters (CJK, most non-Latin text) by one 4-byte load when room:
            // lead 1110xxxx and two 10xxxxxx, no overlong (E0 80..9F) and no surrogate (ED A0..BF).
            if i + 4 <= b.count {
                let w = b.loadUnaligned(fromByteOffset: i, as: UInt32.self)
                if w & 0x00C0_C0F0 == 0x0080_80E0 {
                    let c0 = w & 0xff, c1 = (w >> 8) & 0xff
                    if (c0 == 0xe0 && c1 < 0xa0) || (c0 == 0xed && c1 >= 0xa0) { return false }
                    i += 3
                    continue
                }
            }
            let l = sequenceLength(b, i)
            if l == 0 { return false }
            i += l
        }
        return true
    }
}

/// Which bytes of a JSON string need an escape, eight at a time.
enum JSONEscape {
    /// The high bit of each of eight bytes that is a control character, `"` or `\` (bytes of
    /// 0x80 and above do not count: in valid UTF-8 they are copied as they are). The lowest
    /// bit set is exact (borrows only start at a byte that matches), so
    /// `trailingZeroBitCount / 8` is the index of the first such byte.
    @inline(__always) static func mask(_ w: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let control = (w &- 0x2020_2020_2020_2020) & ~w
        let q = w ^ 0x2222_2222_2222_2222, s = w ^ 0x5c5c_5c5c_5c5c_5c5c
        return (control | (q &- ones) & ~q | (s &- ones) & ~s) & highs
    }
}
