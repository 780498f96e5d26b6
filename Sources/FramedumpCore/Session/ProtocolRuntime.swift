/// A loaded protocol ready to run: its schema, compiled header layout and decoder, and
/// the counters the summary reports.
public final class ProtocolRuntime {
    public let schema: ProtocolSchema
    public let layout: FrameLayout
    /// The layer the protocol runs over, which builds its connections' stacks (nil: the
    /// TCP stream itself, cut by a deframer).
    let topLayer: (any LayerKind.Type)?
    /// What each registered layer keeps for this protocol (`LayerKind.protocolState`), by
    /// registry index: nil for the layers it does not run over.
    let layerStates: [AnyObject?]
    public let decoder: MessageDecoder
    /// How responses pair with requests (nil: the protocol says neither `pair` nor `pair_by`).
    let pairRules: PairRules?
    public let names: NameTable
    /// Per header field: whether NDJSON shows it (the id field and a length field that alone
    /// gives the frame length only repeat `id` and `length`).
    let jsonHeaderShown: [Bool]
    /// Per header field, its named bits; nil when no field has any (the printers' fast path).
    let headerBits: [[BitField]]?
    /// Per message, the field the tree's summary line shows after its name (-1: none); nil when
    /// no message has one (the printers' fast path).
    let infoFields: [Int32]?
    public let nameBytes: [UInt8]
    /// Messages decoded, per schema message index; the last slot counts unknown ids.
    @exclusivity(unchecked) public var messageCounts: [UInt64]
    @exclusivity(unchecked) public var bytes: UInt64 = 0
    @exclusivity(unchecked) public var malformed: UInt64 = 0
    @exclusivity(unchecked) public var malformedBytes: UInt64 = 0
    /// Frames the end of the capture (or `-c`) cut, and their bytes: not malformed.
    @exclusivity(unchecked) public var cutAtEnd: UInt64 = 0
    @exclusivity(unchecked) public var cutAtEndBytes: UInt64 = 0
    @exclusivity(unchecked) public var gaps: UInt64 = 0
    @exclusivity(unchecked) public var gapBytes: UInt64 = 0
    @exclusivity(unchecked) public var connections: UInt64 = 0
    @exclusivity(unchecked) public var warnings: UInt64 = 0
    /// `answers`: requests waiting for their reply (at the end: never answered), requests not
    /// waited for (a connection's table was full), replies whose request was not captured.
    @exclusivity(unchecked) public var repliesWaiting: Int64 = 0
    @exclusivity(unchecked) public var repliesDropped: UInt64 = 0
    @exclusivity(unchecked) public var repliesOrphaned: UInt64 = 0
    /// `pair`, `pair_by`: waiting requests forgotten when their connection had made 1,024
    /// newer ones; their responses, if any come, are unmatched.
    @exclusivity(unchecked) public var pairsForgotten: UInt64 = 0
    @exclusivity(unchecked) public var unknownIDs: [UInt64: UInt64] = [:]
    /// Bounds this protocol's traffic ran into (summed over protocols for the summary).
    @exclusivity(unchecked) public var limitHits = LimitHits()
    /// `--max-string`: string values are printed up to this many bytes.
    let maxString: Int
    /// `--max-frame`: a frame refused at this length hit the flag; one refused below it, the
    /// dissector's own `max_frame` (a malformed frame, not a limit of the run).
    let maxFrameFlag: Int
    let limits: Limits
    /// Strings of the message being printed that were cut (the printers add one warning).
    @exclusivity(unchecked) var stringsCutInMessage = 0

    func stringCut() {
        limitHits.stringCut += 1
        stringsCutInMessage += 1
    }

    /// The warning for the strings just cut, once per message (and the count starts over).
    func takeCutWarning() -> String? {
        guard stringsCutInMessage > 0 else { return nil }
        defer { stringsCutInMessage = 0 }
        return "\(stringsCutInMessage == 1 ? "a string" : "\(stringsCutInMessage) strings") longer than --max-string \(maxString) bytes shown cut"
    }

