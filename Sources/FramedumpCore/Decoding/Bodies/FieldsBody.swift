/// `body fields;` (the default): the message the id selects, read field by field as the
/// dissector declares it (see `MessageDecoder.decodeFields`).
enum FieldsBody: BodyFormat {
    static let name = "fields"
    static var idsSelectLayout: Bool { true }
    static var decodesPart: Bool { true }
    static var judgesFrames: Bool { true }
    static var readsConditions: Bool { true }

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        guard let mi = m.message else {
            if m.id != nil && b.count > body || d.hasIDs { m.warnings.append(.unknownMessage(m.id ?? 0, signed: m.idSigned, pair: m.idPair)) }
            d.raw(b, from: body, into: m)
            return
        }
        var pos = body
        if !d.decodeFields(mi, b, &pos, depth: 0, into: m) {
            // The body ran out (or lied about a count): what could not be decoded is shown raw.
            if pos < b.count {
                m.fields.append(DecodedField(name: .builtin(.undecoded), value: .bytes, offset: Int32(pos),
                                             width: Int32(b.count - pos), depth: 0))
            }
            return
        }
        if pos < b.count {
            m.warnings.append(.trailingBytes(b.count - pos, at: pos))
            m.fields.append(DecodedField(name: .builtin(.trailing), value: .bytes, offset: Int32(pos),
                                         width: Int32(b.count - pos), depth: 0))
        }
    }
}
