/// Reads one MessagePack value (the spec's every type) into decoded fields, over the frame's
/// bytes: nothing is copied, and nothing is allocated for what a count announces (a count is
/// checked against the bytes left before any element is read). Maps and arrays become groups;
/// strings, binaries and extension data keep their byte ranges; numbers are decoded.
///
/// One reader per decoder and message object, kept by the decoder's tables and reused for every
/// frame: its references are constants (`let`), so the per-value path touches no reference count.
final class MessagePackReader {
    /// The message's fields, written per value.
    let fields: FieldList
    /// The declared names of array-encoded objects (`MessagePackNames`' tables, which own them
    /// and this reader).
    let first: UnsafeMutableBufferPointer<Int32>
    let declared: UnsafeMutableBufferPointer<Int32>
    let children: UnsafeMutableBufferPointer<Int32>
    let maxDepth: Int
    let maxFields: Int
    @exclusivity(unchecked) var b = UnsafeRawBufferPointer(start: nil, count: 0)
    @exclusivity(unchecked) var pos = 0
    @exclusivity(unchecked) var problem: Problem?
    /// Findings that did not stop the decoding (a map key that is no name), said once each.
    @exclusivity(unchecked) var notes: [String] = []
    /// Where the value that could not be read starts.
    @exclusivity(unchecked) var failedAt: Int?

    enum Problem {
        case cut(need: Int)
        case neverUsed
        case tooDeep(Int)
        case tooMany(Int)
        case countTooLarge(count: UInt64, map: Bool)

        func text(at: Int) -> String {
            switch self {
            case .cut(let need): return "MessagePack value cut at byte \(at): \(need) more bytes announced than the body holds"
            case .neverUsed: return "byte 0xc1 at byte \(at) is no MessagePack type (the format never uses it)"
            case .tooDeep(let l): return "MessagePack nested deeper than \(l) levels (--max-depth) at byte \(at)"
            case .tooMany(let l): return "MessagePack value of more than \(l) fields at byte \(at)"
            case .countTooLarge(let c, let map):
                return "MessagePack \(map ? "map" : "array") at byte \(at) announces \(c) \(map ? "entries" : "elements"), more than the body can hold"
            }
        }
    }

    init(_ names: MessagePackNames, fields: FieldList, maxDepth: Int, maxFields: Int) {
        first = names.first
        declared = names.count
        children = names.children
        self.fields = fields
        self.maxDepth = maxDepth
        self.maxFields = maxFields
    }

    /// Ready for the body of `bytes` from `start`.
    func reset(_ bytes: UnsafeRawBufferPointer, start: Int) {
        b = bytes
        pos = start
        problem = nil
        failedAt = nil
        if !notes.isEmpty { notes.removeAll() }
    }

    /// How the elements of field `n` of message `mi` are named.
    @inline(__always)
    func naming(_ mi: Int32, _ n: Int32) -> Naming {
        let c = children[Int(first[Int(mi)] + n)]
        return c == -1 ? .none : c >= 0 ? .fields(c) : .each(-2 - c)
    }

    /// A big-endian unsigned integer of `n` bytes at `at` (bounds checked by the caller).
    @inline(__always)
    func be(_ at: Int, _ n: Int) -> UInt64 {
        var v: UInt64 = 0
        var i = 0
        while i < n { v = v << 8 | UInt64(b[at + i]); i += 1 }
        return v
    }

    /// True when `n` more bytes follow `pos` (else the problem is set).
    @inline(__always)
    func need(_ n: Int) -> Bool {
        if b.count - pos >= n { return true }
        problem = .cut(need: n - (b.count - pos))
        return false
    }

    @inline(__always)
    func add(_ name: FieldName, _ v: FieldValue, _ offset: Int, _ width: Int, _ depth: Int) -> Bool {
        guard fields.count < maxFields else { problem = .tooMany(maxFields); return false }
        fields.append(DecodedField(name: name, value: v, offset: Int32(offset), width: Int32(width),
                                     depth: Int16(max(0, depth - 1))))
        return true
    }

    /// What names an array's elements: their places, a message's declared fields in order (an
    /// object written as an array), or each element is such a message.
    enum Naming { case none, fields(Int32), each(Int32) }

    /// The value at `pos`, named `name`. A top-level map or array is the body itself: its
    /// members are shown at depth 0.
    func value(name: FieldName, depth: Int, naming: Naming) -> Bool {
        let s = pos
        if one(name: name, depth: depth, naming: naming) { return true }
        // The innermost value that failed: what is shown undecoded starts there.
        if failedAt == nil { failedAt = s }
        return false
    }

