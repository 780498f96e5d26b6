import SwiftProtobuf

/// Loads `.proto` files at run time (no protoc): each file and its imports, found in the
/// search paths (`--proto-path`, then the dissector file's folder) or among the embedded
/// well-known types; resolves every type name with protobuf's scoping rules.
/// Also loads compiled descriptor sets (`protoc -o x.desc --include_imports`).
public final class ProtoRegistry {
    /// Files in load order (imports before the files that import them).
    public private(set) var files: [ProtoFileModel] = []
    /// Fully qualified name (no leading dot) → message.
    public private(set) var messages: [String: ProtoMessageModel] = [:]
    public private(set) var enums: [String: ProtoEnumModel] = [:]
    /// Message names in declaration order (for stable numbering).
    public private(set) var messageOrder: [String] = []
    var fileByName: [String: Int] = [:]
    var packages: Set<String> = []
    let searchPaths: [String]
    let read: (String) -> String?
    var loading: [String] = []
    static let maxFiles = 256

    public convenience init(searchPaths: [String]) {
        self.init(searchPaths: searchPaths, read: DissectorLoader.readFile)
    }

    package init(searchPaths: [String], read: @escaping (String) -> String?) {
        self.searchPaths = searchPaths
        self.read = read
    }

    /// Loads `name` (a path relative to a search path, or an absolute/relative path that exists).
    public func load(_ name: String) throws(DissectorError) {
        try load(name, from: nil)
    }

    func find(_ name: String) -> (String, String)? {
        for dir in searchPaths {
            let p = dir.isEmpty ? name : (dir.hasSuffix("/") ? dir + name : dir + "/" + name)
            if let text = read(p) { return (p, text) }
        }
        if name.hasPrefix("/"), let text = read(name) { return (name, text) }
        if let text = WellKnownTypes.text(name) { return ("<embedded>/" + name, text) }
        return nil
    }

    func load(_ name: String, from: (ProtoLexer, ProtoToken)?) throws(DissectorError) {
        if fileByName[name] != nil { return }
        func fail(_ m: String) -> DissectorError {
            if let (l, t) = from { return l.error(t.line, t.column, m) }
            return DissectorError(file: name, line: 0, column: 0, message: m, sourceLine: "")
        }
        if loading.contains(name) { throw fail("import cycle: " + (loading + [name]).joined(separator: " → ")) }
        guard files.count < Self.maxFiles else { throw fail("more than \(Self.maxFiles) .proto files") }
        guard let (path, text) = find(name) else {
            let where_ = searchPaths.isEmpty ? "no search path" : "searched " + searchPaths.joined(separator: ", ")
            throw fail("cannot find '\(name)' (missing, unreadable or over 4 MiB; \(where_); use --proto-path DIR)")
        }
        loading.append(name)
        defer { loading.removeLast() }
        var parser = try ProtoParser(file: path, text: text)
        var model = try parser.parse()
        model.name = name
        for (i, dep) in model.dependencies.enumerated() {
            try load(dep, from: (parser.lexer, parser.importTokens[i]))
        }
        try register(&model, parser: parser)
    }

    /// Adds a file's symbols, then resolves its type references.
    func register(_ model: inout ProtoFileModel, parser: ProtoParser?) throws(DissectorError) {
        func fail(_ m: String) -> DissectorError {
            DissectorError(file: parser?.lexer.file ?? model.name, line: 0, column: 0, message: m, sourceLine: "")
        }
        if !model.package.isEmpty {
            var p = ""
            for part in model.package.split(separator: ".") {
                p = p.isEmpty ? String(part) : p + "." + part
                packages.insert(p)
            }
        }
        var added: [String] = []
        func add(_ m: ProtoMessageModel, _ scope: String) throws(DissectorError) {
            let full = scope.isEmpty ? m.name : scope + "." + m.name
            if messages[full] != nil || enums[full] != nil { throw fail("'\(full)' is defined twice") }
            messages[full] = m
            added.append(full)
            for e in m.enums { try addEnum(e, full) }
            for n in m.nested { try add(n, full) }
        }
        func addEnum(_ e: ProtoEnumModel, _ scope: String) throws(DissectorError) {
            let full = scope.isEmpty ? e.name : scope + "." + e.name
            if messages[full] != nil || enums[full] != nil { throw fail("'\(full)' is defined twice") }
            enums[full] = e
        }
        for e in model.enums { try addEnum(e, model.package) }
        for m in model.messages { try add(m, model.package) }
        // Resolve the names each field wrote.
        if let parser {
            for r in parser.refs {
                let written = field(of: model, r.path, r.field).typeName
                guard let (full, isEnum) = resolve(written, scope: r.scope) else {
                    throw parser.lexer.error(r.token.line, r.token.column, "unknown type '\(written)'")
                }
                update(&model, r.path, r.field) { f in
                    f.typeName = "." + full
                    f.type = isEnum ? .enumeration : .message
                }
            }
            for r in parser.methodRefs {
                for output in [false, true] {
                    let written = output ? model.services[r.service].methods[r.method].outputType
                                         : model.services[r.service].methods[r.method].inputType
                    let t = output ? r.output : r.input
                    guard let (full, isEnum) = resolve(written, scope: model.package), !isEnum else {
                        throw parser.lexer.error(t.line, t.column, "unknown message type '\(written)'")
                    }
                    if output { model.services[r.service].methods[r.method].outputType = "." + full }
                    else { model.services[r.service].methods[r.method].inputType = "." + full }
                }
            }
            // The resolved fields replace the registered copies.
            added.removeAll()
            for m in model.messages { reRegister(m, model.package, &added) }
        }
        fileByName[model.name] = files.count
        files.append(model)
        messageOrder += added
    }

