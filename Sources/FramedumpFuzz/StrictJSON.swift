import FramedumpCore
/// A strict JSON checker for the fuzz targets: one NDJSON line must be exactly one JSON
/// object by RFC 8259's grammar, in valid UTF-8, with no lone surrogate escape (RFC 7493),
/// so that every consumer of the output reads it the same way.
package enum StrictJSON {
    /// Returns the byte offset of the first problem in `line`, or nil when it is one object.
    package static func objectProblem(_ line: UnsafeRawBufferPointer) -> Int? {
        var p = Checker(b: line)
        p.space()
        guard p.peek == UInt8(ascii: "{"), p.value(depth: 0) else { return p.at }
        p.space()
        return p.at == line.count ? nil : p.at
    }

    /// Every line of `text` (NDJSON, each ending in a newline) checked; the first bad line and
    /// where in it, or nil.
    package static func ndjsonProblem(_ text: [UInt8]) -> (line: Int, at: Int)? {
        text.withUnsafeBytes { all in
            var start = 0, n = 0
            while start < all.count {
                n += 1
                guard let nl = all[start...].firstIndex(of: 0x0A) else { return (n, all.count - start) }
                if let at = objectProblem(UnsafeRawBufferPointer(rebasing: all[start..<nl])) { return (n, at) }
                start = nl + 1
            }
            return nil
        }
    }

    struct Checker {
        let b: UnsafeRawBufferPointer
        var at = 0
        var peek: UInt8? { at < b.count ? b[at] : nil }

        mutating func space() {
            while let c = peek, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { at += 1 }
        }

        mutating func literal(_ s: StaticString) -> Bool {
            let n = s.utf8CodeUnitCount
            guard at + n <= b.count else { return false }
            for i in 0..<n where b[at + i] != s.utf8Start[i] { return false }
            at += n
            return true
        }

        mutating func value(depth: Int) -> Bool {
            guard depth < 512 else { return false }
            space()
            switch peek {
            case UInt8(ascii: "{"):
                at += 1
                space()
                if peek == UInt8(ascii: "}") { at += 1; return true }
                while true {
                    space()
                    guard peek == UInt8(ascii: "\""), string() else { return false }
                    space()
                    guard peek == UInt8(ascii: ":") else { return false }
                    at += 1
                    guard value(depth: depth + 1) else { return false }
                    space()
                    if peek == UInt8(ascii: ",") { at += 1; continue }
                    guard peek == UInt8(ascii: "}") else { return false }
                    at += 1
                    return true
                }
            case UInt8(ascii: "["):
                at += 1
                space()
                if peek == UInt8(ascii: "]") { at += 1; return true }
                while true {
                    guard value(depth: depth + 1) else { return false }
                    space()
                    if peek == UInt8(ascii: ",") { at += 1; continue }
                    guard peek == UInt8(ascii: "]") else { return false }
                    at += 1
                    return true
                }
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func digits() -> Bool {
            let s = at
            while let c = peek, c >= 0x30 && c <= 0x39 { at += 1 }
            return at > s
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func number() -> Bool {
            if peek == UInt8(ascii: "-") { at += 1 }
            if peek == UInt8(ascii: "0") { at += 1 } else {
                guard let c = peek, c >= 0x31 && c <= 0x39 else { return false }
                _ = digits()
            }
            if peek == UInt8(ascii: ".") {
                at += 1
                guard digits() else { return false }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                at += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { at += 1 }
                guard digits() else { return false }
            }
            return true
        }

        mutating func hex4() -> UInt32? {
            guard at + 4 <= b.count else { return nil }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = b[at]
                let d: UInt8
                switch c {
                case 0x30...0x39: d = c - 0x30
                case 0x41...0x46: d = c - 0x41 + 10
                case 0x61...0x66: d = c - 0x61 + 10
                default: return nil
                }
                v = v << 4 | UInt32(d)
                at += 1
            }
            return v
        }

        /// A string: no control characters, known escapes, surrogate escapes in pairs, valid UTF-8.
        mutating func string() -> Bool {
            at += 1
            while let c = peek {
                switch c {
                case UInt8(ascii: "\""):
                    at += 1
                    return true
                case UInt8(ascii: "\\"):
                    at += 1
                    guard let e = peek else { return false }
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                         UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        guard let u = hex4() else { return false }
                        if u >= 0xDC00 && u <= 0xDFFF { return false }
                        if u >= 0xD800 && u <= 0xDBFF {
                            guard literal("\\u"), let low = hex4(), low >= 0xDC00 && low <= 0xDFFF else { return false }
                        }
                    default: return false
                    }
                case 0..<0x20: return false
                case 0x20..<0x80: at += 1
                default:
                    guard utf8Sequence() else { return false }
                }
            }
            return false
        }

        /// One multi-byte UTF-8 sequence (RFC 3629: shortest form, no surrogates, ≤ U+10FFFF).
        mutating func utf8Sequence() -> Bool {
            let c = b[at]
            let n: Int, lo: UInt8, hi: UInt8
            switch c {
            case 0xC2...0xDF: n = 2; lo = 0x80; hi = 0xBF
            case 0xE0: n = 3; lo = 0xA0; hi = 0xBF
            case 0xE1...0xEC, 0xEE...0xEF: n = 3; lo = 0x80; hi = 0xBF
            case 0xED: n = 3; lo = 0x80; hi = 0x9F
            case 0xF0: n = 4; lo = 0x90; hi = 0xBF
            case 0xF1...0xF3: n = 4; lo = 0x80; hi = 0xBF
            case 0xF4: n = 4; lo = 0x80; hi = 0x8F
            default: return false
            }
            guard at + n <= b.count, b[at + 1] >= lo && b[at + 1] <= hi else { return false }
            for i in 2..<max(2, n) where b[at + i] & 0xC0 != 0x80 { return false }
            at += n
            return true
        }
    }
}
