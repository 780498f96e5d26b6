/// One connection's dissection: which protocol it speaks, and the bottom layer of its stack
/// per direction (see `StreamLayer`).
final class Session {
    // Both outlive the session (the connection holds it; the manager holds every connection).
    unowned(unsafe) let manager: SessionManager
    unowned(unsafe) let connection: Connection
    @exclusivity(unchecked) var proto: ProtocolRuntime?
    var layers: [StreamLayer?] = [nil, nil] {
        didSet { paths = (LayerPath(layers[0]), LayerPath(layers[1])) }
    }
    /// The same layers for the per-chunk path (see `LayerPath`).
    @exclusivity(unchecked) private(set) var paths: (c2s: LayerPath, s2c: LayerPath) = (.none, .none)
    /// Receives the deframers' frames once a protocol is chosen.
    @exclusivity(unchecked) var frames: SessionFrames?
    /// What the layers below the protocol share between the two directions (a handshake, what
    /// it negotiated), held here while the connection lives.
    @exclusivity(unchecked) var shared: AnyObject?
    /// Set once detection has given up on this connection.
    @exclusivity(unchecked) var undissected = false
    /// Data chunks any-port detection has looked at so far.
    @exclusivity(unchecked) var detectTries = 0
    /// Before any-port detection chose a protocol: each direction's first bytes (at most
    /// `SessionManager.earlyLimit`), so a header that came in pieces smaller than itself is
    /// recognised, and the message it starts is decoded, not lost.
    @exclusivity(unchecked) var early: [[UInt8]] = [[], []]
    @exclusivity(unchecked) var earlyEnd: [UInt64] = [0, 0]

    init(manager: SessionManager, connection: Connection, proto: ProtocolRuntime?) {
        self.manager = manager
        self.connection = connection
        if let proto { attach(proto) }
    }

    /// A layer below the protocol's stack (TLS), holding the stack's layers as its uppers.
    @exclusivity(unchecked) var lower: AnyObject?

    /// The stack for `p`, and (`belowLower` false) whatever a layer puts below it (TLS).
    func attach(_ p: ProtocolRuntime, belowLower: Bool = false) {
        attachStack(p)
        if !belowLower { for k in LayerRegistry.kinds { k.below(self, p) } }
    }

    /// A layer below the stack takes the stream; the stack's layers become its uppers.
    func wrap(_ below: AnyObject, layers: [StreamLayer]) {
        lower = below
        self.layers = layers
    }

    /// A layer that may go below the stack once it sees the first bytes (TLS: a ClientHello),
    /// asked once, on the first data chunk; nothing is allocated for it before.
    @exclusivity(unchecked) var firstDataHook: (any LayerKind.Type)?

    /// The stack for `p`: its layer's, or a deframer per direction on the stream itself.
    private func attachStack(_ p: ProtocolRuntime) {
        if let k = p.topLayer { return k.attach(self, p) }
        proto = p
        p.connections += 1
        let f = SessionFrames(manager: manager, runtime: p, connection: connection)
        frames = f
        let deframers = Deframer.both(p, consumer: f, startsAtBoundary: connection.startsAtSYN)
        // A UDP flow's datagrams are each cut on their own (and each one's end settles its frames).
        layers = connection.udp ? deframers.map { DatagramDeframer($0) } : deframers
    }

    /// Ends the dissection (the connection closed): also breaks the frames → connection link.
    func end() {
        layers = [nil, nil]
        lower = nil
        frames = nil
        shared = nil
    }
}

