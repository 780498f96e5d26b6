/// The bottom part of a connection's stack, one per direction: it takes that direction's
/// bytes in stream order, as the reassembler delivers them, with gaps and the end.
///
/// A connection's stack is assembled per connection, like a channel pipeline, from the layers
/// its dissector names (`LayerRegistry`):
///
///     TCP stream ─▶ Deframer ─▶ SessionFrames (decode) ─▶ sink              no layer: game, svc, im
///     TCP stream ─▶ a layer's StreamLayer ─┬▶ SessionFrames.layered          a message = a frame
///                                          └▶ Deframer ─▶ SessionFrames      payloads as a stream
///
/// Each part knows only the part above it. A new transport (TLS with a key log, KCP) is another
/// `StreamLayer` that hands its plaintext to a deframer or its messages to `SessionFrames`.
public protocol StreamLayer: AnyObject {
    /// Whether any byte (or gap) has arrived yet.
    var started: Bool { get }
    /// Before the first byte: whether the stream starts at its beginning (SYN seen) or mid-way.
    func start(atBoundary: Bool)
    func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef)
    func gap(offset: UInt64, length: UInt64, packet: PacketRef)
    /// The end of the stream; `captureEnded`: the capture stopped (end of file, `-c`), not the connection.
    func finish(packet: PacketRef, captureEnded: Bool)

    /// The per-chunk path: feeds the layer `u` (of this type) without touching its reference
    /// count, and says true; or says false, feeding nothing, when this chunk could end the layer
    /// (it would free itself while it reads), and the caller feeds it holding a reference.
    /// A requirement, so that each layer's is compiled for its own type.
    static func feedUnretained(_ u: Unmanaged<AnyObject>, _ c: Connection, _ d: Direction,
                               _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) -> Bool
}

extension StreamLayer {
    /// Before its first byte a layer learns whether the stream starts at its beginning (the
    /// SYN-ACK comes after the connection opened, so this is known only once it has begun).
    @inline(__always)
    func feed(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        if !started { start(atBoundary: c.startsAtSYN(d) && offset == 0) }
        data(bytes, offset: offset, packet: packet)
    }

    /// A layer that never ends itself while it reads.
    public static func feedUnretained(_ u: Unmanaged<AnyObject>, _ c: Connection, _ d: Direction,
                                      _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) -> Bool {
        u._withUnsafeGuaranteedRef { unsafeDowncast($0, to: Self.self).feed(c, d, bytes, offset: offset, packet: packet) }
        return true
    }
}

extension Deframer: StreamLayer {}

/// A connection's layer for one direction as the per-chunk path reaches it: unretained (the
/// session's `layers` own them), so feeding it touches no reference count. The deframer, on
/// every plain TCP connection, is called directly; another layer through its type's
/// `feedUnretained` (one indirect call per chunk, none per byte).
enum LayerPath {
    case none
    case deframer(Unmanaged<Deframer>)
    case layer(Unmanaged<AnyObject>, any StreamLayer.Type)

    init(_ layer: StreamLayer?) {
        switch layer {
        case nil: self = .none
        case let d as Deframer: self = .deframer(Unmanaged.passUnretained(d))
        case let l?: self = .layer(Unmanaged.passUnretained(l as AnyObject), type(of: l))
        }
    }
}
