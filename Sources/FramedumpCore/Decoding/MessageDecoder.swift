/// Decodes a frame's header and body against a protocol schema into a DecodedMessage.
public struct MessageDecoder {
    public let schema: ProtocolSchema
    public let layout: FrameLayout
    static let maxDepth = 32
    static let maxArray: UInt64 = 1 << 20

    public init(schema: ProtocolSchema) {
        self.schema = schema
        layout = FrameLayout(schema)
    }

    public func decode(_ frame: Frame, _ dir: Direction, into m: DecodedMessage) {
        m.reset()
        m.frame = frame
        m.direction = dir
        let b = frame.bytes
        for (i, f) in layout.fields.enumerated() where !f.isPadding {
            let v = layout.value(i, in: b, at: 0) ?? 0
            m.headerFields.append(DecodedField(
                name: .header(Int32(i)), value: f.signed ? .signed(Int64(bitPattern: v)) : .unsigned(v),
                offset: Int32(f.offset), width: Int32(f.width), depth: 0))
        }
        m.bodyOffset = layout.headerSize
        m.id = layout.messageID(b, at: 0)
        if let id = m.id { m.message = schema.message(dir, id) }
        let body = layout.headerSize
        switch schema.body {
        case .fields:
            guard let mi = m.message else {
                if m.id != nil && b.count > body || schema.hasMessageIDs { m.warnings.append(.unknownMessage(m.id ?? 0)) }
                raw(b, from: body, into: m)
                return
            }
            var pos = body
            if !decodeFields(mi, b, &pos, depth: 0, into: m) { return }
            if pos < b.count {
                m.warnings.append(.trailingBytes(b.count - pos, at: pos))
                m.fields.append(DecodedField(name: .builtin("trailing"), value: .bytes, offset: Int32(pos),
                                             width: Int32(b.count - pos), depth: 0))
            }
        case .json:
            if b.count > body {
                var parser = JSONFlattener(bytes: b, start: body, into: m)
                if !parser.run() {
                    m.fields.removeAll(keepingCapacity: true)
                    m.warnings.append(.invalidJSON(at: parser.errorAt))
                    m.fields.append(DecodedField(name: .builtin("text"), value: .string, offset: Int32(body),
                                                 width: Int32(b.count - body), depth: 0))
                }
            }
        case .text:
            m.fields.append(DecodedField(name: .builtin("text"), value: .string, offset: Int32(body),
                                         width: Int32(b.count - body), depth: 0))
        case .raw, .protobuf:
            raw(b, from: body, into: m)
        }
    }

    func raw(_ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        if b.count > body {
            m.fields.append(DecodedField(name: .builtin("body"), value: .bytes, offset: Int32(body),
                                         width: Int32(b.count - body), depth: 0))
        }
    }

    /// Appends the fields of message `mi`; false when the body ran out (a warning was added).
    func decodeFields(_ mi: Int, _ b: UnsafeRawBufferPointer, _ pos: inout Int, depth: Int,
                      into m: DecodedMessage) -> Bool {
        guard depth < Self.maxDepth else { m.warnings.append(.nestingTooDeep); return false }
        let def = schema.messages[mi]
        for (fi, f) in def.fields.enumerated() {
            let name = FieldName.field(Int32(mi), Int32(fi))
            guard let count = f.array else {
                if !decodeValue(f, name, b, &pos, depth: depth, into: m) { return false }
                continue
            }
            let start = pos
            var n: UInt64
            switch count {
            case .fixed(let k): n = UInt64(k)
            case .prefixed(let w):
                guard let v = b.uint(pos, width: w, bigEndian: schema.order == .big) else {
                    m.warnings.append(.bodyTooShort(field: f.name, at: pos)); return false
                }
                n = v
                pos += w
            case .field(let idx):
                n = countValue(of: idx, in: m, depth: depth)
            }
            // Never trust a count beyond what the frame can hold.
            let minWidth = f.type.fixedWidth ?? 0
            let room = UInt64(b.count - pos)
            if n > Self.maxArray || (minWidth > 0 && n > room / UInt64(minWidth)) {
                m.warnings.append(.arrayTooLong(field: f.name, count: n))
                return false
            }
            let headerIndex = m.fields.count
            m.fields.append(DecodedField(name: name, value: .array(count: Int32(n)), offset: Int32(start),
                                         width: 0, depth: Int16(depth)))
            var i: UInt64 = 0
            while i < n {
                let before = pos
                if !decodeValue(f, .element(Int32(i)), b, &pos, depth: depth + 1, into: m) {
                    m.fields[headerIndex].width = Int32(pos - start)
                    return false
                }
                // Elements that take no bytes would let a huge count spin: stop at the frame's end.
                if pos == before && pos >= b.count && i > 0 { break }
                i += 1
            }
            m.fields[headerIndex].width = Int32(pos - start)
        }
        return true
    }

