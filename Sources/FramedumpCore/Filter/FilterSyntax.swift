/// `-Y` display filters in Wireshark's syntax, parsed into an expression tree:
///
///     expr   := or
///     or     := and (("or" | "||") and)*
///     and    := not (("and" | "&&") not)*
///     not    := ("not" | "!") not | primary
///     primary:= "(" expr ")" | field [op value | "contains" value | "matches" string | "in" "{" value* "}"]
///     op     := == != < <= > >= | eq ne lt le gt ge
///     value  := integer | "string" | bare word (an address, a label, true/false)
///
/// `not` binds tighter than `and`, `and` tighter than `or`.
public indirect enum FilterExpr: Sendable {
    case or(FilterExpr, FilterExpr)
    case and(FilterExpr, FilterExpr)
    case not(FilterExpr)
    /// A bare protocol or field: true when the message has it.
    case present(FieldReference)
    case compare(FieldReference, CompareOp, FilterValue)
    case contains(FieldReference, FilterValue)
    case matches(FieldReference, String)
    case member(FieldReference, [FilterValue])
}

public enum CompareOp: String, Sendable {
    case eq = "==", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">="
}

/// What a filter names: the message's own attributes, its endpoints, or a decoded field.
public enum FieldReference: Sendable, Equatable {
    case msgID, msgName, msgDir, msgLen, msgProtocol, msgPhase
    case ipSrc, ipDst, ipAddr, tcpPort, tcpSrcPort, tcpDstPort, udpPort, udpSrcPort, udpDstPort
    /// A protocol by name (true for its messages).
    case proto(String)
    /// `PROTOCOL.FIELD[.SUBFIELD...]`: header or body fields, nested messages, JSON keys.
    case field(proto: String, path: [String])
    /// `KEY.FIELD`: a field of the layer the message came through (`ws.opcode`), by the layer's
    /// own names (`LayerKind.fields`).
    case layer(key: String, field: String)
    /// `event` (any), `event.gap`, `event.malformed`, ...: a loss (`LossEvent`), not a message.
    case event(LossEvent.Kind?)
    /// `event.len`: the bytes an event lost, skipped or concerns.
    case eventLen

    var text: String {
        switch self {
        case .msgID: return "msg.id"
        case .msgName: return "msg.name"
        case .msgDir: return "msg.dir"
        case .msgLen: return "msg.len"
        case .msgProtocol: return "msg.protocol"
        case .msgPhase: return "msg.phase"
        case .ipSrc: return "ip.src"
        case .ipDst: return "ip.dst"
        case .ipAddr: return "ip.addr"
        case .tcpPort: return "tcp.port"
        case .tcpSrcPort: return "tcp.srcport"
        case .tcpDstPort: return "tcp.dstport"
        case .udpPort: return "udp.port"
        case .udpSrcPort: return "udp.srcport"
        case .udpDstPort: return "udp.dstport"
        case .proto(let p): return p
        case .field(let p, let path): return ([p] + path).joined(separator: ".")
        case .layer(let k, let f): return k + "." + f
        case .event(let k): return k.map { "event." + $0.rawValue } ?? "event"
        case .eventLen: return "event.len"
        }
    }
}

/// A literal: an integer exactly over both 64-bit ranges (sign and magnitude), a float, or text.
public enum FilterValue: Sendable, Equatable {
    case integer(negative: Bool, magnitude: UInt64)
    case float(Double)
    case text(String)
}

/// A filter that does not parse, with the column (1-based) it points at.
public struct FilterError: Error, CustomStringConvertible, Sendable {
    public var column: Int
    public var message: String
    public var filter: String

    package init(column: Int, message: String, filter: String) {
        self.column = column
        self.message = message
        self.filter = filter
    }

    /// `filter: column N: message`, then the filter with a caret under the column.
    public var description: String {
        "framedump: filter: column \(column): \(message)\n    \(filter)\n    " + String(repeating: " ", count: max(0, column - 1)) + "^"
    }
}

struct FilterToken {
    enum Kind: Equatable { case word(String), string(String), number(String), punct(String), end }
    var kind: Kind
    var column: Int
}

