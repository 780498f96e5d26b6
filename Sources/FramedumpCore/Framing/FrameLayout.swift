/// The header of a length-prefixed frame, compiled from a protocol's schema: how to read
/// each header field, how long the frame is, and whether a header is plausible. Checked for
/// every frame, so everything it reads per frame is a plain value behind a pointer.
///
/// Netty's LengthFieldBasedFrameDecoder maps onto it: lengthFieldOffset = the header fields
/// (or `pad N`) before the length field; lengthFieldLength = that field's width (1, 2, 3, 4,
/// 8); lengthAdjustment = `+ N`/`- N` in the expression; initialBytesToStrip = the header,
/// which is never part of the body; maxFrameLength = `max_frame`.
public final class FrameLayout: @unchecked Sendable {
    /// One header field as the hot path needs it.
    struct Slot {
        var offset: Int
        var width: Int
        var bigEndian: Bool
        var signed: Bool
        var padding: Bool
        var constant: UInt64
        var hasConstant: Bool
        /// A varint of at most this many bytes (0: fixed width); zigzag-encoded when `signed`.
        /// Negative: a number in ASCII digits, `decimals[-varintMax - 1]` (the slot keeps its
        /// size, so the fixed and varint paths read what they read before).
        var varintMax: Int
    }

    /// A `decimal` field: exactly `digits` digits, or (0) digits up to the delimiter at
    /// `endStart` in `delimiters`, `endCount` bytes (plain values: read per message, no retain).
    struct Decimal {
        var digits: Int
        var endStart: Int
        var endCount: Int
    }

    struct Term {
        var field: Int  // -1: a constant
        var constant: Int64
        var negative: Bool
    }

    /// The schema's header fields (names, for reports).
    public let fields: [HeaderField]
    /// The header's size; with varints, its least size (see `headerEnd`).
    public let headerSize: Int
    /// The most bytes a header takes (`headerSize` when it has no varint).
    public let maxHeaderSize: Int
    /// The header has varints: fields from `firstVariable` on are found by reading the ones
    /// before them (the rare path; a fixed header's offsets are constants).
    public let variable: Bool
    let firstVariable: Int
    public let idField: Int?
    /// `message_id = flags.type;`: the id is `(field & idMask) >> idShift`.
    let idMask: UInt64
    let idShift: UInt64
    public let maxFrame: Int
    /// Where a frame ends for a framing kind other than a stated length (`frame_end`); nil on
    /// the length rule's fast path.
    let end: (any FrameEnd)?
    /// Bytes at a frame's end that are not its body (the kind's delimiter).
    public let trailerSize: Int
    let countsWholeFrame: Bool
    let slots: UnsafeMutableBufferPointer<Slot>
    let terms: UnsafeMutableBufferPointer<Term>
    /// Indexes of the fields with a constant value.
    let constants: UnsafeMutableBufferPointer<Int>

    /// The layout every frame of `s` has (its one header), or for a protocol whose headers
    /// differ, its c2s main header's.
    public convenience init(_ s: ProtocolSchema, direction: Direction? = nil) {
        if let v = s.variants.first(where: { !$0.first && $0.direction == direction ?? .c2s }) { self.init(s, v) } else if let h = s.plainHeader {
            self.init(s, fields: h.fields, global: h.global, length: s.length, message: nil, direction: direction)
        } else {
            self.init(s, fields: s.header, global: nil, length: s.length, message: nil, direction: direction)
        }
    }

    /// The layout of one of `s`'s headers (`header s2c { }`, a `first` block).
    public convenience init(_ s: ProtocolSchema, _ v: HeaderVariant) {
        self.init(s, fields: v.fields, global: v.global, length: v.length ?? s.length, message: v.message, idField: v.idField,
                  direction: v.direction, first: v)
    }

