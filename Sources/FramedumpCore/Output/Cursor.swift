/// A write position inside an OutputBuffer: the hot rendering loops keep it in a register
/// instead of updating the buffer object byte by byte. Every write checks that it fits before
/// the cursor's `end` and, when it does not, asks the buffer for more room (`refill`), so no
/// caller has to reckon how much a record may take: a reservation is only a hint, and a wrong
/// one costs a copy, never memory past the buffer.
struct Cursor {
    var p: UnsafeMutablePointer<UInt8>
    /// One past the last byte this cursor may write.
    var end: UnsafeMutablePointer<UInt8>
    /// The buffer that grows when a write would pass `end`; nil for a fixed scratch area,
    /// where passing `end` is a programming error and stops the run. Unowned: a cursor lives
    /// within one call of a printer that holds its buffer (ASan runs of OutputTests and
    /// ShardPoolTests fail if one outlives it).
    unowned(unsafe) let buffer: OutputBuffer?
    /// "00".."99" and "0123456789abcdef", passed in so the hot loops read no globals.
    let pairs: UnsafePointer<UInt8>
    let hexDigits: UnsafePointer<UInt8>
    /// 10^0 ... 10^19.
    let powers: UnsafePointer<UInt64>

    /// A cursor over a fixed scratch area of `count` bytes.
    init(scratch p: UnsafeMutablePointer<UInt8>, count: Int) {
        self.p = p
        end = p + count
        buffer = nil
        pairs = UnsafePointer(OutputBuffer.pairTable)
        hexDigits = OutputBuffer.hexDigits.utf8Start
        powers = UnsafePointer(Cursor.powersOfTen)
    }

    init(buffer: OutputBuffer) {
        p = buffer.base + buffer.count
        end = buffer.base + buffer.capacity
        self.buffer = buffer
        pairs = buffer.pairs
        hexDigits = buffer.hexDigitsPointer
        powers = buffer.powers
    }

    /// Makes sure the next `n` bytes fit: the one check every write goes through.
    @inline(__always) mutating func room(_ n: Int) {
        if _slowPath(end - p < n) { refill(n) }
    }

    /// The rare path: the buffer grows (its bytes so far kept), the cursor moves with it.
    @inline(never) mutating func refill(_ n: Int) {
        guard let b = buffer else { preconditionFailure("a write of \(n) bytes past a fixed scratch area") }
        b.count = p - b.base
        b.reserve(n)
        p = b.base + b.count
        end = b.base + b.capacity
    }

    @inline(__always) mutating func byte(_ b: UInt8) { room(1); p.pointee = b; p += 1 }

