/// How many bytes a message takes, read as for decoding: for `frame_length = message;`, where
/// the frame is what its message consumes.
extension MessageDecoder {
    enum Measure: Equatable {
        /// The header and the message's fields take this many bytes.
        case length(Int)
        /// A field runs past the bytes given.
        case needMoreData
        /// No message to measure (an id that names none, or none for a frame without an id).
        case unknownMessage(UInt64?)
        /// A field at this byte holds no value of its type (or a bound stops decoding there):
        /// where the frame ends cannot be known.
        case invalid(at: Int)
    }

    /// Measures the message at the start of `b` (a direction's frame under `layout`).
    func measure(_ b: UnsafeRawBufferPointer, _ dir: Direction, layout: FrameLayout, into m: DecodedMessage) -> Measure {
        m.reset()
        invalid = nil
        switch layout.headerEnd(b, at: 0) {
        case .at: break
        case .needMoreData: return .needMoreData
        case .badVarint: return .unknownMessage(nil)
        }
        // Header fields first: sizes, counts and conditions may read them.
        var pos = readHeader(b, layout, into: m)
        let id = layout.messageID(b, at: 0)
        let mi: Int?
        if layout.namesMessage { mi = layout.firstMessage(b) } else if let id { mi = message(dir, id) } else { mi = defaultMessage }
        guard let mi else { return .unknownMessage(id) }
        guard decodeFields(mi, b, &pos, depth: 0, into: m) else { return invalid.map { .invalid(at: $0.at) } ?? .needMoreData }
        // Every frame takes a byte at least, so the deframer always moves on.
        return pos > 0 ? .length(pos) : .unknownMessage(id)
    }
}
