/// A problem in a dissector file, located as `file:line:column`.
///
/// The checker reports every error of a file, as compilers do: the first is this value's own
/// fields (what a caller matching one error looks at), the rest are in `following`.
public struct DissectorError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var line: Int
    public var column: Int
    public var message: String
    /// The offending line's text, shown under the message with a caret.
    public var sourceLine: String
    /// The errors found after this one, in file order.
    public var following: [DissectorError] = []
    /// More errors were found than are reported (see `Diagnostics.limit`).
    public var truncated = false

    public init(file: String, line: Int, column: Int, message: String, sourceLine: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.sourceLine = sourceLine
    }

    /// Every error this value reports, the first included.
    public var all: [DissectorError] {
        var first = self
        first.following = []
        first.truncated = false
        return [first] + following
    }

    /// Several errors as one thrown value (nil when there are none).
    public static func combined(_ errors: [DissectorError], truncated: Bool = false) -> DissectorError? {
        let flat = errors.flatMap(\.all)
        guard var first = flat.first else { return nil }
        first.following = Array(flat.dropFirst())
        first.truncated = truncated || errors.contains(where: \.truncated)
        return first
    }

    public var description: String {
        var blocks = all.map(\.located)
        if truncated { blocks.append("error: too many errors, stopped after \(Diagnostics.limit)") }
        if blocks.count > 1 { blocks.append("\(all.count)\(truncated ? "+" : "") errors") }
        return blocks.joined(separator: "\n")
    }

    /// One error: `file:line:column: error: message`, the line, a caret under the column.
    var located: String {
        // A whole file that cannot be read has no position in it to show.
        var s = line == 0 ? "\(file): error: \(message)" : "\(file):\(line):\(column): error: \(message)"
        if !sourceLine.isEmpty {
            s += "\n    \(sourceLine)\n    " + String(repeating: " ", count: max(0, column - 1)) + "^"
        }
        return s
    }
}

/// The errors of one file, collected as the checker goes on past each (up to a limit).
struct Diagnostics {
    /// As compilers do (clang's -ferror-limit is 20): past this many, the rest is noise.
    static let limit = 20
    var errors: [DissectorError] = []
    /// Errors found past the limit (counted, not kept).
    var dropped = 0
    var full: Bool { errors.count >= Self.limit }

    mutating func add(_ e: DissectorError) {
        for one in e.all {
            if full { dropped += 1 } else { errors.append(one) }
        }
        if e.truncated { dropped += 1 }
    }

    /// In file order (`files`: the order files were read in), then line and column: the
    /// parser's and the resolver's errors interleaved as the file reads.
    mutating func sort(files: [String]) {
        let rank = Dictionary(files.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        errors = errors.enumerated().sorted { a, b in
            let ka = (rank[a.element.file] ?? 0, a.element.line, a.element.column, a.offset)
            let kb = (rank[b.element.file] ?? 0, b.element.line, b.element.column, b.offset)
            return ka < kb
        }.map(\.element)
    }

    /// Throws everything collected, if anything was.
    func check() throws(DissectorError) {
        if let e = DissectorError.combined(errors, truncated: dropped > 0) { throw e }
    }
}

/// A place in a dissector file, kept for errors found after parsing (two files claiming one port).
public struct SourceLocation: Sendable {
    public var file: String
    public var line: Int
    public var column: Int
    public var text: String

    func error(_ message: String) -> DissectorError {
        DissectorError(file: file, line: line, column: column, message: message, sourceLine: text)
    }
}