    init(_ s: ProtocolSchema, fields: [HeaderField], global: [Int]?, length: LengthRule?, message: Int?, idField id: Int? = nil,
         direction: Direction? = nil, first v: HeaderVariant? = nil) {
        choices = v?.choices ?? []
        again = v?.again ?? []
        after = v?.after
        self.fields = fields
        headerSize = fields.last.map { $0.offset + $0.width } ?? 0
        maxHeaderSize = fields.reduce(0) { $0 + $1.maxWidth }
        firstVariable = fields.firstIndex(where: \.isVariable) ?? fields.count
        variable = firstVariable < fields.count
        // A header field by its index in the schema's header, and back.
        let toGlobal = global ?? Array(fields.indices)
        var toLocal = [Int](repeating: -1, count: s.header.count)
        for (l, g) in toGlobal.enumerated() where g < toLocal.count { toLocal[g] = l }
        self.message = message
        let idGlobal = id ?? s.idField
        idField = message != nil || !choices.isEmpty ? nil : idGlobal.flatMap { toLocal[$0] >= 0 ? toLocal[$0] : nil }
        // (Bits of a field are the protocol's `message_id = f.bits;`, never a direction's own id.)
        let bits = id == nil ? s.idBits : nil
        idMask = bits?.mask ?? .max
        idShift = bits?.shift ?? 0
        idSigned = bits == nil && (idField.map { fields[$0].signed } ?? false)
        // `message_id = cmd, sub;`: the id is the pair (a direction's own id field is one field).
        idField2 = id == nil && idField != nil ? s.idField2.flatMap { toLocal[$0] >= 0 ? toLocal[$0] : nil } : nil
        idPair = s.idField2 != nil && id == nil
        maxFrame = max(s.maxFrame, headerSize)
        end = FramingRegistry.kind(of: s)?.frameEnd(s, direction)
        trailerSize = end?.trailerSize ?? 0
        let length = length ?? LengthRule(terms: [], countsWholeFrame: true)
        countsWholeFrame = length.countsWholeFrame
        var ends: [Decimal] = []
        var delimiterBytes: [UInt8] = []
        let sl = fields.map {
            if $0.isDecimal {
                ends.append(Decimal(digits: $0.decimalDigits, endStart: delimiterBytes.count, endCount: $0.decimalEnd.count))
                delimiterBytes += $0.decimalEnd
            }
            return Slot(offset: $0.offset, width: $0.width, bigEndian: $0.order == .big, signed: $0.signed,
                        padding: $0.isPadding, constant: $0.constant ?? 0, hasConstant: $0.constant != nil,
                        varintMax: $0.isDecimal ? -ends.count : $0.varintMax)
        }
        decimals = .allocate(capacity: max(1, ends.count))
        _ = decimals.initialize(from: ends)
        delimiters = .allocate(capacity: max(1, delimiterBytes.count))
        _ = delimiters.initialize(from: delimiterBytes)
        slots = .allocate(capacity: max(1, sl.count))
        _ = slots.initialize(from: sl)
        // (The resolver checked that every field of the length is in this header.)
        let ts = length.terms.map { Term(field: $0.field.map { toLocal[$0] } ?? -1, constant: $0.constant, negative: $0.negative) }
        terms = .allocate(capacity: max(1, ts.count))
        _ = terms.initialize(from: ts)
        let cs = fields.indices.filter { fields[$0].constant != nil }
        constants = .allocate(capacity: max(1, cs.count))
        _ = constants.initialize(from: cs)
        globals = .allocate(capacity: max(1, toGlobal.count))
        _ = globals.initialize(from: toGlobal.map { Int32($0) })
        locals = global == nil ? nil : toLocal
        termCount = ts.count
        constantCount = cs.count
        fieldCount = sl.count
        end?.attach(self)
    }

    /// The `decimal` fields' forms, and their delimiters' bytes end to end.
    let decimals: UnsafeMutableBufferPointer<Decimal>
    let delimiters: UnsafeMutableBufferPointer<UInt8>
    /// The id is a signed field's value (no bits of it): shown negative when it is.
    public let idSigned: Bool
    /// `message_id = cmd, sub;`: the second id field, and the id is the pair.
    let idField2: Int?
    public let idPair: Bool
    /// A first frame's message (its layout carries no id).
    public let message: Int?
    /// A first frame's `message NAME when TEST;` lines (tests of `header` indexes), `again after`
    /// and `first s2c after` (see `HeaderVariant`).
    let choices: [(test: TransformCondition, message: Int)]
    /// The layout names its frames' message (`message` lines): they carry no id.
    var namesMessage: Bool { message != nil || !choices.isEmpty }
    let again: [Int]
    public let after: [Int]?

    /// The message a frame of this (first) layout is, by its `message` lines: the first whose
    /// test holds, else its plain `message`.
    func firstMessage(_ b: UnsafeRawBufferPointer) -> Int? {
        for c in choices where c.test.holds(value(c.test.field, in: b, at: 0) ?? 0) { return c.message }
        return message
    }
    /// Per field, its index in the schema's header (what decoded fields are named by).
    let globals: UnsafeMutableBufferPointer<Int32>
    /// Per schema header field, its index here or -1; nil when they are the same.
    let locals: [Int]?
    @inline(__always) func global(_ i: Int) -> Int32 { globals[i] }

    let termCount: Int
    let constantCount: Int
    public let fieldCount: Int

    deinit {
        slots.deallocate()
        terms.deallocate()
        constants.deallocate()
        globals.deallocate()
        decimals.deallocate()
        delimiters.deallocate()
    }