/// Decodes a connection's frames and hands them to the sink. Everything it touches per
/// frame is a `let`, so the hot path takes no extra references.
final class SessionFrames: FrameConsumer {
    let runtime: ProtocolRuntime
    let decoder: MessageDecoder
    /// -q decodes too (into a sink that prints nothing), so its summary counts the messages
    /// with warnings exactly as -v's does.
    let sink: MessageSink
    let decoded: DecodedMessage
    /// Held until the session ends (which drops this object), so never a lasting cycle.
    let connection: Connection
    /// With `-Y`: the filter, asked before decoding whether a message can match at all.
    let prefilter: FilteringSink?
    /// The message layer below the protocol, where its messages are decoded (nil: frames come
    /// straight from deframers).
    @exclusivity(unchecked) var layer: (any MessageLayerDecoder)?
    /// A layer below the stack that notes each frame (TLS: its records), with `layer` then
    /// `NoteDecoding`. Set before the first frame.
    @exclusivity(unchecked) var noter: FrameNoter?
    /// A layer below the stack's word on the connection (TLS), put on each message. Set before
    /// the first frame it concerns.
    @exclusivity(unchecked) var connectionLayer: (any ConnectionLayerInfo)?
    /// Requests waiting for a reply typed by them (`answers`); nil for most protocols.
    let replies: ReplyTable?
    /// Connection phases: the protocol has them, the connection's current one, and whether it
    /// was assumed (the capture began after the connection did) and not yet said.
    let phased: Bool
    @exclusivity(unchecked) var phase: Int32 = 0
    @exclusivity(unchecked) var phaseAssumed = false
    @exclusivity(unchecked) var phaseStarted = false
    /// Under phases with counted switches: the connection's count for each (`PhaseTable.rules`).
    @exclusivity(unchecked) var phaseCounters: [Int64] = []
    /// Requests waiting for their responses (`pair`, `pair_by`); nil when the protocol pairs
    /// nothing or the run shows no pairing (`-q` without `-z rtt`).
    let pairs: PairTable?
    /// Messages of the connection so far (skipped by `-Y` too).
    @exclusivity(unchecked) var messages: UInt64 = 0

    init(manager: SessionManager, runtime: ProtocolRuntime, connection: Connection,
         layer: (any MessageLayerDecoder)? = nil) {
        replies = ReplyTable(runtime)
        pairs = manager.pairing ? runtime.pairRules.map { PairTable($0, runtime) } : nil
        self.runtime = runtime
        decoder = runtime.decoder
        let sink = manager.sink
        self.sink = sink ?? NullSink()
        decoded = manager.decoded
        self.connection = connection
        prefilter = sink as? FilteringSink
        self.layer = layer
        phased = decoder.phased
    }

    func frame(_ f: Frame, _ dir: Direction) {
        if let n = noter { return layered(f, dir, n.note(f, dir)) }
        decode(f, dir)
    }

    /// A frame decoded and handed to the sink.
    func decode(_ f: Frame, _ dir: Direction) {
        let p = runtime
        p.bytes += UInt64(f.bytes.count)
        if _slowPath(phased) { setPhase(f, dir) }
        if let pre = prefilter, !prefilterAllows(f, dir, pre) { return }
        if connectionLayer != nil || decoded.connectionLayer != nil { decoded.connectionLayer = connectionLayer }
        if let r = replies { decodeWithReplies(f, dir, r) } else { decoder.decode(f, dir, into: decoded) }
        if _slowPath(phased) { markPhase(decoded.message) }
        messages += 1
        decoded.number = messages
        if let t = pairs { t.pair(decoded, number: messages) }
        if !decoded.layerNotes.isEmpty { decoded.layerNotes.removeAll() }
        p.count(decoded.message, id: decoded.id)
        if !decoded.warnings.isEmpty { p.warnings += 1; p.limitHits.count(decoded.warnings) }
        sink.message(decoded, connection, p)
    }

    /// Under phases: the decoder told the connection's phase. On its first frame: a connection
    /// whose first frame is a direction's first byte after its SYN starts in the first phase;
    /// any other (the capture joined it late) is assumed to be in the `midstream` one.
    func setPhase(_ f: Frame, _ dir: Direction) {
        if !phaseStarted {
            phaseStarted = true
            if !(f.offset == 0 && connection.startsAtSYN(dir)) {
                phase = decoder.phases.unsafelyUnwrapped.midstream
                phaseAssumed = true
            }
        }
        decoder.phase = phase
    }

    /// Under phases: the message's phase put on it (and said, if assumed), then the phase the
    /// message leads to.
    func markPhase(_ mi: Int?) {
        var mark = PhaseMark(current: phase, next: -1, assumed: phaseAssumed)
        phaseAssumed = false
        let table = decoder.phases.unsafelyUnwrapped
        var next: Int32?
        if _slowPath(table.hasSpecial), let mi {
            if phaseCounters.count != table.rules.count { phaseCounters = Array(repeating: 0, count: table.rules.count) }
            next = table.after(phase, mi, decoded, counters: &phaseCounters)
        } else if let mi {
            next = table.after(phase, mi)
        }
        if let n = next {
            if n != phase { mark.next = n }
            phase = n
        }
        decoded.phase = mark
    }

