/// One connection's dissection: which protocol it speaks, and the bottom layer of its stack
/// per direction (see `StreamLayer`).
final class Session {
    // Both outlive the session (the connection holds it; the manager holds every connection).
    unowned(unsafe) let manager: SessionManager
    unowned(unsafe) let connection: Connection
    var proto: ProtocolRuntime?
    var layers: [StreamLayer?] = [nil, nil] {
        didSet { paths = (LayerPath(layers[0]), LayerPath(layers[1])) }
    }
    /// The same layers for the per-chunk path (see `LayerPath`).
    private(set) var paths: (c2s: LayerPath, s2c: LayerPath) = (.none, .none)
    /// Receives the deframers' frames once a protocol is chosen.
    var frames: SessionFrames?
    /// The WebSocket layer's shared state, on a WebSocket connection.
    var webSocket: WebSocketConnection?
    /// Set once detection has given up on this connection.
    var undissected = false
    /// Data chunks any-port detection has looked at so far.
    var detectTries = 0
    /// Before any-port detection chose a protocol: each direction's first bytes (at most
    /// `SessionManager.earlyLimit`), so a header that came in pieces smaller than itself is
    /// recognised, and the message it starts is decoded, not lost.
    var early: [[UInt8]] = [[], []]
    var earlyEnd: [UInt64] = [0, 0]

    init(manager: SessionManager, connection: Connection, proto: ProtocolRuntime?) {
        self.manager = manager
        self.connection = connection
        if let proto { attach(proto) }
    }

    func attach(_ p: ProtocolRuntime) {
        if p.schema.transport == .websocket { return attachWebSocket(p) }
        proto = p
        p.connections += 1
        let f = SessionFrames(manager: manager, runtime: p, connection: connection)
        frames = f
        for d in Direction.allCases {
            layers[d.rawValue] = Deframer(layout: p.layout, direction: d, consumer: f,
                                          startsAtBoundary: connection.startsAtSYN(d), knownID: p.knownID(d))
        }
    }

    /// A WebSocket stack: the handshake and frames below, `p`'s messages above (the built-in
    /// `websocket` dissector until the handshake names a better one).
    func attachWebSocket(_ p: ProtocolRuntime) {
        proto = p
        p.connections += 1
        let ws = WebSocketConnection(session: self, inner: p, maxMessage: manager.limits.maxWebSocketMessage)
        webSocket = ws
        frames = ws.frames
        layers = ws.streams
    }

    /// Ends the dissection (the connection closed): also breaks the frames → connection link.
    func end() {
        layers = [nil, nil]
        frames = nil
        webSocket = nil
    }
}

/// Decodes a connection's frames and hands them to the sink. Everything it touches per
/// frame is a `let`, so the hot path takes no extra references.
final class SessionFrames: FrameConsumer {
    let runtime: ProtocolRuntime
    let decoder: MessageDecoder
    /// WebSocket text messages (the protocol's `text` rule); the binary decoder elsewhere.
    let textDecoder: MessageDecoder
    /// -q decodes too (into a sink that prints nothing), so its summary counts the messages
    /// with warnings exactly as -v's does.
    let sink: MessageSink
    let decoded: DecodedMessage
    /// Held until the session ends (which drops this object), so never a lasting cycle.
    let connection: Connection
    /// With `-Y`: the filter, asked before decoding whether a message can match at all.
    let prefilter: FilteringSink?
    /// Reading a file: the thread frames are handed to, decoded and printed there. (The
    /// pipeline holds it for the whole run, so no reference count is touched per frame.)
    let handoff: Unmanaged<DecodeThread>?
    /// The batch that last took this object (the reading thread's; see `DecodeThread`).
    var handoffSerial: UInt64 = 0
    /// Where compressed WebSocket messages are inflated: blocks of the decoding side, shared by
    /// every connection, and `--max-ws-message`.
    let inflated: ByteBlock
    let inflateScratch: Inflater.Scratch
    let maxMessage: Int

    init(manager: SessionManager, runtime: ProtocolRuntime, connection: Connection) {
        self.runtime = runtime
        decoder = runtime.decoder
        textDecoder = runtime.textDecoder ?? runtime.decoder
        let sink = manager.decodeSink
        self.sink = sink ?? NullSink()
        decoded = manager.decoded
        self.connection = connection
        prefilter = sink as? FilteringSink
        handoff = manager.handoff.map { Unmanaged.passUnretained($0) }
        inflated = manager.decodeInflated
        inflateScratch = manager.decodeInflateScratch
        maxMessage = manager.limits.maxWebSocketMessage
    }

