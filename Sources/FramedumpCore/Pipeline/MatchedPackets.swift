/// `-Y FILTER -w FILE`: the packets of the messages the filter selects, as tshark writes the
/// matching packets. A message's packets are known only once it is decoded, so a file is read
/// twice: this sink takes the matching messages of the first pass, and `keeps` says, packet by
/// packet in the second, which ones to write.
///
/// Written: every packet of a matching message's connection and direction from the first packet
/// that carried any of its bytes to the one that completed it (a packet carrying several
/// messages is written once if any of them matches), and the SYN packets of such connections,
/// so the written capture knows the client and server and decodes the same way. (UDP flows:
/// see `keeps(_:udp:)`.)
public final class MatchedPackets: MessageSink {
    /// Per direction of a connection's addresses: [first, last] packet ranges in the order the
    /// messages were completed (so `last` never decreases), and the least `first` from each
    /// range on, so one binary search answers "is N inside some range?".
    struct Ranges {
        var last: [UInt64] = []
        var first: [UInt64] = []
        var minFirstFrom: [UInt64] = []

        mutating func add(_ f: UInt64, _ l: UInt64) {
            // Completion order: a message completed earlier cannot end later.
            let l = max(l, last.last ?? 0)
            last.append(l)
            first.append(f)
        }

        mutating func seal() {
            minFirstFrom = first
            var i = first.count - 1
            while i > 0 { minFirstFrom[i - 1] = min(minFirstFrom[i - 1], minFirstFrom[i]); i -= 1 }
        }

        func contains(_ n: UInt64) -> Bool {
            var lo = 0, hi = last.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if last[mid] >= n { hi = mid } else { lo = mid + 1 }
            }
            return lo < last.count && minFirstFrom[lo] <= n
        }
    }

    struct Entry {
        var client: Endpoint
        var ranges = [Ranges(), Ranges()]
        /// The last packet of any matching message: SYNs after it open other connections.
        var end: UInt64 = 0
    }

    @exclusivity(unchecked) var entries: [ConnectionKey: Entry] = [:]
    @exclusivity(unchecked) public private(set) var messages = 0

    public init() {}

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let key = ConnectionKey(c.client, c.server)
        var e = entries[key] ?? Entry(client: c.client)
        let f = m.frame.firstPacket.number, l = m.frame.lastPacket.number
        e.ranges[m.direction.rawValue].add(min(f, l), l)
        e.end = max(e.end, l)
        entries[key] = e
        messages += 1
    }

    public func finish() {
        for k in entries.keys {
            entries[k]!.ranges[0].seal()
            entries[k]!.ranges[1].seal()
        }
    }

    /// Whether packet `number`, carrying `s`, belongs to a matching message (after `finish`).
    public func keeps(_ number: UInt64, _ s: TCPSegment) -> Bool {
        guard let e = entries[ConnectionKey(s.src, s.dst)] else { return false }
        if s.flags.contains(.syn) { return number <= e.end }
        return e.ranges[s.src == e.client ? 0 : 1].contains(number)
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
