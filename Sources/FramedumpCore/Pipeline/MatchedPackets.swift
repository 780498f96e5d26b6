/// `-Y FILTER -w FILE`: the packets of the messages the filter selects, as tshark writes the
/// matching packets. A message's packets are known only once it is decoded, so a file is read
/// twice: this sink sees every message of the first pass (it evaluates the filter itself), and
/// `keep` says, packet by packet in the second, what to write.
///
/// The written file must decode the same way: the same messages, at the same times, from the
/// same packets. So, per direction of a connection:
/// - written whole: every packet carrying bytes of a matching message, and of any message that
///   shares a packet with one (transitively), so every frame begun in a written packet ends in
///   one and the deframer never starts inside a frame;
/// - written cut to their headers (as a snap length cuts them): the direction's other packets
///   up to the last written one, so the reader knows those bytes exist and were left out, and
///   reports them as a gap at once instead of waiting for a retransmission that never comes
///   (which dated the next messages by a later packet);
/// - the SYNs of such connections, so the reader knows the client and the server;
/// - under a WebSocket or TLS layer, every packet of the connection up to the last written
///   one: the handshake and every record before a message are needed to decode it.
/// (UDP flows: see `keeps(_:udp:)`.)
public final class MatchedPackets: MessageSink {
    /// What to do with one packet of the second pass.
    public enum Keep { case drop, whole, headers }

    /// One direction's packet ranges written whole: the merged runs of overlapping messages
    /// holding a match. Messages come in stream order, so one open run is enough (memory stays
    /// per connection, not per message).
    struct Ranges {
        var run: (first: UInt64, last: UInt64, matched: Bool)?
        var kept: [(first: UInt64, last: UInt64)] = []

        mutating func add(_ f: UInt64, _ l: UInt64, matched: Bool) {
            if let r = run, f <= r.last {
                run = (min(r.first, f), max(r.last, l), r.matched || matched)
                return
            }
            seal()
            run = (f, l, matched)
        }

        mutating func seal() {
            if let r = run, r.matched { kept.append((r.first, r.last)) }
            run = nil
        }

        func contains(_ n: UInt64) -> Bool {
            var lo = 0, hi = kept.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if kept[mid].last >= n { hi = mid } else { lo = mid + 1 }
            }
            return lo < kept.count && kept[lo].first <= n
        }

        var end: UInt64 { kept.last?.last ?? 0 }
    }

    struct Entry {
        var client: Endpoint
        var ranges = [Ranges(), Ranges()]
        /// The last packet written whole, over both directions: SYNs after it open other
        /// connections, and no packet after it is written cut.
        var end: UInt64 = 0
        /// Under a layer that needs the stream's whole history (a WebSocket handshake, TLS's
        /// records and their sequence numbers): every packet up to `end` is written whole.
        var whole = false
    }

    @exclusivity(unchecked) var entries: [ConnectionKey: Entry] = [:]
    @exclusivity(unchecked) public private(set) var messages = 0
    /// The run's `-Y` filter (the pipeline gives it, in place of a filtering sink in front).
    @exclusivity(unchecked) var evaluator: FilterEvaluator?

    public init() {}

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let matched = evaluator?.matches(m, c, p) ?? true
        let key = ConnectionKey(c.client, c.server)
        let f = m.frame.firstPacket.number, l = m.frame.lastPacket.number
        entries[key, default: Entry(client: c.client)].ranges[m.direction.rawValue].add(min(f, l), max(f, l), matched: matched)
        if p.topLayer != nil || (c.context as? Session)?.lower != nil { entries[key]!.whole = true }
        if matched { messages += 1 }
    }

    public func finish() {
        for k in Array(entries.keys) {
            var e = entries[k]!
            e.ranges[0].seal()
            e.ranges[1].seal()
            e.end = max(e.ranges[0].end, e.ranges[1].end)
            if e.end == 0 { entries[k] = nil } else { entries[k] = e }
        }
    }

    /// What to write of packet `number`, carrying `s` (after `finish`).
    public func keep(_ number: UInt64, _ s: TCPSegment) -> Keep {
        guard let e = entries[ConnectionKey(s.src, s.dst)], number <= e.end else { return .drop }
        if s.flags.contains(.syn) || e.whole { return .whole }
        let r = e.ranges[s.src == e.client ? 0 : 1]
        if r.contains(number) { return .whole }
        // Only a direction with something written needs its holes said.
        return number <= r.end && s.payloadLength > 0 ? .headers : .drop
    }

    /// Whether datagram packet `number` is kept: on a UDP flow with a matching message, every
    /// datagram both ways up to the last packet of its last match. A layer over UDP (KCP) puts
    /// segments in order, learns losses from the peer's acknowledgements and may deliver a
    /// message from a packet later than the one that carried its first bytes, so its messages
    /// decode the same way again only with the flow's other datagrams around them.
    public func keeps(_ number: UInt64, udp d: UDPDatagram) -> Bool {
        guard let e = entries[ConnectionKey(d.src, d.dst)] else { return false }
        return number <= e.end
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {}
    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {}
    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
}
