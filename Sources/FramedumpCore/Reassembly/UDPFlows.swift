/// UDP's counterpart of the reassembler: datagrams grouped into flows by their address pair,
/// each flow a `Connection` whose "stream" is its datagrams one after another (a datagram is
/// handed on whole, as one `data` event; the next stage knows a flow never splits one).
///
/// Only datagrams a protocol claims (`udp port N;`) make flows: DNS, QUIC and the rest of a
/// host's UDP stay out of the output. The server is the claimed port's side. A flow ends after
/// `idleTimeoutSeconds` of packet time without a datagram, when the table is full (the least
/// recently seen goes), or at the end of the capture.
public final class UDPFlows {
    public struct Options: Sendable {
        public var maxFlows = 65_536
        public var idleTimeoutSeconds: Int64 = 60
        public init() {}
    }

    public struct Stats: Sendable {
        public var flows: UInt64 = 0
        public var datagrams: UInt64 = 0
        public var bytes: UInt64 = 0
        /// Datagrams the snaplen cut (the missing tail is a gap of that flow).
        public var truncated: UInt64 = 0
        public var idleClosed: UInt64 = 0
        public var evicted: UInt64 = 0
    }

    let options: Options
    let consumer: StreamConsumer
    /// Whether a UDP port is a protocol's (`udp port N;`).
    let isServerPort: (UInt16) -> Bool
    /// Connection numbers, shared with TCP's reassembler so every flow and connection has its own.
    let nextNumber: () -> UInt64
    @exclusivity(unchecked) var table: [ConnectionKey: Connection] = [:]
    @exclusivity(unchecked) public private(set) var stats = Stats()
    /// The packet clock, and when the table is next swept for idle flows.
    @exclusivity(unchecked) var clock = Timestamp(seconds: 0, nanos: 0)
    @exclusivity(unchecked) var nextSweep: Int64 = .min
    /// The packet being read: what idle and evicted flows' close events are dated by.
    @exclusivity(unchecked) var lastPacket = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))

    package init(options: Options, consumer: StreamConsumer, isServerPort: @escaping (UInt16) -> Bool,
         nextNumber: @escaping () -> UInt64) {
        self.options = options
        self.consumer = consumer
        self.isServerPort = isServerPort
        self.nextNumber = nextNumber
    }

    /// Takes a datagram if a protocol claims one of its ports; false: nobody does.
    @discardableResult
    package func add(_ d: UDPDatagram, packet: PacketRef) -> Bool {
        lastPacket = packet
        if packet.ts > clock { clock = packet.ts }
        if clock.seconds >= nextSweep { sweep() }
        let key = ConnectionKey(d.src, d.dst)
        let c: Connection
        if let known = table[key] {
            c = known
        } else {
            let dstServes = isServerPort(d.dst.port)
            guard dstServes || isServerPort(d.src.port) else { return false }
            if table.count >= options.maxFlows { evictOldest() }
            c = Connection(number: nextNumber(), client: dstServes ? d.src : d.dst, server: dstServes ? d.dst : d.src,
                           rolesFromSYN: false, packet: packet, udp: true)
            for h in c.halves.indices { c.halves[h].started = true; c.halves[h].startedAtSYN = true }
            table[key] = c
            stats.flows += 1
            consumer.opened(c, packet: packet)
        }
        c.lastSeen = packet.ts
        let dir: Direction = d.src == c.client ? .c2s : .s2c
        let h = dir.rawValue
        let offset = c.halves[h].delivered
        stats.datagrams += 1
        stats.bytes += UInt64(d.payload.count)
        c.halves[h].delivered += UInt64(d.payload.count)
        consumer.data(c, dir, d.payload, offset: offset, packet: packet)
        if d.isTruncated {
            // The snaplen cut the datagram: its tail is a gap, and the next datagram starts afresh.
            stats.truncated += 1
            let missing = UInt64(d.payloadLength - d.payload.count)
            c.halves[h].gapBytes += missing
            consumer.gap(c, dir, offset: c.halves[h].delivered, length: missing, reason: .truncated, packet: packet)
            c.halves[h].delivered += missing
        }
        return true
    }

    /// Closes the flows idle for longer than the timeout (at most once a second of packet time).
    func sweep() {
        nextSweep = clock.seconds + 1
        guard !table.isEmpty else { return }
        let idle = table.values.filter { clock.seconds(since: $0.lastSeen) > options.idleTimeoutSeconds }
        for c in idle.sorted(by: { $0.number < $1.number }) {
            stats.idleClosed += 1
            close(c, .idle, at: lastPacket)
        }
    }

    /// The table is full: the flows seen least recently (an eighth of the table) make room.
    func evictOldest() {
        let n = max(1, table.count / 8)
        for c in table.values.sorted(by: { ($0.lastSeen, $0.number) < ($1.lastSeen, $1.number) }).prefix(n) {
            stats.evicted += 1
            close(c, .evicted, at: lastPacket)
        }
    }

    func close(_ c: Connection, _ reason: CloseReason, at packet: PacketRef) {
        table[c.key] = nil
        c.isClosed = true
        c.deliveredAtClose = (c.bytesDelivered(.c2s), c.bytesDelivered(.s2c))
        consumer.closed(c, reason: reason, packet: packet)
        c.context = nil
    }

    /// End of capture: every flow still open closes, in the order they opened.
    package func finish() {
        for c in table.values.sorted(by: { $0.number < $1.number }) { close(c, .captureEnd, at: lastPacket) }
    }
}
