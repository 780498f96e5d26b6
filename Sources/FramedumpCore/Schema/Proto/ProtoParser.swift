/// Parses one `.proto` file (proto2 or proto3) into a `ProtoFileModel`, leaving message and
/// enum type names as written; `ProtoLoader` resolves them once every import is loaded.
///
/// Options are parsed and kept only where they change decoding or the descriptor
/// (`packed`, `json_name`, `default`, `map_entry`); `extend` blocks and `extensions` are
/// parsed and skipped; services keep their methods' names and types (gRPC's). Groups become nested messages, as in protoc.
struct ProtoParser {
    let lexer: ProtoLexer
    var tokens: [ProtoToken] { lexer.tokens }
    var pos = 0
    var file: ProtoFileModel
    /// Every field whose type is a name: where it sits, its scope, and its token for errors.
    var refs: [TypeRef] = []
    /// Where every declared field, message, enum and value is, for later checks.
    var fieldTokens: [[Int]: [ProtoToken]] = [:]
    var importTokens: [ProtoToken] = []
    var methodRefs: [MethodRef] = []
    static let maxNesting = 64
    static let maxFieldNumber: Int64 = 536_870_911

    struct TypeRef {
        var path: [Int]
        var field: Int
        var scope: String
        var token: ProtoToken
    }

    init(file name: String, text: String) throws(DissectorError) {
        lexer = try ProtoLexer(file: name, text: text)
        file = ProtoFileModel(name: name)
    }

    var tok: ProtoToken { tokens[pos] }
    mutating func next() -> ProtoToken {
        let t = tokens[pos]
        if pos < tokens.count - 1 { pos += 1 }
        return t
    }

    func err(_ t: ProtoToken, _ m: String) -> DissectorError { lexer.error(t.line, t.column, m) }

    func describe(_ t: ProtoToken) -> String {
        switch t.kind {
        case .ident(let s): return "'\(s)'"
        case .number(let n): return "'\(n)'"
        case .string(let s): return "\"\(String(decoding: s, as: UTF8.self))\""
        case .punct(let p): return "'\(Character(Unicode.Scalar(p)))'"
        case .end: return "end of file"
        }
    }

    func isPunct(_ c: Character) -> Bool {
        if case .punct(let p) = tok.kind, p == c.asciiValue { return true }
        return false
    }

    mutating func accept(_ c: Character) -> Bool {
        if isPunct(c) { _ = next(); return true }
        return false
    }

    mutating func expect(_ c: Character, _ context: String = "") throws(DissectorError) {
        guard accept(c) else {
            throw err(tok, "expected '\(c)'\(context.isEmpty ? "" : " " + context), found \(describe(tok))")
        }
    }

    func isWord(_ w: String) -> Bool {
        if case .ident(w) = tok.kind { return true }
        return false
    }

    mutating func ident(_ what: String) throws(DissectorError) -> (String, ProtoToken) {
        let t = tok
        guard case .ident(let s) = t.kind else { throw err(t, "expected \(what), found \(describe(t))") }
        _ = next()
        return (s, t)
    }

    /// A plain (undotted) name.
    mutating func name(_ what: String) throws(DissectorError) -> (String, ProtoToken) {
        let (s, t) = try ident(what)
        if s.contains(".") { throw err(t, "\(what) must not contain '.'") }
        return (s, t)
    }

    mutating func string(_ what: String) throws(DissectorError) -> ([UInt8], ProtoToken) {
        let t = tok
        guard case .string(let s) = t.kind else { throw err(t, "expected \(what), found \(describe(t))") }
        _ = next()
        return (s, t)
    }

    /// An integer literal (decimal, 0x hex or 0 octal), with an optional sign.
    mutating func integer(_ what: String) throws(DissectorError) -> (Int64, ProtoToken) {
        let neg = accept("-")
        let t = tok
        guard case .number(let text) = t.kind, let v = Self.parseInt(text) else {
            throw err(t, "expected \(what), found \(describe(t))")
        }
        _ = next()
        if neg {
            guard v <= UInt64(Int64.max) + 1 else { throw err(t, "\(text) is out of range") }
            return (v == UInt64(Int64.max) + 1 ? Int64.min : -Int64(v), t)
        }
        guard v <= UInt64(Int64.max) else { throw err(t, "\(text) is out of range") }
        return (Int64(v), t)
    }

