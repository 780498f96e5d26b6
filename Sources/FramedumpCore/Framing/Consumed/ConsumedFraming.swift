/// `frame_length = message;`: no length field and no delimiter: a frame is its header and what
/// the message its id selects takes, field by field (fixed sizes, counts, prefixed and
/// NUL-ended strings, nested messages), as the old game protocols whose message size is fixed
/// by its type are cut, and Kaitai's or Spicy's units read on from where the last one ended.
/// While a field runs past the bytes held the deframer waits for more (up to `max_frame`).
enum ConsumedFraming: FramingKind {
    static let name = "frame_length = message"
    /// (Read by the parser's `frame_length`, not by a keyword of its own.)
    static let keywords: [String] = []
    static let setting = "message"

    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError) {}

    static func chosen(by s: ProtocolSchema) -> Bool { s.framingSettings[setting] != nil }

    static var perDirection: Bool { true }

    static func check(_ s: ProtocolSchema) -> String? {
        guard s.body == .fields else {
            return "frame_length = message reads the frame's end from its declared fields: the body must be 'fields', not \(s.body.rawValue)"
        }
        // (Frames are cut before they are decoded, so before the phase a message sets is known.)
        guard s.phases.isEmpty else {
            return "frame_length = message measures a frame before the connection's phase is known: it cannot be combined with phases yet"
        }
        guard s.transforms.isEmpty else {
            return "frame_length = message reads the frame's end from its fields as they come: bodies cannot be transformed"
        }
        // A field that takes the rest of the body would take every byte held.
        for m in s.messages {
            for f in m.fields {
                if f.array == .rest { return "'\(m.name).\(f.name)' takes the rest of the body, which frame_length = message has not: its frame would end only where the bytes held do" }
                switch f.type {
                case .string(.rest), .bytes(.rest):
                    return "'\(m.name).\(f.name)' takes the rest of the body, which frame_length = message has not: its frame would end only where the bytes held do"
                default: break
                }
            }
        }
        return nil
    }

    static func describe(_ s: ProtocolSchema) -> [String] {
        ["  frame_length = message (a frame is its header and what its message's fields take; max_frame \(s.maxFrame))"]
    }

    static func frameEnd(_ s: ProtocolSchema, _ dir: Direction?) -> any FrameEnd { MessageEnd(s, dir ?? .c2s) }
}

/// Measures the message at a frame's start with a decoder of its own (made on the first frame):
/// the frame ends where its last field does. A frame whose fields run past the bytes held is
/// measured again, from its start, as more arrive.
final class MessageEnd: FrameEnd {
    let schema: ProtocolSchema
    let dir: Direction
    lazy var decoder = MessageDecoder(schema: schema)
    lazy var scratch = DecodedMessage()

    init(_ s: ProtocolSchema, _ dir: Direction) {
        schema = s
        self.dir = dir
    }

    var trailerSize: Int { 0 }
    var marksBoundaries: Bool { false }

    /// The layout whose frames it measures (which owns it: unowned).
    unowned(unsafe) var layout: FrameLayout?
    func attach(_ layout: FrameLayout) { self.layout = layout }

    func check(_ b: UnsafeRawBufferPointer, at base: Int, from: Int, headerSize: Int, maxFrame: Int) -> FrameLayout.Check {
        let held = min(b.count - base, maxFrame)
        switch decoder.measure(UnsafeRawBufferPointer(rebasing: b[base..<(base + held)]), dir, layout: layout!, into: scratch) {
        case .length(let n): return .ok(frameLength: n)
        case .needMoreData: return b.count - base >= maxFrame ? .tooLong(Int64(maxFrame) + 1) : .needMoreData
        case .unknownMessage(let id): return .unknownSize(id: id)
        case .invalid(let at): return .badValue(at: at)
        }
    }

    func boundary(in b: UnsafeRawBufferPointer, from p: Int) -> Int? { nil }

    /// What the last measure that stopped for good found (for the report).
    var invalidText: String { decoder.invalid?.warning.text ?? "a field holds no value of its type" }
}
