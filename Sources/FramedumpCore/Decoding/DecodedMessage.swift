/// The decoded-tree model both outputs render: a flat, depth-annotated list of fields
/// (no allocation per field), each with the byte range it was read from.

public enum FieldName: Sendable, Equatable {
    /// A field of a message: (message index, field index) in the protocol schema.
    case field(Int32, Int32)
    /// A header field of the framing layer.
    case header(Int32)
    /// An element of an array.
    case element(Int32)
    /// A JSON object key: its raw bytes in the frame (between the quotes).
    case key(Int32, Int32)
    /// A name of the decoder's own: "body", "text", ...
    case builtin(BuiltinName)
    /// A protobuf field the schema does not know (or any field, schema-less): number and wire type.
    case unknown(number: Int32, wire: UInt8)
    /// A protobuf map entry, named by its key: a string key (its bytes), or an integer or bool key.
    case stringKey(Int32, Int32)
    case intKey(Int64)
    case uintKey(UInt64)
    case boolKey(Bool)
    /// A map key that is text, by its bytes in the frame (no escapes: MessagePack's).
    case textKey(Int32, Int32)
}

/// The decoder's own field names (a byte each, so a decoded field stays small).
public enum BuiltinName: UInt8, Sendable, CaseIterable {
    case body, text, trailing, json, undecoded, code, reason, payload

    static var allNames: [BuiltinName] { allCases }

    public var text: StaticString {
        switch self {
        case .body: return "body"
        case .text: return "text"
        case .trailing: return "trailing"
        case .json: return "json"
        case .undecoded: return "undecoded"
        case .code: return "code"
        case .reason: return "reason"
        case .payload: return "payload"
        }
    }
}

public enum FieldValue: Sendable, Equatable {
    case unsigned(UInt64)
    case signed(Int64)
    case float(Double)
    case bool(Bool)
    /// Text bytes in the frame (shown as a string; invalid UTF-8 is escaped).
    case string
    /// Text bytes the decoder has checked and found valid UTF-8 (shown without checking again).
    case validString
    /// Opaque bytes in the frame.
    case bytes
    /// A nested message or JSON object; `count` direct children follow at depth + 1.
    case object(count: Int32)
    /// An array; `count` elements follow at depth + 1.
    case array(count: Int32)
    /// A JSON number, string (raw, escapes kept) or literal, by its bytes in the frame.
    case jsonNumber, jsonString, jsonLiteral
    /// No value (MessagePack's nil).
    case null
    /// MessagePack extension data of this type, by its bytes in the frame (type -1, a
    /// timestamp, is shown as a date).
    case ext(Int8)
}

public struct DecodedField: Sendable {
    public var name: FieldName
    public var value: FieldValue
    /// Byte range within the frame.
    public var offset: Int32
    public var width: Int32
    public var depth: Int16
}

public enum DecodeWarning: Sendable, Equatable {
    /// (With how the id is written: a signed id field's, a pair's.)
    case unknownMessage(UInt64, signed: Bool = false, pair: Bool = false)
    /// A frame no id names, coming the way replies come, while no request waits for it
    /// (`answers`): a capture that started after the request, or a request not decoded.
    case replyWithoutRequest
    case bodyTooShort(field: String, at: Int)
    /// A field whose bytes are no value of its type, whatever may follow them (`is no decimal number`).
    case badValue(field: String, at: Int, why: String)
    /// The frame was cut (snap length, gap): its fields as far as they were captured.
    case frameCut(have: Int, need: Int)
    case trailingBytes(Int, at: Int)
    case arrayTooLong(field: String, count: UInt64)
    /// More elements than `--max-array` allows (the frame could have held them).
    case arrayOverLimit(field: String, count: UInt64, limit: Int)
    case nestingTooDeep(limit: Int)
    /// Protobuf messages or groups nested past `--max-depth` (the text says where).
    case protobufTooDeep(String)
    case invalidJSON(at: Int)
    case jsonTooDeep(limit: Int)
    case jsonLoneSurrogate(at: Int)
    case invalidUTF8(field: String)
    /// A layer of the stack's own finding about the message (`websocket: ...`).
    case layer(LayerProblem)
    /// A protobuf body problem (malformed wire data, wire type mismatch), with its offset in the text.
    case protobuf(String)
    /// A registered body kind's own finding (by its place in `BodyRegistry`): its `check -r`
    /// class is the kind's `problemClass`.
    case body(kind: UInt8, text: String)
    /// A body a transform step could not undo (bad key, broken zlib stream, bomb): shown raw.
    case transform(String)
    /// A transform would have produced more than `--max-inflate` bytes: shown raw.
    case transformTooLarge(String)