    /// The value of an earlier field at this depth (for `Type[countField]` arrays).
    func countValue(of idx: Int, in m: DecodedMessage, depth: Int) -> UInt64 {
        for f in m.fields.reversed() where f.depth == depth {
            if case .field(_, let fi) = f.name, Int(fi) == idx {
                switch f.value {
                case .unsigned(let v): return v
                case .signed(let v): return v < 0 ? 0 : UInt64(v)
                default: return 0
                }
            }
        }
        return 0
    }

    func decodeValue(_ f: FieldDef, _ name: FieldName, _ b: UnsafeRawBufferPointer, _ pos: inout Int,
                     depth: Int, into m: DecodedMessage) -> Bool {
        let start = pos
        func short() -> Bool { m.warnings.append(.bodyTooShort(field: f.name, at: start)); return false }
        var value: FieldValue
        switch f.type {
        case .unsigned(let w, let o):
            guard let v = b.uint(pos, width: w, bigEndian: o == .big) else { return short() }
            value = .unsigned(v); pos += w
        case .signed(let w, let o):
            guard let v = b.uint(pos, width: w, bigEndian: o == .big) else { return short() }
            let shift = UInt64(64 - w * 8)
            value = .signed(Int64(bitPattern: v << shift) >> Int64(shift)); pos += w
        case .enumeration(_, let base):
            guard let v = b.uint(pos, width: base.width, bigEndian: base.order == .big) else { return short() }
            if base.signed {
                let shift = UInt64(64 - base.width * 8)
                value = .signed(Int64(bitPattern: v << shift) >> Int64(shift))
            } else { value = .unsigned(v) }
            pos += base.width
        case .float32(let o):
            guard let v = b.uint(pos, width: 4, bigEndian: o == .big) else { return short() }
            value = .float(Double(Float(bitPattern: UInt32(v)))); pos += 4
        case .float64(let o):
            guard let v = b.uint(pos, width: 8, bigEndian: o == .big) else { return short() }
            value = .float(Double(bitPattern: v)); pos += 8
        case .bool:
            guard let v = b.u8(pos) else { return short() }
            value = .bool(v != 0); pos += 1
        case .string(let rule), .bytes(let rule):
            guard let (s, n, next) = span(rule, b, pos) else { return short() }
            var isString = false
            if case .string = f.type { isString = true }
            var n2 = n
            if isString, case .fixed = rule {
                // Fixed-size strings are NUL-padded.
                while n2 > 0 && b[s + n2 - 1] == 0 { n2 -= 1 }
            }
            m.fields.append(DecodedField(name: name, value: isString ? .string : .bytes, offset: Int32(s),
                                         width: Int32(n2), depth: Int16(depth)))
            pos = next
            return true
        case .message(let mi):
            let idx = m.fields.count
            m.fields.append(DecodedField(name: name, value: .object(count: Int32(schema.messages[mi].fields.count)),
                                         offset: Int32(start), width: 0, depth: Int16(depth)))
            let ok = decodeFields(mi, b, &pos, depth: depth + 1, into: m)
            m.fields[idx].width = Int32(pos - start)
            if !ok {
                // Count only the children that were decoded.
                var c: Int32 = 0
                for f in m.fields[(idx + 1)...] where f.depth == Int16(depth + 1) { c += 1 }
                m.fields[idx].value = .object(count: c)
            }
            return ok
        }
        m.fields.append(DecodedField(name: name, value: value, offset: Int32(start), width: Int32(pos - start),
                                     depth: Int16(depth)))
        return true
    }

    /// Where a string/bytes value lies: (start, length, position after it).
    func span(_ rule: StringRule, _ b: UnsafeRawBufferPointer, _ pos: Int) -> (Int, Int, Int)? {
        switch rule {
        case .prefixed(let w):
            guard let n = b.uint(pos, width: w, bigEndian: schema.order == .big) else { return nil }
            guard n <= UInt64(b.count - pos - w) else { return nil }
            return (pos + w, Int(n), pos + w + Int(n))
        case .nulTerminated:
            var i = pos
            while i < b.count && b[i] != 0 { i += 1 }
            guard i < b.count else { return nil }
            return (pos, i - pos, i + 1)
        case .rest:
            return (pos, max(0, b.count - pos), max(pos, b.count))
        case .fixed(let n):
            guard b.count - pos >= n else { return nil }
            return (pos, n, pos + n)
        }
    }
}
