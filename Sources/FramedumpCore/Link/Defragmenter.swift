/// Reassembles fragmented IPv4 and IPv6 datagrams, as tshark and Zeek do, within bounds:
/// a number of datagrams in progress, a number of bytes held, a number of fragments per
/// datagram, and a timeout on the packet clock. IPv6 fragments that overlap (other than
/// exact duplicates) abandon their datagram, as RFC 5722 and RFC 8200 §4.5 require. IPv4
/// overlaps keep the first copy of each byte (as tshark and Zeek do) and are counted.
public final class Defragmenter {
    public struct Options: Sendable {
        public var maxDatagrams = 1024
        public var maxBytes = 8 << 20
        /// 8,192: as many as 65,535 bytes allow at 8 bytes a fragment, so no datagram IP can
        /// carry is refused (a capture of 16-byte fragments exceeds a smaller bound); the
        /// searches below are logarithmic, so the bound costs time only in bytes held.
        public var maxFragmentsPerDatagram = 8192
        public var timeoutSeconds: Int64 = 30
        public init() {}
    }

    public struct Stats: Sendable {
        public var fragments: UInt64 = 0
        public var reassembled: UInt64 = 0
        public var duplicates: UInt64 = 0
        /// IPv4 fragments that overlapped earlier ones (the earlier bytes were kept).
        public var overlapsTrimmed: UInt64 = 0
        /// Datagrams abandoned, by cause.
        public var overlaps: UInt64 = 0
        public var timedOut: UInt64 = 0
        public var evicted: UInt64 = 0
        public var malformed: UInt64 = 0
        /// Datagrams abandoned for more fragments than `maxFragmentsPerDatagram`.
        public var tooManyFragments: UInt64 = 0
        /// Fragments that arrived for a datagram already abandoned (overlap, cut, too many
        /// fragments) and were dropped with it.
        public var dropped: UInt64 = 0
        /// Fragments whose data the snaplen cut: their datagram cannot be completed.
        public var cut: UInt64 = 0
        public init() {}
    }

    /// A complete datagram's payload (everything after the IP header and, for IPv6, the
    /// fragment header), with the protocol that starts it.
    public struct Datagram {
        public var src: IPAddress
        public var dst: IPAddress
        public var proto: UInt8
        public var bytes: [UInt8]
    }

    struct Key: Hashable {
        var src: IPAddress
        var dst: IPAddress
        var id: UInt32
        var proto: UInt8
    }

    final class Pending {
        let key: Key
        let firstSeen: Timestamp
        /// Sorted by offset, never overlapping.
        var pieces: [(offset: Int, bytes: [UInt8])] = []
        var total: Int?
        var held = 0
        /// Abandoned (overlap, cut by the snaplen): later fragments are swallowed until the timeout.
        var abandoned = false
        init(key: Key, firstSeen: Timestamp) { self.key = key; self.firstSeen = firstSeen }

