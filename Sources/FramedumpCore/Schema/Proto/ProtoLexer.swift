/// Tokens of a `.proto` file (the protobuf language specification's lexical rules):
/// identifiers (dotted names kept whole), integer and float literals kept as text,
/// single- or double-quoted strings with C escapes, punctuation; `//` and `/* */` comments.
struct ProtoToken: Sendable {
    enum Kind: Equatable, Sendable {
        case ident(String)
        case number(String)
        case string([UInt8])
        case punct(UInt8)
        case end
    }
    var kind: Kind
    var line: Int
    var column: Int
}

struct ProtoLexer {
    let file: String
    let lines: [Substring]
    var tokens: [ProtoToken] = []

    /// Errors of this file: `file:line:column: message` with the line and a caret.
    func error(_ line: Int, _ column: Int, _ message: String) -> DissectorError {
        DissectorError(file: file, line: line, column: column, message: message,
                       sourceLine: line >= 1 && line <= lines.count ? String(lines[line - 1]) : "")
    }

    init(file: String, text: String) throws(DissectorError) {
        self.file = file
        var t = Substring(text)
        if t.hasPrefix("\u{FEFF}") { t = t.dropFirst() }
        lines = t.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        let b = Array(t.utf8)
        var i = 0
        var line = 1
        var lineStart = 0
        func isStart(_ c: UInt8) -> Bool { c == 0x5f || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7a) }
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        while i < b.count {
            let c = b[i]
            let col = i - lineStart + 1
            if c == 0x0a { line += 1; i += 1; lineStart = i; continue }
            if c == 0x20 || c == 0x09 || c == 0x0d || c == 0x0b || c == 0x0c { i += 1; continue }
            if c == 0x2f && i + 1 < b.count && b[i + 1] == 0x2f {
                while i < b.count && b[i] != 0x0a { i += 1 }
                continue
            }
            if c == 0x2f && i + 1 < b.count && b[i + 1] == 0x2a {
                let (sl, sc) = (line, col)
                i += 2
                var closed = false
                while i < b.count {
                    if b[i] == 0x2a && i + 1 < b.count && b[i + 1] == 0x2f { i += 2; closed = true; break }
                    if b[i] == 0x0a { line += 1; lineStart = i + 1 }
                    i += 1
                }
                if !closed { throw error(sl, sc, "comment is not closed with */") }
                continue
            }
            if isStart(c) {
                var j = i
                while j < b.count {
                    if isStart(b[j]) || isDigit(b[j]) { j += 1; continue }
                    if b[j] == 0x2e && j + 1 < b.count && isStart(b[j + 1]) { j += 1; continue }
                    break
                }
                tokens.append(ProtoToken(kind: .ident(String(decoding: b[i..<j], as: UTF8.self)), line: line, column: col))
                i = j
                continue
            }
            if isDigit(c) || (c == 0x2e && i + 1 < b.count && isDigit(b[i + 1])) {
                var j = i
                while j < b.count {
                    let d = b[j]
                    if isDigit(d) || isStart(d) || d == 0x2e { j += 1; continue }
                    // An exponent's sign: 1e-5, 2E+3 (not in hex literals).
                    if (d == 0x2d || d == 0x2b) && j > i && (b[j - 1] | 0x20) == 0x65
                        && !(b[i] == 0x30 && j > i + 1 && (b[i + 1] | 0x20) == 0x78) { j += 1; continue }
                    break
                }
                tokens.append(ProtoToken(kind: .number(String(decoding: b[i..<j], as: UTF8.self)), line: line, column: col))
                i = j
                continue
            }
            if c == 0x22 || c == 0x27 {
                var j = i + 1
                var out: [UInt8] = []
                while true {
                    guard j < b.count, b[j] != 0x0a else { throw error(line, col, "string is not closed") }
                    let d = b[j]
                    if d == c { j += 1; break }
                    if d != 0x5c { out.append(d); j += 1; continue }
                    j += 1
                    guard j < b.count else { throw error(line, col, "string is not closed") }
                    let e = b[j]
                    j += 1
                    switch e {
                    case 0x6e: out.append(0x0a)
                    case 0x74: out.append(0x09)
                    case 0x72: out.append(0x0d)
                    case 0x61: out.append(0x07)
                    case 0x62: out.append(0x08)
                    case 0x66: out.append(0x0c)
                    case 0x76: out.append(0x0b)
                    case 0x5c, 0x27, 0x22, 0x3f: out.append(e)
                    case 0x78, 0x58:
                        var v = 0, n = 0
                        while n < 2, j < b.count, let h = Self.hexValue(b[j]) { v = v * 16 + h; j += 1; n += 1 }
                        guard n > 0 else { throw error(line, j - lineStart, "\\x needs hex digits") }
                        out.append(UInt8(v))
                    case 0x30...0x37:
                        var v = Int(e - 0x30), n = 1
                        while n < 3, j < b.count, b[j] >= 0x30, b[j] <= 0x37 { v = v * 8 + Int(b[j] - 0x30); j += 1; n += 1 }
                        out.append(UInt8(truncatingIfNeeded: v))
                    case 0x75, 0x55:
                        let digits = e == 0x75 ? 4 : 8
                        var v: UInt32 = 0
                        for _ in 0..<digits {
                            guard j < b.count, let h = Self.hexValue(b[j]) else {
                                throw error(line, j - lineStart + 1, "\\u needs \(digits) hex digits")
                            }
                            v = v &* 16 &+ UInt32(h); j += 1
                        }
                        guard let s = Unicode.Scalar(v) else { throw error(line, col, "\\u escape is not a Unicode scalar") }
                        out += Array(String(Character(s)).utf8)
                    default:
                        throw error(line, j - lineStart - 1, "unknown escape '\\\(Character(Unicode.Scalar(e)))' in string")
                    }
                }
                // Adjacent strings are one string, as in C.
                if case .string(let prev)? = tokens.last?.kind, let last = tokens.last, last.line > 0,
                   i > 0, Self.onlySpaceBefore(b, i, after: last) {
                    tokens[tokens.count - 1].kind = .string(prev + out)
                } else {
                    tokens.append(ProtoToken(kind: .string(out), line: line, column: col))
                }
                i = j
                continue
            }
            if "{}[]()<>;=,:.-+/".utf8.contains(c) {
                tokens.append(ProtoToken(kind: .punct(c), line: line, column: col))
                i += 1
                continue
            }
            throw error(line, col, "unexpected character '\(Character(Unicode.Scalar(c)))'")
        }
        tokens.append(ProtoToken(kind: .end, line: max(1, line), column: i - lineStart + 1))
    }

    static func hexValue(_ c: UInt8) -> Int? {
        switch c {
        case 0x30...0x39: return Int(c - 0x30)
        case 0x41...0x46: return Int(c - 0x41 + 10)
        case 0x61...0x66: return Int(c - 0x61 + 10)
        default: return nil
        }
    }

    /// Whether only a closing quote and white space separate a string token from `i`.
    static func onlySpaceBefore(_ b: [UInt8], _ i: Int, after t: ProtoToken) -> Bool {
        var k = i - 1
        while k >= 0, b[k] == 0x20 || b[k] == 0x09 || b[k] == 0x0a || b[k] == 0x0d { k -= 1 }
        return k >= 0 && (b[k] == 0x22 || b[k] == 0x27)
    }
}