    static func parseInt(_ text: String) -> UInt64? {
        let l = text.lowercased()
        if l.hasPrefix("0x") { return UInt64(l.dropFirst(2), radix: 16) }
        if l.count > 1 && l.hasPrefix("0") { return UInt64(l.dropFirst(), radix: 8) }
        return UInt64(l)
    }

    // MARK: - File

    mutating func parse() throws(DissectorError) -> ProtoFileModel {
        var sawDecl = false
        if isWord("syntax") || isWord("edition") {
            let (w, wt) = try ident("syntax")
            try expect("=")
            let (s, st) = try string("\"proto2\" or \"proto3\"")
            let text = String(decoding: s, as: UTF8.self)
            if w == "edition" { throw err(wt, "editions (edition = \"\(text)\") are not supported: use syntax = \"proto2\" or \"proto3\"") }
            guard text == "proto2" || text == "proto3" else {
                throw err(st, "unknown syntax \"\(text)\" (expected \"proto2\" or \"proto3\")")
            }
            file.syntax = text
            try expect(";", "after the syntax statement")
        }
        while true {
            let t = tok
            switch t.kind {
            case .end: return file
            case .punct(0x3b): _ = next()
            case .ident("import"):
                _ = next()
                var isPublic = false
                if isWord("public") { _ = next(); isPublic = true } else if isWord("weak") { _ = next() }
                let (p, pt) = try string("a quoted file name")
                if isPublic { file.publicDependencies.append(Int32(file.dependencies.count)) }
                file.dependencies.append(String(decoding: p, as: UTF8.self))
                importTokens.append(pt)
                try expect(";", "after the import")
            case .ident("package"):
                _ = next()
                if sawDecl || !file.package.isEmpty { throw err(t, "'package' must come once, before any message or enum") }
                let (p, _) = try ident("a package name")
                file.package = p
                try expect(";", "after the package name")
            case .ident("option"):
                _ = next()
                _ = try option()
                try expect(";", "after the option")
            case .ident("message"):
                _ = next()
                sawDecl = true
                file.messages.append(try message(path: [file.messages.count], scope: file.package, depth: 0))
            case .ident("enum"):
                _ = next()
                sawDecl = true
                file.enums.append(try enumeration())
            case .ident("service"):
                _ = next()
                sawDecl = true
                file.services.append(try service())
            case .ident("extend"):
                _ = next()
                _ = try ident("the extended message")
                try skipBlock()
            case .ident("syntax"):
                throw err(t, "the syntax statement must be the first statement of the file")
            default:
                throw err(t, "expected 'message', 'enum', 'import', 'package', 'option', 'service' or 'extend', found \(describe(t))")
            }
        }
    }

