/// The declared names an array-encoded object takes, laid out once per decoder from the
/// schema (so a message reads two integers, not the schema's field definitions): per message,
/// how many fields it declares, and per field what names the elements of its value.
final class MessagePackNames {
    /// Per message: its first field's slot in `children` and its number of fields.
    let first: UnsafeMutableBufferPointer<Int32>
    let count: UnsafeMutableBufferPointer<Int32>
    /// Per field: -1 nothing; a message index m ≥ 0: the value is that message (an array named
    /// by its fields); -2 - m: the value is an array of such messages.
    let children: UnsafeMutableBufferPointer<Int32>

    init(_ s: ProtocolSchema) {
        first = .allocate(capacity: max(1, s.messages.count))
        count = .allocate(capacity: max(1, s.messages.count))
        children = .allocate(capacity: max(1, s.messages.reduce(0) { $0 + $1.fields.count }))
        var k: Int32 = 0
        for (mi, m) in s.messages.enumerated() {
            first[mi] = k
            count[mi] = Int32(m.fields.count)
            for f in m.fields {
                var c: Int32 = -1
                if case .message(let nested) = f.type { c = f.array == nil ? Int32(nested) : -2 - Int32(nested) }
                children[Int(k)] = c
                k += 1
            }
        }
    }

    deinit {
        first.deallocate()
        count.deallocate()
        children.deallocate()
    }

    /// The reader for `m`'s fields (made again only when another message object comes: a
    /// decoder serves one session manager, which reuses one).
    @exclusivity(unchecked) var reader: MessagePackReader?

    func reader(for m: DecodedMessage, maxDepth: Int) -> MessagePackReader {
        if let r = reader, r.fields === m.fields { return r }
        let r = MessagePackReader(self, fields: m.fields, maxDepth: maxDepth, maxFields: MessageDecoder.maxFields)
        reader = r
        return r
    }
}
