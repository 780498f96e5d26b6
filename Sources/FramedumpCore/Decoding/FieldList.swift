/// The decoded fields of one message: a growable block reused for every message of a
/// session, so appending a field is a store and a count, with no copy-on-write checks.
public final class FieldList: RandomAccessCollection {
    @exclusivity(unchecked) var base: UnsafeMutablePointer<DecodedField>
    @exclusivity(unchecked) var capacity: Int
    @exclusivity(unchecked) public private(set) var count = 0

    init(capacity: Int) {
        self.capacity = Swift.max(4, capacity)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(i: Int) -> DecodedField {
        get {
            precondition(i >= 0 && i < count)
            return base[i]
        }
        set {
            precondition(i >= 0 && i < count)
            base[i] = newValue
        }
    }

    @inline(__always)
    func append(_ f: DecodedField) {
        if count == capacity { grow() }
        (base + count).initialize(to: f)
        count += 1
    }

    /// Takes back the last field (a value a decoder read before it knew it was a name).
    @inline(__always)
    func removeLast() {
        precondition(count > 0)
        count -= 1
        (base + count).deinitialize(count: 1)
    }

    func grow() {
        let nb = UnsafeMutablePointer<DecodedField>.allocate(capacity: capacity * 2)
        nb.moveInitialize(from: base, count: count)
        base.deallocate()
        base = nb
        capacity *= 2
    }

    @inline(__always)
    func removeAll() {
        base.deinitialize(count: count)
        count = 0
    }

    @inline(__always)
    public func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<DecodedField>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }
}
