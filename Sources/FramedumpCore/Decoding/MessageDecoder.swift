/// Decodes a frame's header and body against a protocol schema into a DecodedMessage.
public final class MessageDecoder {
    public let schema: ProtocolSchema
    /// The main layout (c2s's, when the directions' headers differ).
    public let layout: FrameLayout
    /// Per direction: the main layout, and the first frame's (nil: the main one).
    public let layouts: [FrameLayout]
    public let firstLayouts: [FrameLayout?]
    /// The frames of a direction, or a first frame, have a layout of their own.
    let layoutsDiffer: Bool
    /// Some direction has a message for any id no other names (`= *`).
    let hasOtherwise: Bool
    /// Connection phases (nil: none): which message an id names depends on `phase`, the phase
    /// of the connection whose frame is being decoded (set by its session before each frame).
    let phases: PhaseTable?
    let phased: Bool
    @exclusivity(unchecked) var phase: Int32 = 0
    let program: DecodeProgram
    /// `--max-depth` and `--max-array`.
    let maxDepth: Int
    let maxArray: UInt64
    /// Fields one message may produce (each is 24 bytes of memory): nested arrays multiply.
    static let maxFields = 1 << 20

    /// Undoes the protocol's body transforms (decryption, decompression, XOR), if it has any.
    let transforms: TransformChain?
    /// How the body after the header is read (`body ...;`).
    let bodyKind: any BodyFormat.Type
    /// The body kind's own tables of the schema (`BodyFormat.tables`), made once.
    let bodyTables: AnyObject?

    public init(schema: ProtocolSchema, limits: Limits = Limits()) {
        self.schema = schema
        maxDepth = limits.maxDepth
        maxArray = UInt64(limits.maxArray)
        if schema.variants.isEmpty {
            if FramingRegistry.kind(of: schema)?.perDirection == true {
                layouts = Direction.allCases.map { FrameLayout(schema, direction: $0) }
                layout = layouts[0]
            } else {
                layout = FrameLayout(schema)
                layouts = [layout, layout]
            }
            firstLayouts = [nil, nil]
        } else {
            let ls = Direction.allCases.map { d in FrameLayout(schema, schema.variants.first { $0.direction == d && !$0.first }!) }
            layout = ls[0]
            layouts = ls
            firstLayouts = Direction.allCases.map { d in schema.variants.first { $0.direction == d && $0.first }.map { FrameLayout(schema, $0) } }
        }
        layoutsDiffer = layouts[0] !== layouts[1] || firstLayouts.contains { $0 != nil }
        hasOtherwise = !schema.otherwise.isEmpty
        phases = PhaseTable(schema)
        phased = phases != nil
        bodyKind = schema.body.kind
        bodyTables = bodyKind.tables(schema)
        program = DecodeProgram(schema)
        transforms = schema.transforms.isEmpty ? nil
            : TransformChain(schema.transforms, layout: layout, limit: limits.maxInflate)
        protoTarget = .allocate(capacity: max(1, schema.messages.count))
        for (i, md) in schema.messages.enumerated() { protoTarget[i] = Int32(md.protoType ?? -1) }
        hasIDs = schema.hasMessageIDs
        defaultMessage = schema.defaultMessage
        protoDefaults = schema.protoAddDefaults
    }

    deinit { protoTarget.deallocate() }

    /// Per schema message: the protobuf message its body is (-1: none).
    let protoTarget: UnsafeMutableBufferPointer<Int32>
    let hasIDs: Bool
    /// The message every frame is, for a protocol whose frames carry no id.
    let defaultMessage: Int?
    let protoDefaults: Bool
    /// Where and why the last decoding stopped for good (a value no bytes could mend), not
    /// for want of bytes; reset by `measure`.
    @exclusivity(unchecked) var invalid: (at: Int, warning: DecodeWarning)?
    /// The id `variableHeader` read on its way (nil: the header has none, or it was not all there).
    @exclusivity(unchecked) var variableID: UInt64?
    /// The protobuf decoder for the DecodedMessage last decoded into (a session uses one).
    @exclusivity(unchecked) var protobuf: ProtobufDecoder?
    /// Where the fields of the messages being decoded lie, for `when parent.F` (see `Scope`).
    @exclusivity(unchecked) var slots: [Int32] = []

