/// `framedump guess`: from a capture's reassembled streams, per server port, the framing, the
/// header fields and the body kinds of an unknown protocol.
///
/// sample streams (`StreamSampling`) → length field (`FramingSearch`) or, failing that, a
/// WebSocket handshake or a delimiter (`NonLengthFraming`) → header fields (`HeaderInference`)
/// → body kinds per message id (`BodyClassifier`) → `DissectorWriter` and `GuessReport`.
public enum Guesser {
    public static func run(capture: String, port: UInt16?, limits: GuessLimits = GuessLimits(),
                           search: FramingSearch = FramingSearch()) throws(CaptureError) -> GuessResult {
        let sample = try StreamSampling.read(capture: capture, port: port, limits: limits)
        var byPort: [UInt16: [SampledStream]] = [:]
        for s in sample.streams { byPort[s.serverPort, default: []].append(s) }
        let ports = byPort.keys.sorted().map { p in guess(port: p, streams: byPort[p]!, search: search) }
        return GuessResult(capture: capture, port: port, packets: sample.packets, payloadBytes: sample.payloadBytes,
                           stoppedEarly: sample.stoppedEarly, ports: ports)
    }

    /// Everything about one server port's streams.
    public static func guess(port: UInt16, streams: [SampledStream], search: FramingSearch = FramingSearch()) -> PortGuess {
        var g = PortGuess(port: port, streams: streams.map { StreamSummary(connection: $0.connection, direction: $0.direction,
                                                                             bytes: $0.byteCount, pieces: $0.pieces.count) })
        if NonLengthFraming.isWebSocketHandshake(streams) {
            g.framing = .webSocket
            return g
        }
        // Text lines before any length field: in text, some byte's value plus a constant can
        // be made to walk from line to line, and a long repeated value explains "100%".
        let delimited = NonLengthFraming.delimiter(streams)
        if let d = delimited, NonLengthFraming.isTextLines(d) {
            g.framing = .delimiter(d)
            g.textFirst = true
            // A record (a line with its counted block) is at most a stream's sampled bytes.
            g.maxFrameSeen = streams.map(\.byteCount).max() ?? 0
            return g
        }
        let result = search.run(streams)
        g.search = result
        guard result.accepted, let best = result.best else {
            g.framing = delimited.map { .delimiter($0) } ?? .none
            return g
        }
        g.framing = .length(best.candidate)
        let frames = search.frames(best.candidate, streams)
        // The header from about 600 frames, the first of each stream: over thousands, a byte
        // with 256 values (a timestamp's, a sequence number's low byte) splits the frames into
        // buckets small enough to seem to tell their length, and outscores the id.
        let perStream = max(4, 600 / max(1, frames.count))
        let header = HeaderInference(framing: best.candidate, streams: streams, frames: frames.map { Array($0.prefix(perStream)) }).run()
        g.header = header
        var bodies: [(id: UInt64?, body: ArraySlice<UInt8>)] = []
        for (s, list) in frames.enumerated() {
            for f in list.prefix(2000) {
                let b = streams[s].pieces[f.piece].bytes
                let frame = b[f.start..<(f.start + f.length)]
                var id: UInt64?
                // (The header was read from the first frames of each stream; a later frame may be
                // shorter than its fields: no id, and no header to drop.)
                if let field = header.id, field.offset + field.width <= f.length {
                    var v: UInt64 = 0
                    for k in 0..<field.width {
                        v = v << 8 | UInt64(frame[f.start + field.offset + (field.order == .big ? k : field.width - 1 - k)])
                    }
                    id = v
                }
                bodies.append((id, frame.dropFirst(header.size)))
            }
        }
        g.bodies = BodyClassifier.classify(bodies, order: best.candidate.order)
        g.maxFrameSeen = best.maxFrame
        return g
    }
}

public struct StreamSummary: Sendable {
    public var connection: String
    public var direction: Direction
    public var bytes: Int
    public var pieces: Int
}

public enum GuessedFraming: Sendable {
    case none
    case length(LengthCandidate)
    case webSocket
    case delimiter(DelimiterGuess)
}

public struct PortGuess: Sendable {
    public var port: UInt16
    public var streams: [StreamSummary]
    public var framing: GuessedFraming = .none
    /// The streams read as text lines, so no length field was looked for.
    public var textFirst = false
    public var search: FramingSearch.Result?
    public var header: HeaderLayout?
    public var bodies: [BodyGuess] = []
    public var maxFrameSeen = 0

    /// Whether the dissector language can say this framing (a length, varint or not; a
    /// delimiter; a WebSocket).
    public var writable: Bool {
        switch framing {
        case .length, .webSocket, .delimiter: return true
        case .none: return false
        }
    }
}

public struct GuessResult: Sendable {
    public var capture: String
    public var port: UInt16?
    public var packets: UInt64
    public var payloadBytes: UInt64
    public var stoppedEarly: Bool
    public var ports: [PortGuess]

    package init(capture: String, port: UInt16?, packets: UInt64, payloadBytes: UInt64, stoppedEarly: Bool, ports: [PortGuess]) {
        self.capture = capture
        self.port = port
        self.packets = packets
        self.payloadBytes = payloadBytes
        self.stoppedEarly = stoppedEarly
        self.ports = ports
    }

    /// Nothing to write: no payload, no port, or no port whose framing could be written.
    public var producedDissector: Bool { ports.contains { $0.writable } }
}