    /// `service NAME { rpc M (stream? Req) returns (stream? Resp) [{ options }|;] ... }` (the word
    /// `service` already read); the types are resolved with the messages' (`ProtoLoader`).
    mutating func service() throws(DissectorError) -> ProtoServiceModel {
        let (n, nt) = try name("a service name")
        var s = ProtoServiceModel(name: n)
        try expect("{", "to open service '\(n)'")
        var names: Set<String> = []
        while !accept("}") {
            let t = tok
            switch t.kind {
            case .end: throw err(nt, "service '\(n)' is not closed with '}'")
            case .punct(0x3b): _ = next()
            case .ident("option"):
                _ = next()
                _ = try option()
                try expect(";", "after the option")
            case .ident("rpc"):
                _ = next()
                let (m, mt) = try name("a method name")
                if names.contains(m) { throw err(mt, "method '\(m)' is declared twice in service '\(n)'") }
                names.insert(m)
                func type(_ what: String) throws(DissectorError) -> (String, Bool, ProtoToken) {
                    try expect("(", "before the \(what) type of '\(m)'")
                    var streaming = false
                    // `stream` is a word a type may be named too: `(stream)` is a type.
                    if isWord("stream"), case .ident = tokens[min(pos + 1, tokens.count - 1)].kind {
                        _ = next()
                        streaming = true
                    }
                    let absolute = accept(".")
                    var (ty, tt) = try ident("the \(what) message type")
                    if absolute { ty = "." + ty }
                    try expect(")", "after the \(what) type of '\(m)'")
                    return (ty, streaming, tt)
                }
                let (input, cs, it) = try type("request")
                guard isWord("returns") else { throw err(tok, "expected 'returns' after the request type of '\(m)', found \(describe(tok))") }
                _ = next()
                let (output, ss, ot) = try type("response")
                var method = ProtoMethodModel(name: m, inputType: input, outputType: output)
                method.clientStreaming = cs
                method.serverStreaming = ss
                if isPunct("{") { try skipBlock() } else { try expect(";", "after method '\(m)'") }
                methodRefs.append(MethodRef(service: file.services.count, method: s.methods.count, input: it, output: ot))
                s.methods.append(method)
            default:
                throw err(t, "expected 'rpc' or 'option' in service '\(n)', found \(describe(t))")
            }
        }
        return s
    }

    /// Where each method's types were written, for `ProtoLoader`'s errors.
    struct MethodRef {
        var service: Int
        var method: Int
        var input: ProtoToken
        var output: ProtoToken
    }

    /// Skips a `{ ... }` block (extend blocks, aggregate option values, method options).
    mutating func skipBlock() throws(DissectorError) {
        let open = tok
        try expect("{")
        var depth = 1
        while depth > 0 {
            switch tok.kind {
            case .end: throw err(open, "'{' is not closed")
            case .punct(0x7b): depth += 1
            case .punct(0x7d): depth -= 1
            default: break
            }
            _ = next()
        }
    }

    // MARK: - Options

    /// `name = constant` (the word `option` already read). Returns the name and the constant's text.
    mutating func option() throws(DissectorError) -> (String, OptionValue) {
        var n = ""
        if accept("(") {
            _ = accept(".")
            let (x, _) = try ident("an option name")
            try expect(")")
            n = "(" + x + ")"
        } else {
            n = try ident("an option name").0
        }
        while accept(".") { n += "." + (try ident("an option name").0) }
        if case .ident(let rest) = tok.kind, rest.hasPrefix(".") { _ = next(); n += rest }
        try expect("=", "after the option name")
        return (n, try constant())
    }

    enum OptionValue {
        case ident(String, ProtoToken)
        case number(String, ProtoToken)
        case string([UInt8], ProtoToken)
        case aggregate
    }

    mutating func constant() throws(DissectorError) -> OptionValue {
        let t = tok
        switch t.kind {
        case .ident(let s): _ = next(); return .ident(s, t)
        case .string(let s): _ = next(); return .string(s, t)
        case .number(let s): _ = next(); return .number(s, t)
        case .punct(0x2d), .punct(0x2b):
            let sign = accept("-") ? "-" : { _ = next(); return "" }()
            let v = tok
            switch v.kind {
            case .number(let s): _ = next(); return .number(sign + s, t)
            case .ident(let s) where s == "inf" || s == "nan": _ = next(); return .ident(sign + s, t)
            default: throw err(v, "expected a number after the sign, found \(describe(v))")
            }
        case .punct(0x7b):
            try skipBlock()
            return .aggregate
        default:
            throw err(t, "expected a constant, found \(describe(t))")
        }
    }

    func bool(_ v: OptionValue, _ what: String) throws(DissectorError) -> Bool {
        if case .ident(let s, let t) = v {
            if s == "true" { return true }
            if s == "false" { return false }
            throw err(t, "\(what) must be true or false")
        }
        throw err(tok, "\(what) must be true or false")
    }

    // MARK: - Messages

