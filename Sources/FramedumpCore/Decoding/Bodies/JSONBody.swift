/// `body json;` (and `text json;`): the body is one JSON value, flattened into fields named by
/// its keys (see `JSONFlattener`); invalid JSON is shown as text with a warning.
enum JSONBody: BodyFormat {
    static var judgesFrames: Bool { true }
    static let name = "json"
    static var readsText: Bool { true }
    static var namesFromTraffic: Bool { true }
    static var problemClass: String? { "json" }

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        guard b.count > body else { return }
        var parser = JSONFlattener(bytes: b, start: body, into: m, maxDepth: d.maxDepth)
        if !parser.run() {
            m.fields.removeAll()
            m.warnings.append(parser.tooDeep ? .jsonTooDeep(limit: d.maxDepth)
                              : parser.loneSurrogate ? .jsonLoneSurrogate(at: parser.errorAt) : .invalidJSON(at: parser.errorAt))
            m.fields.append(DecodedField(name: .builtin(.text), value: .string, offset: Int32(body),
                                         width: Int32(b.count - body), depth: 0))
        }
    }
}
