/// One TCP connection (or UDP flow): its two endpoints in client/server roles and two half-streams.
public final class Connection {
    /// 1-based, in order of first appearance.
    public let number: UInt64
    public let client: Endpoint
    public let server: Endpoint
    /// True when a SYN told us the roles; false when guessed (port claim or lower port).
    public let rolesFromSYN: Bool
    public let firstPacket: PacketRef
    /// A UDP flow (`UDPFlows`): its stream is its datagrams, each handed on whole.
    public let udp: Bool
    /// A connection that carries bytes sent after an earlier one closed (same addresses, no
    /// new SYN): that one's number. Its roles come from it; it did not itself begin at a SYN.
    @exclusivity(unchecked) public internal(set) var continues: UInt64?
    /// The outputs' per-connection text (endpoints formatted once; in a sharded run, the
    /// twin's is the shard's).
    @exclusivity(unchecked) public var outputCache: AnyObject?
    /// The bytes delivered each way when the connection closed, for the outputs' close lines:
    /// set before `closed` is sent (a shard's twin gets it with the event).
    @exclusivity(unchecked) public internal(set) var deliveredAtClose: (c2s: UInt64, s2c: UInt64) = (0, 0)
    /// The table key (both endpoints in a fixed order).
    let key: ConnectionKey
    @exclusivity(unchecked) public internal(set) var lastSeen: Timestamp
    @exclusivity(unchecked) package var halves: [HalfStream] = [HalfStream(), HalfStream()]
    @exclusivity(unchecked) var clientISN: UInt32?
    @exclusivity(unchecked) var serverISN: UInt32?
    /// Earlier SYN-ACK ISNs of a retried handshake (at most 4), while no server byte came.
    @exclusivity(unchecked) var otherServerISNs: [UInt32] = []
    @exclusivity(unchecked) var rstSeen = false
    /// After an accepted RST the connection lingers a moment for the data already in flight
    /// (the peer had not seen the RST yet): the RST packet, and packets since.
    @exclusivity(unchecked) var resetPacket: PacketRef?
    @exclusivity(unchecked) var packetsSinceReset = 0
    @exclusivity(unchecked) var inResetList = false
    /// Packets of this connection while it had an ACK hole (the clock of the grace).
    @exclusivity(unchecked) var packetCount: UInt64 = 0
    /// Some direction holds an acknowledgement for bytes not seen yet (see `HalfStream.ackedEnd`).
    @exclusivity(unchecked) var ackHole = false
    /// Listed in the reassembler's sweep of connections with open ACK holes.
    @exclusivity(unchecked) var inAckList = false
    /// Tracking ended (`closed` was sent); late segments may still be attributed to it.
    @exclusivity(unchecked) public internal(set) var isClosed = false

    /// Room for the next stage to hang its per-connection state.
    public var context: AnyObject? {
        didSet { contextRef = context.map { Unmanaged.passUnretained($0) } }
    }
    /// The same, for the per-packet path: reached without touching its reference count (the
    /// connection holds it until `context` changes).
    @exclusivity(unchecked) public private(set) var contextRef: Unmanaged<AnyObject>?
    /// The stream export's per-connection state.
    @exclusivity(unchecked) var exportEntry: AnyObject?

    // Least-recently-used list links (the table owns the list). The list is kept lazily:
    // a packet only stamps `lastTouch`; the order is fixed when the old end is examined.
    @exclusivity(unchecked) var newer: Connection?
    unowned(unsafe) var older: Connection?
    @exclusivity(unchecked) var lastTouch: UInt64 = 0
    @exclusivity(unchecked) var linkedAt: UInt64 = 0

    init(number: UInt64, client: Endpoint, server: Endpoint, rolesFromSYN: Bool, packet: PacketRef, udp: Bool = false) {
        self.number = number
        self.udp = udp
        self.client = client
        self.server = server
        self.rolesFromSYN = rolesFromSYN
        self.firstPacket = packet
        self.lastSeen = packet.ts
        key = ConnectionKey(client, server)
    }

    // A connection-sharded run (`ShardPool`): the shard this connection's events go to, the
    // shard's own copy of it (`twin`), and the round that last took that copy.
    @exclusivity(unchecked) var shard = 0
    @exclusivity(unchecked) var twin: Connection?
    @exclusivity(unchecked) var twinRound: UInt64 = 0

    /// A copy for the shard that decodes this connection: what is set once, here; what the
    /// reassembler changes later and the next stage reads (where each direction began, the
    /// bytes delivered at close) comes with each event.
    func makeTwin() -> Connection {
        let t = Connection(number: number, client: client, server: server, rolesFromSYN: rolesFromSYN,
                           packet: firstPacket, udp: udp)
        t.continues = continues
        for h in 0..<2 { t.halves[h].startedAtSYN = halves[h].startedAtSYN }
        return t
    }

