/// A UDP flow's KCP stack (`Session.stack`): the two directions' datagram readers below, the
/// conversations (by direction and conv) they feed, and the RTT samples from ACKs.
final class KCPConnection {
    let frames: SessionFrames
    let state: KCPProtocolState
    let manager: KCPManagerState
    let stream: Bool
    /// The bottom layers, one per direction (the session's `layers`).
    @exclusivity(unchecked) private(set) var streams: [KCPStream] = []
    /// Each direction's conversations by conv (few: usually one).
    @exclusivity(unchecked) var conversations: [[UInt32: KCPConversation]] = [[:], [:]]
    /// The conversation of the last segment, each direction (the common case: always the same).
    @exclusivity(unchecked) var last: [KCPConversation?] = [nil, nil]
    @exclusivity(unchecked) var statsByConv: [UInt32: KCPConversationStats] = [:]

    static let maxConversations = 256

    init(frames: SessionFrames, state: KCPProtocolState, manager: KCPManagerState, stream: Bool) {
        self.frames = frames
        self.state = state
        self.manager = manager
        self.stream = stream
        streams = Direction.allCases.map { KCPStream(connection: self, dir: $0) }
    }

    @inline(__always)
    func conversation(_ d: Direction, _ conv: UInt32, _ packet: PacketRef) -> KCPConversation? {
        if let c = last[d.rawValue], c.conv == conv { return c }
        if let c = conversations[d.rawValue][conv] {
            last[d.rawValue] = c
            return c
        }
        guard conversations[d.rawValue].count < Self.maxConversations else {
            state.conversationLimit += 1
            return nil
        }
        let stats = statsByConv[conv] ?? {
            let s = manager.row(frames.connection, conv, frames.runtime, packet: packet.number)
            statsByConv[conv] = s
            state.conversations += 1
            return s
        }()
        let c = KCPConversation(connection: self, dir: d, conv: conv, stats: stats)
        conversations[d.rawValue][conv] = c
        last[d.rawValue] = c
        return c
    }

    /// One segment of direction `d`.
    @inline(__always)
    func segment(_ d: Direction, _ s: KCPSegment, _ data: UnsafeRawBufferPointer, _ packet: PacketRef) {
        state.segments += 1
        guard let c = conversation(d, s.conv, packet) else { return }
        switch s.cmd {
        case .push:
            c.stats.sent(d, sn: s.sn, ts: s.ts, at: packet.ts)
            c.push(s, data, packet)
        case .ack:
            state.acks += 1
            c.stats.acked(d, sn: s.sn, ts: s.ts, at: packet.ts)
        case .windowProbe, .windowSize:
            state.windowSegments += 1
        }
        // Every segment says how far its sender received the other direction.
        if let other = conversation(d.opposite, s.conv, packet) { other.acknowledged(s.una, packet) }
    }

    func finish(_ d: Direction, _ packet: PacketRef, captureEnded: Bool) {
        for c in conversations[d.rawValue].values.sorted(by: { $0.conv < $1.conv }) { c.finish(packet, captureEnded: captureEnded) }
    }
}

/// One direction of a KCP flow: each datagram read as KCP segments, back to back.
final class KCPStream: StreamLayer {
    unowned(unsafe) let connection: KCPConnection
    let dir: Direction
    @exclusivity(unchecked) private(set) var started = false

    init(connection: KCPConnection, dir: Direction) {
        self.connection = connection
        self.dir = dir
    }

    func start(atBoundary: Bool) { started = true }

    func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        started = true
        var i = 0
        while i < bytes.count {
            switch KCPSegment.read(bytes, at: i) {
            case .segment(let s):
                connection.segment(dir, s, bytes.slice(i + KCPSegment.headerSize, s.length), packet)
                i += KCPSegment.headerSize + s.length
            case .problem(let p):
                // The rest of the datagram is not KCP: reported, and the next datagram is read afresh.
                connection.state.malformedDatagrams += 1
                let (kind, text) = KCPSegment.problemText(p)
                connection.frames.malformed(dir, offset: offset + UInt64(i), length: UInt64(bytes.count - i),
                                            reason: .layer(LayerProblem(layer: KCPLayer.name, kind: kind, text: text)),
                                            packet: packet,
                                            bytes: UnsafeRawBufferPointer(rebasing: bytes[i..<min(bytes.count, i + MalformedSample.limit)]))
                return
            }
        }
    }

    /// The snaplen cut a datagram: the segment it cut was reported as running past it.
    func gap(offset: UInt64, length: UInt64, packet: PacketRef) {}

    func finish(packet: PacketRef, captureEnded: Bool) {
        connection.finish(dir, packet, captureEnded: captureEnded)
    }
}
