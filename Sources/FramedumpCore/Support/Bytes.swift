/// Bounds-checked big- and little-endian loads over borrowed bytes.
///
/// Every read checks `offset + width <= count` first and returns nil past the end, so
/// no packet, capture or frame can make us read outside what libpcap handed us.
extension UnsafeRawBufferPointer {
    @inline(__always)
    package func u8(_ at: Int) -> UInt8? {
        guard at >= 0, at < count else { return nil }
        return load(fromByteOffset: at, as: UInt8.self)
    }
    @inline(__always)
    package func u16be(_ at: Int) -> UInt16? {
        guard at >= 0, at <= count - 2 else { return nil }
        return UInt16(bigEndian: loadUnaligned(fromByteOffset: at, as: UInt16.self))
    }
    @inline(__always)
    func u32be(_ at: Int) -> UInt32? {
        guard at >= 0, at <= count - 4 else { return nil }
        return UInt32(bigEndian: loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }
    @inline(__always)
    func u64be(_ at: Int) -> UInt64? {
        guard at >= 0, at <= count - 8 else { return nil }
        return UInt64(bigEndian: loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }
    @inline(__always)
    package func u16le(_ at: Int) -> UInt16? {
        guard at >= 0, at <= count - 2 else { return nil }
        return UInt16(littleEndian: loadUnaligned(fromByteOffset: at, as: UInt16.self))
    }
    @inline(__always)
    func u32le(_ at: Int) -> UInt32? {
        guard at >= 0, at <= count - 4 else { return nil }
        return UInt32(littleEndian: loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }

    /// An unsigned integer of 1...8 bytes in the given order; nil past the end.
    @inline(__always)
    func uint(_ at: Int, width: Int, bigEndian: Bool) -> UInt64? {
        guard width >= 1, width <= 8, at >= 0, at <= count - width else { return nil }
        switch (width, bigEndian) {
        case (1, _): return UInt64(load(fromByteOffset: at, as: UInt8.self))
        case (2, true): return UInt64(UInt16(bigEndian: loadUnaligned(fromByteOffset: at, as: UInt16.self)))
        case (2, false): return UInt64(UInt16(littleEndian: loadUnaligned(fromByteOffset: at, as: UInt16.self)))
        case (4, true): return UInt64(UInt32(bigEndian: loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        case (4, false): return UInt64(UInt32(littleEndian: loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        case (8, true): return UInt64(bigEndian: loadUnaligned(fromByteOffset: at, as: UInt64.self))
        case (8, false): return UInt64(littleEndian: loadUnaligned(fromByteOffset: at, as: UInt64.self))
        default:
            var v: UInt64 = 0
            for i in 0..<width {
                let b = UInt64(load(fromByteOffset: at + (bigEndian ? i : width - 1 - i), as: UInt8.self))
                v = (v << 8) | b
            }
            return v
        }
    }

    /// A sub-range, clamped to what is present.
    @inline(__always)
    package func slice(_ start: Int, _ length: Int) -> UnsafeRawBufferPointer {
        let s = Swift.max(0, Swift.min(start, count))
        let e = Swift.max(s, Swift.min(count, s + Swift.max(0, length)))
        return UnsafeRawBufferPointer(rebasing: self[s..<e])
    }
}
