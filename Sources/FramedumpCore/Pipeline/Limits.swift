/// Every bound on what untrusted input (packets, captures, dissector files) can make
/// framedump hold or do, in one place. Each has a command-line flag (`--max-…`), a default
/// documented in docs/capturing.md ("Limits"), and a summary line when a run hits it. The stages keep their own
/// option types (a stage knows nothing of the command line); `Pipeline` hands these on.
public struct Limits: Sendable, Equatable {
    /// `--max-frame`: the longest frame any protocol may announce; a dissector's `max_frame`
    /// above it is lowered to it. A longer frame is a malformed report, never allocated.
    public var maxFrame = 16 << 20
    /// `--max-ws-message`: the largest WebSocket message assembled or inflated.
    public var maxWebSocketMessage = 16 << 20
    /// `--max-inflate`: the largest body a dissector's transforms (zlib, gzip, deflate, LZ4,
    /// base64) may produce from one message; past it the body is reported and shown as it came.
    public var maxInflate = 16 << 20
    /// `--max-buffer`: out-of-order bytes held per direction before a hole becomes a gap.
    public var maxBufferPerStream = 4 << 20
    /// `--max-buffer-total`: out-of-order bytes held over every connection (each held segment
    /// also counts `ReassemblyOptions.segmentOverhead` bytes of bookkeeping).
    public var maxBufferTotal = 64 << 20
    /// `--max-connections`: connections tracked at once (least recently used evicted).
    public var maxConnections = 65_536
    /// `--max-ip-fragments`: bytes of IP fragments held while their datagrams are incomplete.
    public var maxFragmentBytes = 8 << 20
    /// `--max-depth`: nesting of messages, protobuf messages and groups, and JSON values.
    public var maxDepth = 64
    /// `--max-array`: elements of one array of a `fields` body.
    public var maxArray = 1 << 20
    /// `--max-string`: bytes of one string value printed; the rest is cut (tree and NDJSON).
    public var maxString = 1 << 20
    /// `--max-protocols`: protocols loaded from every dissector file together.
    public var maxProtocols = 256
    /// `--max-messages`: messages (and enums) loaded from every dissector file together.
    public var maxMessages = 65_536

    public init() {}

    /// The ranges the command line accepts: each ends where the bound would stop bounding
    /// (or a recursion would need more stack than a thread has).
    public static var ranges: [(flag: String, key: WritableKeyPath<Limits, Int>, range: ClosedRange<Int>)] { [
        ("--max-frame", \.maxFrame, 1...(1 << 30)),
        ("--max-ws-message", \.maxWebSocketMessage, 1...(1 << 30)),
        ("--max-inflate", \.maxInflate, 1...(1 << 30)),
        ("--max-buffer", \.maxBufferPerStream, 0...(1 << 34)),
        ("--max-buffer-total", \.maxBufferTotal, 0...(1 << 36)),
        ("--max-connections", \.maxConnections, 1...(1 << 24)),
        ("--max-ip-fragments", \.maxFragmentBytes, 0...(1 << 32)),
        ("--max-depth", \.maxDepth, 1...256),
        ("--max-array", \.maxArray, 0...(1 << 24)),
        ("--max-string", \.maxString, 1...(1 << 30)),
        ("--max-protocols", \.maxProtocols, 1...65_536),
        ("--max-messages", \.maxMessages, 1...(1 << 24)),
    ] }

    /// The first value out of its range, as a sentence for the user; nil when all are fine.
    public func problem() -> String? {
        for r in Self.ranges where !r.range.contains(self[keyPath: r.key]) {
            return "\(r.flag) must be between \(r.range.lowerBound) and \(r.range.upperBound)."
        }
        return nil
    }
}

/// How often a run hit each bound that decoding and output enforce (the reassembler and the
/// defragmenter count their own): per protocol, summed for the summary.
public struct LimitHits: Sendable, Equatable {
    /// Frames that announced more than the protocol's max_frame (malformed reports).
    public var frameTooLong: UInt64 = 0
    /// WebSocket messages larger than `--max-ws-message` (assembled or inflated).
    public var webSocketTooLarge: UInt64 = 0
    /// Bodies whose transforms would have produced more than `--max-inflate` bytes.
    public var inflateTooLarge: UInt64 = 0
    /// Messages whose nesting went past `--max-depth` (fields, protobuf or JSON).
    public var tooDeep: UInt64 = 0
    /// Messages with an array that announced more elements than `--max-array`.
    public var arrayTooLong: UInt64 = 0
    /// String values printed cut to `--max-string` bytes.
    public var stringCut: UInt64 = 0
    public init() {}

    public static func + (a: LimitHits, b: LimitHits) -> LimitHits {
        var s = a
        s.frameTooLong += b.frameTooLong
        s.webSocketTooLarge += b.webSocketTooLarge
        s.inflateTooLarge += b.inflateTooLarge
        s.tooDeep += b.tooDeep
        s.arrayTooLong += b.arrayTooLong
        s.stringCut += b.stringCut
        return s
    }

    /// Counts the bounds a decoded message's warnings say it met (the rare path).
    mutating func count(_ warnings: [DecodeWarning]) {
        var deep = false, array = false, inflate = false
        for w in warnings {
            switch w {
            case .nestingTooDeep, .jsonTooDeep, .protobufTooDeep: deep = true
            case .arrayOverLimit: array = true
            case .transformTooLarge: inflate = true
            default: break
            }
        }
        if deep { tooDeep += 1 }
        if array { arrayTooLong += 1 }
        if inflate { inflateTooLarge += 1 }
    }
}
