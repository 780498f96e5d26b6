/// The bounds that keep reassembly's memory flat whatever the capture.
public struct ReassemblyOptions: Sendable {
    /// Out-of-order bytes held per direction before the hole in front of them becomes a gap.
    public var maxBufferedBytes = 4 << 20
    /// Out-of-order segments held per direction (bounds the bookkeeping for tiny segments).
    public var maxBufferedSegments = 4096
    /// Out-of-order bytes held over every connection together; each held segment also counts
    /// `segmentOverhead` bytes for its bookkeeping. Past it the direction that just grew
    /// gives up its holes (the newest arrival pays, so the others keep their data).
    public var maxBufferedTotal = 64 << 20
    public static let segmentOverhead = 64
    /// Connections tracked at once; the least recently used is closed to make room.
    public var maxConnections = 65_536
    /// A connection without packets for this long is closed.
    public var idleTimeoutSeconds: Int64 = 300
    /// An acknowledgement for bytes not yet seen becomes a gap only after this many more
    /// packets of the connection, or this much packet-clock time (host-side captures write
    /// the ACK a few microseconds before the segment it acknowledges).
    public var ackGracePackets: UInt64 = 32
    public var ackGraceNanos: Int64 = 1_000_000_000
    /// After a RST, data already in flight is still taken for this many packets of the
    /// connection or this much packet-clock time; then the connection closes (reason `rst`).
    public var resetLingerPackets = 32
    public var resetLingerNanos: Int64 = 1_000_000_000
    /// How long a closed connection is remembered so late segments are attributed to it.
    public var timeWaitSeconds: Int64 = 120
    /// Closed connections remembered at once (the oldest is forgotten first).
    public var maxTimeWait = 16_384
    /// A packet stamped more than this far past the clock moves it only once several
    /// packets agree (a lone future timestamp must not time out every connection).
    public var clockJumpSeconds: Int64 = 60
    /// Bytes of recently delivered stream kept per direction once it retransmits, to catch
    /// retransmissions that carry other bytes; and how many directions may keep them at once.
    public var recentBytesPerDirection = 16 << 10
    public var maxRecentBuffers = 2048
    public init() {}
}

/// What the reassembler counted, for the summary.
public struct ReassemblyStats: Sendable {
    public var connections: UInt64 = 0
    public var retransmittedSegments: UInt64 = 0
    public var retransmittedBytes: UInt64 = 0
    public var outOfOrderSegments: UInt64 = 0
    public var gaps: UInt64 = 0
    public var gapBytes: UInt64 = 0
    public var conflicts: UInt64 = 0
    public var bufferLimitHits: UInt64 = 0
    /// Gaps forced because every connection together held `maxBufferedTotal`.
    public var totalBufferLimitHits: UInt64 = 0
    /// The most out-of-order bytes (with bookkeeping) held at once over every connection.
    public var peakBufferedTotal = 0
    public var evicted: UInt64 = 0
    public var idleClosed: UInt64 = 0
    public var ignoredSegments: UInt64 = 0
    public var deliveredBytes: UInt64 = 0
    /// Bytes that arrived for a hole already reported as a gap.
    public var lateSegments: UInt64 = 0
    public var lateBytes: UInt64 = 0
    /// RSTs outside the receive window (RFC 5961): flagged, the connection goes on.
    public var outOfWindowResets: UInt64 = 0
    /// Segments of a connection that had already closed (retransmissions, duplicates), not
    /// counting pure ACKs.
    public var afterCloseSegments: UInt64 = 0
    /// Connections continued because a segment after the close carried new bytes.
    public var continuedAfterClose: UInt64 = 0
    /// Packets whose timestamp jumped away from the clock and was not followed.
    public var clockJumps: UInt64 = 0
    /// SYN-ACKs that answered a handshake again with another ISN (before any server byte).
    public var retriedHandshakes: UInt64 = 0
    /// ACKs of bytes their sender could not have seen: a stray or stale ACK (before the
    /// acker's SYN, or beyond any window it advertised). Not taken as evidence of lost bytes.
    public var implausibleAcks: UInt64 = 0
    /// Segments whose sequence number jumped forward by more than 2^31 (further behind, read
    /// as serial numbers, than any retransmission can be): the bytes between are a gap.
    public var sequenceJumps: UInt64 = 0
    public init() {}
}