    public var text: String {
        switch self {
        case .unknownMessage(let id, let signed, let pair): return "unknown message id \(IDText.of(id, signed: signed, pair: pair)): body shown raw"
        case .replyWithoutRequest: return "a reply whose request was not captured (no request waits for its key): body shown raw"
        case .bodyTooShort(let f, let at): return "body ends inside field '\(f)' at byte \(at)"
        case .badValue(let f, let at, let why): return "field '\(f)' at byte \(at) \(why)"
        case .frameCut(let have, let need): return "frame cut: \(have) of its \(need) bytes were captured; the fields after them are not shown"
        case .trailingBytes(let n, let at): return "\(n) trailing bytes at byte \(at) not described by the schema"
        case .arrayTooLong(let f, let c): return "array '\(f)' announces \(c) elements, more than the frame can hold"
        case .arrayOverLimit(let f, let c, let l): return "array '\(f)' announces \(c) elements, more than --max-array \(l): the rest shown raw"
        case .nestingTooDeep(let l): return "messages nested deeper than \(l) levels (--max-depth)"
        case .protobufTooDeep(let t): return t
        case .invalidJSON(let at): return "body is not valid JSON (at byte \(at)): shown as text"
        case .jsonTooDeep(let l): return "JSON body nested deeper than \(l) levels (--max-depth): shown as text"
        case .jsonLoneSurrogate(let at): return "JSON string with a lone surrogate escape (not Unicode text) at byte \(at): shown as text"
        case .invalidUTF8(let f): return "field '\(f)' is not valid UTF-8"
        case .layer(let l): return l.layer + ": " + l.text
        case .protobuf(let t): return t
        case .body(_, let t): return t
        case .transform(let t), .transformTooLarge(let t): return t
        }
    }
}

/// One decoded message, reused from frame to frame by its session (no allocation per message).
public final class DecodedMessage {
    @exclusivity(unchecked) public var frame: Frame!
    @exclusivity(unchecked) public var direction: Direction = .c2s
    @exclusivity(unchecked) public var id: UInt64?
    /// The id was read from a signed field: `id` is its bit pattern (ZooKeeper's xid -1).
    @exclusivity(unchecked) public var idSigned = false
    /// The id is a pair of id fields' values (`3:7`).
    @exclusivity(unchecked) public var idPair = false
    /// Under connection phases: the phase the message was decoded in, and what it changed.
    @exclusivity(unchecked) public var phase = PhaseMark.none
    /// Its number among its connection's messages (from 1), and its part in pairing.
    @exclusivity(unchecked) public var number: UInt64 = 0
    @exclusivity(unchecked) public var pair = PairMark()
    /// The id as it is written: negative for a signed id field's negative values, `3:7` for a pair.
    public var idText: String? { id.map { IDText.of($0, signed: idSigned, pair: idPair) } }
    /// Index into the schema's messages, nil when the id is unknown.
    @exclusivity(unchecked) public var message: Int?
    public let headerFields = FieldList(capacity: 8)
    public let fields = FieldList(capacity: 32)
    @exclusivity(unchecked) public var warnings: [DecodeWarning] = []
    @exclusivity(unchecked) public var bodyOffset = 0
    /// What the layers it came through say about it (none on plain TCP). Set by the layers,
    /// kept apart from `reset()` so decoding does not touch it.
    @exclusivity(unchecked) public var layerNotes = LayerNotes()
    /// What a layer below the protocol says about the whole connection (TLS: version, suite,
    /// SNI), the same object for each of its messages; nil on plain TCP.
    @exclusivity(unchecked) public var connectionLayer: (any ConnectionLayerInfo)?
    /// For a body the protocol's transforms changed (decrypted, inflated, un-XORed): the frame's
    /// header followed by the final body (owned by the decoder, valid until it decodes the next
    /// frame). Body field offsets refer to these bytes.
    @exclusivity(unchecked) public var transformed: UnsafeRawBufferPointer?
    /// The transform steps that ran, in order, with the body's size before and after each.
    @exclusivity(unchecked) public var transforms: [TransformStep] = []

    /// The bytes field offsets refer to: the transformed frame when there is one, else the frame.
    public var fieldBytes: UnsafeRawBufferPointer { transformed ?? frame.bytes }

    public init() {}

    func reset() {
        headerFields.removeAll()
        fields.removeAll()
        if !warnings.isEmpty { warnings.removeAll(keepingCapacity: true) }
        message = nil
        id = nil
        idSigned = false
        idPair = false
        phase = .none
        pair.role = .none
        transformed = nil
        if !transforms.isEmpty { transforms.removeAll(keepingCapacity: true) }
    }
}

extension DecodedMessage {
    /// The message's name: its schema message, else what the layer that shows it itself calls
    /// it (a control frame's opcode); nil for an unknown id.
    package func name(in p: ProtocolRuntime) -> String? {
        message.map { p.schema.messages[$0].name } ?? layerNotes.first.map { String(describing: $0.kind.messageName($0)) }
    }
}

/// A message's connection phase (`phase` in the dissector): the one it was decoded in, the one
/// it leads to (`phase A -> B after M;`), and whether the phase was assumed (the capture began
/// after the connection's start, so this is its first message the run saw).
public struct PhaseMark: Sendable, Equatable {
    /// -1: the protocol has no phases.
    public var current: Int32
    /// -1: the phase stays.
    public var next: Int32
    public var assumed: Bool
    public static let none = PhaseMark(current: -1, next: -1, assumed: false)
}

extension DecodedMessage {
    /// Header field `h` as decoded (nil: not in this message's header).
    func header(_ h: Int) -> DecodedField? {
        for f in headerFields { if case .header(let i) = f.name, Int(i) == h { return f } }
        return nil
    }

    /// Top-level field `fi` of this message's type as decoded (nil: another type, or not
    /// decoded: a condition left it out, or the body ended first).
    func topLevel(_ fi: Int) -> DecodedField? {
        guard let mi = message else { return nil }
        for f in fields where f.depth == 0 {
            if case .field(let a, let b) = f.name, Int(a) == mi, Int(b) == fi { return f }
        }
        return nil
    }
}
