#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    @exclusivity(unchecked) var requestHeaders = HeaderList()
    @exclusivity(unchecked) var responseHeaders = HeaderList()
    @exclusivity(unchecked) var trailers = HeaderList()
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

    var path: String? { requestHeaders.value(":path") }

    /// The status from the trailers (or a trailers-only response): nil when none came.
    var status: Int? { (trailers.value("grpc-status") ?? responseHeaders.value("grpc-status")).flatMap { Int($0) } }

    /// `grpc-message`, percent-decoded (the gRPC spec's encoding of it).
    var statusMessage: String? {
        guard let raw = trailers.value("grpc-message") ?? responseHeaders.value("grpc-message") else { return nil }
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

/// A header list as HPACK decoded it: the names and values laid end to end in one buffer (the
/// decoder's own, kept), and where each lies. Two allocations per block, however many fields.
struct HeaderList: Sendable {
    var text: [UInt8] = []
    var fields: [(name: Range<Int>, value: Range<Int>)] = []

    init() {}

    init(_ d: HPACKDecoder) {
        text = d.text
        fields = d.headers.map { ($0.name, $0.value) }
    }

    var isEmpty: Bool { fields.isEmpty }

    /// The first field named `name` (lower case, as HTTP/2 writes names), as text.
    func value(_ name: StaticString) -> String? {
        guard let r = range(name) else { return nil }
        return text.withUnsafeBytes { String(decoding: UnsafeRawBufferPointer(rebasing: $0[r]), as: UTF8.self) }
    }

    /// Where the first field named `name` has its value in `text`.
    func range(_ name: StaticString) -> Range<Int>? {
        text.withUnsafeBytes { t in
            let n = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            for f in fields where f.name.count == n.count && memcmp(t.baseAddress! + f.name.lowerBound, n.baseAddress!, n.count) == 0 {
                return f.value
            }
            return nil
        }
    }

    /// Each field's name and value bytes, in order.
    func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) {
        text.withUnsafeBytes { t in
            for f in fields { body(UnsafeRawBufferPointer(rebasing: t[f.name]), UnsafeRawBufferPointer(rebasing: t[f.value])) }
        }
    }

    /// Appends `other`'s fields (request trailers kept with the request's headers).
    mutating func append(_ other: HeaderList) {
        let base = text.count
        text += other.text
        fields += other.fields.map { ((base + $0.name.lowerBound)..<(base + $0.name.upperBound), (base + $0.value.lowerBound)..<(base + $0.value.upperBound)) }
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
