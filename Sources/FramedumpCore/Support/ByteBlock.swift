/// A growable block of bytes owned by one stream (a message being assembled, an inflated
/// payload): appended to and emptied per message, never shared, so no copy-on-write checks or
/// reference counting on the per-message path. Grows to the largest message seen, no further.
final class ByteBlock {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private(set) var capacity: Int

    init(capacity: Int = 256) {
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 8)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
    var isEmpty: Bool { count == 0 }

    @inline(__always)
    func removeAll() { count = 0 }

    /// Room for `n` more bytes; returns where they go (the caller then calls `commit`).
    @inline(__always)
    func reserve(_ n: Int) -> UnsafeMutableRawPointer {
        if capacity - count < n { grow(count + n) }
        return base + count
    }

    @inline(__always)
    func commit(_ n: Int) { count += n }

    @inline(__always)
    func removeLast(_ n: Int) { count -= min(n, count) }

    @inline(__always)
    func append(_ b: UnsafeRawBufferPointer) {
        guard let src = b.baseAddress, !b.isEmpty else { return }
        reserve(b.count).copyMemory(from: src, byteCount: b.count)
        count += b.count
    }

    private func grow(_ need: Int) {
        var c = max(capacity * 2, 256)
        while c < need { c *= 2 }
        let nb = UnsafeMutableRawPointer.allocate(byteCount: c, alignment: 8)
        nb.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = nb
        capacity = c
    }
}
