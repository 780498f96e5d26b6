import Foundation
@testable import FramedumpCore

// The random round trip (#26): random dissector files, random messages encoded by the wire
// rules docs/dissector-language.md documents, laid into TCP connections and written through
// libpcap. Written from that grammar only, so it checks the tool against its documentation rather than
// against its own code.

// MARK: - Randomness

struct RTRand {
    var g: SeededRandom
    init(_ seed: UInt64) { g = SeededRandom(seed: seed) }
    mutating func bits() -> UInt64 { g.next() }
    mutating func int(_ r: ClosedRange<Int>) -> Int { Int.random(in: r, using: &g) }
    mutating func chance(_ p: Double) -> Bool { Double(g.next() >> 11) / Double(1 << 53) < p }
    mutating func pick<T>(_ a: [T]) -> T { a[int(0...(a.count - 1))] }
    /// Any spelling of a keyword: type names are case-insensitive.
    mutating func anyCase(_ s: String) -> String {
        switch int(0...5) {
        case 0: return s.lowercased()
        case 1: return s.uppercased()
        default: return s
        }
    }
}

enum RTOrder { case big, little }

/// An integer type of the grammar: uint8/16/24/32/64, int8..64.
struct RTInt {
    var width: Int
    var signed: Bool
    var bits: Int { width * 8 }
    var mask: UInt64 { width == 8 ? .max : (1 << UInt64(bits)) - 1 }
    func name(_ capital: Bool) -> String { (signed ? (capital ? "Int" : "int") : (capital ? "Uint" : "uint")) + String(bits) }
    /// A raw value (the field's bytes as an unsigned number) as NDJSON writes it.
    func decimal(_ raw: UInt64) -> String { signed ? String(signExtended(raw)) : String(raw) }
    func signExtended(_ raw: UInt64) -> Int64 {
        let shift = UInt64(64 - bits)
        return Int64(bitPattern: raw << shift) >> Int64(shift)
    }
    /// `[hex]`: every byte of the field, two's complement for a negative number.
    func hex(_ raw: UInt64) -> String {
        "0x" + (0..<width).reversed().map { String(format: "%02x", Int((raw >> UInt64(8 * $0)) & 0xff)) }.joined()
    }
    /// A raw value that fits the signed/unsigned range as the signed Int64 `v`, or nil.
    func raw(_ v: Int64) -> UInt64? {
        if signed {
            if width == 8 { return UInt64(bitPattern: v) }
            let lo = -(Int64(1) << Int64(bits - 1)), hi = (Int64(1) << Int64(bits - 1)) - 1
            return v >= lo && v <= hi ? UInt64(bitPattern: v) & mask : nil
        }
        return v >= 0 && UInt64(v) <= mask ? UInt64(v) : nil
    }

    static let widths = [1, 2, 3, 4, 8]
    static func random(_ r: inout RTRand) -> RTInt { RTInt(width: r.pick(widths), signed: r.chance(0.4)) }

    /// Edges more often than chance would give them: 0, 1, the extremes, 2^63 and its neighbours.
    func randomRaw(_ r: inout RTRand) -> UInt64 {
        let top = UInt64(1) << UInt64(bits - 1)
        switch r.int(0...9) {
        case 0: return 0
        case 1: return 1
        case 2: return mask  // all ones: -1 when signed
        case 3: return top   // the smallest signed value, 2^63 for 64 bits
        case 4: return top - 1
        case 5: return UInt64(r.int(0...300)) & mask
        default: return r.bits() & mask
        }
    }
}

/// Writes an integer of `width` bytes in `order`.
func rtPut(_ raw: UInt64, _ width: Int, _ order: RTOrder, _ b: inout [UInt8]) {
    for i in 0..<width {
        let shift = order == .big ? 8 * (width - 1 - i) : 8 * i
        b.append(UInt8(truncatingIfNeeded: raw >> UInt64(shift)))
    }
}

func rtHex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", Int($0)) }.joined() }

// MARK: - JSON values, expected and parsed

