/// A WebSocket connection's state shared by its two directions: the handshake, the negotiated
/// permessage-deflate parameters, and the protocol its messages are handed to (chosen by path,
/// subprotocol or port, or the built-in `websocket` dissector when nothing claims them).
final class WebSocketConnection {
    unowned(unsafe) let session: Session
    @exclusivity(unchecked) var streams: [WebSocketStream] = []
    /// The protocol that decodes the messages, and its decoding parts.
    var inner: ProtocolRuntime {
        didSet {
            innerHeaderSize = inner.layout.headerSize; counters = inner.webSocketState!.counters
            innerLayout = inner.layout; innerVariable = inner.layout.variable
        }
    }
    /// Where `frames` has the messages decoded: the compression contexts of that side.
    @exclusivity(unchecked) var decoding: WebSocketDecoding
    var frames: SessionFrames {
        didSet { framesRef = Unmanaged.passUnretained(frames) }
    }
    /// What the per-message path needs of `inner` and `frames`, held apart so that it touches
    /// neither object (not even their reference counts): they are read for every message.
    @exclusivity(unchecked) private var innerHeaderSize: Int
    /// A header with varints is as long as they say (`inner` holds the layout).
    @exclusivity(unchecked) private var innerVariable: Bool
    @exclusivity(unchecked) private unowned(unsafe) var innerLayout: FrameLayout
    @exclusivity(unchecked) private var counters: WebSocketCounters
    @exclusivity(unchecked) private var framesRef: Unmanaged<SessionFrames>
    /// Binary payloads as a stream, per direction (protocols with a length rule).
    @exclusivity(unchecked) var tunnel: [Deframer?] = [nil, nil]
    @exclusivity(unchecked) var tunnelOffset: [UInt64] = [0, 0]
    @exclusivity(unchecked) var tunnelled = false

    @exclusivity(unchecked) var request: HTTPHandshake?
    /// Requests not answered yet, oldest first (HTTP/1.1 answers in order; pipelined requests
    /// are all read before their answers): which one a response answers, its method (no body
    /// after HEAD) and whether it was the upgrade (refused by any other final status).
    @exclusivity(unchecked) var unanswered: [(method: String, upgrade: Bool)] = []
    /// Set once the server's 101 response was read: nil there means no compression.
    @exclusivity(unchecked) var deflate: DeflateParameters?
    @exclusivity(unchecked) var handshakeDone = false
    /// RFC 6455 requires every client frame to be masked.
    static let expectMasking = true
    /// Taken by its first bytes looking like an HTTP request (no dissector named its port): if
    /// they are not a request after all, the connection is not a WebSocket.
    @exclusivity(unchecked) var detected = false

    /// Without a handshake (capture started later) RSV1 is taken as permessage-deflate.
    var deflateAllowed: Bool { handshakeDone ? deflate != nil : true }

    init(session: Session, inner: ProtocolRuntime, maxMessage: Int) {
        self.session = session
        self.inner = inner
        let dec = WebSocketDecoding(manager: session.manager, runtime: inner)
        let f = SessionFrames(manager: session.manager, runtime: inner, connection: session.connection, layer: dec)
        decoding = dec
        frames = f
        innerHeaderSize = inner.layout.headerSize
        innerVariable = inner.layout.variable
        innerLayout = inner.layout
        counters = inner.webSocketState!.counters
        framesRef = Unmanaged.passUnretained(f)
        streams = Direction.allCases.map { WebSocketStream(owner: self, direction: $0, maxMessage: maxMessage, mode: .head) }
        makeTunnel()
    }

    func makeTunnel() {
        tunnelled = inner.schema.webSocketStream
        guard tunnelled else { tunnel = [nil, nil]; return }
        let deframers = Direction.allCases.map {
            Deframer(layout: inner.layout, direction: $0, consumer: frames, startsAtBoundary: true, knownID: inner.knownID($0), plausibleBody: inner.plausibleBody($0))
        }
        Deframer.link(deframers[0], deframers[1])
        tunnel = deframers
    }

    /// The protocol changes at the handshake (path, subprotocol): messages go to it from then on.
    func select(_ p: ProtocolRuntime) {
        guard p !== inner else { return }
        inner.connections -= 1
        inner = p
        p.connections += 1
        session.proto = p
        decoding = WebSocketDecoding(manager: session.manager, runtime: p)
        frames = SessionFrames(manager: session.manager, runtime: p, connection: session.connection, layer: decoding)
        session.frames = frames
        makeTunnel()
        // (Messages compressed before the handshake that chose the protocol, from a peer that
        // did not wait for it: their compression contexts are the streams', and go on.)
    }