enum FilterLexer {
    static func tokens(_ s: String) throws(FilterError) -> [FilterToken] {
        let u = Array(s.unicodeScalars)
        var out: [FilterToken] = []
        var i = 0
        func err(_ m: String, _ at: Int) -> FilterError { FilterError(column: at + 1, message: m, filter: s) }
        while i < u.count {
            let c = u[i]
            if c == " " || c == "\t" || c == "\n" { i += 1; continue }
            let start = i
            if c == "\"" {
                var text = ""
                i += 1
                while true {
                    guard i < u.count else { throw err("string not closed", start) }
                    let d = u[i]
                    if d == "\"" { i += 1; break }
                    if d == "\\" {
                        guard i + 1 < u.count else { throw err("escape at the end of the filter", i) }
                        let e = u[i + 1]
                        switch e {
                        case "n": text += "\n"; i += 2
                        case "t": text += "\t"; i += 2
                        case "r": text += "\r"; i += 2
                        case "\"", "\\": text.unicodeScalars.append(e); i += 2
                        case "x":
                            guard i + 3 < u.count, let v = UInt8(String(String.UnicodeScalarView(u[(i + 2)...(i + 3)])), radix: 16) else {
                                throw err("\\x needs two hex digits", i)
                            }
                            text.unicodeScalars.append(Unicode.Scalar(v))
                            i += 4
                        default: throw err("unknown escape \\\(e)", i)
                        }
                        continue
                    }
                    text.unicodeScalars.append(d)
                    i += 1
                }
                out.append(FilterToken(kind: .string(text), column: start + 1))
                continue
            }
            for p in ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "{", "}", ","] {
                let ps = Array(p.unicodeScalars)
                if i + ps.count <= u.count && Array(u[i..<(i + ps.count)]) == ps {
                    out.append(FilterToken(kind: .punct(p), column: start + 1))
                    i += ps.count
                    break
                }
            }
            if i > start { continue }
            // Words: field names, numbers, addresses (1.2.3.4, ::1), labels.
            while i < u.count, u[i].properties.isAlphabetic || ("0"..."9").contains(u[i]) || "._-:+".unicodeScalars.contains(u[i]) {
                i += 1
            }
            guard i > start else {
                throw err("unexpected character '\(c)'" + (c == "=" ? " (to compare, write ==)" : ""), start)
            }
            let w = String(String.UnicodeScalarView(u[start..<i]))
            let first = w.unicodeScalars.first!
            let numeric = ("0"..."9").contains(first) || (first == "-" && w.count > 1)
            out.append(FilterToken(kind: numeric ? .number(w) : .word(w), column: start + 1))
        }
        out.append(FilterToken(kind: .end, column: u.count + 1))
        return out
    }
}

/// Parses a filter and checks its names against the loaded dissectors.
public struct FilterParser {
    let text: String
    var tokens: [FilterToken]
    var pos = 0
    let known: FilterNames

    public static func parse(_ text: String, protocols: [ProtocolSchema]) throws(FilterError) -> FilterExpr {
        var p = FilterParser(text: text, tokens: try FilterLexer.tokens(text), known: FilterNames(protocols))
        let e = try p.or()
        guard case .end = p.tok.kind else { throw p.err("expected 'and', 'or' or the end of the filter", p.tok) }
        return e
    }

    var tok: FilterToken { tokens[pos] }
    mutating func next() { if pos < tokens.count - 1 { pos += 1 } }
    func err(_ m: String, _ t: FilterToken) -> FilterError { FilterError(column: t.column, message: m, filter: text) }

    func isWord(_ w: String...) -> Bool {
        if case .word(let x) = tok.kind { return w.contains(x.lowercased()) }
        return false
    }
    func isPunct(_ p: String...) -> Bool {
        if case .punct(let x) = tok.kind { return p.contains(x) }
        return false
    }

    mutating func or() throws(FilterError) -> FilterExpr {
        var e = try and()
        while isWord("or") || isPunct("||") { next(); e = .or(e, try and()) }
        return e
    }