indirect enum RTJSON: CustomStringConvertible {
    case null
    case bool(Bool)
    /// A number as its text (integers are compared exactly).
    case number(String)
    /// Expected only: a float, compared by value (NaN and infinities are null).
    case float(Double)
    case string(String)
    case array([RTJSON])
    case object([(String, RTJSON)])

    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return n
        case .float(let d): return "\(d)"
        case .string(let s): return "\"" + s.unicodeScalars.map { $0.value < 0x20 || $0 == "\"" ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined() + "\""
        case .array(let a): return "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o): return "{" + o.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        }
    }

    subscript(_ key: String) -> RTJSON? {
        if case .object(let o) = self { return o.first { $0.0 == key }?.1 }
        return nil
    }

    /// Where `actual` differs from this expected value, or nil.
    func mismatch(_ actual: RTJSON, at path: String) -> String? {
        func bad() -> String { "\(path): expected \(self.description.prefix(300)), got \(actual.description.prefix(300))" }
        switch (self, actual) {
        case (.null, .null): return nil
        case (.bool(let a), .bool(let b)): return a == b ? nil : bad()
        case (.number(let a), .number(let b)): return a == b ? nil : bad()
        case (.float(let d), _):
            if d.isNaN || d.isInfinite { if case .null = actual { return nil }; return bad() }
            guard case .number(let t) = actual, let v = Double(t) else { return bad() }
            return v == d ? nil : bad()
        case (.string(let a), .string(let b)): return a == b ? nil : bad()
        case (.array(let a), .array(let b)):
            guard a.count == b.count else { return "\(path): expected \(a.count) elements, got \(b.count): \(actual.description.prefix(300))" }
            for i in a.indices { if let m = a[i].mismatch(b[i], at: "\(path)[\(i)]") { return m } }
            return nil
        case (.object(let a), .object(let b)):
            guard a.map(\.0) == b.map(\.0) else { return "\(path): expected keys \(a.map(\.0)), got \(b.map(\.0))" }
            for i in a.indices { if let m = a[i].1.mismatch(b[i].1, at: "\(path).\(a[i].0)") { return m } }
            return nil
        default: return bad()
        }
    }
}

/// A strict little JSON reader that keeps numbers as text (64-bit integers stay exact) and
/// object keys in order.
struct RTJSONParser {
    let b: [UInt8]
    var i = 0
    init(_ text: Substring) { b = Array(text.utf8) }

    struct Failure: Error { var at: Int }

    static func parse(_ line: Substring) -> RTJSON? {
        var p = RTJSONParser(line)
        guard let v = try? p.value(), p.skipSpace() == nil else { return nil }
        return v
    }

    /// Skips blanks; the next byte, or nil at the end.
    mutating func skipSpace() -> UInt8? {
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0a || b[i] == 0x0d { i += 1 }
        return i < b.count ? b[i] : nil
    }

    mutating func expect(_ s: String) throws {
        for c in s.utf8 { guard i < b.count, b[i] == c else { throw Failure(at: i) }; i += 1 }
    }

    mutating func value() throws -> RTJSON {
        guard let c = skipSpace() else { throw Failure(at: i) }
        switch c {
        case UInt8(ascii: "{"):
            i += 1
            var o: [(String, RTJSON)] = []
            if skipSpace() == UInt8(ascii: "}") { i += 1; return .object(o) }
            while true {
                guard skipSpace() == UInt8(ascii: "\"") else { throw Failure(at: i) }
                let k = try string()
                guard skipSpace() == UInt8(ascii: ":") else { throw Failure(at: i) }
                i += 1
                o.append((k, try value()))
                let n = skipSpace()
                i += 1
                if n == UInt8(ascii: "}") { return .object(o) }
                guard n == UInt8(ascii: ",") else { throw Failure(at: i) }
            }
        case UInt8(ascii: "["):
            i += 1
            var a: [RTJSON] = []
            if skipSpace() == UInt8(ascii: "]") { i += 1; return .array(a) }
            while true {
                a.append(try value())
                let n = skipSpace()
                i += 1
                if n == UInt8(ascii: "]") { return .array(a) }
                guard n == UInt8(ascii: ",") else { throw Failure(at: i) }
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        default:
            let start = i
            while i < b.count, "-+.eE0123456789".utf8.contains(b[i]) { i += 1 }
            guard i > start, Double(String(decoding: b[start..<i], as: UTF8.self)) != nil else { throw Failure(at: start) }
            return .number(String(decoding: b[start..<i], as: UTF8.self))
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard i + 4 <= b.count, let v = UInt32(String(decoding: b[i..<(i + 4)], as: UTF8.self), radix: 16) else { throw Failure(at: i) }
        i += 4
        return v
    }

    mutating func string() throws -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < b.count else { throw Failure(at: i) }
            let c = b[i]
            i += 1
            if c == UInt8(ascii: "\"") { break }
            guard c >= 0x20 else { throw Failure(at: i - 1) }  // raw control characters are not JSON
            guard c == UInt8(ascii: "\\") else { out.append(c); continue }
            guard i < b.count else { throw Failure(at: i) }
            let e = b[i]
            i += 1
            var scalar: UInt32
            switch e {
            case UInt8(ascii: "n"): scalar = 0x0a
            case UInt8(ascii: "t"): scalar = 0x09
            case UInt8(ascii: "r"): scalar = 0x0d
            case UInt8(ascii: "b"): scalar = 0x08
            case UInt8(ascii: "f"): scalar = 0x0c
            case UInt8(ascii: "/"), UInt8(ascii: "\\"), UInt8(ascii: "\""): scalar = UInt32(e)
            case UInt8(ascii: "u"):
                scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    try expect("\\u")
                    let lo = try hex4()
                    guard lo >= 0xDC00 && lo < 0xE000 else { throw Failure(at: i) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (lo - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw Failure(at: i)  // a lone surrogate
                }
            default: throw Failure(at: i - 1)
            }
            out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar)!)).utf8))
        }
        // Strict: the line must be valid UTF-8.
        guard let s = String(validating: out, as: UTF8.self) else { throw Failure(at: i) }
        return s
    }
}

// MARK: - The random protocol