    func reRegister(_ m: ProtoMessageModel, _ scope: String, _ added: inout [String]) {
        let full = scope.isEmpty ? m.name : scope + "." + m.name
        messages[full] = m
        added.append(full)
        for n in m.nested { reRegister(n, full, &added) }
    }

    func field(of f: ProtoFileModel, _ path: [Int], _ i: Int) -> ProtoFieldModel {
        var m = f.messages[path[0]]
        for p in path.dropFirst() { m = m.nested[p] }
        return m.fields[i]
    }

    func update(_ f: inout ProtoFileModel, _ path: [Int], _ i: Int, _ body: (inout ProtoFieldModel) -> Void) {
        func go(_ m: inout ProtoMessageModel, _ rest: ArraySlice<Int>) {
            if let first = rest.first { go(&m.nested[first], rest.dropFirst()) } else { body(&m.fields[i]) }
        }
        go(&f.messages[path[0]], path.dropFirst())
    }

    /// protobuf's scoping: the first part of the name is looked up from the innermost scope
    /// outwards; the rest is then looked up inside what was found.
    func resolve(_ name: String, scope: String) -> (String, Bool)? {
        if name.hasPrefix(".") {
            let n = String(name.dropFirst())
            if messages[n] != nil { return (n, false) }
            if enums[n] != nil { return (n, true) }
            return nil
        }
        let first = name.split(separator: ".").first.map(String.init) ?? name
        var s = scope
        while true {
            let cand = s.isEmpty ? first : s + "." + first
            if messages[cand] != nil || enums[cand] != nil || packages.contains(cand) {
                let full = s.isEmpty ? name : s + "." + name
                if messages[full] != nil { return (full, false) }
                if enums[full] != nil { return (full, true) }
            }
            if s.isEmpty { return nil }
            if let dot = s.lastIndex(of: ".") { s = String(s[..<dot]) } else { s = "" }
        }
    }

    // MARK: - Descriptor sets

    /// Loads every file of a `FileDescriptorSet` (as written by `protoc -o x.desc --include_imports`).
    public func loadDescriptorSet(path: String, bytes: [UInt8]) throws(DissectorError) {
        let set: Google_Protobuf_FileDescriptorSet
        do {
            set = try Google_Protobuf_FileDescriptorSet(serializedBytes: bytes)
        } catch {
            throw DissectorError(file: path, line: 0, column: 0,
                                 message: "not a protobuf descriptor set (protoc -o FILE --include_imports): \(error)",
                                 sourceLine: "")
        }
        for f in set.file where fileByName[f.name] == nil {
            var model = Self.model(f)
            try register(&model, parser: nil)
        }
        // Every type a field names must be in the set.
        for (name, m) in messages {
            for f in m.fields where f.type == .message || f.type == .enumeration || f.type == .group {
                let n = String(f.typeName.dropFirst())
                if (f.type == .enumeration ? enums[n] == nil : messages[n] == nil) {
                    throw DissectorError(file: path, line: 0, column: 0,
                                         message: "field '\(name).\(f.name)' names '\(f.typeName)', which the set does not hold (compile with --include_imports)",
                                         sourceLine: "")
                }
            }
        }
    }

    /// A descriptor's view in the loader's model.
    public static func model(_ f: Google_Protobuf_FileDescriptorProto) -> ProtoFileModel {
        var m = ProtoFileModel(name: f.name)
        m.package = f.package
        m.syntax = f.syntax.isEmpty ? "proto2" : f.syntax
        m.dependencies = f.dependency
        m.publicDependencies = f.publicDependency
        m.messages = f.messageType.map(model)
        m.enums = f.enumType.map(model)
        m.services = f.service.map { s in
            ProtoServiceModel(name: s.name, methods: s.method.map {
                ProtoMethodModel(name: $0.name, inputType: $0.inputType, outputType: $0.outputType,
                                 clientStreaming: $0.clientStreaming, serverStreaming: $0.serverStreaming)
            })
        }
        return m
    }

    static func model(_ d: Google_Protobuf_DescriptorProto) -> ProtoMessageModel {
        var m = ProtoMessageModel(name: d.name)
        m.fields = d.field.map { f in
            var x = ProtoFieldModel(name: f.name, number: f.number, label: ProtoLabel(rawValue: f.label.rawValue) ?? .optional,
                                    type: ProtoType(rawValue: f.type.rawValue) ?? .bytes, typeName: f.typeName,
                                    jsonName: f.hasJsonName ? f.jsonName : protoJSONName(f.name))
            x.defaultValue = f.hasDefaultValue ? f.defaultValue : nil
            x.oneofIndex = f.hasOneofIndex ? f.oneofIndex : nil
            x.packed = f.hasOptions && f.options.hasPacked ? f.options.packed : nil
            x.proto3Optional = f.proto3Optional
            return x
        }
        m.nested = d.nestedType.map(model)
        m.enums = d.enumType.map(model)
        m.oneofs = d.oneofDecl.map(\.name)
        m.isMapEntry = d.hasOptions && d.options.mapEntry
        m.reservedRanges = d.reservedRange.map { ProtoRange(start: $0.start, end: $0.end) }
        m.reservedNames = d.reservedName
        m.extensionRanges = d.extensionRange.map { ProtoRange(start: $0.start, end: $0.end) }
        return m
    }

    static func model(_ e: Google_Protobuf_EnumDescriptorProto) -> ProtoEnumModel {
        ProtoEnumModel(name: e.name, values: e.value.map { ProtoEnumValueModel(name: $0.name, number: $0.number) })
    }
}
