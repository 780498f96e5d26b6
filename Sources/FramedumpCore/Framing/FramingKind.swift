/// A way of finding where a frame ends other than a length its header states, as every shared
/// part sees it: the parser hands it its keywords, the resolver asks whether the protocol is
/// complete, `framedump dissectors` prints its lines, and the deframer asks its compiled
/// `FrameEnd` once per frame. A new kind is its folder here plus its line in `FramingRegistry`.
///
/// Length-prefixed headers (`frame_length = ...;`, `body_length = ...;`) are the built-in rule:
/// compiled into `FrameLayout`'s fast path, they take no indirect call per frame.
protocol FramingKind {
    /// Its name in `framedump dissectors` and in errors.
    static var name: String { get }
    /// The protocol settings it reads (the first one chooses it: `frame_end`).
    static var keywords: [String] { get }
    /// Reads setting `keyword` (its name already read; the statement's end is read after),
    /// keeping what it needs in the schema's `framingSettings`.
    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError)
    /// Whether protocol `s` is cut by this kind.
    static func chosen(by s: ProtocolSchema) -> Bool
    /// What is wrong with protocol `s` cut by this kind, if anything.
    static func check(_ s: ProtocolSchema) -> String?
    /// Its lines in `framedump dissectors`.
    static func describe(_ s: ProtocolSchema) -> [String]
    /// The compiled rule the deframer asks, for a protocol it cuts, for the frames of direction
    /// `dir` (nil: either; see `perDirection`).
    static func frameEnd(_ s: ProtocolSchema, _ dir: Direction?) -> any FrameEnd
    /// Whether its rule differs by direction (a message id means one message each way).
    static var perDirection: Bool { get }
}

extension FramingKind {
    static func check(_ s: ProtocolSchema) -> String? { nil }
    static var perDirection: Bool { false }
}

/// Where a frame that starts at `base` ends, for a kind other than a stated length. Called after
/// the header's fixed fields (and their constants) were checked.
protocol FrameEnd: AnyObject {
    /// The frame's length, `.needMoreData` while its end is not in `b`, `.tooLong` past
    /// `maxFrame`. `from` (at least `base + headerSize`) is where the search may resume:
    /// before it an earlier call on the same bytes found no end.
    func check(_ b: UnsafeRawBufferPointer, at base: Int, from: Int, headerSize: Int, maxFrame: Int) -> FrameLayout.Check
    /// The layout that asks it (once, when made): a kind that reads the header's fields keeps it.
    func attach(_ layout: FrameLayout)
    /// Bytes at the frame's end that are not its body (a delimiter), left out of decoding.
    var trailerSize: Int { get }
    /// After a gap or a bad frame: the first position in `b` from `p` on where a frame surely
    /// starts (just after a delimiter), nil when `b` holds none. A kind that cannot say uses
    /// the deframer's own search (a plausible frame followed by another).
    func boundary(in b: UnsafeRawBufferPointer, from p: Int) -> Int?
    /// Whether `boundary` can say (a delimiter marks ends); else the deframer looks for a
    /// plausible frame followed by another.
    var marksBoundaries: Bool { get }
    /// For a frame whose body is a line followed by a block the line announced (`payload`):
    /// where the block starts in `b`, the frame's body from `body` on; nil for a frame without one.
    func payloadStart(_ b: UnsafeRawBufferPointer, body: Int) -> Int?
}

extension FrameEnd {
    func payloadStart(_ b: UnsafeRawBufferPointer, body: Int) -> Int? { nil }
    var marksBoundaries: Bool { true }
    func attach(_ layout: FrameLayout) {}
}

/// Every framing kind besides the length rule, one line each.
enum FramingRegistry {
    // (Metatypes of stateless kinds, never written: safe to share.)
    nonisolated(unsafe) static let kinds: [any FramingKind.Type] = [
        CountedPayloadFraming.self,
        DelimitedFraming.self,
        ConsumedFraming.self,
    ]

    /// The kind that cuts protocol `s`, nil for the length rule.
    static func kind(of s: ProtocolSchema) -> (any FramingKind.Type)? {
        kinds.first { $0.chosen(by: s) }
    }
}