    mutating func message(path: [Int], scope: String, depth: Int) throws(DissectorError) -> ProtoMessageModel {
        let (n, nt) = try name("a message name")
        return try messageBody(ProtoMessageModel(name: n), path: path, scope: scope, depth: depth, at: nt)
    }

    mutating func messageBody(_ start: ProtoMessageModel, path: [Int], scope: String, depth: Int,
                              at nt: ProtoToken) throws(DissectorError) -> ProtoMessageModel {
        guard depth < Self.maxNesting else { throw err(nt, "messages nested deeper than \(Self.maxNesting) levels") }
        var m = start
        let full = scope.isEmpty ? m.name : scope + "." + m.name
        try expect("{", "to open message '\(m.name)'")
        var tokensOfFields: [ProtoToken] = []
        while !accept("}") {
            let t = tok
            switch t.kind {
            case .end: throw err(nt, "message '\(m.name)' is not closed with '}'")
            case .punct(0x3b): _ = next()
            case .ident("message"):
                _ = next()
                m.nested.append(try message(path: path + [m.nested.count], scope: full, depth: depth + 1))
            case .ident("enum"):
                _ = next()
                m.enums.append(try enumeration())
            case .ident("option"):
                _ = next()
                let (on, v) = try option()
                if on == "map_entry" { m.isMapEntry = try bool(v, "map_entry") }
                try expect(";", "after the option")
            case .ident("reserved"):
                _ = next()
                try reserved(&m.reservedRanges, &m.reservedNames, max: Self.maxFieldNumber + 1)
            case .ident("extensions"):
                _ = next()
                var names: [String] = []
                try reserved(&m.extensionRanges, &names, max: Self.maxFieldNumber + 1, allowNames: false)
            case .ident("extend"):
                _ = next()
                _ = try ident("the extended message")
                try skipBlock()
            case .ident("oneof"):
                _ = next()
                let (on, _) = try name("a oneof name")
                let index = Int32(m.oneofs.count)
                m.oneofs.append(on)
                try expect("{", "to open oneof '\(on)'")
                while !accept("}") {
                    if case .end = tok.kind { throw err(nt, "oneof '\(on)' is not closed with '}'") }
                    if accept(";") { continue }
                    if isWord("option") { _ = next(); _ = try option(); try expect(";"); continue }
                    if isWord("required") || isWord("optional") || isWord("repeated") {
                        throw err(tok, "fields in a oneof have no label")
                    }
                    tokensOfFields.append(tok)
                    try field(into: &m, label: .optional, oneof: index, path: path, scope: full, depth: depth)
                }
            case .ident("map"):
                tokensOfFields.append(t)
                try mapField(into: &m, path: path, scope: full)
            default:
                tokensOfFields.append(t)
                var label: ProtoLabel? = nil
                var proto3Optional = false
                if isWord("required") { _ = next(); label = .required }
                else if isWord("optional") { _ = next(); label = .optional; proto3Optional = file.syntax == "proto3" }
                else if isWord("repeated") { _ = next(); label = .repeated }
                if label == .required && file.syntax == "proto3" { throw err(t, "'required' is not allowed in proto3") }
                if label == nil && file.syntax == "proto2" && !isWord("map") {
                    throw err(t, "a proto2 field needs a label: 'optional', 'required' or 'repeated'")
                }
                if isWord("map") && label != nil {
                    throw err(t, "a map field has no label")
                }
                try field(into: &m, label: label ?? .optional, oneof: nil, path: path, scope: full, depth: depth,
                          proto3Optional: proto3Optional)
            }
        }
        // proto3 `optional` fields each get a synthetic oneof, after the real ones (as protoc does).
        var taken = Set(m.oneofs)
        for i in m.fields.indices where m.fields[i].proto3Optional {
            var n = "_" + m.fields[i].name
            while taken.contains(n) { n = "X" + n }
            taken.insert(n)
            m.fields[i].oneofIndex = Int32(m.oneofs.count)
            m.oneofs.append(n)
        }
        try check(m, tokensOfFields)
        return m
    }