/// How a string's or a byte string's length is known.
enum RTLength: Equatable {
    case prefixed(Int, RTOrder)
    case nul
    case rest
    case fixed(Int)
}

indirect enum RTType {
    case int(RTInt, RTOrder)
    case float(double: Bool, RTOrder)
    case bool
    case string(RTLength)
    case bytes(RTLength)
    case message(Int)
    case enumeration(Int)
}

enum RTCount {
    case fixed(Int)
    case prefixed(Int, RTOrder)
    /// The value of an earlier field of the message (its index).
    case field(Int)
}

struct RTField {
    var name: String
    var type: RTType
    /// As written in the file: `Uint32le`, `String(u16)`, `Node`.
    var typeText: String
    var count: RTCount?
    var countText = ""
    var hex = false
    var tag: Int?
    var comment: String?
}

struct RTMessage {
    var name: String
    /// As written after `Message` (`SC _7`, `Login = 9`).
    var declaration: String
    var id: UInt64?
    /// 0 client → server, 1 server → client, nil both.
    var direction: Int?
    var fields: [RTField] = []
    var title: String?
}

struct RTEnum {
    var name: String
    var base: RTInt
    var order: RTOrder
    var baseText: String?
    var labels: [(String, String)]
}

struct RTHeaderField {
    var name: String
    var int: RTInt
    var order: RTOrder
    var typeText: String
    var padding = 0
    var constant: UInt64?
    var constantText = ""
    var hex = false
    var isPadding: Bool { padding > 0 }
}

/// What a case exercised, to be sure the generator reaches what it must cover.
struct RTCoverage {
    var outOfOrderCompletions = 0
    var retransmissions = 0
    var oneByteSegments = 0
    var seqWraps = 0
    var unsuffixedDoubleBig = 0
    /// Ids, header constants and enum labels of 2^63 and more in the dissector file.
    var numbersAbove2To63 = 0
    var recursion = 0
    var maxLengthStrings = 0
    var frames = 0

    mutating func add(_ o: RTCoverage) {
        outOfOrderCompletions += o.outOfOrderCompletions; retransmissions += o.retransmissions
        oneByteSegments += o.oneByteSegments; seqWraps += o.seqWraps; unsuffixedDoubleBig += o.unsuffixedDoubleBig
        numbersAbove2To63 += o.numbersAbove2To63; recursion += o.recursion; maxLengthStrings += o.maxLengthStrings
        frames += o.frames
    }
}

struct RTProtocol {
    var name: String
    var port: UInt16
    var order: RTOrder = .big
    var orderText: String?
    var strings: RTLength = .prefixed(2, .big)
    var stringsText: String?
    var header: [RTHeaderField] = []
    var lengthField = 0
    var wholeFrame = true
    /// The length expression's other terms: (header field or nil for a constant, constant, negative).
    var terms: [(field: Int?, constant: Int64, negative: Bool)] = []
    var idField = 0
    var maxFrame = 1 << 20
    var maxFrameText: String?
    var labelsFromComments = false
    var bodyFieldsText = false
    var messages: [RTMessage] = []
    var enums: [RTEnum] = []
    /// Nested-only messages are messages[0..<nestedCount].
    var nestedCount = 0
    var coverage = RTCoverage()

    var headerSize: Int { header.reduce(0) { $0 + ($1.isPadding ? $1.padding : $1.int.width) } }

    /// Header fields NDJSON shows: not padding, not the id, not a length that alone is the frame length.
    var shownHeader: [Int] {
        header.indices.filter { i in
            if header[i].isPadding || i == idField { return false }
            if i == lengthField && wholeFrame && terms.isEmpty { return false }
            return true
        }
    }

    func orderName(_ o: RTOrder) -> String { o == .big ? "big" : "little" }

    var text: String {
        var t = "// random protocol\nprotocol \(name) {\n    port \(port);\n"
        if let o = orderText { t += "    byte_order \(o);\n" }
        if let s = stringsText { t += "    strings \(s);\n" }
        t += "    header {\n"
        for h in header {
            if h.isPadding { t += "        pad \(h.padding);\n"; continue }
            t += "        \(h.typeText) \(h.name)"
            if h.constant != nil { t += " == \(h.constantText)" }
            if h.hex { t += " [hex]" }
            t += ";\n"
        }
        t += "    }\n    \(wholeFrame ? "frame_length" : "body_length") = \(header[lengthField].name)"
        for term in terms {
            t += term.negative ? " - " : " + "
            t += term.field.map { header[$0].name } ?? String(term.constant)
        }
        t += ";\n    message_id = \(header[idField].name);\n"
        if let m = maxFrameText { t += "    max_frame \(m);\n" }
        if bodyFieldsText { t += "    body fields;\n" }
        if labelsFromComments { t += "    labels_from_comments;\n" }
        t += "}\n"
        for e in enums {
            t += "Enum \(e.name)\(e.baseText.map { " : " + $0 } ?? "") {"
            t += e.labels.map { " \($0.0) = \($0.1);" }.joined() + " }\n"
        }
        for m in messages {
            t += "\n"
            if let title = m.title { t += "// ========== \(title) ==========\n" }
            t += "Message \(m.declaration) {\n"
            for f in m.fields {
                t += "    \(f.typeText)"
                if f.count != nil { t += "[\(f.countText)]" }
                t += " \(f.name)"
                if let tag = f.tag { t += " = \(tag)" }
                if f.hex { t += " [hex]" }
                t += ";"
                if let c = f.comment { t += " // \(c)" }
                t += "\n"
            }
            t += "}\n"
        }
        return t
    }
}

