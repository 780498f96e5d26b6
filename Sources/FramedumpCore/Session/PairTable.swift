/// How a message takes part in request/response pairing (`pair A -> B [by F [= G]];`, or the
/// protocol's `pair_by`), and, for a response, the request it answers. Set on each decoded
/// message by its connection's `PairTable`; read by NDJSON (`"answers"`, `"latency"`), the
/// tree, `-z rtt` and the page, so they all pair alike.
public struct PairMark: Sendable {
    public enum Role: UInt8, Sendable {
        /// Pairing is off for the run, or the message takes no part.
        case none
        /// It takes part but lacks the field its pairing reads.
        case noKey
        /// A request: it waits for its answer.
        case request
        /// A response, paired with the request below.
        case answered
        /// A response that no waiting request matched (its request was not captured, or answered).
        case unmatched
    }
    public var role = Role.none
    /// The request's message (schema index), its number in its connection, when it was
    /// completed, its packets and stream offset.
    public var request: Int32 = -1
    public var number: UInt64 = 0
    public var ts = Timestamp(seconds: 0, nanos: 0)
    public var firstPacket: UInt64 = 0
    public var lastPacket: UInt64 = 0
    public var offset: UInt64 = 0

    /// Nanoseconds from the request to this response (never negative: a capture may be stamped
    /// out of order).
    public func latency(to response: Timestamp) -> Int64 { max(0, response.nanos(since: ts)) }
}

/// A protocol's pairing rules, made once: per message and direction, its part and where its key is.
final class PairRules {
    enum Key {
        /// Paired in order (`pair A -> B;` with no `by`).
        case order
        case id
        case header(Int)
        /// A top-level field of the message (its index in the message).
        case field(Int)
        /// The message has no field of the name its pairing reads.
        case missing
    }
    struct Part {
        /// Which rule (a `pair` by index; `pairs.count` for `pair_by`), times two, plus the
        /// side whose request it is (`pair_by`'s: the client's).
        var tag: Int32
        var request: Bool
        var key: Key
    }
    /// `parts[message * 2 + direction]` (nil: no part).
    let parts: [Part?]
    /// `pair_by`'s part for a frame whose id names no message (`pair_by id` only).
    let unknown: [Part?]

    /// Message `m`'s part (nil: none).
    @inline(__always)
    func part(_ m: DecodedMessage) -> Part? {
        if let mi = m.message { return parts[mi * 2 + m.direction.rawValue] }
        return m.id != nil ? unknown[m.direction.rawValue] : nil
    }

    init?(_ s: ProtocolSchema) {
        guard !s.pairs.isEmpty || s.pairBy != nil else { return nil }
        func key(_ mi: Int, _ name: String?) -> Key {
            guard let name else { return .order }
            if let h = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) { return .header(h) }
            if let f = s.messages[mi].fields.firstIndex(where: { $0.name == name }) { return .field(f) }
            return .missing
        }
        var parts = [Part?](repeating: nil, count: s.messages.count * 2)
        for mi in s.messages.indices {
            for d in Direction.allCases {
                if let i = s.pairs.firstIndex(where: { $0.request == mi || $0.response == mi }) {
                    let spec = s.pairs[i]
                    // One message on both ends (paired by a field): the client's is the request.
                    let request = spec.request == spec.response ? d == .c2s : spec.request == mi
                    // A response answers a request of the other side: the rule's tag says which
                    // side asked (a protocol whose two sides both ask, Socket.IO's events with
                    // acks, counts its ack ids per side).
                    let asker = request ? d : d.opposite
                    parts[mi * 2 + d.rawValue] = Part(tag: Int32((spec.rule ?? i) * 2 + asker.rawValue), request: request,
                                                      key: key(mi, request ? spec.requestField : spec.responseField))
                } else if let rule = s.pairBy {
                    let k: Key
                    switch rule {
                    case .messageID: k = .id
                    case .field(let q, let r): k = key(mi, d == .c2s ? q : r)
                    }
                    parts[mi * 2 + d.rawValue] = Part(tag: Int32(s.pairs.count * 2), request: d == .c2s, key: k)
                }
            }
        }
        self.parts = parts
        // A frame whose id names no message: by its id, or a header field (its body is unread).
        unknown = Direction.allCases.map { d in
            switch s.pairBy {
            case .messageID?: return Part(tag: Int32(s.pairs.count * 2), request: d == .c2s, key: .id)
            case .field(let q, let r)?:
                let h = s.header.firstIndex { $0.name == (d == .c2s ? q : r) && !$0.isPadding }
                return Part(tag: Int32(s.pairs.count * 2), request: d == .c2s, key: h.map { .header($0) } ?? .missing)
            case nil: return nil
            }
        }
    }
}

