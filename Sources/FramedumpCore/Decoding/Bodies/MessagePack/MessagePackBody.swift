/// `body msgpack;`: the body is one MessagePack value. A map's members are fields named by
/// their keys, an array's by their place, or, for a message that declares fields (objects
/// written as arrays, MessagePack-CSharp's `[Key(0)]`), by the declared names in order.
enum MessagePackBody: BodyFormat {
    static let name = "msgpack"
    static var namesFromTraffic: Bool { true }
    static var problemClass: String? { "msgpack" }
    static var judgesFrames: Bool { true }

    static let kindIndex = BodyEncoding(MessagePackBody.self).index

    static func tables(_ s: ProtocolSchema) -> AnyObject? { MessagePackNames(s) }

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        guard b.count > body else { return }
        let tables = unsafeDowncast(d.bodyTables!, to: MessagePackNames.self)
        let r = tables.reader(for: m, maxDepth: d.maxDepth)
        r.reset(b, start: body)
        var naming = MessagePackReader.Naming.none
        if let mi = m.message, tables.count[mi] > 0 { naming = .fields(Int32(mi)) }
        if !r.value(name: .builtin(.body), depth: 0, naming: naming) {
            let at = r.failedAt ?? r.pos
            m.warnings.append(.body(kind: kindIndex, text: r.problem?.text(at: at) ?? "MessagePack value not decoded at byte \(at)"))
            if at < b.count {
                m.fields.append(DecodedField(name: .builtin(.undecoded), value: .bytes, offset: Int32(at),
                                             width: Int32(b.count - at), depth: 0))
            }
            return
        }
        if r.pos < b.count {
            m.warnings.append(.body(kind: kindIndex, text: "\(b.count - r.pos) bytes after the MessagePack value at byte \(r.pos)"))
            m.fields.append(DecodedField(name: .builtin(.trailing), value: .bytes, offset: Int32(r.pos),
                                         width: Int32(b.count - r.pos), depth: 0))
        }
        for note in r.notes { m.warnings.append(.body(kind: kindIndex, text: note)) }
    }
}

extension MessagePackBody {
    /// What `guess` asks of a body: whether it is exactly one MessagePack value (nothing cut,
    /// nothing after it), and whether that value is a map or an array, the shape of an object.
    static func oneValue(_ bytes: UnsafeRawBufferPointer) -> (whole: Bool, container: Bool) {
        guard let first = bytes.first else { return (false, false) }
        let tables = MessagePackNames(ProtocolSchema(name: "", file: ""))
        let r = MessagePackReader(tables, fields: FieldList(capacity: 64), maxDepth: 32, maxFields: 1 << 16)
        r.reset(bytes, start: 0)
        guard r.value(name: .builtin(.body), depth: 0, naming: .none), r.pos == bytes.count, r.notes.isEmpty else { return (false, false) }
        return (true, (0x80...0x9f).contains(first) || (0xdc...0xdf).contains(first))
    }
}
