/// The schema's messages compiled into flat, trivially-copyable instructions, so decoding
/// a message touches no reference counts and no Strings.
struct DecodeOp {
    enum Kind: UInt8 { case unsigned, signed, float32, float64, bool, string, bytes, message, varint, svarint, decimal }
    /// `delimited`: `ruleParam` indexes `DecodeProgram.delimiters`.
    enum Rule: UInt8 { case prefixed, nul, rest, fixed, varint, bodyField, headerField, delimited }
    /// `until`: `countParam` indexes `DecodeProgram.untilTests`.
    enum Count: UInt8 { case single, fixed, prefixed, field, varint, rest, headerField, until }

    var kind: Kind
    var width: Int32
    var bigEndian: Bool
    var rule: Rule
    var ruleParam: Int32
    var count: Count
    var countParam: Int32
    /// The byte order of a count prefix.
    var countBigEndian: Bool
    /// Nested message index for `.message`.
    var target: Int32
    var message: Int32
    var field: Int32
    /// `when TEST`: index in `DecodeProgram.conditions` (-1: always there).
    var condition: Int32 = -1
    /// `[text]` bytes: a string when they are UTF-8 text.
    var text = false
}

/// A field's `when` as the decoder reads it: plain values (no dictionary to retain or hash).
struct DecodeCondition {
    var inHeader: Bool
    var test: TransformCondition
    /// `parent.F`: where its row of `DecodeProgram.parentFields` starts (-1: not a parent's field).
    var parentBase: Int32
}

final class DecodeProgram {
    let ops: UnsafeMutableBufferPointer<DecodeOp>
    /// Per message: (first op, op count).
    let ranges: UnsafeMutableBufferPointer<(Int32, Int32)>