    /// Field numbers and names unique, not reserved, in range.
    func check(_ m: ProtoMessageModel, _ ts: [ProtoToken]) throws(DissectorError) {
        var numbers: [Int32: String] = [:]
        var names: Set<String> = []
        let reservedNames = Set(m.reservedNames)
        // Reserved ranges sorted by start, merged: a binary search per field.
        var ranges: [ProtoRange] = []
        for r in m.reservedRanges.sorted(by: { $0.start < $1.start }) {
            if let last = ranges.last, r.start <= last.end { ranges[ranges.count - 1].end = max(last.end, r.end) } else { ranges.append(r) }
        }
        func reserved(_ n: Int32) -> Bool {
            var a = 0, b = ranges.count
            while a < b {
                let mid = (a + b) / 2
                if ranges[mid].end <= n { a = mid + 1 } else { b = mid }
            }
            return a < ranges.count && ranges[a].start <= n
        }
        for (i, f) in m.fields.enumerated() {
            let t = i < ts.count ? ts[i] : tok
            if let other = numbers[f.number] {
                throw err(t, "field number \(f.number) of '\(f.name)' is already used by '\(other)' in '\(m.name)'")
            }
            numbers[f.number] = f.name
            if names.contains(f.name) { throw err(t, "field '\(f.name)' is declared twice in '\(m.name)'") }
            names.insert(f.name)
            if reserved(f.number) {
                throw err(t, "field '\(f.name)' uses reserved number \(f.number)")
            }
            if reservedNames.contains(f.name) { throw err(t, "field name '\(f.name)' is reserved") }
        }
    }

    /// `reserved 2, 15, 9 to 11, 40 to max;` or `reserved "foo", "bar";`
    mutating func reserved(_ ranges: inout [ProtoRange], _ names: inout [String], max: Int64,
                           allowNames: Bool = true) throws(DissectorError) {
        if case .string = tok.kind, allowNames {
            repeat {
                let (s, _) = try string("a reserved name")
                names.append(String(decoding: s, as: UTF8.self))
            } while accept(",")
        } else {
            repeat {
                let (a, at) = try integer("a field number")
                var b = a
                if isWord("to") {
                    _ = next()
                    if isWord("max") { _ = next(); b = max - 1 } else { b = try integer("a field number").0 }
                }
                guard a >= 1, b >= a, b < max else { throw err(at, "reserved range \(a) to \(b) is not valid") }
                ranges.append(ProtoRange(start: Int32(a), end: Int32(b + 1)))
            } while accept(",")
        }
        if isPunct("[") { var none: ProtoFieldModel? = nil; try fieldOptions(&none) }
        try expect(";", "after the reserved list")
    }

    mutating func fieldNumber() throws(DissectorError) -> Int32 {
        let (n, nt) = try integer("a field number")
        guard n >= 1 && n <= Self.maxFieldNumber else {
            throw err(nt, "field number \(n) is out of range (1 to \(Self.maxFieldNumber))")
        }
        guard !(19000...19999).contains(n) else {
            throw err(nt, "field numbers 19000 to 19999 are reserved for the protobuf implementation")
        }
        return Int32(n)
    }

