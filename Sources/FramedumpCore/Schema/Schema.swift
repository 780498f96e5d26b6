/// What a dissector file describes, after parsing: one protocol's framing and messages.

public enum ByteOrder: Sendable { case big, little }

/// How a string's length is known.
public enum StringRule: Sendable, Equatable {
    /// `[u8|u16|u32 length][bytes]`: in the protocol's byte order, or the one given
    /// (`String(u16le)`).
    case prefixed(width: Int, order: ByteOrder? = nil)
    /// Bytes up to a NUL (consumed, not shown).
    case nulTerminated
    /// Everything left in the frame.
    case rest
    /// A fixed number of bytes (trailing NULs trimmed).
    case fixed(Int)
    /// `[varint length][bytes]` (`String(varint)`, protobuf's and MQTT 5's strings).
    case varint
    /// Bytes up to a byte string, which ends the value and is no part of it (`String(crlf)`,
    /// `String("\r\n")`: a text protocol's line inside a message).
    case delimited([UInt8])
    /// As many bytes as a field says: an earlier field of the message or a header field
    /// (`String(key_length) key;`, `Bytes(extras_length) extras;`).
    case sizedBy(field: Int, inHeader: Bool)
}

/// How many elements an array has.
public enum ArrayCount: Sendable, Equatable {
    case fixed(Int)
    /// A count prefix of this width before the elements: in the protocol's byte order, or the
    /// one given (`Item[u16le] items`).
    case prefixed(width: Int, order: ByteOrder? = nil)
    /// The value of an earlier field of the same message (its index there).
    case field(Int)
    /// A varint count before the elements (`Item[varint] items`).
    case varint
    /// As many elements as the rest of the body holds (`Item[rest] items`).
    case rest
    /// The value of a header field (`Item[count] items` with `count` in the header).
    case headerField(Int)
    /// `Field[until type == 0] fields`: elements (messages) up to and including the first whose
    /// field (`test.field` indexes the element message's fields) passes the test, as Thrift's
    /// struct fields end with a STOP field.
    case until(TransformCondition)
}

public indirect enum FieldType: Sendable {
    case unsigned(width: Int, order: ByteOrder)
    case signed(width: Int, order: ByteOrder)
    /// `Varint`, `Svarint` (zigzag, signed), at most `maxBytes` bytes (`Varint32`: 5).
    case varint(signed: Bool, maxBytes: Int)
    case float32(ByteOrder)
    case float64(ByteOrder)
    case bool
    case string(StringRule)
    case bytes(StringRule)
    /// A nested message, by its index in `ProtocolSchema.messages`.
    case message(Int)
    /// An enum: an integer of the given type, shown with the enum's labels.
    case enumeration(Int, base: FieldTypeBase)
    /// `Decimal(crlf)`: an integer written in ASCII digits (a leading `-` allowed) up to a byte
    /// string (RESP's `*3\r\n`, a text header's byte count): a signed value.
    case decimal(delimiter: [UInt8])

    /// Bytes this type always takes, or nil when it depends on the data.
    var fixedWidth: Int? {
        switch self {
        case .unsigned(let w, _), .signed(let w, _): return w
        case .float32: return 4
        case .float64: return 8
        case .bool: return 1
        case .enumeration(_, let b): return b.width
        default: return nil
        }
    }
}

/// A message id as it is written: `-1` for a signed id field's bit pattern, `3:7` for a pair of
/// id fields (`message_id = cmd, sub;`, kept as `cmd << 32 | sub`).
public enum IDText {
    public static func of(_ id: UInt64, signed: Bool, pair: Bool) -> String {
        if pair { return "\(id >> 32):\(id & 0xffff_ffff)" }
        return signed ? String(Int64(bitPattern: id)) : String(id)
    }
}

/// The integer underneath an enum.
public struct FieldTypeBase: Sendable {
    public var width: Int
    public var signed: Bool
    public var order: ByteOrder
}

