/// What the KCP layer says about one message (the `LayerNote` it carries): its conversation,
/// the segments it came in, and whether loss delayed it.
struct KCPInfo: BitwiseCopyable {
    var conv: UInt32
    /// Message mode: the sequence number of the message's first segment. Stream mode: of the
    /// segment that completed the message.
    var sn: UInt32
    /// The sender's timestamp (ms, its own clock) on that segment.
    var ts: UInt32
    /// Segments the message was cut into (message mode; 1 in stream mode).
    var fragments: UInt16
    /// Copies of its segments seen more than once before it was delivered.
    var retransmitted: UInt16
    /// It waited for a segment sent again after a loss (it arrived out of order).
    var delayed: Bool
    /// The conversation runs in stream mode.
    var stream: Bool
}
