/// The bottom part of a connection's stack, one per direction: it takes that direction's
/// bytes in stream order, as the reassembler delivers them, with gaps and the end.
///
/// A connection's stack is assembled per connection, like a channel pipeline:
///
///     TCP stream ─▶ Deframer ─▶ SessionFrames (decode) ─▶ sink                 game, svc, im
///     TCP stream ─▶ WebSocketStream ─▶ WebSocketConnection ─┬▶ SessionFrames   a message = a frame
///                                                           └▶ Deframer ─▶ SessionFrames
///                                                                           (binary payloads as a stream)
///
/// Each part knows only the part above it. A new transport (TLS with a key log, HTTP/2) is
/// another `StreamLayer` that hands its plaintext or its messages up the same way.
public protocol StreamLayer: AnyObject {
    /// Whether any byte (or gap) has arrived yet.
    var started: Bool { get }
    /// Before the first byte: whether the stream starts at its beginning (SYN seen) or mid-way.
    func start(atBoundary: Bool)
    func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef)
    func gap(offset: UInt64, length: UInt64, packet: PacketRef)
    /// The end of the stream; `captureEnded`: the capture stopped (end of file, `-c`), not the connection.
    func finish(packet: PacketRef, captureEnded: Bool)
}

extension Deframer: StreamLayer {}

/// A connection's layer for one direction as the per-chunk path reaches it: unretained (the
/// session's `layers` own them), and by its concrete type, so feeding it touches no reference
/// count and calls it directly. Layers of other types go through `layers`.
enum LayerPath {
    case none
    case deframer(Unmanaged<Deframer>)
    case webSocket(Unmanaged<WebSocketStream>)
    case other

    init(_ layer: StreamLayer?) {
        switch layer {
        case nil: self = .none
        case let d as Deframer: self = .deframer(Unmanaged.passUnretained(d))
        case let w as WebSocketStream: self = .webSocket(Unmanaged.passUnretained(w))
        default: self = .other
        }
    }
}
