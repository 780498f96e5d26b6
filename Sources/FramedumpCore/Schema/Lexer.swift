/// Tokens of a dissector file. Comments are not tokens: they are kept per line, because a
/// trailing comment is a field's description and a `// === Title ===` line names a message.
struct Token: Sendable {
    enum Kind: Equatable, Sendable {
        case ident(String)
        /// A literal's magnitude: a minus sign is a token of its own, so values up to 2⁶⁴-1 fit.
        case number(UInt64)
        case string(String)
        case punct(String)
        case end
    }
    var kind: Kind
    var line: Int
    var column: Int
    /// Which file (index into the parser's lexers) the token came from.
    var file: Int = 0
}

struct Comment: Sendable {
    var text: String
    /// Nothing but the comment on its line.
    var wholeLine: Bool
}

struct Lexer {
    let file: String
    let lines: [String]
    var tokens: [Token] = []
    var comments: [Int: Comment] = [:]
    /// What could not be read as tokens (the scan goes on after each, so all are reported),
    /// kept up to the report's limit; the rest are only counted (a file of garbage is not
    /// turned into millions of errors).
    var errors: [DissectorError] = []
    var droppedErrors = 0

    mutating func record(_ e: DissectorError) {
        if errors.count < Diagnostics.limit { errors.append(e) } else { droppedErrors += 1 }
    }

    let index: Int

    init(file: String, text: String, index: Int = 0) {
        self.file = file
        self.index = index
        // Accept CRLF files and a UTF-8 BOM as pasted from other editors.
        var t = text
        if t.hasPrefix("\u{FEFF}") { t.removeFirst() }
        // (Split as bytes: a String's split by Character walks grapheme clusters.)
        lines = t.utf8.split(separator: 0x0a, omittingEmptySubsequences: false).map {
            String(decoding: $0.last == 0x0d ? $0.dropLast() : $0, as: UTF8.self)
        }
        for (i, l) in lines.enumerated() { scan(Array(l.unicodeScalars), line: i + 1) }
        tokens.append(Token(kind: .end, line: lines.count, column: 1, file: index))
    }

    func error(_ line: Int, _ column: Int, _ message: String) -> DissectorError {
        DissectorError(file: file, line: line, column: column, message: message,
                       sourceLine: line >= 1 && line <= lines.count ? lines[line - 1] : "")
    }

    func location(_ line: Int, _ column: Int) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column,
                       text: line >= 1 && line <= lines.count ? lines[line - 1] : "")
    }

    /// The scalars `r` of `s` as a string: ASCII written straight into its storage (building
    /// it through a scalar view cost thousands of instructions a token).
    static func string(_ s: [Unicode.Scalar], _ r: Range<Int>) -> String {
        if s[r].allSatisfy({ $0.isASCII }) {
            return String(unsafeUninitializedCapacity: r.count) { buf in
                for (k, i) in r.enumerated() { buf[k] = UInt8(truncatingIfNeeded: s[i].value) }
                return r.count
            }
        }
        var t = ""
        t.unicodeScalars.append(contentsOf: s[r])
        return t
    }

    mutating func scan(_ s: [Unicode.Scalar], line: Int) {
        var i = 0
        var sawToken = false
        func isIdentStart(_ c: Unicode.Scalar) -> Bool {
            // (ASCII letters by their codes: a Unicode property lookup per character made
            // reading the shipped dissectors a tenth of a short run.)
            c.value < 128 ? (c.value | 0x20 >= 0x61 && c.value | 0x20 <= 0x7a) || c == "_" : c.properties.isAlphabetic
        }
        func isIdent(_ c: Unicode.Scalar) -> Bool { isIdentStart(c) || ("0"..."9").contains(c) || c == "." }
        while i < s.count {
            let c = s[i]
            if c == " " || c == "\t" || c == "\u{3000}" { i += 1; continue }
            let col = i + 1
            if c == "#" || (c == "/" && i + 1 < s.count && s[i + 1] == "/") {
                let start = c == "#" ? i + 1 : i + 2
                var text = Self.string(s, start..<s.count)
                text = text.trimmingSpaces
                comments[line] = Comment(text: text, wholeLine: !sawToken)
                return
            }
            sawToken = true
            if isIdentStart(c) {
                var j = i
                while j < s.count && isIdent(s[j]) { j += 1 }
                tokens.append(Token(kind: .ident(Self.string(s, i..<j)), line: line, column: col, file: index))
                i = j
            } else if ("0"..."9").contains(c) {
                var j = i
                while j < s.count && (isIdent(s[j])) { j += 1 }
                let text = Self.string(s, i..<j)
                let v: UInt64?
                if text.lowercased().hasPrefix("0x") { v = UInt64(text.dropFirst(2), radix: 16) } else { v = UInt64(text) }
                if let v {
                    tokens.append(Token(kind: .number(v), line: line, column: col, file: index))
                } else {
                    record(error(line, col, "'\(text)' is not a number"))
                }
                i = j
            } else if c == "\"" {
                var j = i + 1
                var text = ""
                while j < s.count && s[j] != "\"" {
                    if s[j] == "\\" && j + 1 < s.count {
                        // \r \n \t \0 and \xHH (ASCII) are control bytes (a `frame_end`); any other
                        // escaped character stands for itself (\" and \\).
                        j += 1
                        switch s[j] {
                        case "r": text.unicodeScalars.append("\r"); j += 1; continue
                        case "n": text.unicodeScalars.append("\n"); j += 1; continue
                        case "t": text.unicodeScalars.append("\t"); j += 1; continue
                        case "0": text.unicodeScalars.append("\0"); j += 1; continue
                        case "x" where j + 2 < s.count:
                            if let v = UInt8(String(s[(j + 1)...(j + 2)].map(Character.init)), radix: 16), v < 0x80 {
                                text.unicodeScalars.append(Unicode.Scalar(v))
                                j += 3
                                continue
                            }
                            record(error(line, col + (j - i), "\\x takes two hex digits of an ASCII byte (00 to 7f)"))
                        default: break
                        }
                    }
                    text.unicodeScalars.append(s[j])
                    j += 1
                }
                guard j < s.count else { record(error(line, col, "string is not closed with \"")); return }
                tokens.append(Token(kind: .string(text), line: line, column: col, file: index))
                i = j + 1
            } else if c == "=" && i + 1 < s.count && s[i + 1] == "=" {
                tokens.append(Token(kind: .punct("=="), line: line, column: col, file: index))
                i += 2
            } else if c == "!" && i + 1 < s.count && s[i + 1] == "=" {
                tokens.append(Token(kind: .punct("!="), line: line, column: col, file: index))
                i += 2
            } else if "{}();=,[]+-:<>&*".unicodeScalars.contains(c) {
                tokens.append(Token(kind: .punct(String(c)), line: line, column: col, file: index))
                i += 1
            } else {
                record(error(line, col, "unexpected character '\(c)'"))
                i += 1
            }
        }
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
