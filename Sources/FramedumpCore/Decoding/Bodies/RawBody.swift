/// `body raw;`: the body as bytes (a hex dump in the tree).
enum RawBody: BodyFormat {
    static let name = "raw"
    static var readsText: Bool { true }

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        d.raw(b, from: body, into: m)
    }
}