    /// The value of the schema's header field `g` (signed values as their bit pattern); nil
    /// when this header has no such field or its bytes are not all in `b`.
    @inline(__always)
    public func value(_ g: Int, in b: UnsafeRawBufferPointer, at base: Int) -> UInt64? {
        guard let locals else { return slotValue(g, in: b, at: base) }
        guard g >= 0 && g < locals.count && locals[g] >= 0 else { return nil }
        return slotValue(locals[g], in: b, at: base)
    }

    /// Field `i` of this header's value (signed values as their bit pattern).
    @inline(__always)
    func slotValue(_ i: Int, in b: UnsafeRawBufferPointer, at base: Int) -> UInt64? {
        if i >= firstVariable { return located(i, in: b, at: base)?.value }
        let f = slots[i]
        guard let raw = b.uint(base + f.offset, width: f.width, bigEndian: f.bigEndian) else { return nil }
        if f.signed && f.width < 8 {
            let shift = UInt64(64 - f.width * 8)
            return UInt64(bitPattern: Int64(bitPattern: raw << shift) >> Int64(shift))
        }
        return raw
    }

    @inline(__always) func isPadding(_ i: Int) -> Bool { slots[i].padding }
    /// Field `i`'s constant (`== 4`), if it has one.
    func constant(_ i: Int) -> UInt64? { slots[i].hasConstant ? slots[i].constant : nil }
    @inline(__always) func isSigned(_ i: Int) -> Bool { slots[i].signed }
    @inline(__always) func offset(_ i: Int) -> Int { slots[i].offset }
    @inline(__always) func width(_ i: Int) -> Int { slots[i].width }

    /// Field `i` read at `p`: its value (signed values as their bit pattern) and size.
    @inline(__always)
    func read(_ i: Int, in b: UnsafeRawBufferPointer, at p: Int) -> VarintRead {
        let f = slots[i]
        if f.varintMax != 0 {
            if _slowPath(f.varintMax < 0) { return decimal(decimals[-f.varintMax - 1], in: b, at: p) }
            let r = b.varint(p, maxBytes: f.varintMax)
            if f.signed, case .value(let v, let n) = r { return .value(UInt64(bitPattern: zigzagDecoded(v)), length: n) }
            return r
        }
        guard let raw = b.uint(p, width: f.width, bigEndian: f.bigEndian) else { return .truncated }
        if f.signed && f.width < 8 {
            let shift = UInt64(64 - f.width * 8)
            return .value(UInt64(bitPattern: Int64(bitPattern: raw << shift) >> Int64(shift)), length: f.width)
        }
        return .value(raw, length: f.width)
    }

    /// A number in ASCII digits (a leading `-` allowed, at most 19 digits, within Int64):
    /// `.overlong` when the bytes are no such number, whatever follows.
    func decimal(_ f: Decimal, in b: UnsafeRawBufferPointer, at p: Int) -> VarintRead {
        guard p >= 0 && p <= b.count else { return .truncated }
        let fixed = f.endCount == 0
        let limit = fixed ? min(b.count, p + f.digits) : b.count
        guard let (v, first, i) = ASCIIDecimal.scan(b, from: p, limit: limit) else { return .overlong }
        if fixed {
            // Exactly `digits` bytes, all of them digits (after the sign).
            if i < limit { return .overlong }
            if p + f.digits > b.count { return .truncated }
            return i == first ? .overlong : .value(UInt64(bitPattern: v), length: f.digits)
        }
        if i == b.count { return .truncated }
        if i == first { return .overlong }
        let have = min(f.endCount, b.count - i)
        for k in 0..<have where b[i + k] != delimiters[f.endStart + k] { return .overlong }
        return have < f.endCount ? .truncated : .value(UInt64(bitPattern: v), length: i + f.endCount - p)
    }

    /// Where field `i` of the header at `base` lies in `b` and its value, reading the fields
    /// before it when a varint precedes it; nil when they are not all there.
    public func located(_ i: Int, in b: UnsafeRawBufferPointer, at base: Int) -> (offset: Int, width: Int, value: UInt64)? {
        var j = min(i, firstVariable)
        var p = base + slots[j].offset
        while true {
            guard case .value(let v, let n) = read(j, in: b, at: p) else { return nil }
            if j == i { return (p - base, n, v) }
            p += n
            j += 1
        }
    }

    public enum HeaderEnd: Equatable, Sendable {
        case at(Int)
        case needMoreData
        /// A varint longer than its field allows.
        case badVarint(field: Int)
    }

