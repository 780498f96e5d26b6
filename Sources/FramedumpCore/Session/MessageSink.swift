/// Where decoded messages and stream events go: the tree printer, NDJSON, or nothing (-q).
public protocol MessageSink: AnyObject {
    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef)
    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime)
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef)
    /// The same with the reported bytes (their first `MalformedSample.limit` at most), for `-x`.
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef, bytes: UnsafeRawBufferPointer)
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef)
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef)
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef)
    func finish()
    /// What a layer saw that is not a message (a handshake), in its own words.
    func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef)
    /// Late bytes for a reported gap, an ignored RST, bytes after close.
    func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef)
}

/// What the reassembler noticed beside the stream itself, shown as lines of their own.
public enum StreamNotice: Sendable, Equatable {
    /// Bytes arrived for a hole already reported as a gap: counted, not decoded.
    case lateData(offset: UInt64, length: UInt64)
    /// A RST outside the receive window (RFC 5961): ignored, the connection goes on.
    case resetIgnored
    /// Payload for a connection that had already closed (a retransmission after FIN, a copy).
    case afterClose(length: Int)

    public var kind: StaticString {
        switch self {
        case .lateData: return "late"
        case .resetIgnored: return "reset-ignored"
        case .afterClose: return "after-close"
        }
    }

    public var text: String {
        switch self {
        case .lateData(let o, let l): return "\(l) bytes arrived late for the gap already reported at stream offset \(o) (not decoded)"
        case .resetIgnored: return "RST outside the receive window ignored (RFC 5961): the connection goes on"
        case .afterClose(let l): return "\(l) bytes after the connection closed (a retransmission or a copy): not decoded"
        }
    }
}

extension MessageSink {
    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef, bytes: UnsafeRawBufferPointer) {
        malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
    }

    public func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {}

    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                           packet: PacketRef) {}
}