    /// `as`: the message the frame is, when its id does not say (a reply typed by its request).
    /// The message id `id` of direction `dir` selects: its own, else the direction's `= *` one.
    @inline(__always)
    func message(_ dir: Direction, _ id: UInt64) -> Int? {
        if _slowPath(phased) { return phases.unsafelyUnwrapped.message(phase, dir, id) }
        if let mi = program.message(dir, id) { return mi }
        return _slowPath(hasOtherwise) ? schema.otherwise[dir] : nil
    }

    /// The message id `id` of direction `dir` names itself (not a `= *` one), in the current phase.
    @inline(__always)
    func named(_ dir: Direction, _ id: UInt64) -> Int? {
        if _slowPath(phased) { return phases.unsafelyUnwrapped.named(phase, dir, id) }
        return program.message(dir, id)
    }

    /// The layout frame `f` of direction `dir` was cut with.
    @inline(__always)
    public func layout(of f: Frame, _ dir: Direction) -> FrameLayout {
        if _slowPath(f.first), let l = firstLayouts[dir.rawValue] { return l }
        return layouts[dir.rawValue]
    }

    public func decode(_ frame: Frame, _ dir: Direction, into m: DecodedMessage, as typed: Int? = nil) {
        // (One layout for every frame, the common case: read from a let, with no retain.)
        if _slowPath(layoutsDiffer) {
            decode(frame, dir, into: m, as: typed, layout: layout(of: frame, dir))
        } else {
            decode(frame, dir, into: m, as: typed, layout: layout)
        }
    }

    @inline(__always)
    func decode(_ frame: Frame, _ dir: Direction, into m: DecodedMessage, as typed: Int?, layout: FrameLayout) {
        m.reset()
        m.frame = frame
        m.direction = dir
        var b = frame.bytes
        let body = readHeader(b, layout, into: m)
        m.bodyOffset = body
        // (A header read field by field gave its id on the way: not read a second time.)
        m.id = layout.variable ? variableID : layout.messageID(b, at: 0)
        m.idSigned = layout.idSigned
        m.idPair = layout.idPair
        if let typed { m.message = typed } else if let id = m.id { m.message = message(dir, id) } else if _slowPath(!layout.choices.isEmpty) {
            m.message = layout.firstMessage(b)
        } else { m.message = layout.message ?? defaultMessage }
        // A framing kind's delimiter ends the frame and is no part of its body.
        if layout.trailerSize > 0 && frame.missing == 0 && b.count - body >= layout.trailerSize {
            b = UnsafeRawBufferPointer(rebasing: b[..<(b.count - layout.trailerSize)])
        }
        // Cut: what fits is decoded; the warnings of a body too short are this one.
        defer { if frame.missing > 0 { Self.cutWarnings(frame, m) } }
        if frame.missing > 0 {
            // A transformed body cannot be undone from a part of it: shown as it came.
            if transforms != nil || !bodyKind.decodesPart {
                raw(b, from: body, into: m)
                return
            }
        }
        if let transforms, b.count > body {
            switch transforms.run(b, headerSize: body, layout: layout, phase: phased ? phase : -1, steps: &m.transforms) {
            case .untouched: break
            case .done(let p):
                m.transformed = p
                b = p
            case .failed(let text):
                m.warnings.append(.transform(text))
                raw(b, from: body, into: m)
                return
            case .tooLarge(let text):
                m.warnings.append(.transformTooLarge(text))
                raw(b, from: body, into: m)
                return
            }
        }
        // A header with varints or digits that could not be read: said, and no body follows.
        if _slowPath(layout.variable && body == b.count && !m.warnings.isEmpty) { return }
        bodyKind.decode(self, b, from: body, into: m)
    }

    /// The header's fields into `m`; returns where the body starts.
    @inline(__always)
    func readHeader(_ b: UnsafeRawBufferPointer, _ layout: FrameLayout, into m: DecodedMessage) -> Int {
        if layout.variable { return variableHeader(b, layout, into: m) }
        var i = 0
        while i < layout.fieldCount {
            defer { i += 1 }
            if layout.isPadding(i) { continue }
            let v = layout.slotValue(i, in: b, at: 0) ?? 0
            m.headerFields.append(DecodedField(
                name: .header(layout.global(i)), value: layout.isSigned(i) ? .signed(Int64(bitPattern: v)) : .unsigned(v),
                offset: Int32(layout.offset(i)), width: Int32(layout.width(i)), depth: 0))
        }
        return layout.headerSize
    }

