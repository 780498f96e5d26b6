/// A kind of message body a dissector declares (`body json;`), as every shared part sees it:
/// the decoder runs it, the filter and `check` ask it, and none of them names it. A new kind is
/// its file here (or a folder of its own) plus its line in `BodyRegistry` (docs/architecture.md).
protocol BodyFormat {
    /// The dissector keyword (`body NAME;`), shown by `framedump dissectors`.
    static var name: String { get }
    /// A layer's text messages may be read as this (`text NAME;`).
    static var readsText: Bool { get }
    /// A protocol's frames may be read as this (`body NAME;`); false for a kind that reads only
    /// a layer's text messages (Socket.IO's packets).
    static var readsFrames: Bool { get }
    /// Its field names come from the traffic (JSON keys, protobuf field numbers without a
    /// schema), so `-Y` takes any name under the protocol and cannot check a value's type.
    static var namesFromTraffic: Bool { get }
    /// The names of its own fields (`text`, `payload`), which `-Y` takes under the protocol.
    static var builtinFields: [BuiltinName] { get }
    /// A message id no message declares means the frame cannot be right (the deframer's resync
    /// then looks further): true when the ids select the fields the body is read with.
    static var idsSelectLayout: Bool { get }
    /// A body cut short (a snap length, a gap) is decoded as far as it goes; otherwise it is
    /// shown raw.
    static var decodesPart: Bool { get }
    /// The `check -r` class of its own problems (`DecodeWarning.body`), if it reports any.
    static var problemClass: String? { get }
    /// A body that decodes with a warning cannot be a frame: where a protocol's headers alone
    /// cannot tell frames from noise, the deframer's resync asks the body (a parser that rejects
    /// most noise: a layout, JSON, protobuf; not text or raw bytes).
    static var judgesFrames: Bool { get }
    /// It reads a message's declared fields in their layout, so a field under `when` can be left
    /// out; under any other kind a `when` would be ignored, and `check` refuses it.
    static var readsConditions: Bool { get }

    /// What the kind reads of the schema on every message, laid out once per decoder (nil:
    /// nothing); `decode` finds it in `MessageDecoder.bodyTables`.
    static func tables(_ s: ProtocolSchema) -> AnyObject?

    /// A kind that brings the protocol's messages (Socket.IO's packet types) adds them, once
    /// the file is read; returns why the protocol cannot be read so (nil: it can).
    static func define(_ s: inout ProtocolSchema) -> String?

    /// Decodes `b[body...]` (the frame, header first; transforms already undone) into `m`, whose
    /// header, id and message are set.
    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage)
}

extension BodyFormat {
    static var readsText: Bool { false }
    static var readsFrames: Bool { true }
    static var namesFromTraffic: Bool { false }
    static var builtinFields: [BuiltinName] { [] }
    static var idsSelectLayout: Bool { false }
    static var decodesPart: Bool { false }
    static var problemClass: String? { nil }
    static var judgesFrames: Bool { false }
    static var readsConditions: Bool { false }
    static func tables(_ s: ProtocolSchema) -> AnyObject? { nil }
    static func define(_ s: inout ProtocolSchema) -> String? { nil }
}

/// Every kind of body a dissector can declare, one line each.
enum BodyRegistry {
    // (Metatypes of stateless kinds, never written: safe to share.)
    nonisolated(unsafe) static let kinds: [any BodyFormat.Type] = [
        FieldsBody.self,
        JSONBody.self,
        TextBody.self,
        RawBody.self,
        ProtobufBody.self,
        MessagePackBody.self,
        SocketIOBody.self,
    ]

    /// "fields, json, text, raw or protobuf": for a dissector error.
    static func names(where keep: (any BodyFormat.Type) -> Bool = { _ in true }) -> String {
        let n = kinds.filter(keep).map { $0.name }
        return n.count < 2 ? n.joined() : n.dropLast().joined(separator: ", ") + " or " + n.last!
    }
}

/// A protocol's body kind, as its schema holds it: a registered `BodyFormat`, by its place.
public struct BodyEncoding: Sendable, Hashable {
    let index: UInt8

    init(_ kind: any BodyFormat.Type) {
        index = UInt8(BodyRegistry.kinds.firstIndex { $0 == kind }!)
    }

    /// The kind named `name` in a dissector file (any case), if one is registered.
    public init?(rawValue name: String) {
        let n = name.lowercased()
        guard let i = BodyRegistry.kinds.firstIndex(where: { $0.name == n }) else { return nil }
        index = UInt8(i)
    }

    var kind: any BodyFormat.Type { BodyRegistry.kinds[Int(index)] }
    /// Its dissector keyword.
    public var rawValue: String { kind.name }

    public static let fields = BodyEncoding(FieldsBody.self)
    public static let json = BodyEncoding(JSONBody.self)
    public static let text = BodyEncoding(TextBody.self)
    public static let raw = BodyEncoding(RawBody.self)
    public static let protobuf = BodyEncoding(ProtobufBody.self)
}
