#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `-r` (and each side of `diff`) names: files, folders and quoted globs, as the list of
/// capture files they stand for, in the order a merge breaks ties in.
public enum CaptureFiles {
    /// The files a folder contributes (case does not matter: `.PCAP` too), and the names
    /// `-C` gives the files after the first (`x.pcap1`, `x.pcap2`…, as tcpdump's).
    public static let extensions: Set<String> = ["pcap", "pcapng", "cap"]

    static func isCaptureName(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: "."), name.first != "." else { return false }
        var ext = Substring(name[name.index(after: dot)...].lowercased())
        while let last = ext.last, last.isASCII, last.isNumber { ext.removeLast() }
        return extensions.contains(String(ext))
    }

    /// Each argument in turn: a folder gives its capture files (not those of its subfolders),
    /// a pattern with `*`, `?` or `[` that is not itself a file's name gives the paths glob(3)
    /// matches, anything else is a file. Folder and glob lists are in name order with runs of
    /// digits compared as numbers (`x`, `x1`, `x2` … `x10`, as `ls -v`: rotated files in the
    /// order they were written). A pattern that matches nothing, a folder without a capture
    /// file, or one file named twice is an error: never an empty or doubled run.
    public static func expand(_ arguments: [String]) throws(CaptureError) -> [String] {
        var files: [String] = []
        for a in arguments {
            if a == "-" {
                files.append(a)
                continue
            }
            var st = stat()
            let exists = RawPath.withCString(a) { stat($0, &st) } == 0
            if exists && (st.st_mode & S_IFMT) == S_IFDIR {
                let found = try folder(a)
                if found.isEmpty { throw .noCaptureFiles(a) }
                files += found
            } else if !exists && a.contains(where: { $0 == "*" || $0 == "?" || $0 == "[" }) {
                let found = matches(a)
                if found.isEmpty { throw .noCaptureFiles(a) }
                files += found
            } else {
                files.append(a)
            }
        }
        try refuseRepeats(files)
        return files
    }

    /// The capture files directly in a folder, in natural name order.
    static func folder(_ path: String) throws(CaptureError) -> [String] {
        guard let dir = RawPath.withCString(path, { opendir($0) }) else {
            throw .cannotReadFile(path, errno == EACCES ? "permission denied" : String(cString: strerror(errno)))
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let e = readdir(dir) {
            let name = withUnsafePointer(to: e.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: e.pointee.d_name)) { RawPath.decode($0) } }
            guard isCaptureName(name) else { continue }
            let full = path.hasSuffix("/") ? path + name : path + "/" + name
            var st = stat()
            if RawPath.withCString(full, { stat($0, &st) }) == 0, (st.st_mode & S_IFMT) == S_IFDIR { continue }
            names.append(full)
        }
        return names.sorted(by: naturalOrder)
    }

    /// glob(3)'s matches, in natural name order.
    static func matches(_ pattern: String) -> [String] {
        var g = glob_t()
        defer { globfree(&g) }
        guard RawPath.withCString(pattern, { glob($0, 0, nil, &g) }) == 0 else { return [] }
        var out: [String] = []
        for i in 0..<Int(g.gl_pathc) {
            if let p = g.gl_pathv[i] { out.append(RawPath.decode(p)) }
        }
        return out.sorted(by: naturalOrder)
    }

    /// The same file named twice (by two paths, a folder and a glob…) would merge each packet
    /// with itself: refused, naming it.
    static func refuseRepeats(_ files: [String]) throws(CaptureError) {
        guard files.count > 1 else { return }
        var seen: [String: String] = [:]
        for f in files {
            if f == "-" { throw .stdinInSet }
            var st = stat()
            guard RawPath.withCString(f, { stat($0, &st) }) == 0 else { continue }
            let key = "\(st.st_dev):\(st.st_ino)"
            if let first = seen[key] { throw .repeatedFile(first, f) }
            seen[key] = f
        }
    }

    /// Name order with each run of digits compared as a number (`x9` before `x10`).
    public static func naturalOrder(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var i = 0, j = 0
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        while i < x.count && j < y.count {
            if isDigit(x[i]) && isDigit(y[j]) {
                var i2 = i, j2 = j
                while i2 < x.count && isDigit(x[i2]) { i2 += 1 }
                while j2 < y.count && isDigit(y[j2]) { j2 += 1 }
                // Leading zeros aside, the longer run is the bigger number.
                var si = i, sj = j
                while si < i2 - 1 && x[si] == 0x30 { si += 1 }
                while sj < j2 - 1 && y[sj] == 0x30 { sj += 1 }
                if i2 - si != j2 - sj { return i2 - si < j2 - sj }
                for k in 0..<(i2 - si) where x[si + k] != y[sj + k] { return x[si + k] < y[sj + k] }
                if i2 - i != j2 - j { return i2 - i < j2 - j }  // same number: fewer zeros first
                i = i2
                j = j2
            } else {
                if x[i] != y[j] { return x[i] < y[j] }
                i += 1
                j += 1
            }
        }
        return x.count - i < y.count - j
    }
}