    // MARK: - From the streams

    func head(_ h: HTTPHandshake, _ d: Direction, packet: PacketRef) {
        var h = h
        let m = session.manager
        if d == .c2s {
            request = h
            if unanswered.count < 64 { unanswered.append((h.method, h.isWebSocketUpgrade)) }
            guard h.isWebSocketUpgrade else { return notUpgrade(h, d) }
            if let p = m.webSocketProtocol(path: h.path, subprotocols: h.list("Sec-WebSocket-Protocol"),
                                           port: session.connection.server.port) {
                select(p)
            }
            // Engine.IO v3 (Socket.IO 2.x clients) starts each binary message with its packet type.
            decoding.engineIO3 = h.path.contains("?EIO=3") || h.path.contains("&EIO=3")
        } else {
            // A final status answers the oldest request; 1xx other than 101 only announce one.
            let answers = h.status / 100 != 1 || h.status == 101 ? (unanswered.isEmpty ? nil : unanswered.removeFirst()) : nil
            guard h.status == 101, answers?.upgrade ?? request?.isWebSocketUpgrade ?? true else {
                return notUpgrade(h, d, answering: answers)
            }
            if passedOver {
                // Keep-alive HTTP came first; this connection is a WebSocket after all.
                passedOver = false
                m.webSocketLayer.httpPassedOver -= 1
            }
            if let key = request?.header("Sec-WebSocket-Key"), let accept = h.header("Sec-WebSocket-Accept") {
                h.acceptValid = HTTPHandshake.accept(forKey: key) == accept
            }
            deflate = DeflateParameters(extensions: h.list("Sec-WebSocket-Extensions"))
            for s in streams { s.inflater?.contextTakeover = deflate?.contextTakeover(s.dir) ?? true }
            handshakeDone = true
            if let chosen = h.header("Sec-WebSocket-Protocol"),
               let p = m.webSocketProtocol(path: request?.path ?? "", subprotocols: [chosen], port: session.connection.server.port) {
                select(p)
            }
            counters.handshakes += 1
        }
        m.sink?.layerEvent(WebSocketHandshakeEvent(handshake: h, direction: d, deflate: d == .s2c ? deflate : nil),
                           session.connection, inner, d, packet: packet)
    }

    /// Counted in `httpPassedOver` (until an upgrade on the same connection takes it back).
    @exclusivity(unchecked) var passedOver = false

    /// An HTTP request or response that is no upgrade: passed over quietly. HTTP/1.1 keeps the
    /// connection for more requests, and one of them may be the upgrade: each side's next head
    /// is read after the body when its length is known (Content-Length, or none at all); a
    /// chunked or close-delimited response is passed over until a `101` begins a line.
    func notUpgrade(_ h: HTTPHandshake, _ d: Direction, answering: (method: String, upgrade: Bool)? = nil) {
        if !passedOver {
            passedOver = true
            session.manager.webSocketLayer.httpPassedOver += 1
        }
        let client = streams[Direction.c2s.rawValue], server = streams[Direction.s2c.rawValue]
        let chunked = h.header("Transfer-Encoding")?.lowercased().contains("chunked") ?? false
        let length = h.header("Content-Length").flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
        if d == .c2s {
            if chunked || h.header("Connection")?.lowercased() == "close" {
                client.mode = .ignored
            } else if let n = length, n > 0 {
                client.mode = .body
                client.bodyLeft = n
            } else {
                client.mode = .head
            }
            // The server's answer is read as a head (unless it is still inside an earlier one).
            if server.mode == .frames || server.mode == .hunting { server.mode = .seekUpgrade }
        } else {
            if client.mode == .frames && h.status / 100 != 1 && (answering?.upgrade ?? true) {
                // An upgrade the server refused: the client goes on with HTTP, if anything.
                client.mode = .head
            }
            // RFC 9112 6.3: no body after HEAD, 1xx, 204 and 304; else Content-Length, chunked,
            // or up to the close.
            if (answering?.method ?? request?.method) == "HEAD" || h.status / 100 == 1 || h.status == 204 || h.status == 304 {
                server.mode = .head
            } else if !chunked, let n = length {
                server.mode = n > 0 ? .body : .head
                server.bodyLeft = n
            } else {
                server.mode = .seekUpgrade
            }
        }
        if client.mode == .ignored { server.mode = .ignored }
    }