    /// A header with varints: each field read where the one before it ended. Returns where the
    /// body starts (the end of the bytes when the header itself is cut, which is said).
    func variableHeader(_ b: UnsafeRawBufferPointer, _ layout: FrameLayout, into m: DecodedMessage) -> Int {
        var p = 0
        variableID = nil
        var id: UInt64?, id2: UInt64?
        defer { if let v = id { variableID = layout.id(v, second: id2) } }
        for i in 0..<layout.fieldCount {
            let r = layout.read(i, in: b, at: p)
            guard case .value(let v, let n) = r else {
                let f = layout.fields[i]
                if r == .overlong {
                    m.warnings.append(.badValue(field: f.name, at: p, why: f.isDecimal ? "is no decimal number" : "is a varint longer than \(f.varintMax) bytes"))
                } else {
                    m.warnings.append(.bodyTooShort(field: f.name, at: p))
                }
                // A text header that is not there: the text shown as it came.
                if f.isDecimal && p < b.count {
                    m.fields.append(DecodedField(name: .builtin(.text), value: .string, offset: Int32(p),
                                                 width: Int32(b.count - p), depth: 0))
                }
                return b.count
            }
            if i == layout.idField { id = v } else if i == layout.idField2 { id2 = v }
            if !layout.isPadding(i) {
                m.headerFields.append(DecodedField(
                    name: .header(layout.global(i)), value: layout.isSigned(i) ? .signed(Int64(bitPattern: v)) : .unsigned(v),
                    offset: Int32(p), width: Int32(n), depth: 0))
                // (A stream's deframer refuses such a frame; a layer's message is said to differ.)
                if let c = layout.constant(i), c != v {
                    let text = { (x: UInt64) in layout.isSigned(i) ? String(Int64(bitPattern: x)) : String(x) }
                    m.warnings.append(.badValue(field: layout.fields[i].name, at: p, why: "is \(text(v)), not \(text(c))"))
                }
            }
            p += n
        }
        return p
    }

    /// A protobuf body: the message type bound to the id, or schema-less when there is none.
    func decodeProtobuf(_ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        let target = m.message.map { Int(protoTarget[$0]) } ?? -1
        if m.message == nil && hasIDs && (b.count > body || m.id != nil) {
            m.warnings.append(.protobuf("unknown message id \(m.idText ?? "0"): body decoded without a schema (field numbers, guessed types)"))
        }
        guard b.count > body || (target >= 0 && protoDefaults) else { return }
        if protobuf?.m !== m {
            protobuf = ProtobufDecoder(tables: schema.proto ?? ProtoTables.empty, owner: self, addDefaults: protoDefaults, into: m)
        }
        protobuf!.decode(target, b, from: body)
    }

    func raw(_ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        if b.count > body {
            m.fields.append(DecodedField(name: .builtin(.body), value: .bytes, offset: Int32(body),
                                         width: Int32(b.count - body), depth: 0))
        }
    }

    /// A message being decoded, for the messages nested in it: its index, and where its own
    /// fields' values are in `slots` (-1: not kept, as no nested message reads them).
    struct Scope {
        var message: Int32
        var slots: Int32
        static let none = Scope(message: -1, slots: -1)
    }