/// Builds a random protocol: header, length rule, enums, nested types (with recursion through
/// counted arrays) and the messages that ids select.
struct RTProtocolGenerator {
    var r: RTRand
    var p: RTProtocol
    var usedIDs: [Set<UInt64>] = [[], []]
    var names = 0

    init(_ r: RTRand, index: Int) {
        self.r = r
        p = RTProtocol(name: "rt\(index)", port: 0)
    }

    mutating func fresh(_ base: String) -> String {
        names += 1
        let words = ["count", "id", "length", "type", "value", "name", "flags", "score", "pos", "hp", "名字", "Ünïcode", "x_y", "data"]
        return (base.isEmpty ? r.pick(words) : base) + "_\(names)"
    }

    mutating func orderSuffix(_ o: inout RTOrder) -> String {
        switch r.int(0...3) {
        case 0: o = .little; return r.chance(0.8) ? "le" : "LE"
        case 1: o = .big; return r.chance(0.8) ? "be" : "BE"
        default: o = p.order; return ""
        }
    }

    mutating func build() -> RTProtocol {
        p.port = UInt16(r.int(1024...60000))
        if r.chance(0.5) { p.order = .little; p.orderText = "little" } else if r.chance(0.5) { p.orderText = "big" }
        // The default string rule: omitted means u16 in the protocol's order.
        p.strings = .prefixed(2, p.order)
        if r.chance(0.6) {
            let (rule, text) = lengthRule(allowRest: true, allowNul: true)
            p.strings = rule
            p.stringsText = text
        }
        buildHeader()
        if r.chance(0.3) {
            let m = r.pick([4096, 65536, 1 << 20, 4 << 20])
            p.maxFrame = m
            p.maxFrameText = String(m)
        }
        p.bodyFieldsText = r.chance(0.3)
        p.labelsFromComments = r.chance(0.3)
        for _ in 0..<r.int(0...2) { buildEnum() }
        let nested = r.int(0...4)
        p.nestedCount = nested
        for i in 0..<nested {
            p.messages.append(RTMessage(name: "N\(i)_\(r.int(0...99))", declaration: "", fields: []))
            p.messages[i].declaration = p.messages[i].name
        }
        for i in 0..<nested { p.messages[i].fields = fields(for: i, topLevel: false) }
        for _ in 0..<r.int(1...6) { buildTopLevel() }
        return p
    }

    // MARK: Header and length rule

    mutating func headerInt(_ int: RTInt, name: String) -> RTHeaderField {
        var o = p.order
        let suffix = orderSuffix(&o)
        return RTHeaderField(name: name, int: int, order: o, typeText: r.anyCase(int.name(false) + suffix))
    }

    mutating func buildHeader() {
        var fields: [RTHeaderField] = []
        var lenInt = RTInt(width: r.pick([1, 2, 3, 4, 4, 8]), signed: r.chance(0.2))
        if lenInt.width == 1 { lenInt.signed = false }
        fields.append(headerInt(lenInt, name: fresh("len")))
        var idInt = RTInt(width: r.pick([1, 2, 2, 3, 4, 8, 8]), signed: false)
        if r.chance(0.1) { idInt.signed = true }  // ids then stay below the sign bit
        fields.append(headerInt(idInt, name: fresh("msgid")))
        for _ in 0..<r.int(0...3) {
            var f = headerInt(RTInt.random(&r), name: fresh("h"))
            if r.chance(0.4) {
                f.constant = f.int.randomRaw(&r)
                if f.int.width == 8 && !f.int.signed && r.chance(0.5) { f.constant = UInt64(1) << 63 | r.bits() }
                let c = f.constant!
                if f.int.signed && f.int.signExtended(c) < 0 {
                    f.constantText = String(f.int.signExtended(c))
                } else {
                    f.constantText = r.chance(0.3) ? "0x" + String(c, radix: 16) : String(c)
                }
                if c >= 1 << 63 && !f.int.signed { p.coverage.numbersAbove2To63 += 1 }
            }
            f.hex = r.chance(0.25)
            fields.append(f)
        }
        for _ in 0..<r.int(0...2) {
            fields.append(RTHeaderField(name: "pad", int: RTInt(width: 1, signed: false), order: p.order, typeText: "pad",
                                        padding: r.pick([1, 2, 3, 5, 8])))
        }
        if r.chance(0.15) { fields[0].hex = true }
        fields.shuffle(using: &r.g)
        p.header = fields
        p.lengthField = fields.firstIndex { $0.name.hasPrefix("len_") }!
        p.idField = fields.firstIndex { $0.name.hasPrefix("msgid_") }!
        p.wholeFrame = r.chance(0.5)
        // Netty's lengthAdjustment and a second length field (`headLength + bodyLength`).
        let others = fields.indices.filter { !fields[$0].isPadding && $0 != p.lengthField && $0 != p.idField }
        if let e = others.randomElement(using: &r.g), r.chance(0.3) {
            let h = fields[e]
            // A constant term stays small: a uint64 0xFFFF... is 2^64-1, not -1.
            let small = h.constant.map { h.int.lengthTerm($0) ?? .max } ?? 0
            if small > -200 && small < 200 { p.terms.append((e, 0, r.chance(0.3))) }
        }
        if r.chance(0.4) { p.terms.append((nil, Int64(r.int(0...20)), r.chance(0.5))) }
    }

