/// `body protobuf;`: the protobuf message type bound to the id (`Message X = 3 : pkg.Type;`), or
/// the wire format without a schema (field numbers, guessed types) when none is bound.
enum ProtobufBody: BodyFormat {
    static let name = "protobuf"
    static var namesFromTraffic: Bool { true }
    static var problemClass: String? { "protobuf" }
    static var judgesFrames: Bool { true }

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        d.decodeProtobuf(b, from: body, into: m)
    }
}
