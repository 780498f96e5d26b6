#if canImport(Glibc)
import Glibc
#endif

/// Loads dissector files and folders into protocol schemas.
public enum DissectorLoader {
    /// Files larger than this are not dissector files.
    static let maxFileSize = 4 << 20

    /// `-d` paths if any, else `./Dissectors` (when present) and `$FRAMEDUMP_DISSECTORS`
    /// (colon-separated).
    public static func defaultPaths(explicit: [String]) -> [String] {
        if !explicit.isEmpty { return explicit }
        var paths: [String] = []
        if isDirectory("Dissectors") { paths.append("Dissectors") }
        if let env = getenv("FRAMEDUMP_DISSECTORS") {
            paths += String(cString: env).split(separator: ":").map(String.init)
        }
        return paths
    }

    public static func load(paths: [String], options: LoadOptions = LoadOptions()) throws -> [ProtocolSchema] {
        var files: [String] = []
        for p in paths {
            if isDirectory(p) {
                files += listDissectorFiles(p)
            } else {
                files.append(p)
            }
        }
        var out: [ProtocolSchema] = []
        var budget = options
        for f in files {
            let loaded = try loadFile(f, options: budget)
            // What this file took is no longer there for the next ones.
            budget.maxProtocols -= loaded.count
            budget.maxMessages -= loaded.reduce(0) { $0 + $1.messages.count + $1.enums.count }
            out += loaded
        }
        var names: [String: String] = [:]
        for s in out {
            if let other = names[s.name] {
                throw DissectorError(file: s.file, line: 1, column: 1,
                                     message: "protocol '\(s.name)' is also defined in \(other)", sourceLine: "")
            }
            names[s.name] = s.file
        }
        return out
    }

    /// One file (with its includes) → the protocols it declares.
    public static func loadFile(_ path: String, options: LoadOptions = LoadOptions()) throws -> [ProtocolSchema] {
        guard let text = readFile(path) else {
            var st = stat()
            let why = RawPath.withCString(path, { stat($0, &st) }) != 0 ? "no such file"
                : st.st_size > 4 << 20 ? "larger than 4 MiB" : "cannot be read (permission?)"
            throw DissectorError(file: path, line: 0, column: 0, message: "dissector file: \(why)", sourceLine: "")
        }
        return try parse(text: text, file: path, options: options)
    }

    public static func parse(text: String, file: String, options: LoadOptions = LoadOptions()) throws -> [ProtocolSchema] {
        var parser = Parser(lexer: try Lexer(file: file, text: text), read: readFile)
        parser.protocolsLeft = options.maxProtocols
        parser.messagesLeft = options.maxMessages
        try parser.parseFile()
        let resolver = Resolver(lexers: parser.lexers, options: options)
        var out: [ProtocolSchema] = []
        for p in parser.protocols { out.append(try resolver.resolve(p)) }
        return out
    }

    static func isDirectory(_ p: String) -> Bool {
        var st = stat()
        return RawPath.withCString(p, { stat($0, &st) }) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func listDissectorFiles(_ dir: String) -> [String] {
        guard let d = RawPath.withCString(dir, { opendir($0) }) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { b in
                String(decoding: b.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasSuffix(".dissector") { names.append(name) }
        }
        return names.sorted().map { dir.hasSuffix("/") ? dir + $0 : dir + "/" + $0 }
    }

    static func readFile(_ path: String) -> String? {
        readBytes(path, limit: maxFileSize).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A whole file, or nil when it cannot be read or is longer than `limit` bytes.
    static func readBytes(_ path: String, limit: Int) -> [UInt8]? {
        guard let f = RawPath.withCString(path, { fopen($0, "rb") }) else { return nil }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n <= 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > limit { return nil }
        }
        return bytes
    }
}

