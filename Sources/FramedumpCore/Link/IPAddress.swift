/// An IPv4 or IPv6 address in 16 bytes of value storage (no allocation).
public struct IPAddress: Hashable, Sendable, Comparable {
    public var hi: UInt64
    public var lo: UInt64
    public var isV6: Bool

    public init(v4 bigEndianBits: UInt32) {
        hi = 0
        lo = UInt64(bigEndianBits)
        isV6 = false
    }

    public init(v6Hi: UInt64, lo: UInt64) {
        hi = v6Hi
        self.lo = lo
        isV6 = true
    }

    public static func < (a: IPAddress, b: IPAddress) -> Bool {
        (a.isV6 ? 1 : 0, a.hi, a.lo) < (b.isV6 ? 1 : 0, b.hi, b.lo)
    }

    /// Dotted quad, or RFC 5952 text for IPv6 (longest zero run compressed).
    public var text: String {
        if !isV6 {
            let v = UInt32(truncatingIfNeeded: lo)
            return "\(v >> 24).\((v >> 16) & 0xff).\((v >> 8) & 0xff).\(v & 0xff)"
        }
        var groups = [UInt16](repeating: 0, count: 8)
        for i in 0..<4 {
            groups[i] = UInt16(truncatingIfNeeded: hi >> (48 - 16 * UInt64(i)))
            groups[i + 4] = UInt16(truncatingIfNeeded: lo >> (48 - 16 * UInt64(i)))
        }
        var bestStart = -1, bestLen = 0, i = 0
        while i < 8 {
            if groups[i] == 0 {
                var j = i
                while j < 8 && groups[j] == 0 { j += 1 }
                if j - i > bestLen && j - i >= 2 { bestStart = i; bestLen = j - i }
                i = j
            } else { i += 1 }
        }
        func hex(_ r: Range<Int>) -> String { r.map { String(groups[$0], radix: 16) }.joined(separator: ":") }
        if bestStart < 0 { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLen)..<8)
    }
}

/// One side of a TCP connection.
public struct Endpoint: Hashable, Sendable, Comparable {
    public var address: IPAddress
    public var port: UInt16

    public init(_ address: IPAddress, _ port: UInt16) {
        self.address = address
        self.port = port
    }

    public static func < (a: Endpoint, b: Endpoint) -> Bool {
        (a.address, a.port) < (b.address, b.port)
    }

    /// `1.2.3.4:80` or `[::1]:80`.
    public var text: String { address.isV6 ? "[\(address.text)]:\(port)" : "\(address.text):\(port)" }
    /// tcpdump's `1.2.3.4.80` form.
    public var dotted: String { "\(address.text).\(port)" }
}