    func one(name: FieldName, depth: Int, naming: Naming) -> Bool {
        guard pos < b.count else { problem = .cut(need: 1); return false }
        let s = pos
        let c = b[pos]
        pos += 1
        switch c {
        case 0x00...0x7f: return add(name, .unsigned(UInt64(c)), s, 1, depth)
        case 0xe0...0xff: return add(name, .signed(Int64(Int8(bitPattern: c))), s, 1, depth)
        case 0x80...0x8f: return map(name, count: UInt64(c & 0x0f), start: s, depth: depth)
        case 0x90...0x9f: return array(name, count: UInt64(c & 0x0f), start: s, depth: arrayDepth(depth, UInt64(c & 0x0f), naming), naming: naming)
        case 0xa0...0xbf: return blob(name, .string, length: Int(c & 0x1f), depth: depth)
        case 0xc0: return add(name, .null, s, 1, depth)
        case 0xc1: problem = .neverUsed; return false
        case 0xc2, 0xc3: return add(name, .bool(c == 0xc3), s, 1, depth)
        case 0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb:
            let n = c >= 0xd9 ? 1 << Int(c - 0xd9) : 1 << Int(c - 0xc4)
            guard need(n) else { return false }
            let length = be(pos, n)
            pos += n
            guard length <= UInt64(b.count - pos) else { problem = .cut(need: Int(clamping: length) - (b.count - pos)); return false }
            return blob(name, c >= 0xd9 ? .string : .bytes, length: Int(length), depth: depth)
        case 0xc7, 0xc8, 0xc9:
            let n = 1 << Int(c - 0xc7)
            guard need(n + 1) else { return false }
            let length = be(pos, n)
            let type = Int8(bitPattern: b[pos + n])
            pos += n + 1
            guard length <= UInt64(b.count - pos) else { problem = .cut(need: Int(clamping: length) - (b.count - pos)); return false }
            return blob(name, .ext(type), length: Int(length), depth: depth)
        case 0xd4...0xd8:
            guard need(1) else { return false }
            let type = Int8(bitPattern: b[pos])
            pos += 1
            let length = 1 << Int(c - 0xd4)
            guard need(length) else { return false }
            return blob(name, .ext(type), length: length, depth: depth)
        case 0xca:
            guard need(4) else { return false }
            pos += 4
            return add(name, .float(Double(Float(bitPattern: UInt32(be(s + 1, 4))))), s + 1, 4, depth)
        case 0xcb:
            guard need(8) else { return false }
            pos += 8
            return add(name, .float(Double(bitPattern: be(s + 1, 8))), s + 1, 8, depth)
        case 0xcc...0xcf:
            let n = 1 << Int(c - 0xcc)
            guard need(n) else { return false }
            pos += n
            return add(name, .unsigned(be(s + 1, n)), s + 1, n, depth)
        case 0xd0...0xd3:
            let n = 1 << Int(c - 0xd0)
            guard need(n) else { return false }
            pos += n
            // Sign-extended from its width.
            let shift = UInt64(64 - 8 * n)
            return add(name, .signed(Int64(bitPattern: be(s + 1, n) << shift) >> shift), s + 1, n, depth)
        case 0xdc, 0xdd, 0xde, 0xdf:
            let n = c & 1 == 0 ? 2 : 4
            guard need(n) else { return false }
            let count = be(pos, n)
            pos += n
            return c <= 0xdd ? array(name, count: count, start: s, depth: arrayDepth(depth, count, naming), naming: naming)
                : map(name, count: count, start: s, depth: depth)
        default: return false  // (every byte is covered above)
        }
    }

    /// A top-level array is the body's members only when each element has a declared name (an
    /// object written as an array); otherwise it is one field, `body`, so that every member of
    /// the body has a name.
    @inline(__always)
    func arrayDepth(_ depth: Int, _ count: UInt64, _ naming: Naming) -> Int {
        guard depth == 0 else { return depth }
        if case .fields(let mi) = naming, count <= UInt64(declared[Int(mi)]) { return 0 }
        return 1
    }

    @inline(__always)
    func blob(_ name: FieldName, _ v: FieldValue, length: Int, depth: Int) -> Bool {
        guard need(length) else { return false }
        let s = pos
        pos += length
        return add(name, v, s, length, depth)
    }