public struct FieldDef: Sendable {
    public var name: String
    public var type: FieldType
    public var array: ArrayCount?
    public var tag: Int?
    /// The trailing `// comment` of the field's line.
    public var description: String?
    /// Value labels: from an enum, or parsed from the comment when the protocol opts in.
    public var labels: [Int64: String]?
    /// The name's bytes, ready for output.
    public var nameBytes: [UInt8]
    /// The NDJSON key when it differs from the name (protobuf's lowerCamelCase json_name).
    public var jsonNameBytes: [UInt8]? = nil
    /// NDJSON writes the value's label rather than its number (protobuf enums).
    public var jsonEnumNames = false
    /// `[hex]`: the value is shown in hex (`magic: 0xbeef`; NDJSON `"0xbeef"`).
    public var hex = false
    /// `when TEST`: the field is on the wire only when the test holds (else it is left out).
    public var condition: FieldCondition? = nil
    /// `[text]` on bytes: shown as a string when they are UTF-8 text (Thrift's string-or-binary).
    public var text = false
}

/// `Uint16 packet_id when fixed.qos;`: a test of a header field (or bit group), or of an
/// earlier integer field of the same message, that says whether a field is there.
public struct FieldCondition: Sendable {
    /// A header field (`test.field` indexes the header) or an earlier field of the message.
    public var inHeader: Bool
    public var test: TransformCondition
    /// `when parent.etype == 8`: a field of the message this one is nested in, by the nesting
    /// message's index (its field's index there); `test.field` is unused. A message decoded as
    /// a frame's own has no parent: the value is 0.
    public var parent: [Int: Int]? = nil
}

public struct MessageDef: Sendable {
    public var name: String
    /// The `// ===== Title =====` line above the message.
    public var title: String?
    public var id: UInt64?
    /// The id is a signed id field's value (its bit pattern in `id`): shown as such.
    public var idSigned = false
    /// The id is a pair of id fields' values (`Message Deal = 3:7`).
    public var idPair = false
    /// `= *`: every id no other message has (in its direction).
    public var otherwise = false
    /// The id as it is written (`-1` for a signed id field's bit pattern, `3:7` for a pair).
    public var idText: String? { id.map { IDText.of($0, signed: idSigned, pair: idPair) } }
    /// Set by the Cs_/Sc_ naming convention; nil when the message applies to both.
    public var direction: Direction?
    public var fields: [FieldDef]
    public var nameBytes: [UInt8]
    public var line: Int
    /// For `Message NAME = ID : pkg.Type;`: the schema index of the protobuf message its body is.
    public var protoType: Int? = nil
    /// `answers REQUEST by FIELD`: a reply typed by the request it answers.
    public var answers: AnswersRule? = nil
    /// `in auth, command`: the connection phases in which a frame's id names this message
    /// (nil: every phase).
    public var phases: [Int]? = nil
    /// The top-level field the tree's summary line shows after the message's name, as
    /// Wireshark's Info column would (Socket.IO's event name: `socketio event "chat"`).
    public var infoField: Int? = nil

    package init(name: String, title: String?, id: UInt64?, direction: Direction?, fields: [FieldDef], nameBytes: [UInt8],
                 line: Int, protoType: Int? = nil) {
        self.name = name
        self.title = title
        self.id = id
        self.direction = direction
        self.fields = fields
        self.nameBytes = nameBytes
        self.line = line
        self.protoType = protoType
    }
}

public struct EnumDef: Sendable {
    public var name: String
    public var base: FieldTypeBase
    public var labels: [Int64: String]
}

/// A header field of the framing layer.
public struct HeaderField: Sendable {
    public var name: String
    public var width: Int
    public var signed: Bool
    public var order: ByteOrder
    /// When set, every frame must carry this value (validated, used to resynchronise).
    public var constant: UInt64?
    /// Padding/reserved bytes: read over, not shown.
    public var isPadding: Bool
    public var offset: Int
    public var nameBytes: [UInt8]
    /// `[hex]`: the value is shown in hex.
    public var hex = false
    /// `uint8 flags { compressed = 0x01; codec = 0x0c; }`: named bit fields of the value.
    public var bits: [BitField] = []
    /// A varint (`varint len;`, `varint(4) remaining;`): at most this many bytes, read where
    /// the field before it ended; `width` is then its least size, 1. 0: a fixed-width integer.
    public var varintMax = 0
    /// `svarint`: the varint is zigzag-encoded (protobuf's sint), a signed value.
    public var zigzag = false
    public var isVarint: Bool { varintMax > 0 }
    /// A number in ASCII digits (`decimal(3)`, `decimal("|")` in a text header): exactly this
    /// many digits (0: up to `decimalEnd`), a leading `-` allowed; a signed value.
    public var decimalDigits = 0
    /// `decimal("|")`: the digits end at these bytes, which belong to the field.
    public var decimalEnd: [UInt8] = []
    public var isDecimal: Bool { decimalDigits > 0 || !decimalEnd.isEmpty }
    /// Its size depends on its bytes, so the fields after it are read where it ends.
    public var isVariable: Bool { isVarint || isDecimal }
    /// The most bytes the field can take (a sign and 19 digits, and the delimiter).
    public var maxWidth: Int { isVarint ? varintMax : decimalEnd.isEmpty ? width : 20 + decimalEnd.count }

