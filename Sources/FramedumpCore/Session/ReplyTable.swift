/// One connection's requests waiting for a reply typed by them (`Message R answers Q by key`):
/// a request records its key; a frame coming the other way whose id names no message is the
/// reply of the request its header's key names, and is decoded as that reply. Keys are integers
/// (no allocation per message); the table is bounded, and what it holds when the connection
/// ends is counted unanswered.
final class ReplyTable {
    struct Key: Hashable {
        var header: Int32
        var direction: Int
        var value: UInt64
    }

    unowned(unsafe) let runtime: ProtocolRuntime
    /// Per request message: its rule's reply (-1: none), by schema index.
    let replyOf: [Int32]
    /// Per request message: where its key is read, the header field or else the top-level
    /// field of the rule's name (-1: not there), found once here rather than per request.
    let keyAt: [(header: Int32, field: Int32)]
    /// The (reply direction, header field) pairs replies are looked up by (usually one).
    let lookups: [(direction: Direction, header: Int)]
    @exclusivity(unchecked) var waiting: [Key: Int32] = [:]
    static let limit = 4096

    init?(_ p: ProtocolRuntime) {
        let s = p.schema
        guard !s.replies.isEmpty else { return nil }
        runtime = p
        var of = [Int32](repeating: -1, count: s.messages.count)
        var at = [(header: Int32, field: Int32)](repeating: (-1, -1), count: s.messages.count)
        var seen: [(Direction, Int)] = []
        for r in s.replies {
            guard let a = s.messages[r].answers else { continue }
            of[a.request] = Int32(r)
            at[a.request] = (Int32(s.header.firstIndex { $0.name == a.requestField } ?? -1),
                             Int32(s.messages[a.request].fields.firstIndex { $0.name == a.requestField } ?? -1))
            if !seen.contains(where: { $0 == (a.replyDirection, a.replyHeader) }) { seen.append((a.replyDirection, a.replyHeader)) }
        }
        replyOf = of
        keyAt = at
        lookups = seen.map { (direction: $0.0, header: $0.1) }
    }

    /// The reply a frame is, when its id names no message and a request waits under its key.
    func reply(_ f: Frame, _ dir: Direction, _ d: MessageDecoder) -> Int? {
        let layout = d.layout(of: f, dir)
        if let id = layout.messageID(f.bytes, at: 0), d.named(dir, id) != nil { return nil }
        for l in lookups where l.direction == dir {
            guard let v = layout.value(l.header, in: f.bytes, at: 0) else { continue }
            if let r = waiting.removeValue(forKey: Key(header: Int32(l.header), direction: dir.rawValue, value: v)) {
                runtime.repliesWaiting -= 1
                return Int(r)
            }
        }
        return nil
    }

    /// Whether a frame the other way would have been a reply: its id names no message.
    func expectsReply(_ f: Frame, _ dir: Direction, _ d: MessageDecoder) -> Bool {
        guard lookups.contains(where: { $0.direction == dir }) else { return false }
        let layout = d.layout(of: f, dir)
        // (A first frame of its own layout is the message its block names: no reply.)
        if layout.namesMessage { return false }
        guard let id = layout.messageID(f.bytes, at: 0) else { return true }
        return d.named(dir, id) == nil
    }

    /// A decoded request: its key recorded for its reply.
    func record(_ m: DecodedMessage) {
        guard let mi = m.message, mi < replyOf.count, replyOf[mi] >= 0 else { return }
        let reply = Int(replyOf[mi])
        let s = runtime.schema
        guard let a = s.messages[reply].answers, let v = key(m, keyAt[mi]) else { return }
        let k = Key(header: Int32(a.replyHeader), direction: a.replyDirection.rawValue, value: v)
        // Full: a request whose key waits still takes its place (a reply must not be typed by the
        // older request of that key); one of a new key is not waited for.
        guard waiting.count < Self.limit || waiting[k] != nil else { runtime.repliesDropped += 1; return }
        if waiting.updateValue(Int32(reply), forKey: k) == nil { runtime.repliesWaiting += 1 }
    }

    /// The request's key: its header field, else its top-level integer field, where `keyAt` says.
    func key(_ m: DecodedMessage, _ at: (header: Int32, field: Int32)) -> UInt64? {
        if at.header >= 0, let f = m.header(Int(at.header)) { return Self.integer(f.value) }
        guard at.field >= 0 else { return nil }
        return m.topLevel(Int(at.field)).flatMap { Self.integer($0.value) }
    }

    static func integer(_ v: FieldValue) -> UInt64? {
        switch v {
        case .unsigned(let x): return x
        case .signed(let x): return UInt64(bitPattern: x)
        default: return nil
        }
    }
}
