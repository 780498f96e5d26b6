extension String {
    /// A NUL-terminated C buffer (libpcap's and zlib's error buffers) as text: read through its
    /// pointer, which stops at the NUL (the array form of `init(cString:)` is deprecated).
    init(cChars buffer: [CChar]) {
        self = buffer.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress, b.contains(0) else { return String(decoding: b.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            return String(cString: base)
        }
    }
}