    /// `answers`: a frame whose id names no message may be the reply of a waiting request (and
    /// is decoded as that reply); a request is recorded once decoded.
    func decodeWithReplies(_ f: Frame, _ dir: Direction, _ r: ReplyTable) {
        let typed = r.reply(f, dir, decoder)
        decoder.decode(f, dir, into: decoded, as: typed)
        if typed == nil, decoded.message == nil, r.expectsReply(f, dir, decoder) {
            // Said in place of "unknown message id": what it is not known is which request it answers.
            decoded.warnings.removeAll { if case .unknownMessage = $0 { return true }; return false }
            decoded.warnings.append(.replyWithoutRequest)
            runtime.repliesOrphaned += 1
        }
        r.record(decoded)
    }

    /// The rare path of `-Y`: messages whose protocol, direction or id the filter rejects are
    /// counted and not decoded.
    func prefilterAllows(_ f: Frame, _ dir: Direction, _ pre: FilteringSink) -> Bool {
        let p = runtime
        // With `answers`, requests and replies are decoded whatever the filter says: a reply's
        // type is its request's, which must have been seen.
        if replies != nil { return true }
        let layout = decoder.layout(of: f, dir)
        let id = layout.messageID(f.bytes, at: 0)
        let mi = id.flatMap { decoder.message(dir, $0) } ?? layout.message
        if pre.evaluator.mayMatch(p, dir, id: id, message: mi) { return true }
        // A request or response is decoded all the same: its key may be in its body.
        if let t = pairs, t.takesPart(mi, dir) { return true }
        messages += 1
        // (Not decoded, but still the message that moves the connection on.)
        if phased { markPhase(mi) }
        p.count(mi, id: id)
        pre.skipped += 1
        return false
    }

