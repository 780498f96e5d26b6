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
        var c = out.cursor(reserving: b.count * 6 + 2)
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
public enum UTF8Check {
    /// Length of the valid sequence starting at `i`, or 0 if the bytes there are not valid UTF-8.
    @inline(__always)
    public static func sequenceLength(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int {
        let c0 = b[i]
        if c0 < 0x80 { return 1 }
        let n = b.count
        func cont(_ k: Int) -> Bool { k < n && b[k] & 0xc0 == 0x80 }
        if c0 >= 0xc2 && c0 <= 0xdf { return cont(i + 1) ? 2 : 0 }
        if c0 >= 0xe0 && c0 <= 0xef {
            guard cont(i + 1), cont(i + 2) else { return 0 }
            let c1 = b[i + 1]
            if c0 == 0xe0 && c1 < 0xa0 { return 0 }
            if c0 == 0xed && c1 >= 0xa0 { return 0 }
            return 3
        }
        if c0 >= 0xf0 && c0 <= 0xf4 {
            guard cont(i + 1), cont(i + 2), cont(i + 3) else { return 0 }
            let c1 = b[i + 1]
            if c0 == 0xf0 && c1 < 0x90 { return 0 }
            if c0 == 0xf4 && c1 >= 0x90 { return 0 }
            return 4
        }
        return 0
    }

    public static func isValid(_ b: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < b.count {
            // ASCII eight bytes at a time (most text on the wire).
            while i + 8 <= b.count && b.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i += 8
            }
            if i >= b.count { break }
            let l = sequenceLength(b, i)
            if l == 0 { return false }
            i += l
        }
        return true
    }
}
