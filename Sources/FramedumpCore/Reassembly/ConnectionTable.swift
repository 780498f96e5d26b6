/// Connections by 4-tuple: an open-addressing table with linear probing. Looked up for
/// every packet, so it hashes the key with one cheap mix instead of a general-purpose hasher
/// (SYN-flood resistance comes from the connection limit, not from the hash).
package struct ConnectionTable {
    private var slots: [Connection?]
    private var mask: Int
    package private(set) var count = 0

    init(capacity: Int = 1024) {
        var n = 16
        while n < capacity * 2 { n <<= 1 }
        slots = [Connection?](repeating: nil, count: n)
        mask = n - 1
    }

    @inline(__always)
    static func mix(_ k: ConnectionKey) -> Int {
        var m = k.a.address.lo &* 0x9E37_79B9_7F4A_7C15 ^ k.b.address.lo
        m = (m ^ (m >> 29)) &* 0xBF58_476D_1CE4_E5B9 ^ k.a.address.hi ^ (k.b.address.hi &* 0x94D0_49BB_1331_11EB)
        m ^= UInt64(k.a.port) << 16 | UInt64(k.b.port) << 32
        m = (m ^ (m >> 31)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: m ^ (m >> 29))
    }

    @inline(__always)
    func find(_ k: ConnectionKey) -> Connection? {
        var i = Self.mix(k) & mask
        while let c = slots[i] {
            if c.key == k { return c }
            i = (i + 1) & mask
        }
        return nil
    }

    mutating func insert(_ c: Connection) {
        if (count + 1) * 2 > slots.count { grow() }
        var i = Self.mix(c.key) & mask
        while let other = slots[i] {
            if other.key == c.key { slots[i] = c; return }
            i = (i + 1) & mask
        }
        slots[i] = c
        count += 1
    }

    /// Removes by backward shifting, so no tombstones accumulate.
    @discardableResult
    mutating func remove(_ k: ConnectionKey) -> Bool {
        var i = Self.mix(k) & mask
        while let c = slots[i] {
            if c.key == k { break }
            i = (i + 1) & mask
        }
        guard slots[i] != nil else { return false }
        slots[i] = nil
        count -= 1
        var j = (i + 1) & mask
        while let c = slots[j] {
            let home = Self.mix(c.key) & mask
            // Move c back into the hole if its home is not between the hole and its slot.
            let distHole = (i - home) & mask, distHere = (j - home) & mask
            if distHole < distHere {
                slots[i] = c
                slots[j] = nil
                i = j
            }
            j = (j + 1) & mask
        }
        return true
    }

    private mutating func grow() {
        let old = slots
        slots = [Connection?](repeating: nil, count: old.count * 2)
        mask = slots.count - 1
        count = 0
        for c in old { if let c { insert(c) } }
    }

    package var all: [Connection] { slots.compactMap { $0 } }
}
