/// JSON text pieces written straight into an OutputBuffer.
///
/// Strings: valid UTF-8 is copied as is (control characters, `"` and `\` escaped);
/// invalid UTF-8 bytes become U+FFFD, so every line is valid JSON whatever the input.
public enum JSONText {
    public static func string(_ s: String, to out: OutputBuffer) {
        var s = s
        s.withUTF8 { utf8(UnsafeRawBufferPointer($0), to: out) }
    }

    /// Escapes raw bytes that should be UTF-8 text.
    public static func utf8(_ b: UnsafeRawBufferPointer, to out: OutputBuffer) {
        var c = out.cursor()
        c.jsonString(b)
        out.commit(c)
    }

    /// Seconds since the epoch with nanoseconds, as a JSON string (exact, no float rounding).
    public static func timestamp(_ ts: Timestamp, to out: OutputBuffer) {
        out.byte(0x22)
        out.decimal(ts.seconds)
        out.byte(0x2e)
        out.padded(UInt64(ts.nanos), width: 9)
        out.byte(0x22)
    }
}

/// UTF-8 validation one sequence at a time (RFC 3629: no overlongs, no surrogates).
extension JSONText {
    /// A JSON string literal as text (the rare path: statistics, reports).
    package static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let h = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// The text of a JSON string's content (between the quotes, escapes as written).
    static func unescaped(_ b: UnsafeRawBufferPointer) -> String {
        guard b.contains(0x5c) else { return String(decoding: b, as: UTF8.self) }
        var out = String.UnicodeScalarView()
        var bytes: [UInt8] = []
        func flush() { out.append(contentsOf: String(decoding: bytes, as: UTF8.self).unicodeScalars); bytes.removeAll() }
        var i = 0
        while i < b.count {
            let c = b[i]
            guard c == 0x5c, i + 1 < b.count else { bytes.append(c); i += 1; continue }
            let e = b[i + 1]
            i += 2
            switch e {
            case 0x6e: bytes.append(0x0a)
            case 0x74: bytes.append(0x09)
            case 0x72: bytes.append(0x0d)
            case 0x62: bytes.append(0x08)
            case 0x66: bytes.append(0x0c)
            case 0x75:
                guard i + 4 <= b.count, let v = UInt32(String(decoding: UnsafeRawBufferPointer(rebasing: b[i..<(i + 4)]), as: UTF8.self), radix: 16) else { continue }
                i += 4
                var scalar = v
                if (0xD800...0xDBFF).contains(v), i + 6 <= b.count, b[i] == 0x5c, b[i + 1] == 0x75,
                   let lo = UInt32(String(decoding: UnsafeRawBufferPointer(rebasing: b[(i + 2)..<(i + 6)]), as: UTF8.self), radix: 16),
                   (0xDC00...0xDFFF).contains(lo) {
                    scalar = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
                    i += 6
                }
                flush()
                out.append(Unicode.Scalar(scalar) ?? "\u{FFFD}")
            default: bytes.append(e)
            }
        }
        flush()
        return String(out)
    }
}