    package init(name: String, width: Int, signed: Bool, order: ByteOrder, constant: UInt64?, isPadding: Bool,
                 offset: Int, nameBytes: [UInt8], hex: Bool = false, bits: [BitField] = []) {
        self.name = name
        self.width = width
        self.signed = signed
        self.order = order
        self.constant = constant
        self.isPadding = isPadding
        self.offset = offset
        self.nameBytes = nameBytes
        self.hex = hex
        self.bits = bits
    }
}

/// A named group of bits of a header field: its value is `(field & mask) >> shift`.
public struct BitField: Sendable {
    public var name: String
    public var mask: UInt64
    public var nameBytes: [UInt8]
    public var shift: UInt64 { UInt64(mask.trailingZeroBitCount) }
    public func value(_ v: UInt64) -> UInt64 { (v & mask) >> shift }
}

/// `frame_length = a + b - 4` or `body_length = len`: a sum of header fields and constants.
public struct LengthRule: Sendable {
    public var terms: [(field: Int?, constant: Int64, negative: Bool)]
    /// True when the expression counts the whole frame, header included.
    public var countsWholeFrame: Bool

    package init(terms: [(field: Int?, constant: Int64, negative: Bool)], countsWholeFrame: Bool) {
        self.terms = terms
        self.countsWholeFrame = countsWholeFrame
    }
}

/// `header c2s { }`, `header s2c { }`, `first c2s { header { } ... }`: the header one direction's
/// frames have, or its first frame only (a startup message, a handshake, a preface), when they
/// differ. Its fields are entries of the protocol's `header` (the union of every header by
/// name, so a name means one field to the outputs and `-Y`), listed here with their offsets.
public struct HeaderVariant: Sendable {
    public var direction: Direction
    /// The direction's first frame only (from the stream's start); the main header follows.
    public var first: Bool
    /// The fields in order, offsets from this header's start.
    public var fields: [HeaderField]
    /// Each field's index in `ProtocolSchema.header`.
    public var global: [Int]
    /// Its frame length, fields by their `header` index (nil: the protocol's own, or a framing kind).
    public var length: LengthRule?
    /// A first frame's `message NAME;`: the message it is.
    public var message: Int?
    /// A first frame's `message NAME when TEST;`: the message of the first test that holds
    /// (tests of this header's fields, by their `header` index); else `message`.
    public var choices: [(test: TransformCondition, message: Int)] = []
    /// `again after NAME;`: after a first frame that is one of these messages, the next frame of
    /// the direction is a first frame again (PostgreSQL's SSLRequest, then the startup message).
    public var again: [Int] = []
    /// `first s2c after NAME { }`: this first frame is there only when the other direction's
    /// first frame was one of these messages (the server's one-byte answer to an SSLRequest).
    public var after: [Int]? = nil
    /// The messages a first frame of this layout can be (its `message` lines).
    public var firstMessages: Set<Int> { Set(choices.map(\.message) + (message.map { [$0] } ?? [])) }
    /// `message_id s2c = xid;`: this direction's id field (nil: the protocol's `message_id`).
    public var idField: Int?

    public var headerSize: Int { fields.last.map { $0.offset + $0.width } ?? 0 }
    public var maxHeaderSize: Int { fields.reduce(0) { $0 + $1.maxWidth } }
    /// Its field with `header` index `g`, if it has it.
    public func local(_ g: Int) -> Int? { global.firstIndex(of: g) }
}

/// How `-z rtt` pairs a server's response with the client's request on one connection.
public enum PairRule: Sendable, Equatable {
    /// The response carries the request's message id (`Cs_N` answered by `Sc_N`).
    case messageID
    /// A header or body field of the request holds the value a field of the response holds
    /// (`pair_by seq;`: the same field; `pair_by seq = ackedSeq;`: the response's `ackedSeq`
    /// carries the request's `seq`).
    case field(request: String, response: String)
}

