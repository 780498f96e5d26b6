/// Which way bytes flow on a connection.
public enum Direction: Int, Sendable, CaseIterable {
    case c2s = 0
    case s2c = 1

    public var name: String { self == .c2s ? "c2s" : "s2c" }
    public var opposite: Direction { self == .c2s ? .s2c : .c2s }
}

/// Why bytes of a stream are missing.
public enum GapReason: String, Sendable, CaseIterable {
    /// Out-of-order data waited longer than the buffer limit allows.
    case bufferLimit = "buffer-limit"
    /// The other side acknowledged bytes the capture never saw.
    case ackedUnseen = "acked-unseen"
    /// The connection closed (FIN, RST, timeout, eviction) with a hole still open.
    case closed = "closed"
    /// The capture ended with a hole still open.
    case captureEnd = "capture-end"
    /// The snaplen cut the segment: its tail was never captured.
    case truncated = "truncated"
    /// The sequence number jumped forward by more than 2^31: the bytes between were left
    /// out of the capture.
    case sequenceJump = "sequence-jump"
}

/// Why a connection's tracking ended.
public enum CloseReason: String, Sendable, CaseIterable {
    case fin, rst
    case idle = "idle-timeout"
    case evicted = "evicted"
    case reused = "port-reused"
    case captureEnd = "capture-end"
}

/// What the reassembler tells the next stage. Byte ranges are stream offsets (0 = first
/// byte after the SYN, or the first byte seen when the capture started mid-connection), and
/// every event names the packet that caused it, so a deframer knows which packets carried
/// which bytes.
public protocol StreamConsumer: AnyObject {
    func opened(_ c: Connection, packet: PacketRef)
    /// In-order bytes; `bytes` is borrowed and valid only during the call.
    func data(_ c: Connection, _ dir: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef)
    func gap(_ c: Connection, _ dir: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef)
    /// Two copies of the same sequence range carried different bytes; the first one was kept.
    func conflict(_ c: Connection, _ dir: Direction, offset: UInt64, length: UInt64, packet: PacketRef)
    func closed(_ c: Connection, reason: CloseReason, packet: PacketRef)
    /// Bytes for a range already reported as a gap arrived after all; they are not delivered
    /// again (the stream went on past them).
    func lateData(_ c: Connection, _ dir: Direction, offset: UInt64, length: UInt64, packet: PacketRef)
    /// A RST whose sequence number is outside the receive window (RFC 5961); the connection goes on.
    func outOfWindowReset(_ c: Connection, _ dir: Direction, packet: PacketRef)
    /// A segment for a connection that already closed (`c.isClosed`): a retransmission after
    /// FIN, a duplicate copy, a stray ACK. `length` is its payload length.
    func afterClose(_ c: Connection, _ dir: Direction, length: Int, packet: PacketRef)
}

/// Defaults, so consumers that only care about the stream need not implement the rarer events.
public extension StreamConsumer {
    func lateData(_ c: Connection, _ dir: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    func outOfWindowReset(_ c: Connection, _ dir: Direction, packet: PacketRef) {}
    func afterClose(_ c: Connection, _ dir: Direction, length: Int, packet: PacketRef) {}
}