    /// A string, bytes or `strings` rule: (rule, text in parentheses or after `strings`).
    mutating func lengthRule(allowRest: Bool, allowNul: Bool) -> (RTLength, String) {
        switch r.int(0...9) {
        case 0...4:
            let w = r.pick([1, 2, 4])
            var o = p.order
            let suffix = w == 1 ? "" : orderSuffix(&o)
            return (.prefixed(w, o), r.anyCase("u\(w * 8)") + suffix)
        case 5, 6:
            let n = r.pick([0, 1, 4, 16, 33])
            return (.fixed(n), String(n))
        case 7 where allowNul:
            return (.nul, "nul")
        case 8 where allowRest:
            return (.rest, "rest")
        default:
            return (.prefixed(2, p.order), "u16")
        }
    }

    // MARK: Enums and messages

    mutating func buildEnum() {
        var base = RTInt.random(&r)
        var order = p.order
        var baseText: String?
        if r.chance(0.8) {
            let suffix = orderSuffix(&order)
            baseText = r.anyCase(base.name(true) + suffix)
        } else {
            base = RTInt(width: 1, signed: false)  // no base type: Uint8
        }
        var labels: [(String, String)] = []
        var seen = Set<UInt64>()
        for i in 0..<r.int(1...4) {
            let raw = base.randomRaw(&r)
            guard seen.insert(raw).inserted else { continue }
            if !base.signed && raw >= 1 << 63 { p.coverage.numbersAbove2To63 += 1 }
            labels.append(("L\(i)", base.decimal(raw)))
        }
        p.enums.append(RTEnum(name: "E\(p.enums.count)_\(r.int(0...99))", base: base, order: order, baseText: baseText, labels: labels))
    }

    /// The message's fields; nested type `self` may use nested types after it, and itself
    /// through a counted array (recursion that an empty array ends).
    mutating func fields(for self_: Int?, topLevel: Bool) -> [RTField] {
        var fs: [RTField] = []
        let n = r.chance(0.1) ? 0 : r.int(1...7)
        for k in 0..<n {
            let last = k == n - 1
            var f = scalarField(allowRest: topLevel && last, nestedFrom: self_.map { $0 + 1 } ?? 0)
            // Arrays of any element that takes at least one byte.
            if r.chance(0.3), minWidth(f.type) > 0, !isRest(f.type) {
                let counters = fs.indices.filter { i in
                    if case .int(let t, _) = fs[i].type, fs[i].count == nil, t.width <= 4 || !t.signed { return true }
                    return false
                }
                switch r.int(0...2) {
                case 0:
                    let c = r.pick([0, 1, 2, 3, 5])
                    f.count = .fixed(c); f.countText = String(c)
                case 1 where !counters.isEmpty:
                    let i = r.pick(counters)
                    f.count = .field(i); f.countText = fs[i].name
                default:
                    let w = r.pick([1, 2, 4])
                    var o = p.order
                    let suffix = w == 1 ? "" : orderSuffix(&o)
                    f.count = .prefixed(w, o); f.countText = r.anyCase("u\(w * 8)") + suffix
                }
                f.hex = false
            }
            fs.append(f)
        }
        if let me = self_, r.chance(0.35) {
            // Recursion through a counted array: `Node[u8] children` or `Node[n] children`.
            var f = RTField(name: fresh("children"), type: .message(me), typeText: r.anyCase(p.messages[me].name))
            if r.chance(0.5) || fs.isEmpty {
                let counter = RTField(name: fresh("n"), type: .int(RTInt(width: 1, signed: false), p.order), typeText: "Uint8")
                fs.append(counter)
                f.count = .field(fs.count - 1); f.countText = counter.name
            } else {
                f.count = .prefixed(1, p.order); f.countText = "u8"
            }
            fs.insert(f, at: fs.count)
            p.coverage.recursion += 1
        }
        return fs
    }

    func isRest(_ t: RTType) -> Bool {
        switch t {
        case .string(.rest), .bytes(.rest): return true
        default: return false
        }
    }

