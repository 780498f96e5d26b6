/// One connection's dissection: which protocol it speaks, and a deframer per direction.
final class Session {
    // Both outlive the session (the connection holds it; the manager holds every connection).
    unowned(unsafe) let manager: SessionManager
    unowned(unsafe) let connection: Connection
    var proto: ProtocolRuntime?
    var deframers: [Deframer?] = [nil, nil]
    /// Receives the deframers' frames once a protocol is chosen.
    var frames: SessionFrames?
    /// Set once detection has given up on this connection.
    var undissected = false
    /// Data chunks any-port detection has looked at so far.
    var detectTries = 0

    init(manager: SessionManager, connection: Connection, proto: ProtocolRuntime?) {
        self.manager = manager
        self.connection = connection
        if let proto { attach(proto) }
    }

    func attach(_ p: ProtocolRuntime) {
        proto = p
        p.connections += 1
        let f = SessionFrames(runtime: p, sink: manager.sink, decoded: manager.decoded, connection: connection)
        frames = f
        for d in Direction.allCases {
            deframers[d.rawValue] = Deframer(layout: p.layout, direction: d, consumer: f,
                                             startsAtBoundary: connection.startsAtSYN(d), knownID: p.knownID(d))
        }
    }

    /// Ends the dissection (the connection closed): also breaks the frames → connection link.
    func end() {
        deframers = [nil, nil]
        frames = nil
    }
}

/// Decodes a connection's frames and hands them to the sink. Everything it touches per
/// frame is a `let`, so the hot path takes no extra references.
final class SessionFrames: FrameConsumer {
    let runtime: ProtocolRuntime
    let decoder: MessageDecoder
    let sink: MessageSink?
    let decoded: DecodedMessage
    /// Held until the session ends (which drops this object), so never a lasting cycle.
    let connection: Connection

    init(runtime: ProtocolRuntime, sink: MessageSink?, decoded: DecodedMessage, connection: Connection) {
        self.runtime = runtime
        decoder = runtime.decoder
        self.sink = sink
        self.decoded = decoded
        self.connection = connection
    }

    func frame(_ f: Frame, _ dir: Direction) {
        let p = runtime
        p.bytes += UInt64(f.bytes.count)
        guard let sink else {
            // Summary only (-q): the header says which message it is; the body is not needed.
            let id = p.layout.messageID(f.bytes, at: 0)
            let mi = id.flatMap { decoder.program.message(dir, $0) }
            p.messageCounts[mi ?? p.messageCounts.count - 1] += 1
            if mi == nil, let id { p.unknownIDs[id, default: 0] += 1 }
            return
        }
        decoder.decode(f, dir, into: decoded)
        p.messageCounts[decoded.message ?? p.messageCounts.count - 1] += 1
        if decoded.message == nil, let id = decoded.id { p.unknownIDs[id, default: 0] += 1 }
        if !decoded.warnings.isEmpty { p.warnings += 1 }
        sink.message(decoded, connection, p)
    }

    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef) {
        runtime.malformed += 1
        runtime.malformedBytes += length
        sink?.malformed(connection, runtime, dir, offset: offset, length: length, reason: reason, packet: packet)
    }
}

/// Chooses a protocol for each connection and feeds its deframers: the stage between
/// reassembly and output.
public final class SessionManager: StreamConsumer {
    public let protocols: [ProtocolRuntime]
    var byPort: [UInt16: ProtocolRuntime] = [:]
    let anyPort: [ProtocolRuntime]
    public var sink: MessageSink?
    let decoded = DecodedMessage()
    public private(set) var undissectedConnections: UInt64 = 0
    public private(set) var undissectedBytes: UInt64 = 0

    public init(protocols: [ProtocolSchema], sink: MessageSink?) {
        self.protocols = protocols.map(ProtocolRuntime.init)
        for p in self.protocols { for port in p.schema.ports where byPort[port] == nil { byPort[port] = p } }
        anyPort = self.protocols.filter { $0.schema.anyPort }
        self.sink = sink
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
        guard let s = session(c) else { return }
        if s.proto == nil && !s.undissected { detect(s, d, bytes) }
        guard let f = s.deframers[d.rawValue] else {
            undissectedBytes += UInt64(bytes.count)
            return
        }
        // A direction's start is known only once it has begun (the SYN-ACK comes after the
        // connection opened).
        if !f.started { f.start(atBoundary: c.startsAtSYN(d) && offset == 0) }
        f.data(bytes, offset: offset, packet: packet)
    }

    /// Any-port protocols: the first one whose header fits the start of a data chunk takes the
    /// connection. The first chunks may be something else (a banner, a greeting, a handshake
    /// cut by the capture's start), so detection looks at several before giving up.
    func detect(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer) {
        for p in anyPort where p.recognises(bytes, d) {
            s.attach(p)
            return
        }
        s.detectTries += 1
        if s.detectTries >= Self.detectChunks || anyPort.isEmpty {
            s.undissected = true
            undissectedConnections += 1
        }
    }

    static let detectChunks = 8

    public func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        guard let s = session(c) else { return }
        if let p = s.proto {
            p.gaps += 1
            p.gapBytes += length
        }
        // The gap first, then what it did to the frame in progress.
        sink?.gap(c, s.proto, d, offset: offset, length: length, reason: reason, packet: packet)
        if let f = s.deframers[d.rawValue] {
            if !f.started { f.start(atBoundary: false) }
            f.gap(offset: offset, length: length, packet: packet)
        }
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        sink?.conflict(c, d, offset: offset, length: length, packet: packet)
    }

    public func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        guard let s = session(c) else { return }
        if s.proto == nil && !s.undissected && s.detectTries > 0 { undissectedConnections += 1 }
        for d in Direction.allCases { s.deframers[d.rawValue]?.finish(packet: packet) }
        sink?.closed(c, s.proto, reason: reason, packet: packet)
        s.end()
    }
}