    mutating func and() throws(FilterError) -> FilterExpr {
        var e = try not()
        while isWord("and") || isPunct("&&") { next(); e = .and(e, try not()) }
        return e
    }

    mutating func not() throws(FilterError) -> FilterExpr {
        if isWord("not") || isPunct("!") { next(); return .not(try not()) }
        return try primary()
    }

    mutating func primary() throws(FilterError) -> FilterExpr {
        if isPunct("(") {
            let open = tok
            next()
            let e = try or()
            guard isPunct(")") else { throw err("expected ')' to close the '(' at column \(open.column)", tok) }
            next()
            return e
        }
        guard case .word(let name) = tok.kind else { throw err("expected a field name, 'not' or '('", tok) }
        let fieldToken = tok
        let ref = try known.reference(name, at: fieldToken, text: text)
        next()
        let ops: [String: CompareOp] = ["==": .eq, "!=": .ne, "<": .lt, "<=": .le, ">": .gt, ">=": .ge,
                                        "eq": .eq, "ne": .ne, "lt": .lt, "le": .le, "gt": .gt, "ge": .ge]
        if case .punct(let p) = tok.kind, let op = ops[p] {
            next()
            return .compare(ref, op, try checked(ref, fieldToken))
        }
        if case .word(let w) = tok.kind {
            if let op = ops[w.lowercased()] { next(); return .compare(ref, op, try checked(ref, fieldToken)) }
            switch w.lowercased() {
            case "contains":
                if let problem = known.textless(ref, "contains") { throw err(problem, tok) }
                next()
                return .contains(ref, try value())
            case "matches":
                if let problem = known.textless(ref, "matches") { throw err(problem, tok) }
                next()
                guard case .string(let re) = tok.kind else { throw err("'matches' needs a regular expression in double quotes", tok) }
                do { try FilterRegex.check(re) } catch { throw err("not a regular expression: \(error.message) (at byte \(error.offset) of the pattern)", tok) }
                next()
                return .matches(ref, re)
            case "in":
                next()
                guard isPunct("{") else { throw err("expected '{' after 'in'", tok) }
                next()
                var values: [FilterValue] = []
                while !isPunct("}") {
                    if isPunct(",") { next(); continue }
                    if case .end = tok.kind { throw err("expected '}' to close the set", tok) }
                    values.append(try checked(ref, fieldToken))
                }
                next()
                return .member(ref, values)
            default: break
            }
        }
        return .present(ref)
    }

    /// A value compared with `ref`, checked against what the loaded schemas say `ref` holds:
    /// a value it can never equal is an error, not a filter that silently matches nothing.
    mutating func checked(_ ref: FieldReference, _ fieldToken: FilterToken) throws(FilterError) -> FilterValue {
        let t = tok
        let v = try value()
        if let problem = known.mismatch(ref, v) { throw err(problem, t) }
        return v
    }

    mutating func value() throws(FilterError) -> FilterValue {
        let t = tok
        switch t.kind {
        case .string(let s): next(); return .text(s)
        case .number(let n):
            next()
            let neg = n.hasPrefix("-")
            let digits = neg ? String(n.dropFirst()) : n
            if let m = digits.hasPrefix("0x") ? UInt64(digits.dropFirst(2), radix: 16) : UInt64(digits) {
                if neg && m > UInt64(Int64.max) + 1 { throw err("\(n) is below the smallest 64-bit integer", t) }
                return .integer(negative: neg && m != 0, magnitude: m)
            }
            if let d = Double(n) { return .float(d) }
            // Not a number after all (an address such as 127.0.0.1): compared as text.
            return .text(n)
        case .word(let w): next(); return .text(w)
        default: throw err("expected a value: a number, a \"string\" or a word", t)
        }
    }
}

/// The names a filter may use, from the loaded dissectors (for checking and suggestions).
struct FilterNames {
    let protocols: [String: ProtocolSchema]

    init(_ list: [ProtocolSchema]) {
        var p: [String: ProtocolSchema] = [:]
        for s in list where p[s.name.lowercased()] == nil { p[s.name.lowercased()] = s }
        protocols = p
    }