        /// The index of the first piece starting at or after `offset` (binary search: a
        /// datagram may hold thousands of pieces).
        func firstPiece(atOrAfter offset: Int) -> Int {
            var lo = 0, hi = pieces.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if pieces[mid].offset < offset { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
    }

    public let options: Options
    @exclusivity(unchecked) public private(set) var stats = Stats()
    @exclusivity(unchecked) var table: [Key: Pending] = [:]
    /// Oldest first, for the timeout and eviction; entries already gone are skipped.
    @exclusivity(unchecked) var order: [Pending] = []
    @exclusivity(unchecked) var head = 0
    @exclusivity(unchecked) var heldBytes = 0
    @exclusivity(unchecked) var clock = Timestamp(seconds: .min, nanos: 0)
    @exclusivity(unchecked) var jumpVotes = 0

    public init(options: Options = Options()) { self.options = options }

    /// Datagrams still waiting for fragments.
    public var inProgress: Int { table.count }

    /// Adds a fragment; returns the datagram when this fragment completes it.
    public func add(_ f: IPFragment, at ts: Timestamp) -> Datagram? {
        stats.fragments += 1
        advance(ts)
        let end = f.offset + f.dataLength
        // IP cannot describe more than 65,535 bytes; fragments that are not the last carry
        // multiples of 8.
        guard end <= 65_535, f.dataLength >= 0, !f.more || (f.dataLength > 0 && f.dataLength % 8 == 0) else {
            stats.malformed += 1
            return nil
        }
        let key = Key(src: f.src, dst: f.dst, id: f.id, proto: f.proto)
        let d: Pending
        if let existing = table[key] {
            d = existing
        } else {
            while table.count >= options.maxDatagrams, evictOldest() {}
            // Aged from its own first fragment: fragments right after a jump the clock has
            // not followed yet are not old (a stamp behind the clock counts from the clock).
            d = Pending(key: key, firstSeen: max(ts, clock))
            table[key] = d
            order.append(d)
        }
        if d.abandoned {
            stats.dropped += 1
            return nil
        }
        if f.data.count < f.dataLength {
            stats.cut += 1
            abandon(d)
            return nil
        }
        if !f.more {
            if let t = d.total, t != end { return overlap(d) }
            if let last = d.pieces.last, last.offset + last.bytes.count > end { return overlap(d) }
            d.total = end
        } else if let t = d.total, end > t {
            return overlap(d)
        }
        // Find the place; any overlap other than an exact duplicate abandons the datagram.
        let i = d.firstPiece(atOrAfter: f.offset)
        if i < d.pieces.count, d.pieces[i].offset == f.offset, d.pieces[i].bytes.count == f.dataLength,
           d.pieces[i].bytes.elementsEqual(f.data) {
            stats.duplicates += 1
            return nil
        }
        let overlapsBefore = i > 0 && d.pieces[i - 1].offset + d.pieces[i - 1].bytes.count > f.offset
        let overlapsAfter = i < d.pieces.count && d.pieces[i].offset < end
        // IPv6: any overlap abandons the datagram (RFC 5722). IPv4: the first copy of each
        // byte wins, as tshark and Zeek reassemble, and the overlap is counted.
        if (overlapsBefore || overlapsAfter) && f.src.isV6 { return overlap(d) }
        guard d.pieces.count < options.maxFragmentsPerDatagram else {
            stats.tooManyFragments += 1
            abandon(d)
            return nil
        }
        while heldBytes + f.dataLength > options.maxBytes, let oldest = oldestLive(), oldest !== d { _ = evict(oldest) }
        if overlapsBefore || overlapsAfter {
            stats.overlapsTrimmed += 1
            insertUncovered(d, f, end: end)
        } else {
            d.pieces.insert((f.offset, Array(f.data)), at: i)
            d.held += f.dataLength
            heldBytes += f.dataLength
        }
        return complete(d)
    }

    /// Inserts the parts of an IPv4 fragment that no earlier fragment covered.
    func insertUncovered(_ d: Pending, _ f: IPFragment, end: Int) {
        var add: [(offset: Int, bytes: [UInt8])] = []
        var cursor = f.offset
        // From the piece before the fragment's start (it may reach into it) to the fragment's end.
        var j = max(0, d.firstPiece(atOrAfter: f.offset) - 1)
        while j < d.pieces.count && d.pieces[j].offset < end {
            let p = d.pieces[j]
            j += 1
            guard p.offset + p.bytes.count > f.offset else { continue }
            if p.offset > cursor { add.append((cursor, Array(f.data[(cursor - f.offset)..<(p.offset - f.offset)]))) }
            cursor = max(cursor, p.offset + p.bytes.count)
        }
        if cursor < end { add.append((cursor, Array(f.data[(cursor - f.offset)..<(end - f.offset)]))) }
        for piece in add {
            let at = d.firstPiece(atOrAfter: piece.offset)
            d.pieces.insert(piece, at: at)
            d.held += piece.bytes.count
            heldBytes += piece.bytes.count
        }
    }

    /// The whole datagram, if its pieces now run from 0 to its end without a hole.
    func complete(_ d: Pending) -> Datagram? {
        guard let total = d.total, d.held == total else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(total)
        for p in d.pieces {
            guard p.offset == bytes.count else { return nil }
            bytes.append(contentsOf: p.bytes)
        }
        remove(d)
        stats.reassembled += 1
        return Datagram(src: d.key.src, dst: d.key.dst, proto: d.key.proto, bytes: bytes)
    }

    func overlap(_ d: Pending) -> Datagram? {
        stats.overlaps += 1
        abandon(d)
        return nil
    }

    /// Frees the datagram's bytes but keeps its key until the timeout, so the fragments
    /// still to come are not taken for a new datagram.
    func abandon(_ d: Pending) {
        heldBytes -= d.held
        d.held = 0
        d.pieces = []
        d.abandoned = true
    }

    func remove(_ d: Pending) {
        heldBytes -= d.held
        d.held = 0
        d.pieces = []
        if table[d.key] === d { table[d.key] = nil }
        compactOrder()
    }

    func oldestLive() -> Pending? {
        while head < order.count {
            let d = order[head]
            if table[d.key] === d { return d }
            head += 1
        }
        return nil
    }

    @discardableResult
    func evictOldest() -> Bool {
        guard let d = oldestLive() else { return false }
        return evict(d)
    }

    func evict(_ d: Pending) -> Bool {
        if !d.abandoned { stats.evicted += 1 }
        remove(d)
        return true
    }

    /// Drops entries of the order list that no longer name a live datagram, now and then.
    func compactOrder() {
        if head > 64 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        if order.count > 4 * options.maxDatagrams + 64 {
            order = order[head...].filter { table[$0.key] === $0 }
            head = 0
        }
    }

    /// The packet clock; a lone timestamp far ahead does not move it (it would time out
    /// every datagram in progress).
    func advance(_ ts: Timestamp) {
        guard clock.seconds == .min || ts > clock else { return }
        if clock.seconds != .min && ts.seconds(since: clock) > options.timeoutSeconds {
            // Followed once 8 fragments in a row agree.
            jumpVotes += 1
            guard jumpVotes >= 8 else { return }
        }
        jumpVotes = 0
        let moved = ts.seconds != clock.seconds
        clock = ts
        if moved { expire() }
    }

    /// Oldest first; a datagram stamped ahead of the clock (a jump not followed) waits.
    func expire() {
        while let d = oldestLive(), clock.seconds(since: d.firstSeen) > options.timeoutSeconds {
            if !d.abandoned { stats.timedOut += 1 }
            remove(d)
        }
    }

    /// At the end of the capture: datagrams never completed.
    public var incomplete: Int { table.values.filter { !$0.abandoned }.count }
}
