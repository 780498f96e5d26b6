/// What the KCP layer counts for one protocol over it (the summary's `kcp:` line). Counted
/// where datagrams are read.
final class KCPProtocolState {
    let stream: Bool
    @exclusivity(unchecked) var conversations: UInt64 = 0
    @exclusivity(unchecked) var segments: UInt64 = 0
    @exclusivity(unchecked) var acks: UInt64 = 0
    @exclusivity(unchecked) var windowSegments: UInt64 = 0
    @exclusivity(unchecked) var retransmitted: UInt64 = 0
    @exclusivity(unchecked) var lost: UInt64 = 0
    @exclusivity(unchecked) var messages: UInt64 = 0
    @exclusivity(unchecked) var fragments: UInt64 = 0
    @exclusivity(unchecked) var malformedDatagrams: UInt64 = 0
    @exclusivity(unchecked) var heldLimit: UInt64 = 0
    @exclusivity(unchecked) var conversationLimit: UInt64 = 0

    init(stream: Bool) { self.stream = stream }
}

/// One conversation of one flow, both directions: the row of `-z kcp`.
final class KCPConversationStats {
    let connection: UInt64
    let endpoints: String
    let protocolName: String
    let conv: UInt32
    @exclusivity(unchecked) var pushes: [UInt64] = [0, 0]
    @exclusivity(unchecked) var retransmitted: [UInt64] = [0, 0]
    /// Holes filled: a segment that came after later ones (a loss the sender repaired).
    @exclusivity(unchecked) var recovered: [UInt64] = [0, 0]
    @exclusivity(unchecked) var lost: [UInt64] = [0, 0]
    @exclusivity(unchecked) var messages: [UInt64] = [0, 0]
    /// Round trips, from a data segment to the ACK that echoes its timestamp (packet time).
    @exclusivity(unchecked) var rttCount: UInt64 = 0
    @exclusivity(unchecked) var rttSum: Int64 = 0
    @exclusivity(unchecked) var rttMin: Int64 = .max
    @exclusivity(unchecked) var rttMax: Int64 = 0
    /// Each direction's data segments awaiting their ACK: sn → (ts, when it was captured).
    @exclusivity(unchecked) private var awaiting: [[UInt32: (ts: UInt32, at: Timestamp)]] = [[:], [:]]
    static let maxAwaiting = 4096

    /// The packet of its first segment (orders a sharded run's rows).
    @exclusivity(unchecked) var firstPacket: UInt64 = 0

    init(connection: UInt64, endpoints: String, protocolName: String, conv: UInt32) {
        self.connection = connection
        self.endpoints = endpoints
        self.protocolName = protocolName
        self.conv = conv
    }

    /// Another conversation's counts added in (the overflow row of a sharded run).
    func fold(_ o: KCPConversationStats) {
        for d in 0..<2 {
            pushes[d] += o.pushes[d]
            retransmitted[d] += o.retransmitted[d]
            recovered[d] += o.recovered[d]
            lost[d] += o.lost[d]
            messages[d] += o.messages[d]
        }
        rttCount += o.rttCount
        rttSum += o.rttSum
        rttMin = min(rttMin, o.rttMin)
        rttMax = max(rttMax, o.rttMax)
    }

    @inline(__always)
    func sent(_ d: Direction, sn: UInt32, ts: UInt32, at: Timestamp) {
        if awaiting[d.rawValue].count >= Self.maxAwaiting { awaiting[d.rawValue].removeAll(keepingCapacity: true) }
        awaiting[d.rawValue][sn] = (ts, at)
    }

    /// An ACK sent in direction `d` for the data segment `sn` of the other direction.
    @inline(__always)
    func acked(_ d: Direction, sn: UInt32, ts: UInt32, at: Timestamp) {
        let o = d.opposite.rawValue
        guard let sent = awaiting[o][sn] else { return }
        // The ACK echoes the timestamp of the copy it answers: the latest one sent.
        guard sent.ts == ts else { return }
        awaiting[o][sn] = nil
        let rtt = at.nanos(since: sent.at)
        guard rtt >= 0, rtt < 3_600_000_000_000 else { return }
        rttCount += 1
        rttSum += rtt
        rttMin = min(rttMin, rtt)
        rttMax = max(rttMax, rtt)
    }
}

/// Every KCP conversation of the run, for `-z kcp` (bounded: past the bound, rows are
/// summed into one).
final class KCPManagerState {
    @exclusivity(unchecked) var rows: [KCPConversationStats] = []
    static let maxRows = 10_000
    lazy var overflow = KCPConversationStats(connection: 0, endpoints: "(more conversations)", protocolName: "", conv: 0)
    @exclusivity(unchecked) var overflowed: UInt64 = 0

    func row(_ c: Connection, _ conv: UInt32, _ p: ProtocolRuntime, packet: UInt64) -> KCPConversationStats {
        guard rows.count < Self.maxRows else {
            overflowed += 1
            return overflow
        }
        let r = KCPConversationStats(connection: c.number, endpoints: c.name, protocolName: p.schema.name, conv: conv)
        r.firstPacket = packet
        rows.append(r)
        return r
    }

    /// A shard's rows (of a sharded run) join these, in the order one thread would have made
    /// them: a conversation's row is made at its first datagram, and a datagram's event comes
    /// when its packet is read, so by packet number (one datagram's conversations are of one
    /// flow, so of one shard: their order there breaks the tie). Past the bound, rows fold
    /// into the overflow row as they would have.
    func absorb(_ o: KCPManagerState) {
        var all = rows.enumerated().map { (at: $1.firstPacket, shard: 0, local: $0, row: $1) }
        all += o.rows.enumerated().map { (at: $1.firstPacket, shard: 1, local: $0, row: $1) }
        all.sort { ($0.at, $0.shard, $0.local) < ($1.at, $1.shard, $1.local) }
        rows = all.prefix(Self.maxRows).map(\.row)
        overflowed += o.overflowed
        if o.overflowed > 0 { overflow.fold(o.overflow) }
        for x in all.dropFirst(Self.maxRows) {
            overflowed += 1
            overflow.fold(x.row)
        }
    }
}
