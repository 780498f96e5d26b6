/// Numbers written in ASCII digits (`Decimal(crlf)` in a body, `decimal("|")` in a text header):
/// a leading `-`, then at most 19 digits whose value fits in Int64.
enum ASCIIDecimal {
    /// The digits from `p` up to `limit` (or the first byte that is no digit): the value, where
    /// the digits start (after the sign) and end. nil: more than 19 digits, or past Int64 (no
    /// number, whatever follows).
    @inline(__always)
    static func scan(_ b: UnsafeRawBufferPointer, from p: Int, limit: Int) -> (value: Int64, first: Int, end: Int)? {
        var i = p
        let negative = i < limit && b[i] == 0x2d
        if negative { i += 1 }
        let first = i
        var v: Int64 = 0
        while i < limit, b[i] >= 0x30, b[i] <= 0x39 {
            if i - first == 19 { return nil }
            // 19 digits can pass Int64 ("9999999999999999999"): such digits are no number.
            // (Summed with the sign as read, so -9223372036854775808 is one.) A fuzz finding.
            let digit = Int64(b[i] - 0x30)
            let (t, o1) = v.multipliedReportingOverflow(by: 10)
            let (u, o2) = negative ? t.subtractingReportingOverflow(digit) : t.addingReportingOverflow(digit)
            if o1 || o2 { return nil }
            v = u
            i += 1
        }
        return (v, first, i)
    }
}
