/// `body text;` (and `text text;`, a layer's text messages by default): the body as one string.
enum TextBody: BodyFormat {
    static let name = "text"
    static var readsText: Bool { true }

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        m.fields.append(DecodedField(name: .builtin(.text), value: .string, offset: Int32(body),
                                     width: Int32(b.count - body), depth: 0))
    }
}
