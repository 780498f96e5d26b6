/// Validates a JSON body (RFC 8259) and lays it out as decoded fields: objects and arrays
/// become groups, scalars keep their raw bytes. Depth is capped; nothing is copied.
struct JSONFlattener {
    let b: UnsafeRawBufferPointer
    var pos: Int
    let m: DecodedMessage
    var errorAt = 0
    let start: Int
    /// Why the body was refused, when it is valid JSON all the same.
    var tooDeep = false
    var loneSurrogate = false
    /// `--max-depth`.
    let maxDepth: Int

    init(bytes: UnsafeRawBufferPointer, start: Int, into m: DecodedMessage, maxDepth: Int = Limits().maxDepth) {
        self.maxDepth = maxDepth
        b = bytes
        pos = start
        self.start = start
        self.m = m
    }

    mutating func run() -> Bool {
        skipSpace()
        guard value(name: .builtin(.json), depth: 0) else { errorAt = pos; return false }
        skipSpace()
        if pos != b.count { errorAt = pos; return false }
        return true
    }

    mutating func skipSpace() {
        while pos < b.count, b[pos] == 0x20 || b[pos] == 0x0a || b[pos] == 0x0d || b[pos] == 0x09 { pos += 1 }
    }

    /// A top-level object's members are shown at depth 0 (the body *is* the object).
    mutating func value(name: FieldName, depth: Int) -> Bool {
        guard pos < b.count else { return false }
        guard depth < maxDepth else { tooDeep = true; return false }
        let s = pos
        switch b[pos] {
        case 0x7b: return container(name: name, depth: depth, object: true)
        case 0x5b: return container(name: name, depth: depth, object: false)
        case 0x22:
            guard let (cs, ce) = string() else { return false }
            m.fields.append(DecodedField(name: name, value: .jsonString, offset: Int32(cs), width: Int32(ce - cs),
                                         depth: Int16(max(0, depth - 1))))
            return true
        case 0x74, 0x66, 0x6e:
            // true, false, null: read as bytes (no string per literal on this path).
            let n = literalLength()
            guard n > 0 else { return false }
            pos += n
            m.fields.append(DecodedField(name: name, value: .jsonLiteral, offset: Int32(s), width: Int32(n),
                                         depth: Int16(max(0, depth - 1))))
            return true
        default:
            guard number() else { return false }
            m.fields.append(DecodedField(name: name, value: .jsonNumber, offset: Int32(s), width: Int32(pos - s),
                                         depth: Int16(max(0, depth - 1))))
            return true
        }
    }

    /// The length of the `true`, `false` or `null` at `pos` (0: none).
    @inline(__always)
    func literalLength() -> Int {
        if pos + 4 <= b.count {
            // The four bytes as one little-endian word: "true", "null", "fals".
            let w = UInt32(littleEndian: b.loadUnaligned(fromByteOffset: pos, as: UInt32.self))
            if w == 0x6575_7274 || w == 0x6c6c_756e { return 4 }
            if w == 0x736c_6166 && pos + 5 <= b.count && b[pos + 4] == 0x65 { return 5 }
        }
        return 0
    }

    mutating func container(name: FieldName, depth: Int, object: Bool) -> Bool {
        let s = pos
        pos += 1
        var idx = -1
        if depth > 0 {
            idx = m.fields.count
            m.fields.append(DecodedField(name: name, value: object ? .object(count: 0) : .array(count: 0),
                                         offset: Int32(s), width: 0, depth: Int16(depth - 1)))
        }
        var count: Int32 = 0
        skipSpace()
        let close: UInt8 = object ? 0x7d : 0x5d
        if pos < b.count && b[pos] == close {
            pos += 1
        } else {
            while true {
                skipSpace()
                var childName = FieldName.element(count)
                if object {
                    guard pos < b.count, b[pos] == 0x22, let (ks, ke) = string() else { return false }
                    childName = .key(Int32(ks), Int32(ke - ks))
                    skipSpace()
                    guard pos < b.count, b[pos] == 0x3a else { return false }
                    pos += 1
                    skipSpace()
                }
                guard value(name: childName, depth: depth + 1) else { return false }
                count += 1
                skipSpace()
                guard pos < b.count else { return false }
                if b[pos] == 0x2c { pos += 1; continue }
                if b[pos] == close { pos += 1; break }
                return false
            }
        }
        if idx >= 0 {
            m.fields[idx].value = object ? .object(count: count) : .array(count: count)
            m.fields[idx].width = Int32(pos - s)
        }
        return true
    }