    func frame(_ f: Frame, _ dir: Direction) {
        if let h = handoff { return h._withUnsafeGuaranteedRef { $0.frame(self, f, dir) } }
        decode(f, dir)
    }

    /// A frame decoded and handed to the sink (on the decoding thread, when there is one).
    func decode(_ f: Frame, _ dir: Direction) {
        let p = runtime
        p.bytes += UInt64(f.bytes.count)
        if let pre = prefilter, !prefilterAllows(f, dir, pre) { return }
        decoder.decode(f, dir, into: decoded)
        if decoded.webSocket != nil { decoded.webSocket = nil }
        p.count(decoded.message, id: decoded.id)
        if !decoded.warnings.isEmpty { p.warnings += 1; p.limitHits.count(decoded.warnings) }
        sink.message(decoded, connection, p)
    }

    /// The rare path of `-Y`: messages whose protocol, direction or id the filter rejects are
    /// counted and not decoded.
    func prefilterAllows(_ f: Frame, _ dir: Direction, _ pre: FilteringSink) -> Bool {
        let p = runtime
        let id = p.layout.messageID(f.bytes, at: 0)
        let mi = id.flatMap { decoder.program.message(dir, $0) }
        if pre.evaluator.mayMatch(p, dir, id: id, message: mi) { return true }
        p.count(mi, id: id)
        pre.skipped += 1
        return false
    }

    /// How a WebSocket message's payload is read.
    enum WebSocketBody {
        /// The protocol's header and body (binary messages).
        case binary
        /// The protocol's `text` rule.
        case text
        /// The WebSocket layer's own: control frames, payloads that could not be inflated or were cut.
        case layer
        /// Compressed (permessage-deflate): inflated first, then read as one of the above.
        case deflated

        /// What kind of message decides the decoder: control frames and undecodable payloads are
        /// the WebSocket layer's own; text and binary go to the inner protocol (binary only when
        /// it holds the protocol's header).
        @inline(__always)
        init(_ info: inout WebSocketInfo, count: Int, headerSize: Int) {
            if info.undecodable {
                self = .layer
            } else if info.opcode == .text {
                self = .text
            } else if info.opcode == .binary || info.opcode == .continuation {
                if count < headerSize {
                    info.add(.shorterThanHeader(count, header: headerSize))
                    self = .layer
                } else {
                    self = .binary
                }
            } else {
                self = .layer
            }
        }
    }

    /// A WebSocket message, decoded as `body` says, with the layer's info above it.
    func deliver(_ f: Frame, _ dir: Direction, body: WebSocketBody, ws: WebSocketInfo) {
        if let h = handoff { return h._withUnsafeGuaranteedRef { $0.deliver(self, f, dir, body: body, ws: ws) } }
        decode(f, dir, body: body, ws: ws)
    }

    func decode(_ f: Frame, _ dir: Direction, body: WebSocketBody, ws: WebSocketInfo) {
        let p = runtime
        var ws = ws, f = f, body = body
        if body == .deflated {
            let input = f.bytes, out = inflated, cap = maxMessage
            f.bytes = inflater(dir)._withUnsafeGuaranteedRef { $0.message(&ws, input, into: out, cap: cap) }
            body = WebSocketBody(&ws, count: f.bytes.count, headerSize: p.layout.headerSize)
        }
        p.webSocketDecoded.count(ws, inflated: f.bytes.count)
        // RFC 6455 §8.1: a text message must be UTF-8. Checked here, beside the decoding that
        // reads the text anyway, rather than on the thread that reads the capture.
        if body == .text && !UTF8Check.isValid(f.bytes) {
            if !ws.hasViolations { p.webSocketDecoded.invalidTextOnly += 1 }
            ws.add(.invalidUTF8)
        }
        p.bytes += UInt64(f.bytes.count)
        if ws.hasViolations && ws.exceededSize { p.limitHits.webSocketTooLarge += 1 }
        let isData = ws.opcode == .text || ws.opcode == .binary || ws.opcode == .continuation
        switch body {
        case .binary: decoder.decode(f, dir, into: decoded)
        case .text: textDecoder.decode(f, dir, into: decoded)
        case .layer, .deflated: layerBody(f, dir, ws)
        }
        decoded.webSocket = ws
        if ws.hasViolations || (ws.opcode == .close && f.bytes.count == 1) { warnings(ws, f) }
        // The protocol's line counts data messages, and those of them with warnings; control
        // and reserved frames are counted per opcode on the websocket line (with their violations).
        if isData {
            p.count(decoded.message, id: decoded.id)
            if !decoded.warnings.isEmpty { p.warnings += 1 }
        }
        if !decoded.warnings.isEmpty { p.limitHits.count(decoded.warnings) }
        sink.message(decoded, connection, p)
    }

