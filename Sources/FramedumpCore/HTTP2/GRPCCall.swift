/// One gRPC call: an HTTP/2 stream, from its request headers to its trailers (or its reset).
final class GRPCCall {
    let stream: UInt32
    /// The `:path`'s number in `GRPCMethodNames`, and the schema messages its method types the
    /// request and response messages as (-1: not known).
    @exclusivity(unchecked) var method = GRPCMethodNames.none
    @exclusivity(unchecked) var typed: (request: Int32, response: Int32) = (-1, -1)
    /// `grpc-encoding` of each direction's headers (what a compressed message is compressed with).
    @exclusivity(unchecked) var encoding: [String?] = [nil, nil]
    /// Each direction's messages, cut from its DATA frames.
    @exclusivity(unchecked) var readers = [GRPCMessageReader(), GRPCMessageReader()]
    @exclusivity(unchecked) var messages: [UInt32] = [0, 0]
    @exclusivity(unchecked) var requestHeaders: [(String, String)] = []
    @exclusivity(unchecked) var responseHeaders: [(String, String)] = []
    @exclusivity(unchecked) var trailers: [(String, String)] = []
    /// The first request message, for pairing the first response with it (latency per call).
    @exclusivity(unchecked) var request: PairMark?
    let opened: PacketRef
    /// Headers seen from the server (so a later HEADERS block is its trailers).
    @exclusivity(unchecked) var responded = false
    @exclusivity(unchecked) var ended: [Bool] = [false, false]

    init(stream: UInt32, opened: PacketRef) {
        self.stream = stream
        self.opened = opened
    }

    var path: String? { requestHeaders.first { $0.0 == ":path" }?.1 }

    /// The status from the trailers (or a trailers-only response): nil when none came.
    var status: Int? {
        (trailers.first { $0.0 == "grpc-status" } ?? responseHeaders.first { $0.0 == "grpc-status" }).flatMap { Int($0.1) }
    }

    /// `grpc-message`, percent-decoded (the gRPC spec's encoding of it).
    var statusMessage: String? {
        guard let raw = (trailers.first { $0.0 == "grpc-message" } ?? responseHeaders.first { $0.0 == "grpc-message" })?.1 else { return nil }
        var out: [UInt8] = []
        let u = Array(raw.utf8)
        var i = 0
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x41...0x46: return c - 0x37
            case 0x61...0x66: return c - 0x57
            default: return nil
            }
        }
        while i < u.count {
            if u[i] == 0x25, i + 2 < u.count, let a = hex(u[i + 1]), let b = hex(u[i + 2]) {
                out.append(a << 4 | b)
                i += 3
            } else {
                out.append(u[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// One direction of a call: its DATA frames' bytes cut into gRPC's length-prefixed messages
/// (a flag byte, a 4-byte length, the message), which may span frames or share one.
struct GRPCMessageReader {
    /// Prefix bytes read so far (0 to 5), and their value.
    var prefixRead = 0
    var flag: UInt8 = 0
    var length = 0
    /// The message so far, when it spans DATA frames (held per call and direction; reused).
    var body: [UInt8] = []
    var start: UInt64 = 0
    var firstPacket = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))
    /// Bytes of a message too long to hold, still to pass over.
    var skip = 0
}