    /// A string token; returns the range inside the quotes (escapes validated, kept raw).
    mutating func string() -> (Int, Int)? {
        pos += 1
        let s = pos
        while pos < b.count {
            // Plain ASCII eight bytes at a time, straight to the first quote, backslash,
            // control or high byte.
            while pos + 8 <= b.count {
                let w = b.loadUnaligned(fromByteOffset: pos, as: UInt64.self)
                let m = JSONEscape.mask(w) | w & 0x8080_8080_8080_8080
                if m != 0 { pos += m.trailingZeroBitCount >> 3; break }
                pos += 8
            }
            guard pos < b.count else { break }
            let c = b[pos]
            if c == 0x22 { let e = pos; pos += 1; return (s, e) }
            if c < 0x20 { return nil }
            if c == 0x5c {
                guard pos + 1 < b.count else { return nil }
                let e = b[pos + 1]
                if e == 0x75 {
                    guard pos + 5 < b.count else { return nil }
                    for k in 2...5 where !isHex(b[pos + k]) { return nil }
                    // A surrogate must come as a pair (high, then low): a lone one is no
                    // Unicode text, and copied into NDJSON it would not be strict JSON.
                    let unit = hex4(pos + 2)
                    if unit >= 0xD800 && unit <= 0xDBFF {
                        guard pos + 11 < b.count, b[pos + 6] == 0x5c, b[pos + 7] == 0x75,
                              (8...11).allSatisfy({ isHex(b[pos + $0]) }), (0xDC00...0xDFFF).contains(hex4(pos + 8)) else {
                            loneSurrogate = true
                            return nil
                        }
                        pos += 6
                    } else if unit >= 0xDC00 && unit <= 0xDFFF {
                        loneSurrogate = true
                        return nil
                    }
                    pos += 6
                } else if [0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].contains(e) {
                    pos += 2
                } else { return nil }
                continue
            }
            if c >= 0x80 {
                let l = UTF8Check.sequenceLength(b, pos)
                if l == 0 { return nil }
                pos += l
                continue
            }
            pos += 1
        }
        return nil
    }

    func hex4(_ at: Int) -> Int {
        var v = 0
        for k in 0..<4 {
            let c = b[at + k]
            v = v << 4 | Int(c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10)
        }
        return v
    }

    func isHex(_ c: UInt8) -> Bool { (0x30...0x39).contains(c) || (0x41...0x46).contains(c) || (0x61...0x66).contains(c) }

    mutating func number() -> Bool {
        let s = pos
        if pos < b.count && b[pos] == 0x2d { pos += 1 }
        guard pos < b.count, (0x30...0x39).contains(b[pos]) else { return false }
        if b[pos] == 0x30 { pos += 1 } else { while pos < b.count, (0x30...0x39).contains(b[pos]) { pos += 1 } }
        if pos < b.count && b[pos] == 0x2e {
            pos += 1
            guard pos < b.count, (0x30...0x39).contains(b[pos]) else { return false }
            while pos < b.count, (0x30...0x39).contains(b[pos]) { pos += 1 }
        }
        if pos < b.count && (b[pos] == 0x65 || b[pos] == 0x45) {
            pos += 1
            if pos < b.count && (b[pos] == 0x2b || b[pos] == 0x2d) { pos += 1 }
            guard pos < b.count, (0x30...0x39).contains(b[pos]) else { return false }
            while pos < b.count, (0x30...0x39).contains(b[pos]) { pos += 1 }
        }
        return pos > s
    }
}
