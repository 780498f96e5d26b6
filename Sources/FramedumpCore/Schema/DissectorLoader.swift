#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads dissector files and folders into protocol schemas.
public enum DissectorLoader {
    /// Files larger than this are not dissector files.
    static let maxFileSize = 4 << 20

    /// `-d` paths if any, else `./Dissectors` (when present) and `$FRAMEDUMP_DISSECTORS`
    /// (colon-separated), each folder once however it is named; with neither, the examples an
    /// install put beside the binary (`PREFIX/share/framedump/Dissectors`).
    public static func defaultPaths(explicit: [String]) -> [String] {
        if !explicit.isEmpty { return explicit }
        var paths: [String] = []
        if isDirectory("Dissectors") { paths.append("Dissectors") }
        if let env = getenv("FRAMEDUMP_DISSECTORS") {
            paths += String(cString: env).split(separator: ":").map(String.init)
        }
        if paths.isEmpty, let installed = installedExamples() { paths.append(installed) }
        // The same folder reached twice (`./Dissectors` and its full path) is loaded once.
        var seen = Set<String>()
        return paths.filter { seen.insert(realPath($0) ?? $0).inserted }
    }

    /// `PREFIX/share/framedump/Dissectors` for a binary at `PREFIX/bin/framedump`, if it exists.
    static func installedExamples() -> String? {
        guard let exe = executablePath() else { return nil }
        var parts = exe.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return nil }
        parts.removeLast(2)
        let dir = parts.joined(separator: "/") + "/share/framedump/Dissectors"
        return isDirectory(dir) ? dir : nil
    }

    /// The running binary's own path, symbolic links resolved.
    static func executablePath() -> String? {
        #if os(Linux)
        return realPath("/proc/self/exe")
        #else
        return CommandLine.arguments.first.flatMap { $0.contains("/") ? realPath($0) : nil }
        #endif
    }

    static func realPath(_ p: String) -> String? {
        guard let r = RawPath.withCString(p, { realpath($0, nil) }) else { return nil }
        defer { free(r) }
        return String(cString: r)
    }

    /// Where a run looked for dissectors, for the warning when it found none.
    public static func searchDescription(explicit: [String]) -> String {
        if !explicit.isEmpty { return "looked in " + explicit.joined(separator: ", ") }
        let here = isDirectory("Dissectors") ? "./Dissectors (no .dissector files)" : "./Dissectors (not found)"
        let env = getenv("FRAMEDUMP_DISSECTORS").map { "FRAMEDUMP_DISSECTORS=" + String(cString: $0) } ?? "FRAMEDUMP_DISSECTORS (not set)"
        let installed = installedExamples().map { ", then \($0)" } ?? ""
        return "looked in \(here) and \(env)\(installed)"
    }

    /// Every file of `paths` (folders: their `*.dissector` files); the errors of all of them
    /// are thrown together.
    public static func load(paths: [String], options: LoadOptions = LoadOptions()) throws(DissectorError) -> [ProtocolSchema] {
        let files = files(in: paths)
        var out: [ProtocolSchema] = []
        var errors: [DissectorError] = []
        var budget = options
        for f in files {
            do throws(DissectorError) {
                let loaded = try loadFile(f, options: budget)
                // What this file took is no longer there for the next ones.
                budget.limits.maxProtocols -= loaded.count
                budget.limits.maxMessages -= loaded.reduce(0) { $0 + $1.messages.count + $1.enums.count }
                out += loaded
            } catch { errors.append(error) }
        }
        errors += conflicts(out)
        if let e = DissectorError.combined(errors) { throw e }
        return out
    }

    /// The files `paths` name: each file itself, each folder's `*.dissector` files.
    public static func files(in paths: [String]) -> [String] {
        paths.flatMap { isDirectory($0) ? listDissectorFiles($0) : [$0] }
    }

    /// What two protocols cannot both say: the same name, or the same server port (then which
    /// one decodes that port's connections would depend on the order the files are loaded in).
    /// Two protocols over a layer may share a port when the layer tells them apart (request
    /// paths or subprotocols).
    public static func conflicts(_ schemas: [ProtocolSchema]) -> [DissectorError] {
        var errors: [DissectorError] = []
        var names: [String: String] = [:]
        // TCP port 8000 and UDP port 8000 are different ports.
        var ports: [UInt32: ProtocolSchema] = [:]
        for s in schemas {
            if let other = names[s.name] {
                errors.append(DissectorError(file: s.file, line: 0, column: 0,
                                             message: "protocol '\(s.name)' is also defined in \(other)", sourceLine: ""))
            }
            names[s.name] = s.file
            for port in s.ports {
                let slot = UInt32(port) | (s.udp ? 1 << 16 : 0)
                guard let other = ports[slot] else { ports[slot] = s; continue }
                if LayerRegistry.kinds.contains(where: { $0.mayShare(port, s, other) }) { continue }
                let message = "\(s.udp ? "UDP " : "")port \(port) is also claimed by protocol '\(other.name)' (\(other.file)): one port, one protocol"
                errors.append(s.portLocations[port]?.error(message)
                              ?? DissectorError(file: s.file, line: 0, column: 0, message: message, sourceLine: ""))
            }
        }
        return errors
    }

    /// One file (with its includes) → the protocols it declares.
    public static func loadFile(_ path: String, options: LoadOptions = LoadOptions()) throws(DissectorError) -> [ProtocolSchema] {
        guard let text = readFile(path) else {
            var st = stat()
            let why = RawPath.withCString(path, { stat($0, &st) }) != 0 ? "no such file"
                : (st.st_mode & S_IFMT) == S_IFDIR ? "is a folder"
                : st.st_size > 4 << 20 ? "larger than 4 MiB" : "cannot be read (permission denied)"
            throw DissectorError(file: path, line: 0, column: 0, message: "dissector file: \(why)", sourceLine: "")
        }
        return try parse(text: text, file: path, options: options)
    }

    /// One file's text: every error in it is reported (up to `Diagnostics.limit`), syntax and
    /// meaning alike.
    public static func parse(text: String, file: String, options: LoadOptions = LoadOptions()) throws(DissectorError) -> [ProtocolSchema] {
        var parser = Parser(lexer: Lexer(file: file, text: text), read: readFile)
        parser.protocolsLeft = options.limits.maxProtocols
        parser.messagesLeft = options.limits.maxMessages
        parser.parseFile()
        var errors = parser.diagnostics
        let resolver = Resolver(lexers: parser.lexers, options: options)
        var out: [ProtocolSchema] = []
        for p in parser.protocols where !errors.full {
            do throws(DissectorError) { out.append(try resolver.resolve(p)) } catch { errors.add(error) }
        }
        errors.sort(files: parser.lexers.map(\.file))
        for e in conflicts(out) { errors.add(e) }
        try errors.check()
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