    static let builtins: [String: FieldReference] = [
        "msg.id": .msgID, "msg.name": .msgName, "msg.dir": .msgDir, "msg.len": .msgLen, "msg.protocol": .msgProtocol, "msg.phase": .msgPhase,
        "ip.src": .ipSrc, "ip.dst": .ipDst, "ip.addr": .ipAddr, "tcp.port": .tcpPort, "tcp.srcport": .tcpSrcPort,
        "tcp.dstport": .tcpDstPort, "udp.port": .udpPort, "udp.srcport": .udpSrcPort, "udp.dstport": .udpDstPort,
        "event": .event(nil), "event.len": .eventLen,
    ].merging(LossEvent.Kind.allCases.map { ("event." + $0.rawValue, FieldReference.event($0)) }) { a, _ in a }

    static let eventNames = ["event"] + LossEvent.Kind.allCases.map { "event." + $0.rawValue } + ["event.len"]

    /// Wireshark's names a user types, and what stands for them here.
    static let wiresharkNames = [
        "frame.len": "msg.len", "frame.cap_len": "msg.len", "data.len": "msg.len", "tcp.len": "msg.len",
        "frame.protocols": "msg.protocol", "_ws.col.protocol": "msg.protocol", "_ws.col.info": "msg.name",
    ]

    func reference(_ name: String, at t: FilterToken, text: String) throws(FilterError) -> FieldReference {
        if let b = Self.builtins[name.lowercased()] { return b }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        func fail(_ m: String) -> FilterError { FilterError(column: t.column, message: m, filter: text) }
        guard !parts.contains(where: \.isEmpty) else { throw fail("'\(name)' is not a field name (an empty part between dots)") }
        if parts[0].lowercased() == "event" {
            throw fail("'\(name)' is not an event field (they are \(Self.eventNames.joined(separator: ", ")))"
                       + Self.suggest(name.lowercased(), Self.eventNames))
        }
        let protoName = parts[0].lowercased()
        if protocols[protoName] == nil, let k = LayerRegistry.kind(key: protoName) {
            guard parts.count == 2, k.fieldNames.contains(parts[1]) else {
                throw fail("'\(name)' is not a field of the \(k.name) layer" + Self.suggest(parts.dropFirst().joined(separator: "."), k.fieldNames, prefix: protoName + "."))
            }
            return .layer(key: protoName, field: parts[1])
        }
        guard let s = protocols[protoName] else {
            if let ours = Self.wiresharkNames[name.lowercased()] {
                throw fail("unknown field '\(name)': framedump filters messages, not frames; the message's is \(ours)")
            }
            let all = Array(protocols.keys) + ["msg", "ip", "tcp", "udp", "event"] + LayerRegistry.kinds.map { "\($0.key)" }
            throw fail("unknown protocol or field '\(name)'" + Self.suggest(parts[0], all))
        }
        if parts.count == 1 { return .proto(protoName) }
        // Header fields and the fields of every message are known; JSON keys and text bodies are
        // not (their names are in the traffic), so any name goes under such a protocol.
        // A message's own fields are named from the top; a nested type's fields only through
        // the field that holds them (`game.items.count`, not `game.count`).
        let fieldNames = Set(s.header.map(\.name) + Self.topLevel(s).flatMap { s.messages[$0].fields.map(\.name) }
                             + s.builtinFieldNames)
        let open = s.namesFromTraffic
        if !open && !fieldNames.contains(parts[1]) {
            var hint = Self.suggest(parts[1], Array(fieldNames), prefix: s.name + ".")
            if hint.isEmpty, let path = Self.nestedPath(parts[1], in: s) {
                hint = " (it is a field of a nested message: \(s.name).\(path))"
            }
            throw fail("'\(parts[1])' is not a field of \(s.name)" + hint)
        }
        // A header field has no fields of its own, only its named bits (`zgame.flags.compressed`).
        if parts.count > 2, let h = s.header.first(where: { $0.name == parts[1] && !$0.isPadding }),
           !Self.topLevel(s).contains(where: { s.messages[$0].fields.contains { $0.name == parts[1] } }) {
            let bits = h.bits.map(\.name)
            guard parts.count == 3, bits.contains(parts[2]) else {
                throw fail("'\(parts.dropFirst().joined(separator: "."))' is not a field of \(s.name): '\(parts[1])' is a header field"
                           + (bits.isEmpty ? " with no named bits" : Self.suggest(parts[2], bits, prefix: "\(s.name).\(parts[1]).")))
            }
        }
        return .field(proto: protoName, path: Array(parts.dropFirst()))
    }