    /// Appends the fields of message `mi`; false when the body ran out (a warning was added).
    /// `parent`: the message it is nested in (`when parent.F` reads that one's fields).
    func decodeFields(_ mi: Int, _ b: UnsafeRawBufferPointer, _ pos: inout Int, depth: Int,
                      into m: DecodedMessage, parent: Scope = .none) -> Bool {
        guard depth < maxDepth else { return stopped(.nestingTooDeep(limit: maxDepth), at: pos, m) }
        let (first, n) = program.ranges[mi]
        // (Kept only for a message whose fields a nested one reads: rare.)
        let keeps = program.referenced[mi]
        let scope = Scope(message: Int32(mi), slots: keeps ? keepSlots(Int(n)) : -1)
        defer { if _slowPath(keeps) { slots.removeSubrange(Int(scope.slots)...) } }
        var k = Int(first)
        let end = k + Int(n)
        while k < end {
            let op = program.ops[k]
            k += 1
            if op.condition >= 0 && !holds(program.conditions[Int(op.condition)], m, depth: depth, parent: parent, own: scope) { continue }
            let name = FieldName.field(op.message, op.field)
            if op.count == .single {
                if _slowPath(keeps) {
                    let at = m.fields.count
                    if !decodeValue(op, name, b, &pos, depth: depth, into: m, scope: scope) { return false }
                    slots[Int(scope.slots) + Int(op.field)] = Int32(at)
                } else if !decodeValue(op, name, b, &pos, depth: depth, into: m, scope: scope) {
                    return false
                }
                continue
            }
            let start = pos
            var count: UInt64
            switch op.count {
            case .fixed: count = UInt64(op.countParam)
            case .prefixed:
                guard let v = b.uint(pos, width: Int(op.countParam), bigEndian: op.countBigEndian) else {
                    m.warnings.append(.bodyTooShort(field: fieldName(op), at: pos)); return false
                }
                count = v
                pos += Int(op.countParam)
            case .varint:
                guard case .value(let v, let n) = b.varint(pos, maxBytes: 10) else {
                    m.warnings.append(.bodyTooShort(field: fieldName(op), at: pos)); return false
                }
                count = v
                pos += n
            case .rest:
                // Elements until the body ends; every one takes a byte or the loop stops.
                count = UInt64(max(0, b.count - pos))
            case .until:
                // Elements until one passes the test; every one takes a byte or the loop stops.
                count = UInt64(max(0, b.count - pos)) + 1
            default:
                count = countValue(of: Int(op.countParam), inHeader: op.count == .headerField, in: m, depth: depth)
            }
            // Never trust a count beyond what the frame can hold.
            let minWidth = op.kind == .message || op.kind == .string || op.kind == .bytes ? 0
                : op.kind == .varint || op.kind == .svarint ? 1 : Int(op.width)
            let room = UInt64(b.count - pos)
            let fits = !(minWidth > 0 && count > room / UInt64(minWidth))
            if op.count != .rest && op.count != .until && (count > maxArray || !fits || UInt64(m.fields.count) + count > UInt64(Self.maxFields)) {
                let w: DecodeWarning = fits && count > maxArray ? .arrayOverLimit(field: fieldName(op), count: count, limit: Int(maxArray))
                    : .arrayTooLong(field: fieldName(op), count: count)
                // (Past --max-array or the fields' bound, more bytes would not help.)
                if fits { _ = stopped(w, at: start, m) } else { m.warnings.append(w) }
                pos = start  // the count itself is shown in the undecoded rest
                return false
            }
            let headerIndex = m.fields.count
            m.fields.append(DecodedField(name: name, value: .array(count: Int32(count)), offset: Int32(start),
                                         width: 0, depth: Int16(depth)))
            var i: UInt64 = 0
            while i < count {
                let before = pos
                if op.count == .until && i >= maxArray {
                    m.fields[headerIndex].width = Int32(pos - start)
                    m.fields[headerIndex].value = .array(count: Int32(i))
                    return stopped(.arrayOverLimit(field: fieldName(op), count: i + 1, limit: Int(maxArray)), at: pos, m)
                }
                if op.count == .rest && (pos >= b.count || i >= maxArray) {
                    if pos < b.count { m.warnings.append(.arrayOverLimit(field: fieldName(op), count: i + 1, limit: Int(maxArray))) }
                    m.fields[headerIndex].width = Int32(pos - start)
                    m.fields[headerIndex].value = .array(count: Int32(i))
                    return pos >= b.count
                }
                if m.fields.count >= Self.maxFields {
                    m.warnings.append(.arrayTooLong(field: fieldName(op), count: count))
                    m.fields[headerIndex].width = Int32(pos - start)
                    m.fields[headerIndex].value = .array(count: Int32(i))
                    return false
                }
                let elementIndex = m.fields.count
                if !decodeValue(op, .element(Int32(i)), b, &pos, depth: depth + 1, into: m, scope: scope) {
                    m.fields[headerIndex].width = Int32(pos - start)
                    // An element decoded in part (a message cut short) is an element of the array:
                    // counted, so the printers keep its fields inside the array.
                    m.fields[headerIndex].value = .array(count: Int32(m.fields.count > elementIndex ? i + 1 : i))
                    return false
                }
                i += 1
                if op.count == .until && ends(op, element: elementIndex, m) {
                    m.fields[headerIndex].value = .array(count: Int32(i))
                    break
                }
                // Elements that take no bytes would let a huge count spin: stop at the frame's end.
                if pos == before && (pos >= b.count || op.count == .rest) {
                    m.fields[headerIndex].value = .array(count: Int32(i))
                    break
                }
                // An element none of whose fields is there (each under a `when` that fails) takes
                // no bytes, and so would every one after it: the bytes hold no such array.
                if pos == before && i < count {
                    m.fields[headerIndex].width = Int32(pos - start)
                    m.fields[headerIndex].value = .array(count: Int32(i))
                    return stopped(.badValue(field: fieldName(op), at: pos, why: "has an element that takes no bytes (none of its fields is there)"), at: pos, m)
                }
            }
            m.fields[headerIndex].width = Int32(pos - start)
        }
        return true
    }

