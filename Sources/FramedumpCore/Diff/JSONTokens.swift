#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tokens of JSON text (RFC 8259), read strictly from borrowed bytes: no comments, no
/// trailing commas, no NaN, no leading zeros, no control characters or invalid UTF-8 in
/// strings. Shared by the line scanner (fingerprints, `--ignore`) and the value parser.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible {
    public let offset: Int
    public let message: String
    public var description: String { "byte \(offset): \(message)" }
}

struct JSONTokens {
    let b: UnsafeRawBufferPointer
    var i = 0
    /// Nesting deeper than this is refused (the input is untrusted; recursion is bounded).
    static let maxDepth = 64

    init(_ b: UnsafeRawBufferPointer) { self.b = b }

    func fail(_ m: String) -> JSONSyntaxError { JSONSyntaxError(offset: i, message: m) }

    @inline(__always) mutating func skipSpace() {
        while i < b.count {
            let c = b[i]
            if c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09 { i += 1 } else { return }
        }
    }

    @inline(__always) var peek: UInt8? { i < b.count ? b[i] : nil }

    mutating func expect(_ c: UInt8, _ what: String) throws(JSONSyntaxError) {
        skipSpace()
        guard i < b.count, b[i] == c else { throw fail("expected \(what)") }
        i += 1
    }

    /// A string token starting at `i` (the opening quote): the range between the quotes,
    /// and whether it holds escapes.
    mutating func string() throws(JSONSyntaxError) -> (Range<Int>, escaped: Bool) {
        guard i < b.count, b[i] == 0x22 else { throw fail("expected a string") }
        i += 1
        let start = i
        var escaped = false
        while i < b.count {
            let c = b[i]
            if c == 0x22 {
                i += 1
                return (start..<(i - 1), escaped)
            }
            if c == 0x5c {
                escaped = true
                guard i + 1 < b.count else { break }
                switch b[i + 1] {
                case 0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74: i += 2
                case 0x75:
                    guard i + 6 <= b.count else { throw fail("short \\u escape") }
                    for k in 2..<6 where Self.hexValue(b[i + k]) == nil { throw fail("bad \\u escape") }
                    i += 6
                default: throw fail("bad escape")
                }
            } else if c < 0x20 {
                throw fail("control character in a string")
            } else if c < 0x80 {
                i += 1
            } else {
                try utf8Sequence()
            }
        }
        throw fail("unterminated string")
    }

    /// One multi-byte UTF-8 sequence at `i` (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    mutating func utf8Sequence() throws(JSONSyntaxError) {
        let c = b[i]
        var n = 0, lo: UInt8 = 0x80, hi: UInt8 = 0xbf
        switch c {
        case 0xc2...0xdf: n = 1
        case 0xe0: n = 2; lo = 0xa0
        case 0xe1...0xec, 0xee, 0xef: n = 2
        case 0xed: n = 2; hi = 0x9f
        case 0xf0: n = 3; lo = 0x90
        case 0xf1...0xf3: n = 3
        case 0xf4: n = 3; hi = 0x8f
        default: throw fail("invalid UTF-8")
        }
        guard i + n < b.count else { throw fail("invalid UTF-8") }
        for k in 1...n {
            let x = b[i + k]
            let (l, h) = k == 1 ? (lo, hi) : (UInt8(0x80), UInt8(0xbf))
            guard x >= l && x <= h else { throw fail("invalid UTF-8") }
        }
        i += n + 1
    }

    /// A number token: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    mutating func number() throws(JSONSyntaxError) -> Range<Int> {
        let start = i
        if i < b.count && b[i] == 0x2d { i += 1 }
        guard i < b.count, Self.isDigit(b[i]) else { throw fail("bad number") }
        if b[i] == 0x30 { i += 1 } else { while i < b.count && Self.isDigit(b[i]) { i += 1 } }
        if i < b.count && b[i] == 0x2e {
            i += 1
            guard i < b.count, Self.isDigit(b[i]) else { throw fail("bad number") }
            while i < b.count && Self.isDigit(b[i]) { i += 1 }
        }
        if i < b.count && (b[i] == 0x65 || b[i] == 0x45) {
            i += 1
            if i < b.count && (b[i] == 0x2b || b[i] == 0x2d) { i += 1 }
            guard i < b.count, Self.isDigit(b[i]) else { throw fail("bad number") }
            while i < b.count && Self.isDigit(b[i]) { i += 1 }
        }
        return start..<i
    }

    /// `true`, `false` or `null` at `i`.
    mutating func literal() throws(JSONSyntaxError) -> Range<Int> {
        let start = i
        for word in ["true", "false", "null"] as [StaticString] {
            let n = word.utf8CodeUnitCount
            if i + n <= b.count && memcmp(b.baseAddress! + i, word.utf8Start, n) == 0 {
                i += n
                return start..<i
            }
        }
        throw fail("unexpected character")
    }

    /// Skips one value of any kind.
    mutating func skipValue(depth: Int) throws(JSONSyntaxError) {
        skipSpace()
        guard let c = peek else { throw fail("expected a value") }
        switch c {
        case 0x22: _ = try string()
        case 0x7b, 0x5b:
            guard depth < Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth) levels") }
            let close: UInt8 = c == 0x7b ? 0x7d : 0x5d
            i += 1
            skipSpace()
            if peek == close { i += 1; return }
            while true {
                if c == 0x7b {
                    skipSpace()
                    _ = try string()
                    try expect(0x3a, "':'")
                }
                try skipValue(depth: depth + 1)
                skipSpace()
                guard let n = peek else { throw fail("unterminated") }
                i += 1
                if n == close { return }
                guard n == 0x2c else { throw fail("expected ',' or a closing bracket") }
            }
        case 0x2d, 0x30...0x39: _ = try number()
        default: _ = try literal()
        }
    }

    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    static func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x30...0x39: return UInt32(c - 0x30)
        case 0x61...0x66: return UInt32(c - 0x61 + 10)
        case 0x41...0x46: return UInt32(c - 0x41 + 10)
        default: return nil
        }
    }

    /// The text of a string token (escapes decoded; a lone surrogate becomes U+FFFD).
    func text(_ r: Range<Int>, escaped: Bool) -> String {
        let raw = UnsafeRawBufferPointer(rebasing: b[r])
        return escaped ? JSONText.unescaped(raw) : String(decoding: raw, as: UTF8.self)
    }
}
