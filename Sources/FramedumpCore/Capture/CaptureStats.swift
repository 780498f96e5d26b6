/// Counts kept by the capture and link stages, printed in the summary.
public struct CaptureStats: Sendable {
    public var packets: UInt64 = 0
    public var bytes: UInt64 = 0
    public var tcpSegments: UInt64 = 0
    public var notTCP: UInt64 = 0
    /// UDP datagrams (other than tunnels); those no protocol claims also count as `notTCP`.
    public var udpDatagrams: UInt64 = 0
    public var fragments: UInt64 = 0
    public var truncatedHeaders: UInt64 = 0
    public var truncatedPayloads: UInt64 = 0
    public var unsupported: UInt64 = 0
    public var malformed: UInt64 = 0
    /// TCP segments whose IP header said length 0 (segmentation offload): captured length used.
    public var ipLengthFromCapture: UInt64 = 0
    /// TCP segments that came out of reassembled IP fragments.
    public var defragmentedSegments: UInt64 = 0
    /// Uncut frames whose IP length announced more than they held (the bytes present used).
    public var ipLengthBeyondFrame: UInt64 = 0
    /// IPComp payloads (RFC 3173) seen, the TCP segments inflated out of them, and those that
    /// would not inflate (another algorithm than DEFLATE, or damaged).
    public var compressed: UInt64 = 0
    public var ipcompSegments: UInt64 = 0
    public var ipcompFailed: UInt64 = 0
    public init() {}

    public mutating func count(_ r: LinkResult) {
        switch r {
        case .tcp(let s):
            tcpSegments += 1
            if s.isTruncated { truncatedPayloads += 1 }
            if s.ipLengthFromCapture { ipLengthFromCapture += 1 }
        case .udp:
            udpDatagrams += 1
        case .notTCP: notTCP += 1
        case .fragment: fragments += 1
        case .truncated: truncatedHeaders += 1
        case .unsupported: unsupported += 1
        case .malformed: malformed += 1
        case .compressed: compressed += 1
        }
    }
}
