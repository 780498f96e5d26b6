/// The bounds that keep reassembly's memory flat whatever the capture.
public struct ReassemblyOptions: Sendable {
    /// Out-of-order bytes held per direction before the hole in front of them becomes a gap.
    public var maxBufferedBytes = 4 << 20
    /// Out-of-order segments held per direction (bounds the bookkeeping for tiny segments).
    public var maxBufferedSegments = 4096
    /// Connections tracked at once; the least recently used is closed to make room.
    public var maxConnections = 65_536
    /// A connection without packets for this long is closed.
    public var idleTimeoutSeconds: Int64 = 300
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
    public var evicted: UInt64 = 0
    public var idleClosed: UInt64 = 0
    public var ignoredSegments: UInt64 = 0
    public var deliveredBytes: UInt64 = 0
    public init() {}
}