    init(_ s: ProtocolSchema) {
        var all: [DecodeOp] = []
        var r: [(Int32, Int32)] = []
        var conds: [DecodeCondition] = []
        var parentFields: [Int32] = []
        var delims: [[UInt8]] = []
        var untils: [TransformCondition] = []
        func delimiter(_ d: [UInt8]) -> Int32 {
            if let i = delims.firstIndex(of: d) { return Int32(i) }
            delims.append(d)
            return Int32(delims.count - 1)
        }
        for (mi, m) in s.messages.enumerated() {
            r.append((Int32(all.count), Int32(m.fields.count)))
            for (fi, f) in m.fields.enumerated() {
                var op = DecodeOp(kind: .unsigned, width: 0, bigEndian: true, rule: .rest, ruleParam: 0,
                                  count: .single, countParam: 0, countBigEndian: s.order == .big,
                                  target: -1, message: Int32(mi), field: Int32(fi))
                switch f.type {
                case .unsigned(let w, let o): op.kind = .unsigned; op.width = Int32(w); op.bigEndian = o == .big
                case .signed(let w, let o): op.kind = .signed; op.width = Int32(w); op.bigEndian = o == .big
                case .enumeration(_, let b):
                    op.kind = b.signed ? .signed : .unsigned; op.width = Int32(b.width); op.bigEndian = b.order == .big
                case .varint(let signed, let n): op.kind = signed ? .svarint : .varint; op.width = Int32(n)
                case .float32(let o): op.kind = .float32; op.width = 4; op.bigEndian = o == .big
                case .float64(let o): op.kind = .float64; op.width = 8; op.bigEndian = o == .big
                case .bool: op.kind = .bool; op.width = 1
                case .decimal(let d):
                    // (Its least size, for the array bound: a digit and the delimiter.)
                    op.kind = .decimal; op.width = Int32(1 + d.count); op.rule = .delimited; op.ruleParam = delimiter(d)
                case .string(let rule), .bytes(let rule):
                    if case .string = f.type { op.kind = .string } else { op.kind = .bytes; op.text = f.text }
                    op.bigEndian = s.order == .big
                    switch rule {
                    case .prefixed(let w, let o):
                        op.rule = .prefixed; op.ruleParam = Int32(w)
                        if let o { op.bigEndian = o == .big }
                    case .nulTerminated: op.rule = .nul
                    case .delimited(let d): op.rule = .delimited; op.ruleParam = delimiter(d)
                    case .rest: op.rule = .rest
                    case .fixed(let n): op.rule = .fixed; op.ruleParam = Int32(n)
                    case .varint: op.rule = .varint
                    case .sizedBy(let i, let inHeader): op.rule = inHeader ? .headerField : .bodyField; op.ruleParam = Int32(i)
                    }
                case .message(let t): op.kind = .message; op.target = Int32(t)
                }
                switch f.array {
                case nil: op.count = .single
                case .fixed(let n)?: op.count = .fixed; op.countParam = Int32(n)
                case .prefixed(let w, let o)?:
                    op.count = .prefixed; op.countParam = Int32(w)
                    if let o { op.countBigEndian = o == .big }
                case .field(let i)?: op.count = .field; op.countParam = Int32(i)
                case .varint?: op.count = .varint
                case .rest?: op.count = .rest
                case .headerField(let i)?: op.count = .headerField; op.countParam = Int32(i)
                case .until(let t)?: op.count = .until; op.countParam = Int32(untils.count); untils.append(t)
                }
                if let c = f.condition {
                    op.condition = Int32(conds.count)
                    var dc = DecodeCondition(inHeader: c.inHeader, test: c.test, parentBase: -1)
                    if let p = c.parent {
                        // (Per nesting message, the field read there: a flat table, no hashing.)
                        dc.parentBase = Int32(parentFields.count)
                        var row = [Int32](repeating: -1, count: s.messages.count)
                        for (pm, pf) in p { row[pm] = Int32(pf) }
                        parentFields += row
                    }
                    conds.append(dc)
                }
                all.append(op)
            }
        }
        ops = .allocate(capacity: max(1, all.count))
        _ = ops.initialize(from: all)
        ranges = .allocate(capacity: max(1, r.count))
        _ = ranges.initialize(from: r)
        conditions = conds
        delimiters = delims
        conditional = s.messages.map { $0.fields.contains { $0.condition != nil } }
        untilTests = untils
        self.parentFields = parentFields
        // The messages whose fields a nested message's `when parent.F`, or one of their own
        // fields' `when`, reads: where each was decoded is kept while they are.
        referenced = .allocate(capacity: max(1, s.messages.count))
        referenced.initialize(repeating: false)
        for (mi, m) in s.messages.enumerated() {
            for f in m.fields {
                for p in f.condition?.parent?.keys ?? [:].keys { referenced[p] = true }
                if let c = f.condition, !c.inHeader, c.parent == nil { referenced[mi] = true }
            }
        }
        byID = s.byID
        // Ids below 65536 by direct index, the table only as long as the largest such id needs
        // (a protocol with no ids costs one slot, not 256 KiB).
        let largest = Direction.allCases.flatMap { (s.byID[$0] ?? [:]).keys.filter { $0 < 65536 } }.max() ?? 0
        smallCount = Int(largest) + 1
        small = Direction.allCases.map { [smallCount] d in
            let t = UnsafeMutableBufferPointer<Int32>.allocate(capacity: smallCount)
            t.initialize(repeating: -1)
            for (id, mi) in s.byID[d] ?? [:] where id < 65536 { t[Int(id)] = Int32(mi) }
            return t
        }
    }

    /// The fields' `when` tests (rare: read only for a field that has one).
    let conditions: [DecodeCondition]
    /// `when parent.F`: per such test, per message, the field of that message read (-1: none).
    let parentFields: [Int32]
    /// Per message: some of its fields are under a `when` (its field count is the ones there).
    let conditional: [Bool]
    /// The byte strings that end delimited values (`String(crlf)`, `Decimal(lf)`).
    let delimiters: [[UInt8]]
    /// The tests that end `until` arrays, on a field of the element.
    let untilTests: [TransformCondition]
    /// Per message: a nested message's `when parent.F` reads its fields, so where each one was
    /// decoded is kept while its fields are (rare).
    let referenced: UnsafeMutableBufferPointer<Bool>

    /// Message index by id for ids below 65536 (-1: none), one table per direction;
    /// larger ids fall back to the schema's dictionary.
    let small: [UnsafeMutableBufferPointer<Int32>]
    let smallCount: Int
    let byID: [Direction: [UInt64: Int]]

    @inline(__always)
    func message(_ d: Direction, _ id: UInt64) -> Int? {
        if id < UInt64(smallCount) {
            let v = small[d.rawValue][Int(id)]
            return v < 0 ? nil : Int(v)
        }
        if id < 65536 { return nil }
        return byID[d]?[id]
    }

    deinit {
        ops.deallocate()
        ranges.deallocate()
        referenced.deallocate()
        for t in small { t.deallocate() }
    }
}