/// `Message LoginReply answers LoginReq by seq { ... }`: a reply that carries no message id of
/// its own, typed by the request it answers: the request's `requestField` (a header field or
/// one of its integer fields) is what the reply's header field `replyHeader` holds.
public struct AnswersRule: Sendable, Equatable {
    /// The request's message index, and the direction replies come in (the other one).
    public var request: Int
    public var replyDirection: Direction
    public var requestField: String
    /// The reply's header field (read before the body, which it types).
    public var replyHeader: Int
}

/// `pair LoginReq -> LoginResp;`: a message that answers a request of another message type
/// (another id), paired in order on the connection, or by a field: `by seq;` (the same field in
/// both), `by seq = ackSeq;` (the response's `ackSeq` carries the request's `seq`).
public struct PairSpec: Sendable, Equatable {
    /// The request's and the response's messages (indices in `messages`).
    public var request: Int
    public var response: Int
    /// The request's header or top-level field whose value the response carries in
    /// `responseField`; nil: the oldest request not yet answered is the one.
    public var requestField: String?
    public var responseField: String?
    /// The pair (its index) whose rule this one shares: a response of either answers a request
    /// of either (Socket.IO's acks and binary acks, its events and binary events). nil: its own.
    public var rule: Int? = nil
}

/// A protocol's connection phases (`phase auth; phase command midstream;
/// phase auth -> command after OK;`): the messages a frame's id may name change as the
/// connection goes from one phase to the next. Empty for most protocols.
public struct PhaseRules: Sendable {
    /// The phases by name; a connection starts in the first.
    public var names: [String] = []
    /// The phase a connection whose start the capture did not see is assumed to be in.
    public var midstream = 0
    /// `phase A -> B after M;`: after message `message`, decoded in phase `from` (nil: any),
    /// the connection is in phase `to`.
    public var switches: [PhaseSwitch] = []
    /// Per phase: (direction, id) → message, and each direction's `= *` message.
    public var byID: [[Direction: [UInt64: Int]]] = []
    public var otherwise: [[Direction: Int]] = []

    public var isEmpty: Bool { names.isEmpty }
}

public struct PhaseSwitch: Sendable {
    public var from: Int?
    public var message: Int
    public var to: Int
    /// `after EOF when length == 5`: only after such a message that passes the test (of a header
    /// field, or of one of the message's own top-level fields).
    public var when: FieldCondition? = nil
    /// `after ColumnDefinition * ColumnCount.status`: after as many of `message` (decoded in
    /// `from`) as the last `source` message's field said (a header field's index, or a top-level
    /// field's of that message).
    public var count: (source: Int, field: Int, inHeader: Bool)? = nil
    /// Plain: no test, no count (the phase table's fast path).
    public var isPlain: Bool { when == nil && count == nil }
}

