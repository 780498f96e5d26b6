/// What the guesser reads: the first bytes of each direction of each connection, as the
/// reassembler delivers them, cut into pieces at gaps.
///
/// The caps keep memory flat whatever the capture (`GuessLimits`): a direction keeps at most
/// `bytesPerStream`, a server port at most `connectionsPerPort` connections, the run at most
/// `ports` ports and `totalBytes` bytes; reading stops once the total is full.
public struct GuessLimits: Sendable {
    public var bytesPerStream = 64 << 10
    public var connectionsPerPort = 64
    public var ports = 32
    public var totalBytes = 8 << 20
    public init() {}
}

/// A run of bytes with nothing missing inside it.
public struct SampledPiece: Sendable {
    public var bytes: [UInt8]
    /// The first byte starts a message: the stream began at a SYN and nothing was lost before.
    /// Otherwise the guesser must find where messages start (resynchronise).
    public var startsAtBoundary: Bool
    /// The bytes stop short of the stream's end (a gap, the sample cap): the last message may
    /// run past them.
    public var endsCut: Bool

    package init(bytes: [UInt8], startsAtBoundary: Bool, endsCut: Bool) {
        self.bytes = bytes
        self.startsAtBoundary = startsAtBoundary
        self.endsCut = endsCut
    }
}

/// One direction of one connection.
public struct SampledStream: Sendable {
    public var connection: String
    public var serverPort: UInt16
    public var direction: Direction
    public var pieces: [SampledPiece]
    public var byteCount: Int { pieces.reduce(0) { $0 + $1.bytes.count } }

    package init(connection: String, serverPort: UInt16, direction: Direction, pieces: [SampledPiece]) {
        self.connection = connection
        self.serverPort = serverPort
        self.direction = direction
        self.pieces = pieces
    }
}

/// Collects `SampledStream`s from the reassembler's events (the same reassembler every other
/// command uses: nothing is reassembled twice).
final class StreamSampler: StreamConsumer {
    let limits: GuessLimits
    /// Only this port's connections, when `-p` names one.
    let onlyPort: UInt16?
    private(set) var streams: [SampledStream] = []
    private var index: [ObjectIdentifier: (c2s: Int, s2c: Int)] = [:]
    private var connectionsPerPort: [UInt16: Int] = [:]
    private(set) var total = 0
    /// TCP payload bytes seen at all (sampled or not), to tell "no payload" from "not sampled".
    private(set) var payloadSeen: UInt64 = 0

    init(limits: GuessLimits, onlyPort: UInt16?) {
        self.limits = limits
        self.onlyPort = onlyPort
    }

    var full: Bool { total >= limits.totalBytes }

    func opened(_ c: Connection, packet: PacketRef) {
        let port = c.server.port
        if c.udp { return }
        if let onlyPort, port != onlyPort, c.client.port != onlyPort { return }
        // With -p the port named is the server's, whatever role the reassembler guessed.
        let server = onlyPort ?? port
        let count = connectionsPerPort[server] ?? 0
        guard count < limits.connectionsPerPort,
              count > 0 || connectionsPerPort.count < limits.ports else { return }
        connectionsPerPort[server] = count + 1
        var swapped = false
        if let onlyPort, c.server.port != onlyPort { swapped = true }
        let name = c.name
        let first = streams.count
        for d in Direction.allCases {
            streams.append(SampledStream(connection: name, serverPort: server,
                                         direction: swapped ? d.opposite : d, pieces: []))
        }
        index[ObjectIdentifier(c)] = swapped ? (first + 1, first) : (first, first + 1)
    }

    private func slot(_ c: Connection, _ d: Direction) -> Int? {
        guard let e = index[ObjectIdentifier(c)] else { return nil }
        return d == .c2s ? e.c2s : e.s2c
    }

    func data(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        payloadSeen &+= UInt64(bytes.count)
        guard let i = slot(c, d) else { return }
        let have = streams[i].byteCount
        guard have < limits.bytesPerStream, total < limits.totalBytes else {
            if var last = streams[i].pieces.last, !last.endsCut {
                last.endsCut = true
                streams[i].pieces[streams[i].pieces.count - 1] = last
            }
            return
        }
        if streams[i].pieces.isEmpty || streams[i].pieces[streams[i].pieces.count - 1].endsCut {
            // A new piece: at a message boundary only when the stream began at a SYN.
            let boundary = offset == 0 && c.startsAtSYN(d)
            streams[i].pieces.append(SampledPiece(bytes: [], startsAtBoundary: boundary, endsCut: false))
        }
        let take = min(bytes.count, limits.bytesPerStream - have, limits.totalBytes - total)
        let p = streams[i].pieces.count - 1
        streams[i].pieces[p].bytes.append(contentsOf: bytes.prefix(take))
        total += take
        if take < bytes.count { streams[i].pieces[p].endsCut = true }
    }

    func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        guard let i = slot(c, d), let p = streams[i].pieces.indices.last else { return }
        // What follows a gap starts anywhere: the next data opens a piece without a boundary.
        streams[i].pieces[p].endsCut = true
    }

    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        index[ObjectIdentifier(c)] = nil
    }
}

/// Reads a capture through the shared capture, link and reassembly stages into samples.
public enum StreamSampling {
    public struct Result: Sendable {
        public var streams: [SampledStream]
        public var packets: UInt64
        public var payloadBytes: UInt64
        /// Reading stopped before the end because the sample was full.
        public var stoppedEarly: Bool
    }

    public static func read(capture path: String, port: UInt16?, limits: GuessLimits = GuessLimits()) throws(CaptureError) -> Result {
        let source = try PacketSource(.file(path))
        let sampler = StreamSampler(limits: limits, onlyPort: port)
        var options = ReassemblyOptions()
        options.maxConnections = 16_384
        let reassembler = Reassembler(options: options, consumer: sampler, isServerPort: { $0 == port })
        let sourceLink = LinkDecoder(linkType: source.linkType)
        var packets: UInt64 = 0
        var stopped = false
        try source.forEach(limit: nil) { p in
            packets += 1
            let link = p.linkType < 0 || p.linkType == sourceLink.linkType ? sourceLink : LinkDecoder(linkType: p.linkType)
            if case .tcp(let s) = link.decode(p.data) { reassembler.add(s, packet: p.ref) }
            if sampler.full {
                stopped = true
                return false
            }
            return true
        }
        reassembler.finish()
        // Pieces still open at the end were not cut: the stream ended there (or the capture did).
        var streams = sampler.streams.filter { !$0.pieces.isEmpty }
        if stopped {
            // The streams went on past the sample: their last message may be cut.
            for i in streams.indices { streams[i].pieces[streams[i].pieces.count - 1].endsCut = true }
        }
        return Result(streams: streams, packets: packets, payloadBytes: sampler.payloadSeen, stoppedEarly: stopped)
    }
}