    /// `type name = N [options];` or a group (`group Name = N { ... }`).
    mutating func field(into m: inout ProtoMessageModel, label: ProtoLabel, oneof: Int32?, path: [Int], scope: String,
                        depth: Int, proto3Optional: Bool = false) throws(DissectorError) {
        let (typeName, tt) = try ident("a field type")
        if typeName == "group" {
            let (gn, gt) = try name("a group name")
            guard let first = gn.first, first.isUppercase else { throw err(gt, "a group's name must start with a capital letter") }
            try expect("=")
            let number = try fieldNumber()
            var f = ProtoFieldModel(name: gn.lowercased(), number: number, label: label, type: .group,
                                    typeName: "", jsonName: protoJSONName(gn.lowercased()))
            f.oneofIndex = oneof
            if isPunct("[") { try fieldOptionsOf(&f) }
            let nestedIndex = m.nested.count
            let g = try messageBody(ProtoMessageModel(name: gn), path: path + [nestedIndex], scope: scope,
                                    depth: depth + 1, at: gt)
            m.nested.append(g)
            f.typeName = "." + scope + "." + gn
            m.fields.append(f)
            return
        }
        let (fname, _) = try name("a field name")
        try expect("=", "after the field name '\(fname)'")
        let number = try fieldNumber()
        var f = ProtoFieldModel(name: fname, number: number, label: label, type: .message, typeName: typeName,
                                jsonName: protoJSONName(fname))
        f.oneofIndex = oneof
        f.proto3Optional = proto3Optional
        if let s = ProtoType.scalars[typeName] { f.type = s; f.typeName = "" }
        if isPunct("[") { try fieldOptionsOf(&f) }
        try expect(";", "after field '\(fname)'")
        if f.packed != nil && !(label == .repeated && (f.type.packable || f.typeName != "")) {
            throw err(tt, "[packed] applies only to repeated numeric, bool or enum fields")
        }
        if f.typeName != "" {
            refs.append(TypeRef(path: path, field: m.fields.count, scope: scope, token: tt))
        }
        m.fields.append(f)
    }

    /// `[packed = true, default = 5, json_name = "x", deprecated = true]`
    mutating func fieldOptions(_ f: inout ProtoFieldModel?) throws(DissectorError) {
        try expect("[")
        repeat {
            let at = tok
            let (n, v) = try option()
            guard f != nil else { continue }
            switch n {
            case "packed": f!.packed = try bool(v, "packed")
            case "json_name":
                guard case .string(let s, _) = v else { throw err(at, "json_name must be a string") }
                f!.jsonName = String(decoding: s, as: UTF8.self)
            case "default":
                if file.syntax == "proto3" { throw err(at, "default values are not allowed in proto3") }
                switch v {
                case .ident(let s, _): f!.defaultValue = s
                case .number(let s, let t):
                    if let i = Self.parseInt(s.hasPrefix("-") ? String(s.dropFirst()) : s) {
                        f!.defaultValue = (s.hasPrefix("-") ? "-" : "") + String(i)
                    } else if let d = Double(s) {
                        f!.defaultValue = Self.formatDouble(d)
                    } else { throw err(t, "'\(s)' is not a number") }
                case .string(let s, _):
                    f!.defaultValue = f!.type == .bytes ? Self.cEscape(s) : String(decoding: s, as: UTF8.self)
                case .aggregate: throw err(at, "a default value cannot be an aggregate")
                }
            default: break
            }
        } while accept(",")
        try expect("]", "after the field options")
    }

    mutating func fieldOptionsOf(_ f: inout ProtoFieldModel) throws(DissectorError) {
        var o: ProtoFieldModel? = f
        try fieldOptions(&o)
        f = o!
    }

