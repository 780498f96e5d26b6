/// One TCP connection: its two endpoints in client/server roles and two half-streams.
public final class Connection {
    /// 1-based, in order of first appearance.
    public let number: UInt64
    public let client: Endpoint
    public let server: Endpoint
    /// True when a SYN told us the roles; false when guessed (port claim or lower port).
    public let rolesFromSYN: Bool
    public let firstPacket: PacketRef
    /// The table key (both endpoints in a fixed order).
    let key: ConnectionKey
    public internal(set) var lastSeen: Timestamp
    var halves: [HalfStream] = [HalfStream(), HalfStream()]
    var clientISN: UInt32?
    var serverISN: UInt32?
    var rstSeen = false
    /// Packets of this connection so far (the clock of the ACK-before-data grace).
    var packetCount: UInt64 = 0
    /// Some direction holds an acknowledgement for bytes not seen yet (see `HalfStream.ackedEnd`).
    var ackHole = false
    /// Listed in the reassembler's sweep of connections with open ACK holes.
    var inAckList = false
    /// Tracking ended (`closed` was sent); late segments may still be attributed to it.
    public internal(set) var isClosed = false

    /// Room for the next stage to hang its per-connection state.
    public var context: AnyObject?
    /// The outputs' per-connection text (endpoints formatted once).
    public var outputCache: AnyObject?
    /// The stream export's per-connection state.
    var exportEntry: AnyObject?

    // Least-recently-used list links (the table owns the list). The list is kept lazily:
    // a packet only stamps `lastTouch`; the order is fixed when the old end is examined.
    var newer: Connection?
    unowned(unsafe) var older: Connection?
    var lastTouch: UInt64 = 0
    var linkedAt: UInt64 = 0

    init(number: UInt64, client: Endpoint, server: Endpoint, rolesFromSYN: Bool, packet: PacketRef) {
        self.number = number
        self.client = client
        self.server = server
        self.rolesFromSYN = rolesFromSYN
        self.firstPacket = packet
        self.lastSeen = packet.ts
        key = ConnectionKey(client, server)
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
struct PendingSegment {
    var offset: UInt64
    var bytes: [UInt8]
    var missingLength: Int
    var packet: PacketRef
    var length: Int { missingLength > 0 ? missingLength : bytes.count }
    var end: UInt64 { offset + UInt64(length) }
}

/// One direction of a connection.
struct HalfStream {
    var started = false
    var startedAtSYN = false
    /// Sequence number of the next byte we expect, and its stream offset.
    var nextSeq: UInt32 = 0
    var offset: UInt64 = 0
    var pending: [PendingSegment] = []
    var pendingBytes = 0
    var finOffset: UInt64?
    var finished = false
    var delivered: UInt64 = 0
    var gapBytes: UInt64 = 0
    /// The receive window this side last advertised, and its SYN's window-scale option.
    var window: UInt16 = 0
    var windowSeen = false
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

    /// Stream offset of a sequence number, wraparound-safe within ±2 GiB of `nextSeq`.
    @inline(__always)
    func offsetOf(_ seq: UInt32) -> Int64 {
        Int64(offset) + Int64(Int32(bitPattern: seq &- nextSeq))
    }
}
