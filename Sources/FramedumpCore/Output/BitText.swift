/// ` (compressed, xored, codec=2)`: a header field's named bits after its value: one-bit
/// fields by name when set, wider ones as name=value when not zero, set bits no name covers
/// as `+0x80`, and `(none)` when nothing is set.
enum BitText {
    static func write(_ v: UInt64, _ bits: [BitField], _ k: inout Cursor) {
        k.write(" (")
        var first = true
        var covered: UInt64 = 0
        for b in bits {
            covered |= b.mask
            let x = b.value(v)
            guard x != 0 else { continue }
            if !first { k.write(", ") }
            first = false
            b.nameBytes.withUnsafeBytes { k.write($0) }
            if b.mask.nonzeroBitCount > 1 { k.byte(0x3d); k.decimal(x) }
        }
        let rest = v & ~covered
        if rest != 0 {
            if !first { k.write(", ") }
            first = false
            k.write("+0x")
            Array(String(rest, radix: 16).utf8).withUnsafeBytes { k.write($0) }
        }
        if first { k.write("none") }
        k.byte(0x29)
    }
}