    mutating func scalarField(allowRest: Bool, nestedFrom: Int) -> RTField {
        var f = RTField(name: fresh(""), type: .bool, typeText: "Bool")
        if r.chance(0.3) { f.tag = r.int(1...99) }
        switch r.int(0...15) {
        case 0...4:
            let t = RTInt.random(&r)
            var o = p.order
            let suffix = orderSuffix(&o)
            f.type = .int(t, o); f.typeText = r.anyCase(t.name(true) + suffix)
            f.hex = r.chance(0.2)
            if p.labelsFromComments && r.chance(0.5) { f.comment = "value: 1 first one 2 second one" }
            else if r.chance(0.2) { f.comment = "a description" }
        case 5, 6:
            let double = r.chance(0.5)
            var o = p.order
            let suffix = orderSuffix(&o)
            let base = double ? r.pick(["Double", "Float64"]) : r.pick(["Float", "Float32"])
            f.type = .float(double: double, o); f.typeText = r.anyCase(base + suffix)
            if double && suffix.isEmpty && p.order == .big { p.coverage.unsuffixedDoubleBig += 1 }
        case 7:
            f.type = .bool; f.typeText = r.anyCase("Bool")
        case 8...10:
            // Written without a rule when it is the protocol's `strings` rule.
            let (rule, text) = lengthRule(allowRest: allowRest, allowNul: true)
            f.type = .string(rule)
            f.typeText = rule == p.strings && r.chance(0.5) ? r.anyCase("String") : "String(\(text))"
        case 11, 12:
            let (rule, text) = lengthRule(allowRest: allowRest, allowNul: false)
            f.type = .bytes(rule)
            f.typeText = rule == .rest && r.chance(0.5) ? "Bytes" : "Bytes(\(text))"
        case 13 where !p.enums.isEmpty:
            let e = r.int(0...(p.enums.count - 1))
            f.type = .enumeration(e); f.typeText = r.anyCase(p.enums[e].name)
            f.hex = r.chance(0.15)
        default:
            if nestedFrom < p.nestedCount {
                let m = r.int(nestedFrom...(p.nestedCount - 1))
                f.type = .message(m); f.typeText = r.anyCase(p.messages[m].name)
            } else {
                f.type = .bool; f.typeText = "Bool"
            }
        }
        return f
    }

    /// The fewest bytes a type takes (a message in a cycle counts zero), as the checker counts.
    func minWidth(_ t: RTType, visiting: Set<Int> = []) -> Int {
        switch t {
        case .int(let i, _): return i.width
        case .float(let d, _): return d ? 8 : 4
        case .bool: return 1
        case .enumeration(let e): return p.enums[e].base.width
        case .string(let l), .bytes(let l):
            switch l {
            case .prefixed(let w, _): return w
            case .nul: return 1
            case .rest: return 0
            case .fixed(let n): return n
            }
        case .message(let m):
            if visiting.contains(m) { return 0 }
            var total = 0
            for f in p.messages[m].fields {
                let w = minWidth(f.type, visiting: visiting.union([m]))
                switch f.count {
                case nil: total += w
                case .fixed(let n): total += n * w
                case .prefixed(let pw, _): total += pw
                case .field: break
                }
            }
            return total
        }
    }

    mutating func buildTopLevel() {
        let idWidth = p.header[p.idField].int
        // Ids stay below the sign bit of a signed id field (its value is read sign-extended).
        let limit: UInt64 = idWidth.signed ? (idWidth.mask >> 1) : idWidth.mask
        func randomID() -> UInt64 {
            switch r.int(0...5) {
            case 0: return limit
            case 1: return 0
            case 2 where limit == .max: return 1 << 63
            case 3 where limit == .max: return (1 << 63) + UInt64(r.int(0...9))
            default: return r.bits() & (limit > 65535 && r.chance(0.5) ? 0xffff : limit)
            }
        }
        var id = randomID()
        var direction: Int? = r.pick([0, 1, nil])
        for _ in 0..<10 where !free(id, direction) { id = randomID() }
        guard free(id, direction) else { return }
        var m = RTMessage(name: "", declaration: "", id: id, direction: direction)
        switch direction {
        case 0?:
            let prefix = r.pick(["Cs_", "CS_", "cs_"])
            if r.chance(0.25) {
                // A Cs_ name with an explicit id: the id is the one given, the direction the name's.
                m.name = prefix + String(r.int(0...99999))
                m.declaration = m.name + " = \(id)"
            } else {
                m.name = prefix + String(id)
                m.declaration = m.name
            }
        case 1?:
            let prefix = r.pick(["Sc_", "SC_", "sc_", "SC _"])
            m.name = prefix.replacingOccurrences(of: " ", with: "") + String(id)
            m.declaration = prefix + String(id)
        default:
            direction = nil
            m.name = "Msg\(p.messages.count)"
            m.declaration = m.name + " = \(r.chance(0.2) ? "0x" + String(id, radix: 16) : String(id))"
        }
        if id >= 1 << 63 { p.coverage.numbersAbove2To63 += 1 }
        if r.chance(0.3) { m.title = "Title of \(m.name)" }
        // Names are unique whatever their case (the name of a Cs_ with an explicit id is random).
        guard !p.messages.contains(where: { $0.name.lowercased() == m.name.lowercased() }) else { return }
        for d in direction.map({ [$0] }) ?? [0, 1] { usedIDs[d].insert(id) }
        p.messages.append(m)
        let me = p.messages.count - 1
        p.messages[me].fields = fields(for: nil, topLevel: true)
    }