    /// `CLIENTIP:CPORT-SERVERIP:SPORT`.
    public var name: String { "\(client.text)-\(server.text)" }

    /// Whether this direction's stream began at a SYN (so its first byte starts a message).
    public func startsAtSYN(_ d: Direction) -> Bool { halves[d.rawValue].startedAtSYN }

    public func bytesDelivered(_ d: Direction) -> UInt64 { halves[d.rawValue].delivered }
    public func gapBytes(_ d: Direction) -> UInt64 { halves[d.rawValue].gapBytes }

    var bothFinished: Bool { halves[0].finished && halves[1].finished }
}

/// A segment copied aside until the hole before it fills. `missing` marks a range the
/// snaplen cut off: it holds no bytes and becomes a gap when its turn comes.
package struct PendingSegment {
    var offset: UInt64
    package var bytes: [UInt8]
    var missingLength: Int
    var packet: PacketRef
    var length: Int { missingLength > 0 ? missingLength : bytes.count }
    var end: UInt64 { offset + UInt64(length) }
}

/// One direction of a connection.
package struct HalfStream {
    var started = false
    var startedAtSYN = false
    /// Sequence number of the next byte we expect, and its stream offset.
    var nextSeq: UInt32 = 0
    var offset: UInt64 = 0
    package var pending: [PendingSegment] = []
    package var pendingBytes = 0
    var finOffset: UInt64?
    var finished = false
    var delivered: UInt64 = 0
    var gapBytes: UInt64 = 0
    /// The receive window this side last advertised, and its SYN's window-scale option.
    /// (`UInt32.max` until this side has sent a segment.)
    var window: UInt32 = .max
    var windowScale: UInt8?
    /// The highest stream offset the peer acknowledged beyond what we have delivered.
    /// It becomes an acked-unseen gap only once the evidence is final: `ackMarkEnd` is what
    /// was acknowledged when the grace started at packet `ackMarkPacket` / time `ackMarkTime`.
    var ackedEnd: UInt64 = 0
    var ackMarkEnd: UInt64 = 0
    var ackMarkPacket: UInt64 = 0
    var ackMarkTime = Timestamp(seconds: 0, nanos: 0)
    /// Recently reported gaps that late bytes might still fill (bounded, newest last).
    var reportedGaps: [(start: UInt64, end: UInt64)] = []
    /// The last bytes delivered, kept once this direction retransmitted (see `RecentBytes`).
    var recent: RecentBytes?

    /// Stream offset of a sequence number, wraparound-safe within ±2 GiB of `nextSeq`.
    @inline(__always)
    func offsetOf(_ seq: UInt32) -> Int64 {
        Int64(offset) + Int64(Int32(bitPattern: seq &- nextSeq))
    }
}

/// The last bytes a direction delivered, kept once that direction has shown a retransmission,
/// so that a later copy of them carrying other bytes is reported as a conflict (and not only
/// copies of bytes still waiting out of order). A ring indexed by stream offset.
final class RecentBytes {
    @exclusivity(unchecked) private var buf: [UInt8]
    /// Stream offset just after the last byte stored, and how many bytes before it are valid.
    @exclusivity(unchecked) private(set) var end: UInt64
    @exclusivity(unchecked) private var filled = 0

    init(capacity: Int, end: UInt64) {
        buf = [UInt8](repeating: 0, count: max(1, capacity))
        self.end = end
    }

    func append(_ b: UnsafeRawBufferPointer, at offset: UInt64) {
        if offset != end { filled = 0 }  // a gap: what came before no longer lines up
        let cap = buf.count
        var src = b
        var start = offset
        if src.count > cap {
            start += UInt64(src.count - cap)
            src = UnsafeRawBufferPointer(rebasing: src[(src.count - cap)...])
        }
        buf.withUnsafeMutableBytes { dst in
            var i = Int(start % UInt64(cap))
            var j = 0
            while j < src.count {
                let n = min(cap - i, src.count - j)
                dst.baseAddress!.advanced(by: i).copyMemory(from: src.baseAddress!.advanced(by: j), byteCount: n)
                j += n
                i = 0
            }
        }
        end = offset + UInt64(b.count)
        filled = min(cap, filled + b.count)
    }

    /// The part of [at, at + b.count) that is still held and differs from `b`, if any.
    func differing(_ b: UnsafeRawBufferPointer, at: UInt64) -> (lo: UInt64, hi: UInt64)? {
        let lo = max(at, end - UInt64(filled)), hi = min(at + UInt64(b.count), end)
        guard lo < hi else { return nil }
        let cap = UInt64(buf.count)
        var first: UInt64?, last: UInt64 = 0
        var o = lo
        while o < hi {
            if buf[Int(o % cap)] != b[Int(o - at)] {
                if first == nil { first = o }
                last = o
            }
            o += 1
        }
        return first.map { ($0, last + 1) }
    }
}