    /// What a field can hold, as far as the schemas say.
    enum Kind: Equatable { case integer(labels: Set<String>), float, bool, text, message }

    /// The kinds a reference can have; nil when the schemas cannot say (JSON keys, protobuf
    /// bodies, a name no message declares at that depth).
    func kinds(_ ref: FieldReference) -> [Kind]? {
        switch ref {
        // (`msg.id == "3:7"` where a protocol's ids are pairs.)
        case .msgID where protocols.values.contains { $0.idField2 != nil }: return [.integer(labels: []), .text]
        case .msgID, .msgLen, .eventLen, .tcpPort, .tcpSrcPort, .tcpDstPort, .udpPort, .udpSrcPort, .udpDstPort: return [.integer(labels: [])]
        case .msgName, .msgDir, .msgProtocol, .msgPhase, .ipSrc, .ipDst, .ipAddr: return [.text]
        case .proto: return nil
        case .event: return [.bool]
        case .layer(let key, let field):
            guard let kind = LayerRegistry.fieldKind(key: key, field: field) else { return nil }
            switch kind {
            case .text: return [.text]
            case .bool: return [.bool]
            case .unsigned: return [.integer(labels: [])]
            }
        case .field(let protoName, let path):
            guard let s = protocols[protoName] else { return nil }
            if path.count == 1, s.header.contains(where: { $0.name == path[0] }) { return [.integer(labels: [])] }
            if path.count == 2, s.header.contains(where: { $0.name == path[0] && $0.bits.contains { $0.name == path[1] } }) {
                return [.integer(labels: [])]
            }
            if s.namesFromTraffic { return nil }
            // Walk the path from the messages on the wire through every message that has such a field.
            var defs = Self.topLevel(s).flatMap { s.messages[$0].fields.filter { $0.name == path[0] } }
            for name in path.dropFirst() {
                defs = defs.flatMap { d -> [FieldDef] in
                    guard case .message(let mi) = d.type else { return [] }
                    return s.messages[mi].fields.filter { $0.name == name }
                }
            }
            guard !defs.isEmpty else { return nil }
            return defs.map { d in
                switch d.type {
                case .unsigned, .signed, .enumeration, .varint, .decimal: return .integer(labels: Set(d.labels?.values ?? [:].values))
                case .float32, .float64: return .float
                case .bool: return .bool
                case .string, .bytes: return .text
                case .message: return .message
                }
            }
        }
    }

    /// Why `contains` or `matches` can never be true of `ref`: a number without labels (as in
    /// Wireshark, they take text, bytes and labels), a Bool, a nested message.
    func textless(_ ref: FieldReference, _ op: String) -> String? {
        guard let kinds = kinds(ref), !kinds.isEmpty else { return nil }
        let hasText = kinds.contains { k in
            if case .integer(let labels) = k { return !labels.isEmpty }
            return k == .text
        }
        guard !hasText else { return nil }
        let what = kinds.contains { if case .integer = $0 { return true }; return $0 == .float } ? "a number without labels"
            : kinds.contains(.bool) ? "a Bool" : "a nested message"
        return "'\(op)' looks for text or bytes, and \(ref.text) is \(what): compare it with == != < <= > >= or in {…}"
    }

