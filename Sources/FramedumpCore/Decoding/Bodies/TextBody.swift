/// `body text;` (and `text text;`, a layer's text messages by default): the body as one string.
/// A frame cut by `payload` (a line that announces a data block) shows the line as `text` and
/// the block as `payload`: a string when it is UTF-8, else bytes.
enum TextBody: BodyFormat {
    static let name = "text"
    static var readsText: Bool { true }
    static var builtinFields: [BuiltinName] { [.text, .payload] }

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        if let end = d.layout.end, let p = end.payloadStart(b, body: body), p <= b.count {
            let delimiter = end.trailerSize
            m.fields.append(DecodedField(name: .builtin(.text), value: .string, offset: Int32(body),
                                         width: Int32(max(0, p - delimiter - body)), depth: 0))
            let block = UnsafeRawBufferPointer(rebasing: b[p...])
            m.fields.append(DecodedField(name: .builtin(.payload), value: UTF8Check.isValid(block) ? .validString : .bytes,
                                         offset: Int32(p), width: Int32(b.count - p), depth: 0))
            return
        }
        m.fields.append(DecodedField(name: .builtin(.text), value: .string, offset: Int32(body),
                                     width: Int32(b.count - body), depth: 0))
    }
}
