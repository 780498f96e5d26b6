/// Parsed but not yet resolved: names of types, fields and header fields still text.
struct PendingField {
    var typeName: String
    var token: Token
    var param: Token?
    var array: Token?
    var name = ""
    var tag: Int?
    var description: String?
}

struct PendingMessage {
    var name: String
    var line: Int
    var token: Token
    var title: String?
    var id: UInt64?
    var direction: Direction?
    var fields: [PendingField] = []
    /// `Message NAME = ID : pkg.Type;`: the protobuf type of its body.
    var protoType: (String, Token)?
}

struct PendingProtocol {
    var schema: ProtocolSchema
    var line = 0
    var token: Token?
    var lengthExpr: [(String?, Int64, Bool, Token)] = []
    var lengthToken: Token?
    var lengthWholeFrame = true
    var idName: (String, Token)?
    var messages: [PendingMessage] = []
    var enums: [EnumDef] = []
    /// Protobuf bodies and encryption (see ProtoBinding.swift).
    var proto = PendingProto()
}

/// Turns names into indices and checks that everything refers to something real.
struct Resolver {
    let lexers: [Lexer]
    var options = LoadOptions()

    func err(_ t: Token, _ m: String) -> DissectorError { lexers[t.file].error(t.line, t.column, m) }

    func resolve(_ p: PendingProtocol) throws(DissectorError) -> ProtocolSchema {
        var s = p.schema
        guard let lt = p.lengthToken, let pt = p.token else {
            throw err(p.token ?? Token(kind: .end, line: p.line, column: 1),
                      "protocol '\(s.name)' needs 'frame_length = FIELD;' or 'body_length = FIELD;'")
        }
        _ = pt
        var terms: [(field: Int?, constant: Int64, negative: Bool)] = []
        for (name, c, neg, t) in p.lengthExpr {
            if let name {
                guard let i = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) else {
                    throw err(t, "'\(name)' is not a header field")
                }
                terms.append((i, 0, neg))
            } else {
                terms.append((nil, c, neg))
            }
        }
        _ = lt
        s.length = LengthRule(terms: terms, countsWholeFrame: p.lengthWholeFrame)
        if let (name, t) = p.idName {
            guard let i = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) else {
                throw err(t, "'\(name)' is not a header field")
            }
            s.idField = i
        }
        s.enums = p.enums
        // Messages first by name, so fields can refer to messages declared later.
        var byName: [String: Int] = [:]
        for (i, m) in p.messages.enumerated() {
            if byName[m.name.lowercased()] != nil { throw err(m.token, "message '\(m.name)' is declared twice") }
            byName[m.name.lowercased()] = i
        }
        var enumsByName: [String: Int] = [:]
        for (i, e) in p.enums.enumerated() { enumsByName[e.name.lowercased()] = i }

        for (mi, m) in p.messages.enumerated() {
            var fields: [FieldDef] = []
            for pf in m.fields {
                var fd = FieldDef(name: pf.name, type: .bool, array: nil, tag: pf.tag, description: pf.description,
                                  labels: nil, nameBytes: Array(pf.name.utf8))
                fd.type = try fieldType(pf, schema: s, messages: byName, enums: enumsByName)
                if case .enumeration(let ei, _) = fd.type { fd.labels = s.enums[ei].labels }
                if let a = pf.array { fd.array = try arrayCount(a, earlier: fields) }
                if s.labelsFromComments, fd.labels == nil, let d = pf.description, fd.type.isInteger {
                    let l = CommentLabels.parse(d)
                    if !l.isEmpty { fd.labels = l }
                }
                if fields.contains(where: { $0.name == pf.name }) {
                    throw err(pf.token, "field '\(pf.name)' is declared twice in '\(m.name)'")
                }
                fields.append(fd)
            }
            s.messages.append(MessageDef(name: m.name, title: m.title, id: m.id, direction: m.direction,
                                         fields: fields, nameBytes: Array(m.name.utf8), line: m.line))
            if let id = m.id {
                for d in m.direction.map({ [$0] }) ?? Direction.allCases {
                    if let other = s.byID[d]?[id] {
                        throw err(m.token, "message id \(id) (\(d.name)) is already used by '\(s.messages[other].name)'")
                    }
                    s.byID[d]?[id] = mi
                }
            }
        }
        try attachProto(p, to: &s)
        return s
    }

    func fieldType(_ pf: PendingField, schema s: ProtocolSchema, messages: [String: Int],
                   enums: [String: Int]) throws(DissectorError) -> FieldType {
        let l = pf.typeName.lowercased()
        if let it = IntegerType.parse(pf.typeName, default: s.order) {
            return it.signed ? .signed(width: it.width, order: it.order) : .unsigned(width: it.width, order: it.order)
        }
        switch l {
        case "float", "float32", "floatle", "floatbe", "float32le", "float32be":
            return .float32(l.hasSuffix("le") ? .little : l.hasSuffix("be") ? .big : s.order)
        case "double", "float64", "doublele", "doublebe", "float64le", "float64be":
            return .float64(l.hasSuffix("le") ? .little : l.hasSuffix("be") ? .big : s.order)
        case "bool", "boolean": return .bool
        case "string": return .string(try rule(pf, default: s.strings))
        case "bytes", "binary": return .bytes(try rule(pf, default: .rest))
        default: break
        }
        if let e = enums[l] { return .enumeration(e, base: s.enums[e].base) }
        if let m = messages[l] { return .message(m) }
        throw err(pf.token, "unknown type '\(pf.typeName)' (not a built-in type, message or enum)")
    }

    func rule(_ pf: PendingField, default d: StringRule) throws(DissectorError) -> StringRule {
        guard let t = pf.param else { return d }
        switch t.kind {
        case .number(let n):
            guard n >= 0 && n <= 1 << 20 else { throw err(t, "size out of range") }
            return .fixed(Int(n))
        case .ident(let r):
            if let w = Self.prefixWidth(r) { return .prefixed(width: w) }
            switch r.lowercased() {
            case "nul", "null", "cstring": return .nulTerminated
            case "rest": return .rest
            default: break
            }
        default: break
        }
        throw err(t, "expected u8, u16, u32, nul, rest or a size")
    }

    /// `u8`/`u16`/`u32` (or `uint8`...) as a length or count prefix width.
    static func prefixWidth(_ name: String) -> Int? {
        switch name.lowercased() {
        case "u8", "uint8": return 1
        case "u16", "uint16": return 2
        case "u32", "uint32": return 4
        default: return nil
        }
    }

    func arrayCount(_ t: Token, earlier: [FieldDef]) throws(DissectorError) -> ArrayCount {
        switch t.kind {
        case .number(let n):
            guard n >= 0 && n <= 1 << 16 else { throw err(t, "array size out of range 0-65536") }
            return .fixed(Int(n))
        case .ident(let r):
            if let w = Self.prefixWidth(r) { return .prefixed(width: w) }
            guard let i = earlier.firstIndex(where: { $0.name == r }) else {
                throw err(t, "array count '\(r)' is not u8/u16/u32 or an earlier field of this message")
            }
            guard earlier[i].type.isInteger, earlier[i].array == nil else {
                throw err(t, "array count field '\(r)' must be a single integer")
            }
            return .field(i)
        default:
            throw err(t, "expected an array count: a number, u8/u16/u32, or an earlier field")
        }
    }
}

extension FieldType {
    var isInteger: Bool {
        switch self {
        case .unsigned, .signed, .enumeration: return true
        default: return false
        }
    }
}

/// Value labels from a comment like `// 1 success 0 exception 2 cannot enter this level`:
/// each number followed by words starts a label. Text before the first number is ignored.
enum CommentLabels {
    static func parse(_ text: String) -> [Int64: String] {
        var labels: [Int64: String] = [:]
        var current: Int64?
        var words: [Substring] = []
        func close() {
            if let c = current, !words.isEmpty, labels[c] == nil {
                labels[c] = words.joined(separator: " ").trimmingCharacters(in: ".,;:")
            }
        }
        for w in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            // A number starts a new label unless it was used already (then it is part of the text).
            if let n = Int64(w), labels[n] == nil, n != current {
                close()
                current = n
                words = []
            } else if current != nil {
                words.append(w)
            }
        }
        close()
        // One number in a sentence is not a list of labels.
        return labels.count >= 2 ? labels : [:]
    }
}