public struct ProtocolSchema: Sendable {
    public var name: String
    public var file: String
    public var ports: [UInt16] = []
    /// Where each port was declared, for the error when two protocols claim one.
    public var portLocations: [UInt16: SourceLocation] = [:]
    /// The ports are UDP ports (`udp port N;`): messages come in datagrams, not a TCP stream.
    public var udp = false
    /// Try this dissector on connections of any port, validating the first header.
    public var anyPort = false
    public var order: ByteOrder = .big
    public var strings: StringRule = .prefixed(width: 2)
    public var header: [HeaderField] = []
    /// Headers that differ by direction or for a direction's first frame (empty: `header` is
    /// every frame's, as its offsets say). Then `header` is their union by name.
    public var variants: [HeaderVariant] = []
    /// The header's size, or its least size when it has varints (each counted as one byte).
    public var headerSize: Int { header.last.map { $0.offset + $0.width } ?? 0 }
    /// The most bytes the header can take (its size, when it has no varint).
    public var maxHeaderSize: Int { header.reduce(0) { $0 + $1.maxWidth } }
    /// `message_id = flags.type;`: the id is this named bit group of the id field.
    public var idBits: BitField?
    public var length: LengthRule?
    /// A framing kind's settings (`frame_end "\r\n";`), by the name it chooses; none: the
    /// length rule cuts the frames. See `FramingRegistry`.
    public var framingSettings: [String: [String]] = [:]
    public var idField: Int?
    /// `message_id = cmd, sub;`: a second id field; a message's id is then the pair
    /// (`Message Deal = 3:7`), kept as `main << 32 | sub` and written `3:7`.
    public var idField2: Int?
    /// A protocol whose frames carry no id (no `message_id`): the one message declared without
    /// an id that no field nests, which every frame is (see `Resolver.resolveDefaultMessage`).
    public var defaultMessage: Int?
    public var maxFrame = 1 << 20
    public var body: BodyEncoding = .fields
    /// The layers the protocol's frames come through, bottom first, by name (`websocket`):
    /// none for the TCP stream itself. See `LayerRegistry`.
    public var overLayers: [String] = []
    /// Each layer's own settings from the dissector file, lists of strings by a name the layer
    /// chooses (the request paths that select the protocol...).
    public var layerSettings: [String: [String]] = [:]
    /// How messages a layer marks as text are decoded (json, text or raw).
    public var textBody: BodyEncoding = .text
    /// `header text { decimal("|") cmd; }`: the header of a layer's text messages (WebSocket's),
    /// read before the `text` body; its fields are in `header` too, by name.
    public var textHeader: HeaderVariant?
    /// With a text header: the header every other frame has (`header { }`'s fields alone; none
    /// when only text messages have one). nil: `header` is that header.
    public var plainHeader: HeaderVariant?
    public var labelsFromComments = false
    /// How a response is paired with its request, for `-z rtt`.
    public var pairBy: PairRule?
    /// Requests answered by messages of another type (`pair A -> B ...;`), for `-z rtt` and the page.
    public var pairs: [PairSpec] = []
    /// The messages typed by the request they answer (`answers`), by index.
    public var replies: [Int] = []
    /// `Message Row = * s2c { }`: per direction, the message a frame is when its id names no
    /// other (after a reply's request, when it has one).
    public var otherwise: [Direction: Int] = [:]
    /// Connection phases, when the messages an id names change with them.
    public var phases = PhaseRules()
    public var messages: [MessageDef] = []
    public var enums: [EnumDef] = []
    /// (direction, id) → message index; direction-less messages are entered for both.
    public var byID: [Direction: [UInt64: Int]] = [.c2s: [:], .s2c: [:]]
    public var nameBytes: [UInt8] = []
    /// The `.proto` messages (in `messages` from `proto.base` on) when the body is protobuf.
    public var proto: ProtoTables?
    /// The steps that undo how bodies are wrapped (`transform xor ...; transform zlib when ...;`),
    /// in the order they run.
    public var transforms: [TransformSpec] = []
    /// Show protobuf fields that are not on the wire at their default value (`--proto-defaults`).
    public var protoAddDefaults = false

    package init(name: String, file: String) {
        self.name = name
        self.file = file
    }

    public func message(_ d: Direction, _ id: UInt64) -> Int? { byID[d]?[id] }
    /// How the text messages of a layer are read: the text header (if any), then the `text`
    /// rule as body.
    public var textSchema: ProtocolSchema {
        guard let textHeader else {
            var s = ProtocolSchema(name: name, file: file)
            s.body = textBody
            s.nameBytes = nameBytes
            return s
        }
        // A text header selects the protocol's messages by its id, as the binary header does.
        var s = self
        s.body = textBody
        s.plainHeader = textHeader
        s.textHeader = nil
        s.length = nil
        s.framingSettings = [:]
        s.transforms = []
        s.variants = []
        s.phases = PhaseRules()
        return s
    }

    /// Field names under the protocol come from the traffic (its body kind, or its text
    /// messages' kind, says so): `-Y` takes any.
    var namesFromTraffic: Bool { body.kind.namesFromTraffic || textBody.kind.namesFromTraffic }
    /// The body kinds' own field names (`text`, `payload`), as `-Y` names them.
    var builtinFieldNames: [String] {
        (body.kind.builtinFields + (overWebSocket ? textBody.kind.builtinFields : [])).map { String(describing: $0.text) }
    }

    public var hasMessageIDs: Bool { !(byID[.c2s]?.isEmpty ?? true) || !(byID[.s2c]?.isEmpty ?? true) }
}
