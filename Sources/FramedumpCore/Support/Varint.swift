/// LEB128 integers as protobuf, MQTT and Netty's varint32 framing write them: seven bits a
/// byte, the lowest group first, the high bit set on every byte but the last.
enum VarintRead: Equatable {
    case value(UInt64, length: Int)
    /// The bytes end before the last byte of the number (more may come).
    case truncated
    /// More than `maxBytes` bytes, or more than 64 bits: no number of this kind.
    case overlong
}

extension UnsafeRawBufferPointer {
    /// The varint at `at`, at most `maxBytes` (1...10) long.
    @inline(__always)
    func varint(_ at: Int, maxBytes: Int) -> VarintRead {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        var p = at
        guard p >= 0 else { return .overlong }
        while p < count {
            let c = load(fromByteOffset: p, as: UInt8.self)
            p += 1
            if shift == 63 && c > 1 { return .overlong }  // past 64 bits
            v |= UInt64(c & 0x7f) << shift
            if c < 0x80 { return .value(v, length: p - at) }
            if p - at >= maxBytes { return .overlong }
            shift += 7
        }
        return .truncated
    }
}

/// A zigzag-encoded signed value (protobuf's sint): 0, -1, 1, -2 ... as 0, 1, 2, 3 ...
@inline(__always)
func zigzagDecoded(_ v: UInt64) -> Int64 {
    Int64(bitPattern: v >> 1) ^ (0 &- Int64(bitPattern: v & 1))
}