    /// The client's first bytes were not an HTTP request: without a dissector for the port this
    /// is not a WebSocket, and its bytes count as undissected.
    func notARequest() -> Bool {
        guard detected else { return false }
        for s in streams { s.mode = .ignored }
        session.manager.detach(session)
        return true
    }

    /// A head that could not be read (cut by a gap or the end, LF-only lines, HTTP/0.9) on a
    /// connection taken only because it looked like HTTP: passed over, both ways, quietly.
    func headUnreadable() -> Bool {
        guard detected && !handshakeDone else { return false }
        for s in streams { s.mode = .ignored }
        return true
    }

    /// A gap or the end in direction `d`: the tunnelled stream has the same hole or end.
    func streamGap(_ d: Direction, packet: PacketRef) {
        // The compression window lost what the gap held.
        let negotiated = deflate != nil
        let s = streams[d.rawValue]
        if negotiated { s.inflaterHere() }
        s.inflater?.lost(negotiated: negotiated)
        guard let t = tunnel[d.rawValue] else { return }
        t.gap(offset: tunnelOffset[d.rawValue], length: 0, packet: packet)
    }

    func streamFinished(_ d: Direction, packet: PacketRef, captureEnded: Bool) {
        tunnel[d.rawValue]?.finish(packet: packet, captureEnded: captureEnded)
    }

    func malformed(_ d: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef,
                   bytes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        frames.malformed(d, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
    }

    /// One whole message (or control frame) of direction `d`, inflated if it was compressed.
    func message(_ info: WebSocketInfo, _ payload: UnsafeRawBufferPointer, _ d: Direction,
                 offset: UInt64, first: PacketRef, last: PacketRef, coalesced: Int = 1) {
        let f = Frame(bytes: payload, offset: offset, firstPacket: first, lastPacket: last, coalesced: coalesced)
        // `frames` holds it for the call (only a handshake replaces it, never a message).
        framesRef._withUnsafeGuaranteedRef { out in
            if tunnelled, !info.undecodable, info.opcode == .binary || info.opcode == .continuation,
               let t = tunnel[d.rawValue] {
                // A length-framed protocol inside binary messages: their payloads are its stream.
                // Counted here (the messages decoded are counted by `WebSocketDecoding`).
                counters.count(info, inflated: payload.count)
                t.data(payload, offset: tunnelOffset[d.rawValue], packet: f.lastPacket)
                tunnelOffset[d.rawValue] += UInt64(payload.count)
                return
            }
            var info = info
            let header = innerVariable ? innerLayout.headerLength(payload) : innerHeaderSize
            let body = WebSocketBody(&info, count: payload.count, headerSize: header)
            out.layered(f, d, WebSocketLayer.note(info, body))
        }
    }
}

/// Per protocol: what the WebSocket layer saw, for the summary.
public final class WebSocketCounters {
    /// Messages per opcode (16 slots: a plain block, counted without copy-on-write checks).
    let perOpcode = UnsafeMutablePointer<UInt64>.allocate(capacity: 16)
    @exclusivity(unchecked) public var handshakes: UInt64 = 0
    @exclusivity(unchecked) public var compressed: UInt64 = 0
    @exclusivity(unchecked) public var compressedBytes: UInt64 = 0
    @exclusivity(unchecked) public var inflatedBytes: UInt64 = 0
    /// Messages with a violation of the framing or of permessage-deflate.
    @exclusivity(unchecked) var framingViolations: UInt64 = 0
    /// Text messages whose only violation is text that is not UTF-8 (found where text is decoded).
    @exclusivity(unchecked) var invalidTextOnly: UInt64 = 0
    /// Messages with a protocol violation of any kind.
    public var violations: UInt64 { framingViolations + invalidTextOnly }

    public init() { perOpcode.initialize(repeating: 0, count: 16) }
    deinit { perOpcode.deallocate() }

    public var opcodes: [UInt64] { Array(UnsafeBufferPointer(start: perOpcode, count: 16)) }

    @inline(__always)
    func count(_ info: WebSocketInfo, inflated: Int) {
        perOpcode[Int(info.opcode.rawValue & 0x0f)] += 1
        if info.compressed {
            compressed += 1
            compressedBytes += info.wireLength
            inflatedBytes += UInt64(inflated)
        }
        if info.hasViolations { framingViolations += 1 }
    }
}