/// One connection's requests waiting for their responses. Keys are integers (a string key is
/// its bytes' 64-bit hash): no allocation per message once the tables have grown. The
/// connection's last `limit` requests are kept in a ring, in the order they were made; a
/// request waits until it is answered or until `limit` newer requests of its connection take
/// its place (it is then forgotten, and counted), so a peer that never answers costs neither
/// time nor memory, and requests it never answers cannot stop the newer ones from pairing.
/// Requests of one rule and key wait in a first-in first-out chain through the ring (a
/// response takes the oldest), found through an open-addressing table. The oldest request of
/// the ring, when still waiting, is the oldest of its chain: its head.
final class PairTable {
    /// (72 bytes; a connection keeps up to `limit` of them.)
    struct Waiting {
        var key: UInt64
        var number: UInt64
        var firstPacket: UInt64
        var lastPacket: UInt64
        var offset: UInt64
        var ts: Timestamp
        var tag: Int32
        var request: Int32
        /// The next request of the same rule and key (-1: none).
        var next: Int32 = -1
        /// Still waiting (not answered, not forgotten).
        var live = true
    }
    /// A chain's slot: its rule and key, its oldest and newest request (head -1: empty slot).
    struct Slot {
        var key: UInt64 = 0
        var tag: Int32 = 0
        var head: Int32 = -1
        var tail: Int32 = -1
    }
    let rules: PairRules
    unowned(unsafe) let runtime: ProtocolRuntime
    /// The ring: grows (doubling) to `limit`, then the next request takes the place of the
    /// oldest. (Plain memory this table alone owns: no reference count or uniqueness check
    /// per access, as an array's would cost.)
    @exclusivity(unchecked) var ring: UnsafeMutablePointer<Waiting>
    @exclusivity(unchecked) var ringCount = 0
    @exclusivity(unchecked) var capacity = 8
    /// Where the next request goes.
    @exclusivity(unchecked) var place = 0
    @exclusivity(unchecked) var slots: UnsafeMutablePointer<Slot>
    @exclusivity(unchecked) var slotCount = 16
    @exclusivity(unchecked) var used = 0
    /// 64 - log2(slotCount): a key's home is its hash's top bits, which every bit of the key
    /// and rule reaches (a product's low bits see only the factors' low bits).
    @exclusivity(unchecked) var shift: UInt64 = 60
    static let limit = 1024

    init(_ rules: PairRules, _ runtime: ProtocolRuntime) {
        self.rules = rules
        self.runtime = runtime
        ring = .allocate(capacity: capacity)
        slots = .allocate(capacity: slotCount)
        slots.initialize(repeating: Slot(), count: slotCount)
    }

    deinit {
        ring.deallocate()
        slots.deallocate()
    }