    // MARK: permessage-deflate, where messages are decoded

    /// Each direction's compression context, made at its first compressed message (when this
    /// side inflates that direction: see `WebSocketStream.inflatesHere`) ...
    private var inflaters: [Inflater?] = [nil, nil] {
        didSet { inflaterRefs = inflaters.map { $0.map { Unmanaged.passUnretained($0) } } }
    }
    /// ... and the same, reached without touching their reference counts.
    private var inflaterRefs: [Unmanaged<Inflater>?] = [nil, nil]
    /// Whether each direction keeps its window between messages (from the handshake).
    private var contextTakeover = [true, true]

    @inline(__always)
    func inflater(_ dir: Direction) -> Unmanaged<Inflater> {
        if let i = inflaterRefs[dir.rawValue] { return i }
        let i = Inflater(scratch: inflateScratch, contextTakeover: contextTakeover[dir.rawValue])
        inflaters[dir.rawValue] = i
        return Unmanaged.passUnretained(i)
    }

    /// The handshake's permessage-deflate parameters (in order with the messages, on whichever
    /// thread decodes them).
    func negotiated(_ d: DeflateParameters?) {
        let set = { [self] in
            for dir in Direction.allCases {
                contextTakeover[dir.rawValue] = d?.contextTakeover(dir) ?? true
                inflaters[dir.rawValue]?.contextTakeover = contextTakeover[dir.rawValue]
            }
        }
        guard let h = handoff?.takeUnretainedValue() else { return set() }
        h.call(set)
    }

    /// The compression contexts of the connection's previous protocol (in order with the
    /// messages, on whichever thread decodes them).
    func takeInflaters(from old: SessionFrames) {
        let take = { [self] in
            inflaters = old.inflaters
            contextTakeover = old.contextTakeover
        }
        guard let h = handoff?.takeUnretainedValue() else { return take() }
        h.call(take)
    }

    /// A gap in direction `dir`: its window lost what the gap held.
    func contextLost(_ dir: Direction, negotiated: Bool) {
        let lose = { [self] in
            if negotiated || inflaters[dir.rawValue] != nil { inflater(dir).takeUnretainedValue().lost(negotiated: negotiated) }
        }
        guard let h = handoff?.takeUnretainedValue() else { return lose() }
        h.call(lose)
    }

    /// Control frames and undecodable payloads: the close code and reason, or the bytes.
    func layerBody(_ f: Frame, _ dir: Direction, _ ws: WebSocketInfo) {
        let m = decoded
        m.reset()
        m.frame = f
        m.direction = dir
        m.bodyOffset = 0
        let b = f.bytes
        if ws.opcode == .close && b.count >= 2 && !ws.undecodable {
            m.fields.append(DecodedField(name: .builtin(.code), value: .unsigned(UInt64(b.u16be(0)!)),
                                         offset: 0, width: 2, depth: 0))
            m.fields.append(DecodedField(name: .builtin(.reason), value: .string, offset: 2,
                                         width: Int32(b.count - 2), depth: 0))
        } else if !b.isEmpty {
            m.fields.append(DecodedField(name: .builtin(.payload), value: ws.opcode == .text ? .string : .bytes,
                                         offset: 0, width: Int32(b.count), depth: 0))
        }
    }