    func free(_ id: UInt64, _ d: Int?) -> Bool {
        (d.map { [$0] } ?? [0, 1]).allSatisfy { !usedIDs[$0].contains(id) }
    }
}

extension RTInt {
    /// A raw value as the length rule adds it: sign-extended when signed; an unsigned one is
    /// its magnitude (nil past Int64, which no length can use).
    func lengthTerm(_ raw: UInt64) -> Int64? { signed ? signExtended(raw) : raw <= UInt64(Int64.max) ? Int64(raw) : nil }
}

// MARK: - Messages on the wire

/// One frame as encoded, with the NDJSON it must give.
struct RTFrame {
    var bytes: [UInt8]
    var message: Int
    var id: UInt64
    var header: RTJSON?
    var fields: RTJSON
    var invalidStrings: [String]
}

/// Encodes random values of a protocol's messages by the documented wire rules.
struct RTEncoder {
    var r: RTRand
    let p: RTProtocol
    var body: [UInt8] = []
    /// How generous sizes are: lowered when a frame does not fit its length field.
    var scale = 1.0
    var invalid: [String] = []
    var coverage = RTCoverage()

    init(_ r: RTRand, _ p: RTProtocol) {
        self.r = r
        self.p = p
    }

    /// A frame of message `mi`, or nil when none fits the length field and max_frame.
    mutating func frame(_ mi: Int) -> RTFrame? {
        for attempt in 0..<4 {
            scale = [1.0, 0.3, 0.05, 0][attempt]
            body = []
            invalid = []
            let fields = message(mi, depth: 0)
            if let f = wrap(mi, fields) { return f }
        }
        return nil
    }

    mutating func wrap(_ mi: Int, _ fields: RTJSON) -> RTFrame? {
        let total = p.headerSize + body.count
        guard total <= p.maxFrame else { return nil }
        let id = p.messages[mi].id!
        // Values of the header fields, then the length field from the rule.
        var raws = p.header.map { h -> UInt64 in h.constant ?? (h.isPadding ? 0 : h.int.randomRaw(&r)) }
        raws[p.idField] = id
        var sum: Int64 = 0
        for t in p.terms {
            if let f = t.field {
                if p.header[f].constant == nil { raws[f] = UInt64(r.int(0...40)) }
                let v = p.header[f].int.lengthTerm(raws[f])!
                sum += t.negative ? -v : v
            } else {
                sum += t.negative ? -t.constant : t.constant
            }
        }
        let target = Int64(p.wholeFrame ? total : body.count)
        guard let len = p.header[p.lengthField].int.raw(target - sum) else { return nil }
        raws[p.lengthField] = len
        var bytes: [UInt8] = []
        for (i, h) in p.header.enumerated() {
            if h.isPadding {
                for _ in 0..<h.padding { bytes.append(UInt8(truncatingIfNeeded: r.bits())) }
            } else {
                rtPut(raws[i], h.int.width, h.order, &bytes)
            }
        }
        bytes += body
        let shown = p.shownHeader.map { i -> (String, RTJSON) in
            let h = p.header[i]
            return (h.name, h.hex ? .string(h.int.hex(raws[i])) : .number(h.int.decimal(raws[i])))
        }
        return RTFrame(bytes: bytes, message: mi, id: id, header: shown.isEmpty ? nil : .object(shown),
                       fields: fields, invalidStrings: invalid)
    }

    mutating func message(_ mi: Int, depth: Int) -> RTJSON {
        let m = p.messages[mi]
        precondition(depth < 40, "runaway nesting in \(m.name):\n\(p.text)")
        // A count field holds the length of the arrays it counts: choose those lengths first.
        var countOf: [Int: Int] = [:]
        for f in m.fields {
            if case .field(let i)? = f.count, countOf[i] == nil {
                guard case .int(let t, _) = m.fields[i].type else { continue }
                let most = min(t.signed ? Int(t.mask >> 1) : Int(min(t.mask, 1000)), elementBudget(f.type, depth: depth))
                countOf[i] = r.int(0...max(0, most))
            }
        }
        var out: [(String, RTJSON)] = []
        for (k, f) in m.fields.enumerated() {
            if let n = countOf[k], case .int(let t, let o) = f.type {
                rtPut(UInt64(n), t.width, o, &body)
                out.append((f.name, f.hex ? .string(t.hex(UInt64(n))) : .number(String(n))))
                continue
            }
            guard let count = f.count else {
                out.append((f.name, value(f.type, f, depth: depth + 1)))
                continue
            }
            var n: Int
            switch count {
            case .fixed(let c): n = c
            case .field(let i): n = countOf[i] ?? 0
            case .prefixed(let w, let o):
                let cap = w == 1 ? 255 : 100_000
                n = r.int(0...max(0, min(cap, elementBudget(f.type, depth: depth))))
                if case .message = f.type {} else if w == 1 && r.chance(0.02 * scale) && minWidth(f.type) <= 2 {
                    n = 255  // the prefix's largest
                }
                rtPut(UInt64(n), w, o, &body)
            }
            var elements: [RTJSON] = []
            for _ in 0..<n { elements.append(value(f.type, f, depth: depth + 2, inArray: true)) }
            out.append((f.name, .array(elements)))
        }
        return .object(out)
    }

