/// One line per TCP segment, in the form of `tcpdump -nn -tt -S`:
/// `1700000000.000007 IP 10.0.1.2.40000 > 10.0.0.1.8000: Flags [P.], seq 1:101, ack 1, win 512, length 100`
public struct SegmentPrinter {
    /// tcpdump's flag strings for every combination of the 8 flag bits.
    let flagText: [[UInt8]] = (0..<256).map { Array(TCPFlags(rawValue: UInt8($0)).tcpdumpText.utf8) }

    public init() {}

    public func print(_ s: TCPSegment, at ts: Timestamp, to out: OutputBuffer) {
        var k = out.cursor(reserving: 256)
        k.write(out.secondsText(ts))
        if ts.nanos < 1_000_000_000 {
            k.micros(ts.nanos)
        } else {
            // A microsecond field of 10^6 or more (a broken writer): tcpdump prints it as it is.
            k.byte(0x2e)
            k.decimal(UInt64(ts.nanos / 1000))
        }
        k.write(s.src.address.isV6 ? " IP6 " : " IP ")
        endpoint(s.src, &k)
        k.write(" > ")
        endpoint(s.dst, &k)
        k.write(": Flags [")
        flagText[Int(s.flags.rawValue)].withUnsafeBytes { k.write($0) }
        k.byte(0x5d)
        let len = s.payloadLength
        if len > 0 || s.flags.contains(.syn) || s.flags.contains(.fin) || s.flags.contains(.rst) {
            k.write(", seq ")
            k.decimal(UInt64(s.seq))
            if len > 0 {
                k.byte(0x3a)
                k.decimal(UInt64(s.seq &+ UInt32(truncatingIfNeeded: len)))
            }
        }
        if s.flags.contains(.ack) {
            k.write(", ack ")
            k.decimal(UInt64(s.ack))
        }
        k.write(", win ")
        k.decimal(UInt64(s.window))
        k.write(", length ")
        k.decimal(UInt64(len))
        if s.isTruncated {
            k.write(" [truncated: ")
            k.decimal(UInt64(s.payload.count))
            k.write(" captured]")
        }
        k.byte(0x0a)
        out.commit(k)
        out.endOfRecord()
    }

    /// `a.b.c.d.port` without building a String (IPv6 goes through its text form).
    @inline(__always)
    func endpoint(_ e: Endpoint, _ k: inout Cursor) {
        if e.address.isV6 {
            var t = e.address.text
            t.withUTF8 { k.write(UnsafeRawBufferPointer($0)) }
        } else {
            let v = UInt32(truncatingIfNeeded: e.address.lo)
            k.decimal(UInt64(v >> 24)); k.byte(0x2e)
            k.decimal(UInt64((v >> 16) & 0xff)); k.byte(0x2e)
            k.decimal(UInt64((v >> 8) & 0xff)); k.byte(0x2e)
            k.decimal(UInt64(v & 0xff))
        }
        k.byte(0x2e)
        k.decimal(UInt64(e.port))
    }
}