    /// Room in `slots` for the `n` fields of a message being decoded; where it starts.
    @inline(never)
    func keepSlots(_ n: Int) -> Int32 {
        let at = Int32(slots.count)
        slots.append(contentsOf: repeatElement(-1, count: n))
        return at
    }

    /// Whether a field's `when` test holds for this message.
    func holds(_ c: DecodeCondition, _ m: DecodedMessage, depth: Int, parent: Scope, own: Scope) -> Bool {
        if c.parentBase >= 0 {
            // A field of the message this one is nested in, where it was decoded (0: none).
            guard parent.slots >= 0 else { return c.test.holds(0) }
            let j = program.parentFields[Int(c.parentBase) + Int(parent.message)]
            return c.test.holds(j < 0 ? 0 : slotValue(parent, Int(j), m))
        }
        // An earlier field of this message: where it was decoded is kept (`referenced`).
        if !c.inHeader && own.slots >= 0 { return c.test.holds(slotValue(own, c.test.field, m)) }
        return c.test.holds(valueOf(c.test.field, inHeader: c.inHeader, m, depth: depth).bits)
    }

    /// Field `field` of the message of `scope` as decoded (0: not there, left out by its `when`).
    @inline(__always)
    func slotValue(_ scope: Scope, _ field: Int, _ m: DecodedMessage) -> UInt64 {
        let at = Int(slots[Int(scope.slots) + field])
        return at < 0 ? 0 : Self.bits(m.fields[at].value).0
    }

    /// Whether the element just decoded at `element` ends its `until` array.
    func ends(_ op: DecodeOp, element: Int, _ m: DecodedMessage) -> Bool {
        let t = program.untilTests[Int(op.countParam)]
        let fieldDepth = m.fields[element].depth + 1
        var v: UInt64 = 0
        for j in (element + 1)..<m.fields.count where m.fields[j].depth == fieldDepth {
            if case .field(_, let fi) = m.fields[j].name, Int(fi) == t.field { v = Self.bits(m.fields[j].value).0; break }
        }
        return t.holds(v)
    }

    static func bits(_ v: FieldValue) -> (UInt64, Bool) {
        switch v {
        case .unsigned(let x): return (x, false)
        case .signed(let x): return (UInt64(bitPattern: x), x < 0)
        default: return (0, false)
        }
    }

    /// A header field's value (signed values as their bit pattern), or an earlier field's at
    /// this depth; 0 for one not decoded.
    func valueOf(_ field: Int, inHeader: Bool, _ m: DecodedMessage, depth: Int) -> (bits: UInt64, negative: Bool) {
        if inHeader {
            for i in 0..<m.headerFields.count {
                guard case .header(let h) = m.headerFields[i].name, Int(h) == field else { continue }
                return Self.bits(m.headerFields[i].value)
            }
            return (0, false)
        }
        // Back to the start of this message's fields: a field left out by its `when` is not
        // taken from a message decoded before it at the same depth.
        for f in m.fields.reversed() {
            if f.depth < depth { break }
            guard f.depth == depth, case .field(_, let fi) = f.name, Int(fi) == field else { continue }
            return Self.bits(f.value)
        }
        return (0, false)
    }

