/// MessagePack's timestamp extension (type -1): 4 bytes of seconds, 8 bytes of 30-bit
/// nanoseconds and 34-bit seconds, or 12 bytes of 32-bit nanoseconds and signed 64-bit seconds;
/// shown as an RFC 3339 date in UTC with nine decimals.
enum MessagePackTimestamp {
    static let type: Int8 = -1

    /// The seconds and nanoseconds of `d`, nil when it is no timestamp (another length,
    /// nanoseconds past 999,999,999).
    static func decode(_ d: UnsafeRawBufferPointer) -> (seconds: Int64, nanos: UInt32)? {
        func be(_ at: Int, _ n: Int) -> UInt64 {
            var v: UInt64 = 0
            for i in 0..<n { v = v << 8 | UInt64(d[at + i]) }
            return v
        }
        switch d.count {
        case 4: return (Int64(be(0, 4)), 0)
        case 8:
            let v = be(0, 8)
            let nanos = UInt32(v >> 34)
            return nanos < 1_000_000_000 ? (Int64(v & 0x3_ffff_ffff), nanos) : nil
        case 12:
            let nanos = UInt32(be(0, 4))
            return nanos < 1_000_000_000 ? (Int64(bitPattern: be(4, 8)), nanos) : nil
        default: return nil
        }
    }

    /// `2025-11-27T17:00:00.123456789Z` (proleptic Gregorian, any year the seconds reach).
    static func write(_ seconds: Int64, _ nanos: UInt32, _ k: inout Cursor) {
        // Floor division and a non-negative remainder, without overflow at either end of Int64.
        let days = seconds >= 0 ? seconds / 86_400 : -((-(seconds + 1)) / 86_400) - 1
        let rest = seconds % 86_400
        let secs = rest < 0 ? rest + 86_400 : rest
        // Days to a civil date (Howard Hinnant's algorithm), in eras of 400 years.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        if year < 0 { k.byte(0x2d) }
        padded(UInt64(year.magnitude), 4, &k); k.byte(0x2d)
        padded(UInt64(month), 2, &k); k.byte(0x2d)
        padded(UInt64(day), 2, &k); k.byte(0x54)
        padded(UInt64(secs / 3600), 2, &k); k.byte(0x3a)
        padded(UInt64(secs / 60 % 60), 2, &k); k.byte(0x3a)
        padded(UInt64(secs % 60), 2, &k); k.byte(0x2e)
        padded(UInt64(nanos), 9, &k); k.byte(0x5a)
    }

    static func padded(_ v: UInt64, _ width: Int, _ k: inout Cursor) {
        var digits = 1
        var t = v
        while t >= 10 { t /= 10; digits += 1 }
        for _ in digits..<max(width, digits) { k.byte(0x30) }
        k.decimal(v)
    }

    /// The date as text (for `-Y` and the rare paths).
    static func text(_ d: UnsafeRawBufferPointer) -> String? {
        guard let (s, n) = decode(d) else { return nil }
        // The longest date is 39 bytes (a sign, a 12-digit year); each number written asks for
        // 20 bytes of room, as a cursor's decimal does.
        var scratch = [UInt8](repeating: 0, count: 80)
        return scratch.withUnsafeMutableBufferPointer { p in
            var k = Cursor(scratch: p.baseAddress!, count: p.count)
            write(s, n, &k)
            return String(decoding: UnsafeBufferPointer(start: p.baseAddress!, count: k.p - p.baseAddress!), as: UTF8.self)
        }
    }
}