    @inline(__always)
    func home(_ tag: Int32, _ key: UInt64) -> Int {
        let h = (key ^ UInt64(UInt32(bitPattern: tag)) << 40) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: h >> shift)
    }

    /// The slot of rule `tag` and `key`, or the empty slot where it would go.
    @inline(__always)
    func slot(_ tag: Int32, _ key: UInt64) -> Int {
        let mask = slotCount - 1
        var i = home(tag, key)
        while slots[i].head >= 0 && (slots[i].key != key || slots[i].tag != tag) { i = (i + 1) & mask }
        return i
    }

    /// Message `m` (number `number` of its connection) paired: a request waits, a response
    /// takes the oldest waiting request of its rule and key.
    @inline(__always)
    func pair(_ m: DecodedMessage, number: UInt64) {
        guard let part = rules.part(m) else { return }
        guard let key = Self.key(m, part.key) else { m.pair.role = .noKey; return }
        if part.request {
            m.pair.role = .request
            if let f = m.frame { wait(m, f, part.tag, key, number) }
        } else {
            answer(m, part.tag, key)
        }
    }

    func answer(_ m: DecodedMessage, _ tag: Int32, _ key: UInt64) {
        let i = slot(tag, key)
        let h = slots[i].head
        guard h >= 0 else { m.pair.role = .unmatched; return }
        let w = ring + Int(h)
        m.pair = PairMark(role: .answered, request: w.pointee.request, number: w.pointee.number, ts: w.pointee.ts,
                          firstPacket: w.pointee.firstPacket, lastPacket: w.pointee.lastPacket, offset: w.pointee.offset)
        pop(i, h)
    }

    /// Request `e`, the head of slot `i`'s chain, leaves it (answered or forgotten).
    @inline(__always)
    func pop(_ i: Int, _ e: Int32) {
        ring[Int(e)].live = false
        let n = ring[Int(e)].next
        if n >= 0 { slots[i].head = n } else { remove(i) }
    }

    func wait(_ m: DecodedMessage, _ f: Frame, _ tag: Int32, _ key: UInt64, _ number: UInt64) {
        let e = Int32(place)
        if place == ringCount {
            if ringCount == capacity {
                let more = UnsafeMutablePointer<Waiting>.allocate(capacity: capacity * 2)
                more.moveInitialize(from: ring, count: ringCount)
                ring.deallocate()
                ring = more
                capacity *= 2
            }
            ringCount += 1
        } else if ring[place].live {
            let i = slot(ring[place].tag, ring[place].key)
            assert(slots[i].head == e, "the ring's oldest waiting request heads its chain")
            pop(i, e)
            runtime.pairsForgotten += 1
        }
        ring[place] = Waiting(key: key, number: number, firstPacket: f.firstPacket.number, lastPacket: f.lastPacket.number,
                              offset: f.offset, ts: f.lastPacket.ts, tag: tag, request: Int32(m.message ?? -1))
        place = place + 1 == Self.limit ? 0 : place + 1
        if (used + 1) * 2 > slotCount { grow() }
        let i = slot(tag, key)
        if slots[i].head >= 0 {
            ring[Int(slots[i].tail)].next = e
            slots[i].tail = e
        } else {
            slots[i] = Slot(key: key, tag: tag, head: e, tail: e)
            used += 1
        }
    }

    /// Empties slot `i`, moving back the slots after it that probed past it (linear probing
    /// needs no tombstones).
    func remove(_ at: Int) {
        let mask = slotCount - 1
        var i = at, j = at
        while true {
            j = (j + 1) & mask
            if slots[j].head < 0 { break }
            let k = home(slots[j].tag, slots[j].key)
            // Slot j may move to i if its home is not cyclically within (i, j].
            if (i <= j) ? (k <= i || k > j) : (k <= i && k > j) {
                slots[i] = slots[j]
                i = j
            }
        }
        slots[i] = Slot()
        used -= 1
    }

    func grow() {
        let old = slots, oldCount = slotCount
        slotCount *= 2
        slots = .allocate(capacity: slotCount)
        slots.initialize(repeating: Slot(), count: slotCount)
        shift -= 1
        for k in 0..<oldCount where old[k].head >= 0 { slots[slot(old[k].tag, old[k].key)] = old[k] }
        old.deallocate()
    }

    @inline(__always)
    static func key(_ m: DecodedMessage, _ k: PairRules.Key) -> UInt64? {
        switch k {
        case .order: return 0
        case .id: return m.id
        case .missing: return nil
        case .header(let h): return m.header(h).flatMap { value($0, m) }
        case .field(let fi): return m.topLevel(fi).flatMap { value($0, m) }
        }
    }

    /// Whether message `mi` (nil: an id no message names) of direction `d` takes part.
    func takesPart(_ mi: Int?, _ d: Direction) -> Bool {
        if let mi { return rules.parts[mi * 2 + d.rawValue] != nil }
        return rules.unknown[d.rawValue] != nil
    }

    /// An integer as itself, and so is text of decimal digits (`"7"` pairs with 7); other text
    /// and bytes as the FNV-1a hash of their bytes.
    static func value(_ f: DecodedField, _ m: DecodedMessage) -> UInt64? {
        switch f.value {
        case .unsigned(let v): return v
        case .signed(let v): return UInt64(bitPattern: v)
        case .string, .validString, .bytes, .jsonString, .jsonNumber:
            let bytes = m.fieldBytes.slice(Int(f.offset), Int(f.width))
            var n: UInt64 = 0, digits = !bytes.isEmpty && bytes.count <= 19
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in bytes {
                h = (h ^ UInt64(b)) &* 0x100_0000_01b3
                if b >= 0x30 && b <= 0x39 { n = n &* 10 &+ UInt64(b - 0x30) } else { digits = false }
            }
            return digits ? n : h
        default: return nil
        }
    }
}

extension ProtocolRuntime {
    /// How message `m` pairs, as its connection's table reads it: its rule (a `pair` by index,
    /// `pair_by` after them; times two, plus the side that asks), whether it is the request, and its key (nil: it takes no part or
    /// lacks the key). For checkers that model pairing (the `state` fuzz target).
    public func pairing(of m: DecodedMessage) -> (rule: Int32, request: Bool, key: UInt64)? {
        guard let part = pairRules?.part(m), let key = PairTable.key(m, part.key) else { return nil }
        return (part.tag, part.request, key)
    }

    /// A request is forgotten when its connection has made this many newer ones.
    public static var pairsWaitingLimit: Int { PairTable.limit }
}