    func fieldName(_ op: DecodeOp) -> String { schema.messages[Int(op.message)].fields[Int(op.field)].name }

    /// The value of an earlier field at this depth, or of a header field (for `Type[count]`
    /// arrays and `String(length)`): a negative one counts as 0.
    func countValue(of idx: Int, inHeader: Bool = false, in m: DecodedMessage, depth: Int) -> UInt64 {
        let v = valueOf(idx, inHeader: inHeader, m, depth: depth)
        return v.negative ? 0 : v.bits
    }

    @inline(__always)
    func decodeValue(_ op: DecodeOp, _ name: FieldName, _ b: UnsafeRawBufferPointer, _ pos: inout Int,
                     depth: Int, into m: DecodedMessage, scope: Scope) -> Bool {
        let start = pos
        var value: FieldValue
        switch op.kind {
        case .unsigned:
            guard let v = b.uint(pos, width: Int(op.width), bigEndian: op.bigEndian) else { return short(op, start, m) }
            value = .unsigned(v); pos += Int(op.width)
        case .signed:
            guard let v = b.uint(pos, width: Int(op.width), bigEndian: op.bigEndian) else { return short(op, start, m) }
            let shift = UInt64(64 - op.width * 8)
            value = .signed(Int64(bitPattern: v << shift) >> Int64(shift)); pos += Int(op.width)
        case .varint, .svarint:
            let r = b.varint(pos, maxBytes: Int(op.width))
            guard case .value(let v, let n) = r else {
                return r == .overlong ? bad(op, start, "is a varint longer than \(op.width) bytes", m) : short(op, start, m)
            }
            value = op.kind == .varint ? .unsigned(v) : .signed(zigzagDecoded(v)); pos += n
        case .decimal:
            switch decimal(op, b, pos) {
            case .value(let v, let next): value = .signed(v); pos = next
            case .short: return short(op, start, m)
            case .noNumber: return bad(op, start, "is no decimal number", m)
            }
        case .float32:
            guard let v = b.uint(pos, width: 4, bigEndian: op.bigEndian) else { return short(op, start, m) }
            value = .float(Double(Float(bitPattern: UInt32(truncatingIfNeeded: v)))); pos += 4
        case .float64:
            guard let v = b.uint(pos, width: 8, bigEndian: op.bigEndian) else { return short(op, start, m) }
            value = .float(Double(bitPattern: v)); pos += 8
        case .bool:
            guard let v = b.u8(pos) else { return short(op, start, m) }
            value = .bool(v != 0); pos += 1
        case .string, .bytes:
            guard let (s, n, next) = span(op, b, pos, m, depth) else { return short(op, start, m) }
            var n2 = n
            if op.kind == .string && op.rule == .fixed {
                // Fixed-size strings are NUL-padded.
                while n2 > 0 && b[s + n2 - 1] == 0 { n2 -= 1 }
            }
            // Shown all the same (bad bytes replaced), with a warning, as protobuf strings are.
            var value = FieldValue.bytes
            if op.kind == .string {
                value = UTF8Check.isValid(UnsafeRawBufferPointer(rebasing: b[s..<(s + n2)])) ? .validString : .string
                if value == .string { m.warnings.append(.invalidUTF8(field: fieldName(op))) }
            } else if _slowPath(op.text) && UTF8Check.isValid(UnsafeRawBufferPointer(rebasing: b[s..<(s + n2)])) {
                value = .validString
            }
            m.fields.append(DecodedField(name: name, value: value, offset: Int32(s),
                                         width: Int32(n2), depth: Int16(depth)))
            pos = next
            return true
        case .message:
            let idx = m.fields.count
            let mi = Int(op.target)
            m.fields.append(DecodedField(name: name, value: .object(count: program.ranges[mi].1),
                                         offset: Int32(start), width: 0, depth: Int16(depth)))
            let ok = decodeFields(mi, b, &pos, depth: depth + 1, into: m, parent: scope)
            m.fields[idx].width = Int32(pos - start)
            if !ok || program.conditional[mi] {
                // Count only the children that were decoded (or are there: fields under `when`).
                var c: Int32 = 0
                for j in (idx + 1)..<m.fields.count where m.fields[j].depth == Int16(depth + 1) { c += 1 }
                m.fields[idx].value = .object(count: c)
            }
            return ok
        }
        m.fields.append(DecodedField(name: name, value: value, offset: Int32(start), width: Int32(pos - start),
                                     depth: Int16(depth)))
        return true
    }