    @inline(__always) mutating func write(_ b: UnsafeRawBufferPointer) {
        guard let src = b.baseAddress else { return }
        let n = b.count
        room(n)
        let dst = UnsafeMutableRawPointer(p)
        // Names and keys are short: two overlapping 8-byte moves beat a call to memcpy.
        if n >= 8 && n <= 16 {
            dst.storeBytes(of: src.loadUnaligned(as: UInt64.self), as: UInt64.self)
            dst.storeBytes(of: src.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self), toByteOffset: n - 8, as: UInt64.self)
        } else if n < 8 {
            var i = 0
            while i < n { dst.storeBytes(of: src.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self); i += 1 }
        } else {
            dst.copyMemory(from: src, byteCount: n)
        }
        p += n
    }

    @inline(__always) mutating func write(_ s: StaticString) {
        write(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Eight spaces per store (up to 7 bytes past `n` are written, not counted).
    @inline(__always) mutating func spaces(_ n: Int) {
        guard n > 0 else { return }
        room(n &+ 8)
        let raw = UnsafeMutableRawPointer(p)
        var i = 0
        while i < n {
            raw.storeBytes(of: 0x2020_2020_2020_2020 as UInt64, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        p += n
    }

    @inline(__always) mutating func decimal(_ v: UInt64) {
        room(20)
        if v < 10 { p.pointee = 0x30 &+ UInt8(truncatingIfNeeded: v); p += 1; return }
        // Digits from the bit length (log10(2) ≈ 1233/4096), corrected by one comparison.
        let bits = 64 - v.leadingZeroBitCount
        var digits = (bits &* 1233) >> 12
        if v >= powers[digits] { digits += 1 }
        digits = Swift.max(digits, 2)
        var x = v
        var i = digits
        while x >= 100 {
            let r = Int(x % 100)
            x /= 100
            i -= 2
            p[i] = pairs[2 &* r]
            p[i + 1] = pairs[2 &* r + 1]
        }
        if x >= 10 {
            p[0] = pairs[2 &* Int(x)]
            p[1] = pairs[2 &* Int(x) + 1]
        } else {
            p[0] = 0x30 &+ UInt8(truncatingIfNeeded: x)
        }
        p += digits
    }

    /// How many characters `decimal(v)` writes (a minus sign counted).
    static func digits(_ v: Int32) -> Int {
        var n = v < 0 ? 2 : 1, x = v.magnitude
        while x >= 10 { x /= 10; n += 1 }
        return n
    }

    /// 10^0 ... 10^19, in memory that is never freed.
    nonisolated(unsafe) static let powersOfTen: UnsafeMutablePointer<UInt64> = {
        let t = UnsafeMutablePointer<UInt64>.allocate(capacity: 20)
        var x: UInt64 = 1
        for i in 0..<20 { t[i] = x; x = x &* 10 }
        return t
    }()

    @inline(__always) mutating func decimal(_ v: Int64) {
        if v < 0 { byte(0x2d); decimal(UInt64(bitPattern: 0 &- v)) } else { decimal(UInt64(v)) }
    }

    @inline(__always) mutating func decimal(_ v: Int32) { decimal(Int64(v)) }

    /// `.NNNNNNNNN`: nanoseconds after the seconds.
    @inline(__always) mutating func nanos(_ n: UInt32) { fraction(n, digits: 9) }

    /// `.NNNNNN`: microseconds after the seconds (tcpdump's -tt).
    @inline(__always) mutating func micros(_ n: UInt32) { fraction(n / 1000, digits: 6) }

    /// `.` and exactly `digits` digits, zero-padded, two at a time.
    @inline(__always) mutating func fraction(_ value: UInt32, digits: Int) {
        room(digits &+ 1)
        p[0] = 0x2e
        var x = Int(value)
        var i = digits
        while i >= 2 {
            let r = x % 100
            x /= 100
            p[i - 1] = pairs[2 &* r]
            p[i] = pairs[2 &* r + 1]
            i -= 2
        }
        if i == 1 { p[1] = 0x30 &+ UInt8(truncatingIfNeeded: x % 10) }
        p += digits + 1
    }

    @inline(__always) mutating func hex(_ b: UInt8) {
        room(2)
        p[0] = hexDigits[Int(b >> 4)]
        p[1] = hexDigits[Int(b & 15)]
        p += 2
    }

    /// A JSON string literal of the first `limit` bytes of a longer text (cut back to a whole
    /// UTF-8 character), ending in `…` (`--max-string`).
    mutating func jsonStringCut(_ b: UnsafeRawBufferPointer, limit: Int) {
        var n = min(limit, b.count)
        while n > 0 && n < b.count && b[n] & 0xC0 == 0x80 { n -= 1 }
        jsonString(UnsafeRawBufferPointer(rebasing: b[..<n]))
        p -= 1
        write("…\"")
    }

    /// A JSON string literal of text bytes: `"`, `\`, control characters escaped; invalid
    /// UTF-8 replaced by U+FFFD (`valid`: the decoder has checked the bytes already). Room for
    /// the text unescaped is made at once (the common case); escapes check as they go.
    mutating func jsonString(_ b: UnsafeRawBufferPointer, valid: Bool = false) {
        room(b.count &+ 2)
        byte(0x22)
        if valid || UTF8Check.isValid(b) { validText(b) } else { repairedText(b) }
        byte(0x22)
    }

    /// Valid UTF-8, the common case: copied eight bytes at a time, multi-byte characters
    /// included; where a byte needs an escape, the bytes before it are kept and it is escaped.
    @inline(__always) mutating func validText(_ b: UnsafeRawBufferPointer) {
        var i = 0
        let n = b.count
        while i < n {
            while i + 8 <= n {
                let w = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                // The whole word is stored; only the plain part counts.
                room(8)
                UnsafeMutableRawPointer(p).storeBytes(of: w, as: UInt64.self)
                let m = JSONEscape.mask(w)
                if m != 0 {
                    let plain = m.trailingZeroBitCount >> 3
                    p += plain
                    i += plain
                    break
                }
                p += 8
                i += 8
            }
            guard i < n else { break }
            escaped(b[i])
            i += 1
        }
    }

    /// One byte of valid text: escaped if it must be, else as it is.
    @inline(__always) mutating func escaped(_ c: UInt8) {
        if c >= 0x20 {
            if c == 0x22 || c == 0x5c { byte(0x5c) }
            byte(c)
            return
        }
        switch c {
        case 0x0a: write("\\n")
        case 0x0d: write("\\r")
        case 0x09: write("\\t")
        default: write("\\u00"); hex(c)
        }
    }

    /// Text with invalid UTF-8 (the rare path): each invalid byte becomes U+FFFD.
    mutating func repairedText(_ b: UnsafeRawBufferPointer) {
        var i = 0
        let n = b.count
        while i < n {
            let len = UTF8Check.sequenceLength(b, i)
            if len == 0 {
                write("\u{FFFD}")
            } else if len == 1 {
                escaped(b[i])
            } else {
                for k in 0..<len { byte(b[i + k]) }
            }
            i += Swift.max(len, 1)
        }
    }
}

extension OutputBuffer {
    /// A cursor at the end of what is buffered, with room for `n` bytes made at once (a hint:
    /// the cursor makes more as it writes), to be committed when done.
    @inline(__always) func cursor(reserving n: Int = 0) -> Cursor {
        reserve(n)
        return Cursor(buffer: self)
    }

    /// Takes what the cursor wrote. A cursor taken before the buffer last grew would point
    /// into freed memory: caught here rather than written through.
    @inline(__always) func commit(_ c: Cursor) {
        precondition(c.p >= base && c.p <= base + capacity, "a cursor committed to a buffer it was not taken from")
        count = c.p - base
    }
}