    /// A message of the layer below (`note`: what the layer says about it), decoded by that
    /// layer's `MessageLayerDecoder` where messages are decoded.
    @inline(__always)
    func layered(_ f: Frame, _ dir: Direction, _ note: LayerNote) {
        if connectionLayer != nil || decoded.connectionLayer != nil { decoded.connectionLayer = connectionLayer }
        layer.unsafelyUnwrapped.decode(f, dir, note, self)
    }

    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef) {
        malformed(dir, offset: offset, length: length, reason: reason, packet: packet, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef,
                   bytes: UnsafeRawBufferPointer) {
        // A frame the capture cut is counted apart: nothing is wrong with the stream.
        if reason.isCaptureCut {
            runtime.cutAtEnd += 1
            runtime.cutAtEndBytes += length
        } else {
            runtime.malformed += 1
            runtime.malformedBytes += length
        }
        if case .lengthTooLong(_, let maximum) = reason, maximum >= runtime.maxFrameFlag { runtime.limitHits.frameTooLong += 1 }
        sink.malformed(connection, runtime, dir, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
    }
}

/// Chooses a protocol for each connection and feeds its deframers: the stage between
/// reassembly and output.
public final class SessionManager: StreamConsumer {
    public let protocols: [ProtocolRuntime]
    @exclusivity(unchecked) var byPort: [UInt16: ProtocolRuntime] = [:]
    /// The protocols of UDP ports (`udp port N;`).
    @exclusivity(unchecked) var byUDPPort: [UInt16: ProtocolRuntime] = [:]
    let anyPort: [ProtocolRuntime]
    /// Where messages and the manager's own events go (connections, gaps, handshakes).
    public let sink: MessageSink?
    let decoded = DecodedMessage()
    /// Responses are paired with their requests (`pair`, `pair_by`): off where nothing shows
    /// it (`-q` without `-z rtt`).
    public var pairing = true
    @exclusivity(unchecked) public internal(set) var undissectedConnections: UInt64 = 0
    @exclusivity(unchecked) public internal(set) var undissectedBytes: UInt64 = 0

    /// The bounds decoding and the layers keep to (`--max-depth`, a layer's message size...).
    /// (The decoders took theirs when the manager was made; a layer's are read per connection.)
    @exclusivity(unchecked) public internal(set) var limits: Limits
    /// Each registered layer's part of the manager (`LayerKind.managerState`), by registry index.
    @exclusivity(unchecked) private(set) var layerStates: [AnyObject?] = []

    public init(protocols: [ProtocolSchema], sink: MessageSink?, limits: Limits = Limits()) {
        self.limits = limits
        // The layers' own protocols come after the files' (a file's claims a port first).
        let schemas = protocols + LayerRegistry.kinds.flatMap { $0.builtInProtocols }
        self.protocols = schemas.map { ProtocolRuntime($0, limits: limits) }
        for p in self.protocols where !p.schema.udp { for port in p.schema.ports where byPort[port] == nil { byPort[port] = p } }
        for p in self.protocols where p.schema.udp { for port in p.schema.ports where byUDPPort[port] == nil { byUDPPort[port] = p } }
        anyPort = self.protocols.filter { $0.schema.anyPort }
        self.sink = sink
        layerStates = LayerRegistry.kinds.map { $0.managerState(self.protocols) }
    }

    public func isServerPort(_ port: UInt16) -> Bool { byPort[port] != nil }
    public func isUDPServerPort(_ port: UInt16) -> Bool { byUDPPort[port] != nil }
    /// Whether any protocol is carried by UDP (else no datagram is looked at).
    public var decodesUDP: Bool { !byUDPPort.isEmpty }

    /// The session this manager hung on the connection (it is the only one that sets `context`).
    @inline(__always)
    func session(_ c: Connection) -> Session? {
        guard let s = c.context else { return nil }
        return unsafeDowncast(s, to: Session.self)
    }

    public func opened(_ c: Connection, packet: PacketRef) {
        let p = c.udp ? byUDPPort[c.server.port] : byPort[c.server.port]
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
        if s.proto == nil && !s.undissected && s.lower == nil {
            detect(s, d, bytes, offset: offset)
            // Chosen now, on bytes kept from earlier chunks: those go first (this chunk is their tail).
            if s.proto != nil, !s.early[0].isEmpty || !s.early[1].isEmpty {
                let includesThisChunk = !s.early[d.rawValue].isEmpty
                replayEarly(s, c, current: includesThisChunk ? bytes.count : 0, packet: packet)
                if includesThisChunk { return }
            }
        }
        if let k = s.firstDataHook {
            s.firstDataHook = nil
            k.firstData(s, d, bytes, offset: offset, packet: packet)
        }
        switch d == .c2s ? s.paths.c2s : s.paths.s2c {
        case .deframer(let u):
            u._withUnsafeGuaranteedRef { feed($0, c, d, bytes, offset: offset, packet: packet) }
        // A layer that could end itself on this chunk (freeing itself while it reads) says no:
        // that rare path takes the retained one below.
        case .layer(let u, let kind) where kind.feedUnretained(u, c, d, bytes, offset: offset, packet: packet):
            return
        default:
            guard let f = s.layers[d.rawValue] else {
                // (A ClientHello after plaintext on a connection no dissector took: STARTTLS.)
                if d == .c2s, TLSLayer.startTLSUndissected(s, d, bytes, offset: offset), let g = s.layers[0] {
                    return feed(g, c, d, bytes, offset: offset, packet: packet)
                }
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
        // A layer's opening (the first bytes of its handshake), on any port.
        for k in LayerRegistry.kinds where k.detect(s, d, bytes, offset: offset) { return }
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
            s.attach(p, belowLower: true)
            return
        }
        // ... or the direction's first bytes, joined (a header that came in pieces).
        if s.early[h].count > bytes.count,
           let p = s.early[h].withUnsafeBytes({ kept in anyPort.first { $0.recognises(kept, d) } }) {
            s.attach(p, belowLower: true)
            return
        }
        // A try counts once the bytes kept could have held any of the headers.
        let longest = anyPort.flatMap { p in Direction.allCases.map { max(p.layout($0).maxHeaderSize, p.firstLayout($0)?.maxHeaderSize ?? 0) } }.max() ?? 0
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

    /// A connection a layer took on a guess (bytes that looked like its opening) and gives up.
    func detach(_ s: Session) {
        s.proto?.connections -= 1
        s.proto = nil
        s.layers = [nil, nil]
        s.frames = nil
        s.shared = nil
        s.undissected = true
        undissectedConnections += 1
    }

    public func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        guard let s = session(c) else { return }
        s.firstDataHook = nil
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
        var p = s.proto
        if let ws = s.shared as? WebSocketConnection, ws.detected, !ws.handshakeDone, ws.passedOver {
            // Taken because it looked like HTTP, and plain HTTP it stayed: no WebSocket
            // connection (the summary counts it as HTTP passed over).
            p?.connections -= 1
            p = nil
        }
        sink?.closed(c, p, reason: reason, packet: packet)
        s.end()
    }
}