    static func cutWarnings(_ frame: Frame, _ m: DecodedMessage) {
        m.warnings.removeAll { w in
            switch w {
            case .bodyTooShort, .arrayTooLong, .invalidJSON, .protobuf, .invalidUTF8: return true
            default: return false
            }
        }
        m.warnings.append(.frameCut(have: frame.bytes.count, need: frame.bytes.count + frame.missing))
    }

    func short(_ op: DecodeOp, _ at: Int, _ m: DecodedMessage) -> Bool {
        m.warnings.append(.bodyTooShort(field: fieldName(op), at: at))
        return false
    }

    /// A field whose bytes can hold no value of its type, whatever follows: said, and (for
    /// `frame_length = message`) the frame's end is unknown rather than still to come.
    func bad(_ op: DecodeOp, _ at: Int, _ why: String, _ m: DecodedMessage) -> Bool {
        stopped(.badValue(field: fieldName(op), at: at, why: why), at: at, m)
    }

    /// Decoding stops for good at `at` (not for want of bytes): `w` said, and kept for `measure`.
    func stopped(_ w: DecodeWarning, at: Int, _ m: DecodedMessage) -> Bool {
        m.warnings.append(w)
        invalid = (at, w)
        return false
    }

    /// Where a string/bytes value lies: (start, length, position after it).
    @inline(__always)
    func span(_ op: DecodeOp, _ b: UnsafeRawBufferPointer, _ pos: Int, _ m: DecodedMessage, _ depth: Int) -> (Int, Int, Int)? {
        switch op.rule {
        case .prefixed:
            let w = Int(op.ruleParam)
            guard let n = b.uint(pos, width: w, bigEndian: op.bigEndian) else { return nil }
            guard n <= UInt64(b.count - pos - w) else { return nil }
            return (pos + w, Int(n), pos + w + Int(n))
        case .nul:
            var i = pos
            while i < b.count && b[i] != 0 { i += 1 }
            guard i < b.count else { return nil }
            return (pos, i - pos, i + 1)
        case .rest:
            return (pos, max(0, b.count - pos), max(pos, b.count))
        case .fixed:
            let n = Int(op.ruleParam)
            guard b.count - pos >= n else { return nil }
            return (pos, n, pos + n)
        case .varint:
            guard case .value(let n, let w) = b.varint(pos, maxBytes: 10), n <= UInt64(b.count - pos - w) else { return nil }
            return (pos + w, Int(n), pos + w + Int(n))
        case .bodyField, .headerField:
            let n = countValue(of: Int(op.ruleParam), inHeader: op.rule == .headerField, in: m, depth: depth)
            guard n <= UInt64(b.count - pos) else { return nil }
            return (pos, Int(n), pos + Int(n))
        case .delimited:
            guard let e = DelimiterEnd.start(of: program.delimiters[Int(op.ruleParam)], in: b, from: pos, to: b.count) else { return nil }
            return (pos, e - pos, e + program.delimiters[Int(op.ruleParam)].count)
        }
    }

    /// What `decimal` read: a number and the position after its delimiter; bytes that have
    /// not all arrived yet; or bytes that already show there is no number, whatever follows.
    enum DecimalRead {
        case value(Int64, next: Int)
        case short
        case noNumber
    }

    /// `Decimal(...)`: ASCII digits, a leading `-` allowed, up to the delimiter. No number: a
    /// byte that is no digit, sign or delimiter, more than 19 digits, or past Int64.
    func decimal(_ op: DecodeOp, _ b: UnsafeRawBufferPointer, _ pos: Int) -> DecimalRead {
        let d = program.delimiters[Int(op.ruleParam)]
        guard let (v, first, i) = ASCIIDecimal.scan(b, from: pos, limit: b.count) else { return .noNumber }
        if i == b.count { return .short }
        if i == first { return .noNumber }
        let have = min(d.count, b.count - i)
        for k in 0..<have where b[i + k] != d[k] { return .noNumber }
        return have < d.count ? .short : .value(v, next: i + d.count)
    }
}
