/// Where decoded messages and stream events go: the tree printer, NDJSON, or nothing (-q).
public protocol MessageSink: AnyObject {
    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef)
    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime)
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef)
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef)
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef)
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef)
    func finish()
    /// The HTTP request or response that opened a WebSocket (`deflate`: what the response
    /// negotiated).
    func handshake(_ h: HTTPHandshake, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                   deflate: DeflateParameters?, packet: PacketRef)
}

extension MessageSink {
    public func handshake(_ h: HTTPHandshake, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                          deflate: DeflateParameters?, packet: PacketRef) {}
}
