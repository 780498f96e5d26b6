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
    /// where passing `end` is a programming error and stops the run. Unretained (a plain
    /// pointer: taking a cursor costs no reference counting): a cursor lives within one call of
    /// a printer that holds its buffer (LargeMessageTests under AddressSanitizer, in
    /// scripts/sanitize.sh, fails if one outlives it).
    let buffer: Unmanaged<OutputBuffer>?
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
        self.buffer = Unmanaged.passUnretained(buffer)
        pairs = buffer.pairs
        hexDigits = buffer.hexDigitsPointer
        powers = buffer.powers
    }

    /// Makes sure the next `n` bytes fit: the one check every write goes through.
    @inline(__always) mutating func room(_ n: Int) {
        if _slowPath(end - p < n) { (p, end) = Cursor.refill(buffer, p, n) }
    }

    /// The rare path: the buffer grows (its bytes so far kept); the cursor's new position and
    /// end are returned, not stored through a reference to the cursor (which would make the
    /// cursor live in memory, reloaded after every byte stored, instead of in registers).
    @inline(never) static func refill(_ buffer: Unmanaged<OutputBuffer>?, _ p: UnsafeMutablePointer<UInt8>,
                                      _ n: Int) -> (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) {
        guard let b = buffer?.takeUnretainedValue() else { preconditionFailure("a write of \(n) bytes past a fixed scratch area") }
        b.count = p - b.base
        b.reserve(n)
        return (b.base + b.count, b.base + b.capacity)
    }

    @inline(__always) mutating func byte(_ b: UInt8) { room(1); p.pointee = b; p += 1 }

    @inline(__always) mutating func write(_ b: UnsafeRawBufferPointer) {
        guard b.baseAddress != nil else { return }
        room(b.count)
        putBytes(b)
    }

    /// The bytes of `b`: only after a `room` that covers them.
    @inline(__always) private mutating func putBytes(_ b: UnsafeRawBufferPointer) {
        guard let src = b.baseAddress else { return }
        let n = b.count
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

    /// `b` then one byte (a separator): one check for both.
    @inline(__always) mutating func write(_ b: UnsafeRawBufferPointer, _ then: UInt8) {
        room(b.count &+ 1)
        putBytes(b)
        p.pointee = then
        p += 1
    }

    /// A string made at run time (the rare path: a phase's name).
    mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { write(UnsafeRawBufferPointer($0)) }
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
        putDecimal(v)
    }

    /// The digits of `v`, at most 20 bytes: only after a `room` that covers them.
    @inline(__always) private mutating func putDecimal(_ v: UInt64) {
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

    /// 10^0 ... 10^19, in memory that is never freed.
    /// nonisolated(unsafe): filled once by its initializer (which Swift runs once, thread-safely)
    /// and only read after (ShardPoolTests under ThreadSanitizer, scripts/sanitize.sh).
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

    /// `[offset+width]` padded with spaces to a column of 10 (the tree's byte ranges): one
    /// check for what it writes, at most 2 × 11 digits, 3 brackets and 16 bytes of spaces.
    @inline(__always) mutating func byteRange(_ offset: Int32, _ width: Int32) {
        room(48)
        putByteRange(offset, width)
    }

    /// `[offset+width]` and its padding, at most 48 bytes: only after a `room` that covers them.
    @inline(__always) private mutating func putByteRange(_ offset: Int32, _ width: Int32) {
        let start = p
        p.pointee = 0x5b; p += 1
        if offset < 0 { p.pointee = 0x2d; p += 1 }
        putDecimal(UInt64(offset.magnitude))
        p.pointee = 0x2b; p += 1
        if width < 0 { p.pointee = 0x2d; p += 1 }
        putDecimal(UInt64(width.magnitude))
        p.pointee = 0x5d; p += 1
        let pad = 10 - (p - start)
        if pad > 0 {
            let raw = UnsafeMutableRawPointer(p)
            raw.storeBytes(of: 0x2020_2020_2020_2020 as UInt64, as: UInt64.self)
            raw.storeBytes(of: 0x2020_2020_2020_2020 as UInt64, toByteOffset: 8, as: UInt64.self)
            p += pad
        }
    }

    /// A duration in seconds with up to nine decimals, trailing zeros dropped (`0.000312`).
    mutating func seconds(nanos ns: Int64) {
        let v = UInt64(max(0, ns))
        decimal(v / 1_000_000_000)
        var frac = v % 1_000_000_000
        guard frac > 0 else { return }
        var digits = 9
        while frac % 10 == 0 { frac /= 10; digits -= 1 }
        fraction(UInt32(frac), digits: digits)
    }

    /// A duration in milliseconds with three decimals (`0.312`).
    mutating func milliseconds(nanos ns: Int64) {
        let us = UInt64(max(0, ns)) / 1000
        decimal(us / 1000)
        fraction(UInt32(us % 1000), digits: 3)
    }

    /// `.NNNNNNNNN`: nanoseconds after the seconds.
    @inline(__always) mutating func nanos(_ n: UInt32) { fraction(n, digits: 9) }

    /// `.NNNNNN`: microseconds after the seconds (tcpdump's -tt).
    @inline(__always) mutating func micros(_ n: UInt32) { fraction(n / 1000, digits: 6) }

    /// `.` and exactly `digits` digits, zero-padded, two at a time.
    /// A tcpdump -tt time, `seconds.micros`, then one byte (a separator): one check.
    @inline(__always) mutating func time(_ seconds: UnsafeRawBufferPointer, micros nanos: UInt32, _ then: UInt8) {
        room(seconds.count &+ 8)
        putBytes(seconds)
        putFraction(nanos / 1000, digits: 6)
        p.pointee = then
        p += 1
    }

    /// NDJSON's `,"ts":"seconds.nanos"`: one check for what it writes.
    /// `{"NAME":` (`first`) or `,"NAME":`, with one check for room (a layer's NDJSON object
    /// writes one for each field of each message).
    @inline(__always) mutating func jsonMemberName(_ n: StaticString, first: Bool) {
        let c = n.utf8CodeUnitCount
        room(c &+ 4)
        p[0] = first ? 0x7b : 0x2c; p[1] = 0x22; p += 2
        putBytes(UnsafeRawBufferPointer(start: n.utf8Start, count: c))
        p[0] = 0x22; p[1] = 0x3a; p += 2
    }

    /// `"TEXT"` for a constant that needs no escaping, with one check for room.
    @inline(__always) mutating func jsonQuoted(_ s: StaticString) {
        let c = s.utf8CodeUnitCount
        room(c &+ 2)
        p.pointee = 0x22; p += 1
        putBytes(UnsafeRawBufferPointer(start: s.utf8Start, count: c))
        p.pointee = 0x22; p += 1
    }

    @inline(__always) mutating func jsonTime(_ seconds: UnsafeRawBufferPointer, nanos: UInt32) {
        room(seconds.count &+ 18)
        putBytes(UnsafeRawBufferPointer(start: Self.tsKey.utf8Start, count: Self.tsKey.utf8CodeUnitCount))
        putBytes(seconds)
        putFraction(nanos, digits: 9)
        p.pointee = 0x22
        p += 1
    }

    static let tsKey: StaticString = ",\"ts\":\""

    /// NDJSON's `,"pkts":[first,last],"offset":offset`: one check for what it writes (three
    /// numbers of at most 20 digits and 23 bytes of keys and punctuation).
    @inline(__always) mutating func jsonPackets(_ first: UInt64, _ last: UInt64, offset: UInt64) {
        room(84)
        putBytes(UnsafeRawBufferPointer(start: Self.pktsKey.utf8Start, count: Self.pktsKey.utf8CodeUnitCount))
        putDecimal(first)
        p.pointee = 0x2c
        p += 1
        putDecimal(last)
        putBytes(UnsafeRawBufferPointer(start: Self.offsetKey.utf8Start, count: Self.offsetKey.utf8CodeUnitCount))
        putDecimal(offset)
    }

    static let pktsKey: StaticString = ",\"pkts\":["
    static let offsetKey: StaticString = "],\"offset\":"

    @inline(__always) mutating func fraction(_ value: UInt32, digits: Int) {
        room(digits &+ 1)
        putFraction(value, digits: digits)
    }

    /// `.` and `digits` digits: only after a `room` that covers them.
    @inline(__always) private mutating func putFraction(_ value: UInt32, digits: Int) {
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