    /// Where the header at `base` ends in `b` (a stream offset in `b`).
    @inline(__always)
    public func headerEnd(_ b: UnsafeRawBufferPointer, at base: Int) -> HeaderEnd {
        guard variable else { return b.count - base >= headerSize ? .at(base + headerSize) : .needMoreData }
        var p = base + slots[firstVariable].offset
        var j = firstVariable
        while j < fieldCount {
            switch read(j, in: b, at: p) {
            case .value(_, let n): p += n
            case .truncated: return .needMoreData
            case .overlong: return .badVarint(field: j)
            }
            j += 1
        }
        return .at(p)
    }

    /// The size of the header `b` starts with; more than `b` holds (its most) when a varint
    /// runs past its end.
    @inline(__always)
    public func headerLength(_ b: UnsafeRawBufferPointer) -> Int {
        guard variable else { return headerSize }
        switch headerEnd(b, at: 0) {
        case .at(let e): return e
        case .needMoreData: return maxHeaderSize
        case .badVarint: return headerSize
        }
    }

    public enum Check: Equatable, Sendable {
        case ok(frameLength: Int)
        case tooShort(Int64)
        case tooLong(Int64)
        case constantMismatch(field: Int, value: UInt64)
        case badVarint(field: Int)
        case needMoreData
        /// `frame_length = message;`: no message of this id is declared, so where its frame ends is unknown.
        case unknownSize(id: UInt64?)
        /// `frame_length = message;`: a field at this byte of the frame holds no value of its type.
        case badValue(at: Int)
    }

    /// Reads the header at `base` and says how long its frame is, or what is wrong with it.
    /// `from`: for a framing kind that searches for the frame's end, where a search on the same
    /// bytes stopped before (the deframer passes it as a frame's bytes grow).
    @inline(__always)
    public func check(_ b: UnsafeRawBufferPointer, at base: Int, from: Int = 0) -> Check {
        guard b.count - base >= headerSize else { return .needMoreData }
        var header = headerSize
        if variable {
            switch headerEnd(b, at: base) {
            case .at(let e): header = e - base
            case .needMoreData: return .needMoreData
            case .badVarint(let f): return .badVarint(field: f)
            }
        }
        var c = 0
        while c < constantCount {
            let i = constants[c]
            let v = slotValue(i, in: b, at: base)!
            if v != slots[i].constant { return .constantMismatch(field: i, value: v) }
            c += 1
        }
        if let end { return end.check(b, at: base, from: max(from, base + header), headerSize: header, maxFrame: maxFrame) }
        var total: Int64 = 0
        var t = 0
        while t < termCount {
            let term = terms[t]
            t += 1
            var v: Int64
            if term.field >= 0 {
                let raw = slotValue(term.field, in: b, at: base)!
                if slots[term.field].signed { v = Int64(bitPattern: raw) } else {
                    guard raw <= UInt64(Int64.max / 4) else { return .tooLong(Int64.max) }
                    v = Int64(raw)
                }
            } else {
                v = term.constant
            }
            if term.negative { v = 0 &- v }
            let (sum, overflow) = total.addingReportingOverflow(v)
            if overflow { return .tooLong(Int64.max) }
            total = sum
        }
        if !countsWholeFrame {
            let (sum, overflow) = total.addingReportingOverflow(Int64(header))
            if overflow { return .tooLong(Int64.max) }
            total = sum
        }
        // Every frame takes at least one byte, so the deframer always moves on.
        if total < Int64(header) || total < 1 { return .tooShort(total) }
        if total > Int64(maxFrame) { return .tooLong(total) }
        return .ok(frameLength: Int(total))
    }

    /// Whether `b` is whole frames back to back, exactly (a unit that must start at a frame).
    func tiles(_ b: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < b.count {
            guard case .ok(let n) = check(b, at: i), n <= b.count - i else { return false }
            i += n
        }
        return true
    }

    @inline(__always)
    public func messageID(_ b: UnsafeRawBufferPointer, at base: Int) -> UInt64? {
        guard let i = idField, let v = slotValue(i, in: b, at: base) else { return nil }
        if _slowPath(idPair) { return pairID(v, b, at: base) }
        return id(v, second: nil)
    }

    /// `message_id = cmd, sub;`: the second field read (the rare path, kept out of line).
    @inline(never)
    func pairID(_ v: UInt64, _ b: UnsafeRawBufferPointer, at base: Int) -> UInt64? {
        guard let j = idField2, let w = slotValue(j, in: b, at: base) else { return nil }
        return id(v, second: w)
    }

    /// The message id from the id field's value `v`: its id bits, or with `message_id = cmd,
    /// sub;` the pair `cmd << 32 | sub` (nil without the second field's value `w`).
    @inline(__always)
    func id(_ v: UInt64, second w: UInt64?) -> UInt64? {
        if _slowPath(idPair) { return w.map { (v & 0xffff_ffff) << 32 | ($0 & 0xffff_ffff) } }
        return (v & idMask) >> idShift
    }
}