    static func formatDouble(_ d: Double) -> String {
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        if d.isNaN { return "nan" }
        if d == d.rounded() && abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    /// protoc's C escaping of a bytes default.
    static func cEscape(_ s: [UInt8]) -> String {
        var out = ""
        for c in s {
            switch c {
            case 0x0a: out += "\\n"
            case 0x0d: out += "\\r"
            case 0x09: out += "\\t"
            case 0x22: out += "\\\""
            case 0x27: out += "\\'"
            case 0x5c: out += "\\\\"
            case 0x20..<0x7f: out.append(Character(Unicode.Scalar(c)))
            default:
                let o = String(c, radix: 8)
                out += "\\" + String(repeating: "0", count: 3 - o.count) + o
            }
        }
        return out
    }

    /// `map<KeyType, ValueType> name = N;` → a repeated `NameEntry` message field, as protoc writes it.
    mutating func mapField(into m: inout ProtoMessageModel, path: [Int], scope: String) throws(DissectorError) {
        _ = next()
        try expect("<", "after 'map'")
        let (k, kt) = try ident("a map key type")
        guard let kType = ProtoType.scalars[k], kType != .float, kType != .double, kType != .bytes else {
            throw err(kt, "'\(k)' cannot be a map key: use an integer type, bool or string")
        }
        try expect(",", "between the map's key and value types")
        let (v, vt) = try ident("a map value type")
        try expect(">", "after the map's value type")
        let (fname, _) = try name("a field name")
        try expect("=")
        let number = try fieldNumber()
        var entryName = ""
        var upper = true
        for c in fname {
            if c == "_" { upper = true; continue }
            entryName += upper ? c.uppercased() : String(c)
            upper = false
        }
        entryName += "Entry"
        var entry = ProtoMessageModel(name: entryName)
        entry.isMapEntry = true
        entry.fields.append(ProtoFieldModel(name: "key", number: 1, label: .optional, type: kType, jsonName: "key"))
        var value = ProtoFieldModel(name: "value", number: 2, label: .optional, type: .message, typeName: v, jsonName: "value")
        let entryPath = path + [m.nested.count]
        if let s = ProtoType.scalars[v] {
            value.type = s; value.typeName = ""
        } else {
            refs.append(TypeRef(path: entryPath, field: 1, scope: scope + "." + entryName, token: vt))
        }
        entry.fields.append(value)
        var f = ProtoFieldModel(name: fname, number: number, label: .repeated, type: .message,
                                typeName: "." + scope + "." + entryName, jsonName: protoJSONName(fname))
        if isPunct("[") { try fieldOptionsOf(&f) }
        try expect(";", "after map field '\(fname)'")
        m.nested.append(entry)
        m.fields.append(f)
    }

    // MARK: - Enums

    mutating func enumeration() throws(DissectorError) -> ProtoEnumModel {
        let (n, nt) = try name("an enum name")
        var e = ProtoEnumModel(name: n)
        try expect("{", "to open enum '\(n)'")
        var allowAlias = false
        var valueNames: Set<String> = []
        var byNumber: [Int32: String] = [:]
        while !accept("}") {
            let t = tok
            switch t.kind {
            case .end: throw err(nt, "enum '\(n)' is not closed with '}'")
            case .punct(0x3b): _ = next()
            case .ident("option"):
                _ = next()
                let (on, v) = try option()
                if on == "allow_alias" { allowAlias = try bool(v, "allow_alias") }
                try expect(";")
            case .ident("reserved"):
                _ = next()
                var r: [ProtoRange] = []
                var names: [String] = []
                if case .string = tok.kind {
                    try reserved(&r, &names, max: Int64(Int32.max) + 1)
                } else {
                    // Enum ranges may be negative: read them without the field-number check.
                    repeat {
                        _ = try integer("a value")
                        if isWord("to") { _ = next(); if isWord("max") { _ = next() } else { _ = try integer("a value") } }
                    } while accept(",")
                    try expect(";")
                }
            default:
                let (vn, vt) = try name("an enum value name")
                try expect("=", "after '\(vn)'")
                let (v, numberToken) = try integer("the value's number")
                guard v >= Int64(Int32.min) && v <= Int64(Int32.max) else {
                    throw err(numberToken, "enum value \(v) is out of the int32 range")
                }
                if isPunct("[") { var none: ProtoFieldModel? = nil; try fieldOptions(&none) }
                try expect(";", "after enum value '\(vn)'")
                if valueNames.contains(vn) { throw err(vt, "enum value '\(vn)' is declared twice") }
                valueNames.insert(vn)
                if !allowAlias, let other = byNumber[Int32(v)] {
                    throw err(vt, "'\(vn)' reuses the number \(v) of '\(other)' (set option allow_alias = true to allow it)")
                }
                if byNumber[Int32(v)] == nil { byNumber[Int32(v)] = vn }
                e.values.append(ProtoEnumValueModel(name: vn, number: Int32(v)))
            }
        }
        if e.values.isEmpty { throw err(nt, "enum '\(n)' has no values") }
        if file.syntax == "proto3" && e.values[0].number != 0 {
            throw err(nt, "the first value of a proto3 enum must be 0")
        }
        return e
    }
}