    /// Why `value` can never match `ref`, or nil when it can.
    func mismatch(_ ref: FieldReference, _ value: FilterValue) -> String? {
        guard let kinds = kinds(ref), !kinds.isEmpty else { return nil }
        let name = ref.text
        switch ref {
        case .msgName:
            guard case .text(let s) = value else { return "msg.name is a message name: write it in double quotes" }
            let names = protocols.values.flatMap { $0.messages.map(\.name) }
            if !names.contains(s) {
                return "no loaded dissector has a message named \"\(s)\"" + Self.suggest(s, names)
            }
            return nil
        case .msgDir:
            guard case .text(let s) = value, s == "c2s" || s == "s2c" else { return "msg.dir is \"c2s\" or \"s2c\"" }
            return nil
        case .layer(let key, let field):
            // A text field with a closed list of values (`ws.opcode`, `tls.version`): another is an error.
            guard case .text(let values?) = LayerRegistry.fieldKind(key: key, field: field) else { break }
            guard case .text(let s) = value else { return "\(name) is a string: compare it with a \"quoted string\" (its values: \(values.joined(separator: ", ")))" }
            if !values.contains(s) { return "\"\(s)\" is not a value of \(name) (its values: \(values.joined(separator: ", ")))" }
            return nil
        case .event:
            return "\(name) is true of such an event: write it alone (`\(name)`, `not \(name)`)"
        case .msgPhase:
            guard case .text(let s) = value else { return "msg.phase is a phase name: write it in double quotes" }
            let names = protocols.values.flatMap(\.phases.names)
            if names.isEmpty { return "no loaded dissector declares connection phases" }
            if !names.contains(s) { return "no loaded dissector has a phase named \"\(s)\"" + Self.suggest(s, names) }
            return nil
        case .msgProtocol:
            guard case .text(let s) = value else { return "msg.protocol is a protocol name: write it in double quotes" }
            let names = protocols.values.map(\.name) + ["websocket"]
            if !names.contains(s) { return "no loaded dissector is named \"\(s)\"" + Self.suggest(s, names) }
            return nil
        default: break
        }
        switch value {
        case .integer, .float:
            if kinds.contains(where: { if case .integer = $0 { return true }; return $0 == .float || $0 == .bool }) { return nil }
            if kinds.contains(.text) { return "\(name) is a string: compare it with a \"quoted string\"" }
            return "\(name) is a nested message, not a value: name one of its fields (\(name).FIELD)"
        case .text(let s):
            if kinds.contains(.text) { return nil }
            if kinds.contains(.bool) && (s == "true" || s == "false") { return nil }
            let labels = kinds.reduce(into: Set<String>()) { if case .integer(let l) = $1 { $0.formUnion(l) } }
            if labels.contains(s) { return nil }
            if kinds.contains(.float) && Double(s) != nil { return nil }
            if !labels.isEmpty {
                return "\"\(s)\" is not a label of \(name)" + Self.suggest(s, Array(labels))
                    + " (its labels: " + labels.sorted().prefix(12).joined(separator: ", ") + (labels.count > 12 ? ", …" : "") + ")"
            }
            if kinds.contains(where: { if case .integer = $0 { return true }; return $0 == .float }) {
                return "\(name) is a number and has no labels: \"\(s)\" can never match it"
            }
            if kinds.contains(.bool) { return "\(name) is a Bool: compare it with true, false, 1 or 0" }
            return "\(name) is a nested message, not a value: name one of its fields (\(name).FIELD)"
        }
    }

    /// The messages a frame can be (an id or a direction of their own); every message when none has.
    static func topLevel(_ s: ProtocolSchema) -> [Int] {
        let top = s.messages.indices.filter { s.messages[$0].id != nil || s.messages[$0].direction != nil }
        return top.isEmpty ? Array(s.messages.indices) : top
    }

    /// `items.count` for a field `count` of a message nested in a top-level field (one level).
    static func nestedPath(_ name: String, in s: ProtocolSchema) -> String? {
        for mi in topLevel(s) {
            for f in s.messages[mi].fields {
                if case .message(let inner) = f.type, s.messages[inner].fields.contains(where: { $0.name == name }) {
                    return f.name + "." + name
                }
            }
        }
        return nil
    }

    /// `(did you mean x, y?)` from names within a small edit distance.
    static func suggest(_ name: String, _ candidates: [String], prefix: String = "") -> String {
        DidYouMean.hint(name, candidates, prefix: prefix)
    }
}