    public init(_ schema: ProtocolSchema, limits: Limits = Limits()) {
        self.schema = schema
        decoder = MessageDecoder(schema: schema, limits: limits)
        pairRules = PairRules(schema)
        layout = decoder.layout
        maxString = limits.maxString
        maxFrameFlag = limits.maxFrame
        self.limits = limits
        names = NameTable(schema)
        infoFields = schema.messages.contains { $0.infoField != nil } ? schema.messages.map { Int32($0.infoField ?? -1) } : nil
        var shown = schema.header.map { !$0.isPadding }
        // The id is the message's "id"; a field whose id is some of its bits carries more (flags).
        if let id = schema.idField, schema.idBits == nil { shown[id] = false }
        if let id2 = schema.idField2 { shown[id2] = false }
        if let l = schema.length, l.countsWholeFrame, l.terms.count == 1, let f = l.terms[0].field, !l.terms[0].negative {
            shown[f] = false
        }
        jsonHeaderShown = shown
        headerBits = schema.header.contains { !$0.bits.isEmpty } ? schema.header.map(\.bits) : nil
        nameBytes = schema.nameBytes
        messageCounts = [UInt64](repeating: 0, count: schema.messages.count + 1)
        topLayer = schema.overLayers.first.flatMap(LayerRegistry.kind(named:))
        layerStates = LayerRegistry.kinds.map { $0.protocolState(schema, limits: limits) }
    }

    /// One message counted: by its schema message, else as an unknown id (or as having none).
    @inline(__always)
    func count(_ message: Int?, id: UInt64?) {
        messageCounts[message ?? messageCounts.count - 1] += 1
        if message == nil, let id { unknownIDs[id, default: 0] += 1 }
    }

    /// The layout of direction `d`'s frames, and of its first frame when that has its own.
    @inline(__always) func layout(_ d: Direction) -> FrameLayout { decoder.layouts[d.rawValue] }
    @inline(__always) func firstLayout(_ d: Direction) -> FrameLayout? { decoder.firstLayouts[d.rawValue] }

    /// Whether a header at the start of `b` (a direction's first bytes) looks like this protocol
    /// (for any-port detection).
    func recognises(_ b: UnsafeRawBufferPointer, _ dir: Direction) -> Bool {
        // (A first frame that follows the other side's is not where a stream starts.)
        let layout = firstLayout(dir).flatMap { $0.after == nil ? $0 : nil } ?? layout(dir)
        guard case .ok = layout.check(b, at: 0) else { return false }
        if layout.namesMessage { return true }
        if schema.hasMessageIDs, let id = layout.messageID(b, at: 0) { return schema.message(dir, id) != nil }
        return true
    }

    /// Where the header alone says little (no constant, no id that selects a layout, no framing
    /// kind that marks ends), the deframer's resync takes a frame only if its body decodes
    /// without a warning (issue #39: resynchronising without a magic value). Nil elsewhere.
    /// (One per direction, made once: the deframers of a shard's connections share it, one at a
    /// time, so a connection costs nothing for it.)
    func plausibleBody(_ dir: Direction) -> ((UnsafeRawBufferPointer) -> Bool)? { bodyJudges[dir.rawValue] }

    private lazy var bodyJudges: [((UnsafeRawBufferPointer) -> Bool)?] = Direction.allCases.map { dir in
        guard knownID(dir) == nil, layout.end == nil, !layout(dir).fields.contains(where: { $0.constant != nil }),
              schema.body.kind.judgesFrames, schema.transforms.isEmpty else { return nil }
        let judge = FrameJudge(schema, dir, limits)
        return { judge.clean($0) }
    }

    func knownID(_ dir: Direction) -> ((UInt64) -> Bool)? {
        guard schema.hasMessageIDs, schema.body.kind.idsSelectLayout else { return nil }
        // A reply (`answers`) is a frame whose id names no message, and `= *` takes any id no
        // other message has: any id may be one.
        if schema.otherwise[dir] != nil { return nil }
        if schema.replies.contains(where: { schema.messages[$0].answers?.replyDirection == dir }) { return nil }
        let ids = schema.byID[dir] ?? [:]
        return { ids[$0] != nil }
    }
}

/// Decodes a candidate frame while the deframer hunts: whether it decodes cleanly. Its own
/// decoder, made on the first hunt (most connections never hunt).
final class FrameJudge {
    let schema: ProtocolSchema
    let dir: Direction
    let limits: Limits
    lazy var decoder = MessageDecoder(schema: schema, limits: limits)
    lazy var message = DecodedMessage()

    init(_ schema: ProtocolSchema, _ dir: Direction, _ limits: Limits) {
        self.schema = schema
        self.dir = dir
        self.limits = limits
        replies = schema.replies.filter { schema.messages[$0].answers?.replyDirection == dir }
    }

    /// The reply types (`answers`) of this direction: a frame whose id names no message is
    /// plausible when it decodes cleanly as one of them.
    let replies: [Int]

    func clean(_ frame: UnsafeRawBufferPointer) -> Bool {
        let p = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))
        let f = Frame(bytes: frame, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1)
        decoder.decode(f, dir, into: message)
        if message.warnings.isEmpty { return true }
        guard message.message == nil else { return false }
        for r in replies {
            decoder.decode(f, dir, into: message, as: r)
            if message.warnings.isEmpty { return true }
        }
        return false
    }
}
