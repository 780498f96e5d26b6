/// One line per TCP segment, in the form of `tcpdump -nn -tt -S`:
/// `1700000000.000007 IP 10.0.1.2.40000 > 10.0.0.1.8000: Flags [P.], seq 1:101, ack 1, win 512, length 100`
public struct SegmentPrinter {
    public init() {}

    public func print(_ s: TCPSegment, at ts: Timestamp, to out: OutputBuffer) {
        out.timestamp(ts)
        out.write(s.src.address.isV6 ? " IP6 " : " IP ")
        out.write(s.src.dotted)
        out.write(" > ")
        out.write(s.dst.dotted)
        out.write(": Flags [")
        out.write(s.flags.tcpdumpText)
        out.write("]")
        let len = s.payloadLength
        if len > 0 || s.flags.contains(.syn) || s.flags.contains(.fin) || s.flags.contains(.rst) {
            out.write(", seq ")
            out.decimal(UInt64(s.seq))
            if len > 0 {
                out.byte(0x3a)
                out.decimal(UInt64(s.seq &+ UInt32(truncatingIfNeeded: len)))
            }
        }
        if s.flags.contains(.ack) {
            out.write(", ack ")
            out.decimal(UInt64(s.ack))
        }
        out.write(", win ")
        out.decimal(UInt64(s.window))
        out.write(", length ")
        out.decimal(len)
        if s.isTruncated {
            out.write(" [truncated: ")
            out.decimal(s.payload.count)
            out.write(" captured]")
        }
        out.newline()
    }
}