    /// Opens a group (none for the top level); returns its index in the fields, or -1.
    func open(_ name: FieldName, _ v: FieldValue, start: Int, depth: Int) -> Int? {
        guard depth < maxDepth else { problem = .tooDeep(maxDepth); return nil }
        guard depth > 0 else { return -1 }
        let i = fields.count
        guard add(name, v, start, 0, depth) else { return nil }
        return i
    }

    /// Closes a group: its count of children (as many as were read, when it was cut) and width.
    func close(_ i: Int, count: Int32, start: Int, map: Bool) {
        guard i >= 0 else { return }
        fields[i].value = map ? .object(count: count) : .array(count: count)
        fields[i].width = Int32(pos - start)
    }

    func array(_ name: FieldName, count: UInt64, start: Int, depth: Int, naming: Naming) -> Bool {
        // Every element takes at least one byte: a count the body cannot hold is refused before
        // anything is read.
        guard count <= UInt64(b.count - pos) else { problem = .countTooLarge(count: count, map: false); return false }
        // Named elements make an object; an array with more elements than names stays an array.
        var naming = naming
        var named = 0
        if case .fields(let mi) = naming {
            named = Int(declared[Int(mi)])
            if count > UInt64(named) { naming = .none; named = 0 }
        }
        guard let g = open(name, named == 0 ? .array(count: 0) : .object(count: 0), start: start, depth: depth) else { return false }
        var n: Int32 = 0
        var ok = true
        while UInt64(n) < count {
            var childName = FieldName.element(n)
            var childNaming = Naming.none
            switch naming {
            case .none: break
            case .each(let mi): childNaming = .fields(mi)
            case .fields(let mi):
                if Int(n) < named {
                    childName = .field(mi, n)
                    // A nested message is an array too; a declared array of them
                    // (`Item[rest] items`) an array of such arrays.
                    childNaming = self.naming(mi, n)
                }
            }
            guard value(name: childName, depth: depth + 1, naming: childNaming) else { ok = false; break }
            n += 1
        }
        close(g, count: n, start: start, map: named > 0)
        return ok
    }

    func map(_ name: FieldName, count: UInt64, start: Int, depth: Int) -> Bool {
        guard count <= UInt64(b.count - pos) / 2 else { problem = .countTooLarge(count: count, map: true); return false }
        guard let g = open(name, .object(count: 0), start: start, depth: depth) else { return false }
        var n: Int32 = 0
        var ok = true
        while UInt64(n) < count {
            guard let key = key(index: n, depth: depth + 1) else { ok = false; break }
            guard value(name: key, depth: depth + 1, naming: .none) else { ok = false; break }
            n += 1
        }
        close(g, count: n, start: start, map: true)
        return ok
    }

    /// A map key as a field name: a string (its bytes), an integer or a boolean; any other key
    /// (nil, a float, binary, a map, an array, an extension) is read over and the entry named
    /// by its place, said once.
    func key(index: Int32, depth: Int) -> FieldName? {
        let s = pos
        if let k = keyName(index: index, depth: depth) { return k }
        if failedAt == nil { failedAt = s }
        return nil
    }

    func keyName(index: Int32, depth: Int) -> FieldName? {
        guard pos < b.count else { problem = .cut(need: 1); return nil }
        let s = pos
        let c = b[pos]
        switch c {
        case 0xa0...0xbf:
            let n = Int(c & 0x1f)
            pos += 1
            guard need(n) else { return nil }
            pos += n
            return .textKey(Int32(s + 1), Int32(n))
        case 0xd9, 0xda, 0xdb:
            let w = 1 << Int(c - 0xd9)
            pos += 1
            guard need(w) else { return nil }
            let length = be(pos, w)
            pos += w
            guard length <= UInt64(b.count - pos) else { problem = .cut(need: Int(clamping: length) - (b.count - pos)); return nil }
            let ks = pos
            pos += Int(length)
            return .textKey(Int32(ks), Int32(length))
        default:
            // Integers and booleans: read as a value, then taken back as a name.
            let before = fields.count
            guard value(name: .element(index), depth: depth, naming: .none) else { return nil }
            if fields.count == before + 1 {
                switch fields[before].value {
                case .unsigned(let v): fields.removeLast(); return .uintKey(v)
                case .signed(let v): fields.removeLast(); return v < 0 ? .intKey(v) : .uintKey(UInt64(v))
                case .bool(let v): fields.removeLast(); return .boolKey(v)
                default: break
                }
            }
            while fields.count > before { fields.removeLast() }
            if notes.isEmpty {
                notes.append("MessagePack map key at byte \(s) is not a string, integer or boolean: its entry is named by its place")
            }
            return .element(index)
        }
    }
}