    func minWidth(_ t: RTType) -> Int {
        var g = RTProtocolGenerator(r, index: 0)
        g.p = p  // the checker's rule, as the generator applies it
        return g.minWidth(t)
    }

    /// How many elements an array may get: few for messages, none past a depth (recursion ends).
    func elementBudget(_ t: RTType, depth: Int) -> Int {
        if case .message = t {
            if depth >= 8 { return 0 }
            return Int(3 * scale)
        }
        return Int(12 * scale)
    }

    mutating func value(_ t: RTType, _ f: RTField, depth: Int, inArray: Bool = false) -> RTJSON {
        switch t {
        case .int(let i, let o):
            let raw = i.randomRaw(&r)
            rtPut(raw, i.width, o, &body)
            // `[hex]` applies to a single field; this generator writes it on no array.
            return f.hex && !inArray ? .string(i.hex(raw)) : .number(i.decimal(raw))
        case .enumeration(let e):
            let en = p.enums[e]
            var raw = en.base.randomRaw(&r)
            if r.chance(0.5), let l = en.labels.randomElement(using: &r.g) {
                raw = en.base.signed ? UInt64(bitPattern: Int64(l.1)!) & en.base.mask : UInt64(l.1)!
            }
            rtPut(raw, en.base.width, en.order, &body)
            return f.hex && !inArray ? .string(en.base.hex(raw)) : .number(en.base.decimal(raw))
        case .float(let double, let o):
            let specials: [Double] = [0, -0.0, 1.5, -2, .nan, .infinity, -.infinity, 1e15, 123456789, .leastNonzeroMagnitude * 4096, .greatestFiniteMagnitude, 0.1]
            if double {
                let d = r.chance(0.4) ? r.pick(specials) : Double(bitPattern: r.bits())
                rtPut(d.bitPattern, 8, o, &body)
                return .float(d)
            }
            let x = r.chance(0.4) ? Float(r.pick(specials)) : Float(bitPattern: UInt32(truncatingIfNeeded: r.bits()))
            rtPut(UInt64(x.bitPattern), 4, o, &body)
            return .float(Double(x))
        case .bool:
            let b = r.pick([0, 1, 1, 0, 2, 0x80, 0xff]) as Int
            body.append(UInt8(b))
            return .bool(b != 0)
        case .string(let rule):
            return .string(string(rule, f))
        case .bytes(let rule):
            let n: Int
            switch rule {
            case .fixed(let k): n = k
            case .prefixed(let w, _): n = r.int(0...min(w == 1 ? 255 : 70_000, Int(40 * scale)))
            default: n = r.int(0...Int(40 * scale))
            }
            let b = (0..<n).map { _ in UInt8(truncatingIfNeeded: r.bits()) }
            if case .prefixed(let w, let o) = rule { rtPut(UInt64(n), w, o, &body) }
            body += b
            return .string(rtHex(b))
        case .message(let m):
            return message(m, depth: depth)
        }
    }

    static let pieces: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{01}", "\u{1f}", "\u{7f}", "é", "欢迎", "😀",
                                   "\u{2028}", "\u{FFFD}", "ß", "x", "y"]

    /// A string's bytes written by its rule; returns the text NDJSON must show.
    mutating func string(_ rule: RTLength, _ f: RTField) -> String {
        var most: Int
        switch rule {
        case .fixed(let n): most = n
        case .prefixed(let w, _):
            most = Int(30 * scale)
            // Strings at the largest length their prefix allows.
            if r.chance(0.04 * scale) { most = w == 1 ? 255 : (r.chance(0.2) ? 65_535 : 300); coverage.maxLengthStrings += 1 }
        default: most = Int(30 * scale)
        }
        let exact = r.chance(0.3) || most > 200  // fill the room exactly
        let target = exact ? most : r.int(0...most)
        var b: [UInt8] = []
        var bad = false
        while b.count < target {
            if r.chance(0.02) {
                // Bytes that are no UTF-8: each one shown as U+FFFD, with a warning.
                let junk: [UInt8] = r.pick([[0xff], [0x80], [0xc0, 0x80], [0xfe]])
                if b.count + junk.count <= target { b += junk; bad = true; continue }
            }
            var piece = Array(r.pick(Self.pieces).utf8)
            if rule != .nul && r.chance(0.03) { piece = [0] }  // NUL inside the text (not at a fixed string's end)
            if b.count + piece.count > target { piece = [UInt8(ascii: "p")] }
            b += piece
        }
        if case .fixed = rule { while b.last == 0 { b[b.count - 1] = UInt8(ascii: "q") } }
        switch rule {
        case .prefixed(let w, let o): rtPut(UInt64(b.count), w, o, &body); body += b
        case .nul: body += b; body.append(0)
        case .rest: body += b
        case .fixed(let n): body += b; body += [UInt8](repeating: 0, count: n - b.count)
        }
        if bad { invalid.append(f.name) }
        return String(decoding: b, as: UTF8.self)
    }
}