    /// The rare path: the layer's violations as warnings on the message.
    func warnings(_ ws: WebSocketInfo, _ f: Frame) {
        var ws = ws
        if ws.opcode == .close && f.bytes.count == 1 { ws.add(.closePayloadOneByte) }
        decoded.webSocket = ws
        for v in ws.violations { decoded.warnings.append(.webSocket(v)) }
    }

    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef) {
        malformed(dir, offset: offset, length: length, reason: reason, packet: packet, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef,
                   bytes: UnsafeRawBufferPointer) {
        guard let h = handoff?.takeUnretainedValue() else {
            return report(dir, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
        }
        // The rare path: the bytes (a sample at most) copied for the other thread.
        let copy = [UInt8](bytes)
        h.call { [self] in
            copy.withUnsafeBytes { report(dir, offset: offset, length: length, reason: reason, packet: packet, bytes: $0) }
        }
    }

    func report(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef,
                bytes: UnsafeRawBufferPointer) {
        // A frame the capture cut is counted apart: nothing is wrong with the stream.
        if reason.isCaptureCut {
            runtime.cutAtEnd += 1
            runtime.cutAtEndBytes += length
        } else {
            runtime.malformed += 1
            runtime.malformedBytes += length
        }
        if case .lengthTooLong = reason { runtime.limitHits.frameTooLong += 1 }
        sink.malformed(connection, runtime, dir, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
    }
}

/// Chooses a protocol for each connection and feeds its deframers: the stage between
/// reassembly and output.
public final class SessionManager: StreamConsumer {
    public let protocols: [ProtocolRuntime]
    var byPort: [UInt16: ProtocolRuntime] = [:]
    let anyPort: [ProtocolRuntime]
    /// Where the manager's own events go (connections, gaps, handshakes). Set once, here or by
    /// `decode(on:)`, so `decodeSink` cannot go stale.
    public internal(set) var sink: MessageSink?
    /// Where decoded messages go: `sink`, unless a `DecodeThread` sits between them.
    var decodeSink: MessageSink?
    /// Set before the first packet when decoding runs on a thread of its own.
    var handoff: DecodeThread?
    let decoded = DecodedMessage()
    public internal(set) var undissectedConnections: UInt64 = 0
    public internal(set) var undissectedBytes: UInt64 = 0

    /// WebSocket messages no dissector claims: shown by opcode, as text or hex.
    let webSocketDefault: ProtocolRuntime
    let webSocketProtocols: [ProtocolRuntime]
    /// The bounds decoding and the WebSocket layer keep to (`--max-ws-message`, `--max-depth`, ...).
    /// (The decoders took theirs when the manager was made; the WebSocket bound is read per connection.)
    public private(set) var limits: Limits
    /// `--max-ws-message`, settable after the manager is made.
    public var maxWebSocketMessage: Int {
        get { limits.maxWebSocketMessage }
        set { limits.maxWebSocketMessage = newValue }
    }
    /// Connections that began as HTTP and were not upgraded to WebSocket (passed over).
    public internal(set) var httpPassedOver: UInt64 = 0
    /// permessage-deflate's output blocks, shared by every connection: where the capture is
    /// read (tunnelling protocols) ...
    let inflateScratch = Inflater.Scratch()
    /// ... and where messages are decoded (every other protocol): the inflated message, and
    /// zlib's overflow block.
    let decodeInflated = ByteBlock()
    let decodeInflateScratch = Inflater.Scratch()
    var lastInflaterHere = false

    /// Whether the next compression context is inflated where the capture is read (the
    /// contexts alternate: see `WebSocketStream.inflatesHere`).
    func takeInflaterHere() -> Bool {
        lastInflaterHere.toggle()
        return lastInflaterHere
    }

    public init(protocols: [ProtocolSchema], sink: MessageSink?, limits: Limits = Limits()) {
        self.limits = limits
        var runtimes = protocols.map { ProtocolRuntime($0, limits: limits) }
        webSocketProtocols = runtimes.filter { $0.schema.transport == .websocket }
        webSocketDefault = ProtocolRuntime(ProtocolSchema.webSocketDefault, limits: limits)
        runtimes.append(webSocketDefault)
        self.protocols = runtimes
        for p in self.protocols { for port in p.schema.ports where byPort[port] == nil { byPort[port] = p } }
        anyPort = self.protocols.filter { $0.schema.anyPort }
        self.sink = sink
        decodeSink = sink
    }

    /// Decoding and printing move to `thread`: from now on the manager's events go there too,
    /// behind the frames.
    func decode(on thread: DecodeThread) {
        handoff = thread
        sink = sink.map { HandoffSink(thread, $0) }
    }

    /// The WebSocket protocol for a handshake: by path and subprotocol first, then by port.
    func webSocketProtocol(path: String, subprotocols: [String], port: UInt16) -> ProtocolRuntime? {
        let pathOnly = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        func score(_ p: ProtocolRuntime) -> Int {
            let s = p.schema
            var n = 0
            if !s.webSocketPaths.isEmpty {
                guard s.webSocketPaths.contains(pathOnly) else { return -1 }
                n += 4
            }
            if !s.webSocketSubprotocols.isEmpty {
                guard s.webSocketSubprotocols.contains(where: subprotocols.contains) else { return -1 }
                n += 2
            }
            if s.ports.contains(port) { n += 1 } else if !s.ports.isEmpty && n == 0 { return -1 }
            return n
        }
        var best: (ProtocolRuntime, Int)?
        for p in webSocketProtocols {
            let n = score(p)
            if n >= 0 && n > (best?.1 ?? -1) { best = (p, n) }
        }
        return best?.0 ?? byPort[port].flatMap { $0.schema.transport == .websocket ? $0 : nil } ?? webSocketDefault
    }

    public func isServerPort(_ port: UInt16) -> Bool { byPort[port] != nil }

    /// The session this manager hung on the connection (it is the only one that sets `context`).
    @inline(__always)
    func session(_ c: Connection) -> Session? {
        guard let s = c.context else { return nil }
        return unsafeDowncast(s, to: Session.self)
    }

    public func opened(_ c: Connection, packet: PacketRef) {
        let p = byPort[c.server.port]
        c.context = Session(manager: self, connection: c, proto: p)
        sink?.opened(c, p, packet: packet)
    }

    public func data(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        // The connection holds its session while it lives (it lets it go only on close).
        c.contextRef?._withUnsafeGuaranteedRef {
            data(unsafeDowncast($0, to: Session.self), c, d, bytes, offset: offset, packet: packet)
        }
    }

    @inline(__always)
    func data(_ s: Session, _ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64,
              packet: PacketRef) {
        if s.proto == nil && !s.undissected {
            detect(s, d, bytes, offset: offset)
            // Chosen now, on bytes kept from earlier chunks: those go first (this chunk is their tail).
            if s.proto != nil, !s.early[0].isEmpty || !s.early[1].isEmpty {
                let includesThisChunk = !s.early[d.rawValue].isEmpty
                replayEarly(s, c, current: includesThisChunk ? bytes.count : 0, packet: packet)
                if includesThisChunk { return }
            }
        }
        switch d == .c2s ? s.paths.c2s : s.paths.s2c {
        case .deframer(let u):
            u._withUnsafeGuaranteedRef { feed($0, c, d, bytes, offset: offset, packet: packet) }
        // The HTTP head can end the WebSocket layer (no request after all), freeing the stream
        // while it reads: that rare path takes the retained one below.
        case .webSocket(let u) where u._withUnsafeGuaranteedRef({ $0.mode == .frames || $0.mode == .hunting }):
            u._withUnsafeGuaranteedRef { feed($0, c, d, bytes, offset: offset, packet: packet) }
        default:
            guard let f = s.layers[d.rawValue] else {
                undissectedBytes += UInt64(bytes.count)
                return
            }
            feed(f, c, d, bytes, offset: offset, packet: packet)
        }
    }

    @inline(__always)
    func feed(_ f: some StreamLayer, _ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64,
              packet: PacketRef) {
        // A direction's start is known only once it has begun (the SYN-ACK comes after the
        // connection opened).
        if !f.started { f.start(atBoundary: c.startsAtSYN(d) && offset == 0) }
        f.data(bytes, offset: offset, packet: packet)
    }

    /// Any-port protocols: the first one whose header fits the start of a data chunk takes the
    /// connection. The first chunks may be something else (a banner, a greeting, a handshake
    /// cut by the capture's start), so detection looks at several before giving up.
    func detect(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64) {
        // An HTTP request may be a WebSocket handshake, on any port: the handshake decides.
        if d == .c2s && offset == 0 && HTTPHandshake.looksLikeHTTP(bytes, request: true) {
            s.attachWebSocket(webSocketDefault)
            // Not a request after all (a first segment of "G"...): no WebSocket to hunt for.
            s.webSocket?.detected = true
            return
        }
        // The direction's first bytes so far, this chunk included, while they are few.
        let h = d.rawValue
        if s.early[h].isEmpty || s.earlyEnd[h] != offset || s.early[h].count + bytes.count > Self.earlyLimit {
            s.early[h].removeAll()
        }
        if bytes.count <= Self.earlyLimit {
            s.early[h] += bytes
            s.earlyEnd[h] = offset + UInt64(bytes.count)
        }
        // This chunk alone (a protocol that begins after a banner) ...
        if let p = anyPort.first(where: { $0.recognises(bytes, d) }) {
            s.early[h].removeAll()
            s.attach(p)
            return
        }
        // ... or the direction's first bytes, joined (a header that came in pieces).
        if s.early[h].count > bytes.count,
           let p = s.early[h].withUnsafeBytes({ kept in anyPort.first { $0.recognises(kept, d) } }) {
            s.attach(p)
            return
        }
        // A try counts once the bytes kept could have held any of the headers.
        let longest = anyPort.map(\.layout.headerSize).max() ?? 0
        if !s.early[h].isEmpty && s.early[h].count < longest { return }
        s.detectTries += 1
        if s.detectTries >= Self.detectChunks || anyPort.isEmpty {
            s.early = [[], []]
            s.undissected = true
            undissectedConnections += 1
        }
    }

    static let detectChunks = 8
    static let earlyLimit = 512

    /// Feeds the bytes detection kept, both directions, to the layers just made.
    func replayEarly(_ s: Session, _ c: Connection, current: Int, packet: PacketRef) {
        // The earlier chunks were counted as undissected when they came: they are decoded now.
        let earlier = s.early[0].count + s.early[1].count - current
        if earlier > 0 { undissectedBytes -= UInt64(min(UInt64(earlier), undissectedBytes)) }
        for d in Direction.allCases {
            let kept = s.early[d.rawValue]
            s.early[d.rawValue] = []
            guard !kept.isEmpty, let f = s.layers[d.rawValue] else { continue }
            let start = s.earlyEnd[d.rawValue] - UInt64(kept.count)
            kept.withUnsafeBytes { feed(f, c, d, $0, offset: start, packet: packet) }
        }
    }

    /// A connection taken as a possible WebSocket whose first bytes were no HTTP request.
    func notHTTP(_ s: Session) {
        s.proto?.connections -= 1
        s.proto = nil
        s.layers = [nil, nil]
        s.frames = nil
        s.webSocket = nil
        s.undissected = true
        undissectedConnections += 1
    }

    public func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        guard let s = session(c) else { return }
        if let p = s.proto {
            p.gaps += 1
            p.gapBytes += length
        }
        // The gap first, then what it did to the frame in progress.
        sink?.gap(c, s.proto, d, offset: offset, length: length, reason: reason, packet: packet)
        if let f = s.layers[d.rawValue] {
            if !f.started { f.start(atBoundary: false) }
            f.gap(offset: offset, length: length, packet: packet)
        }
    }

    public func lateData(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        sink?.notice(.lateData(offset: offset, length: length), c, session(c)?.proto, d, packet: packet)
    }

    public func outOfWindowReset(_ c: Connection, _ d: Direction, packet: PacketRef) {
        sink?.notice(.resetIgnored, c, session(c)?.proto, d, packet: packet)
    }

    public func afterClose(_ c: Connection, _ d: Direction, length: Int, packet: PacketRef) {
        // Bare ACKs after a close are ordinary: only payload is worth a line.
        guard length > 0 else { return }
        sink?.notice(.afterClose(length: length), c, session(c)?.proto, d, packet: packet)
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        sink?.conflict(c, d, offset: offset, length: length, packet: packet)
    }

    public func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        guard let s = session(c) else { return }
        if s.proto == nil && !s.undissected && s.detectTries > 0 { undissectedConnections += 1 }
        for d in Direction.allCases { s.layers[d.rawValue]?.finish(packet: packet, captureEnded: reason == .captureEnd) }
        sink?.closed(c, s.proto, reason: reason, packet: packet)
        s.end()
    }
}
