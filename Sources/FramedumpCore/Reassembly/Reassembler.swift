/// Turns TCP segments into ordered per-direction byte streams, one connection at a time.
///
/// In-order payload is handed on without a copy; only out-of-order segments are copied,
/// and only up to `maxBufferedBytes` per direction. The caller's packet timestamps are the
/// clock, so idle timeouts work the same offline and live.
public final class Reassembler {
    public let options: ReassemblyOptions
    public private(set) var stats = ReassemblyStats()
    let consumer: StreamConsumer
    /// Which ports a dissector claims as server ports (for connections seen without a SYN).
    let isServerPort: (UInt16) -> Bool

    var table = ConnectionTable()
    // Ends of the least-recently-used list.
    var newest: Connection?
    var oldest: Connection?
    /// Counts packets: the clock of the lazy LRU order.
    var tick: UInt64 = 0
    var lastExpiryCheck: Int64 = .min
    var nextNumber: UInt64 = 1
    /// The connection of the previous packet (cleared when it closes).
    var lastConnection: Connection?
    var lastPacket = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))

    public init(options: ReassemblyOptions, consumer: StreamConsumer,
                isServerPort: @escaping (UInt16) -> Bool = { _ in false }) {
        self.options = options
        self.consumer = consumer
        self.isServerPort = isServerPort
    }

    public var openConnections: Int { table.count }

    // MARK: - Segments in

    public func add(_ s: TCPSegment, packet: PacketRef) {
        lastPacket = packet
        tick &+= 1
        // Timeouts are in whole seconds: look once per second of capture time.
        if packet.ts.seconds != lastExpiryCheck {
            lastExpiryCheck = packet.ts.seconds
            expireIdle(now: packet.ts)
        }
        let key = ConnectionKey(s.src, s.dst)
        let syn = s.flags.contains(.syn), ackFlag = s.flags.contains(.ack)
        // Consecutive packets are usually of the same connection: skip the table then.
        var conn: Connection?
        if let last = lastConnection, last.key == key { conn = last } else { conn = table.find(key) }

        if let c = conn, syn, !ackFlag, s.src == c.client {
            // A new SYN with another ISN, or after the old connection ended: port reuse.
            if (c.clientISN != nil && c.clientISN != s.seq) || c.rstSeen || c.halves[0].finOffset != nil {
                close(c, reason: .reused, packet: packet)
                conn = nil
            }
        }
        if conn == nil {
            // Pure ACKs and stray RSTs do not open a connection: they carry no stream.
            guard syn || s.payloadLength > 0 || s.flags.contains(.fin) else {
                stats.ignoredSegments += 1
                return
            }
            conn = open(s, packet: packet)
        }
        guard let c = conn else { return }
        if lastConnection !== c { lastConnection = c }
        touch(c, packet.ts)

        let dir: Direction = s.src == c.client ? .c2s : .s2c
        if syn {
            if dir == .c2s, c.clientISN == nil { c.clientISN = s.seq }
            if !c.halves[dir.rawValue].started {
                c.halves[dir.rawValue].started = true
                c.halves[dir.rawValue].startedAtSYN = true
                c.halves[dir.rawValue].nextSeq = s.seq &+ 1
            }
        }
        let dataSeq = syn ? s.seq &+ 1 : s.seq
        if s.payloadLength > 0 {
            if !c.halves[dir.rawValue].started {
                c.halves[dir.rawValue].started = true
                c.halves[dir.rawValue].nextSeq = dataSeq
            }
            accept(c, dir, seq: dataSeq, bytes: s.payload, announced: s.payloadLength, packet: packet)
        }
        if s.flags.contains(.fin), c.halves[dir.rawValue].started, c.halves[dir.rawValue].finOffset == nil {
            let end = c.halves[dir.rawValue].offsetOf(dataSeq &+ UInt32(truncatingIfNeeded: s.payloadLength))
            c.halves[dir.rawValue].finOffset = UInt64(max(0, end))
        }
        // The peer acknowledging bytes we never saw: the capture missed them.
        // (Most ACKs acknowledge exactly what was delivered: nothing to check then.)
        if ackFlag && !s.flags.contains(.rst) && s.ack != c.halves[dir.opposite.rawValue].nextSeq {
            ackedUnseen(c, dir.opposite, ack: s.ack, packet: packet)
        }
        if s.flags.contains(.rst) {
            c.rstSeen = true
            close(c, reason: .rst, packet: packet)
            return
        }
        checkFinished(c, dir)
        if c.bothFinished { close(c, reason: .fin, packet: packet) }
    }

    /// Ends every connection still open (end of capture), in order of first appearance.
    public func finish() {
        let all = table.all.sorted { $0.number < $1.number }
        for c in all { close(c, reason: .captureEnd, packet: lastPacket) }
    }

    // MARK: - Connection table

    func open(_ s: TCPSegment, packet: PacketRef) -> Connection {
        if table.count >= options.maxConnections, let victim = leastRecentlyUsed() {
            stats.evicted += 1
            close(victim, reason: .evicted, packet: packet)
        }
        let syn = s.flags.contains(.syn), ack = s.flags.contains(.ack)
        let srcIsClient: Bool
        if syn { srcIsClient = !ack }
        else if isServerPort(s.dst.port) != isServerPort(s.src.port) { srcIsClient = isServerPort(s.dst.port) }
        else { srcIsClient = s.src.port > s.dst.port || (s.src.port == s.dst.port && s.src < s.dst) }
        let c = Connection(number: nextNumber, client: srcIsClient ? s.src : s.dst,
                           server: srcIsClient ? s.dst : s.src, rolesFromSYN: syn, packet: packet)
        nextNumber += 1
        stats.connections += 1
        table.insert(c)
        link(c)
        consumer.opened(c, packet: packet)
        return c
    }

    func close(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        guard table.remove(c.key) else { return }
        if lastConnection === c { lastConnection = nil }
        unlink(c)
        let gapReason: GapReason = reason == .captureEnd ? .captureEnd : .closed
        for d in Direction.allCases { flushPending(c, d, reason: gapReason, packet: packet) }
        consumer.closed(c, reason: reason, packet: packet)
        c.context = nil
    }

    func expireIdle(now: Timestamp) {
        while let c = oldest, now.seconds(since: c.lastSeen) > options.idleTimeoutSeconds {
            // A connection that saw packets since it was placed is moved up, not closed.
            if c.lastTouch > c.linkedAt && now.seconds(since: c.lastSeen) <= options.idleTimeoutSeconds {
                relink(c)
                continue
            }
            stats.idleClosed += 1
            close(c, reason: .idle, packet: lastPacket)
        }
    }

    /// The connection used longest ago: the old end of the list, after moving up the ones
    /// touched since they were placed (each moves at most once per examination).
    func leastRecentlyUsed() -> Connection? {
        while let c = oldest {
            if c.lastTouch > c.linkedAt && c !== newest { relink(c) } else { return c }
        }
        return nil
    }

    @inline(__always)
    func touch(_ c: Connection, _ ts: Timestamp) {
        if ts > c.lastSeen { c.lastSeen = ts }
        c.lastTouch = tick
    }

    func relink(_ c: Connection) {
        unlink(c)
        link(c)
    }

    func link(_ c: Connection) {
        c.linkedAt = tick
        c.older = newest
        c.newer = nil
        newest?.newer = c
        newest = c
        if oldest == nil { oldest = c }
    }

    func unlink(_ c: Connection) {
        if let n = c.newer { n.older = c.older } else { newest = c.older }
        if let o = c.older { o.newer = c.newer } else { oldest = c.newer }
        c.newer = nil
        c.older = nil
    }

    // MARK: - Half-streams

    func accept(_ c: Connection, _ d: Direction, seq: UInt32, bytes: UnsafeRawBufferPointer,
                announced: Int, packet: PacketRef) {
        let h = d.rawValue
        let rel = Int64(Int32(bitPattern: seq &- c.halves[h].nextSeq))
        let present = bytes.count
        let total = Int64(announced)
        if rel + total <= 0 {
            // Entirely before what we have delivered: a retransmission or a keep-alive probe.
            stats.retransmittedSegments += 1
            stats.retransmittedBytes += UInt64(announced)
            return
        }
        if rel <= 0 {
            let skip = Int(-rel)
            if skip > 0 { stats.retransmittedBytes += UInt64(skip) }
            if skip < present {
                deliver(c, d, UnsafeRawBufferPointer(rebasing: bytes[skip...]), packet: packet)
            }
            let missing = Int(total) - max(skip, present)
            if missing > 0 {
                // The snaplen cut this segment: the tail was on the wire, not in the capture.
                emitGap(c, d, length: UInt64(missing), reason: .truncated, packet: packet)
            }
            if !c.halves[h].pending.isEmpty { drain(c, d) }
            return
        }
        // A hole before this segment: keep a copy until it fills.
        stats.outOfOrderSegments += 1
        let start = c.halves[h].offset + UInt64(rel)
        if present > 0 {
            insertPending(c, d, PendingSegment(offset: start, bytes: Array(bytes), missingLength: 0, packet: packet))
        }
        if Int(total) > present {
            insertPending(c, d, PendingSegment(offset: start + UInt64(present), bytes: [],
                                               missingLength: Int(total) - present, packet: packet))
        }
        while c.halves[h].pendingBytes > options.maxBufferedBytes
            || c.halves[h].pending.count > options.maxBufferedSegments {
            stats.bufferLimitHits += 1
            skipToFirstPending(c, d, reason: .bufferLimit)
        }
    }

    @inline(__always)
    func deliver(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, packet: PacketRef) {
        let h = d.rawValue
        let off = c.halves[h].offset
        c.halves[h].offset += UInt64(bytes.count)
        c.halves[h].nextSeq &+= UInt32(truncatingIfNeeded: bytes.count)
        c.halves[h].delivered += UInt64(bytes.count)
        stats.deliveredBytes += UInt64(bytes.count)
        consumer.data(c, d, bytes, offset: off, packet: packet)
    }

    func emitGap(_ c: Connection, _ d: Direction, length: UInt64, reason: GapReason, packet: PacketRef) {
        guard length > 0 else { return }
        let h = d.rawValue
        let off = c.halves[h].offset
        c.halves[h].offset += length
        c.halves[h].nextSeq &+= UInt32(truncatingIfNeeded: length)
        c.halves[h].gapBytes += length
        stats.gaps += 1
        stats.gapBytes += length
        consumer.gap(c, d, offset: off, length: length, reason: reason, packet: packet)
    }

    /// Hands on every pending segment that the delivered stream has reached.
    func drain(_ c: Connection, _ d: Direction) {
        let h = d.rawValue
        var i = 0
        while i < c.halves[h].pending.count, c.halves[h].pending[i].offset <= c.halves[h].offset {
            let p = c.halves[h].pending[i]
            i += 1
            let cur = c.halves[h].offset
            guard p.end > cur else { stats.retransmittedBytes += UInt64(p.length); continue }
            let skip = Int(cur - p.offset)
            if p.missingLength > 0 {
                emitGap(c, d, length: UInt64(p.missingLength - skip), reason: .truncated, packet: p.packet)
            } else {
                p.bytes.withUnsafeBytes { b in
                    deliver(c, d, UnsafeRawBufferPointer(rebasing: b[skip...]), packet: p.packet)
                }
            }
        }
        if i > 0 {
            c.halves[h].pending.removeFirst(i)
            c.halves[h].pendingBytes = c.halves[h].pending.reduce(0) { $0 + $1.bytes.count }
        }
    }

    /// Gives up on the hole in front of the first pending segment.
    func skipToFirstPending(_ c: Connection, _ d: Direction, reason: GapReason) {
        let h = d.rawValue
        guard let first = c.halves[h].pending.first else { return }
        let cur = c.halves[h].offset
        if first.offset > cur {
            emitGap(c, d, length: first.offset - cur, reason: reason, packet: first.packet)
        }
        drain(c, d)
    }

    func flushPending(_ c: Connection, _ d: Direction, reason: GapReason, packet: PacketRef) {
        while !c.halves[d.rawValue].pending.isEmpty { skipToFirstPending(c, d, reason: reason) }
        // A FIN beyond what we saw: the bytes before it never arrived.
        if let fin = c.halves[d.rawValue].finOffset, fin > c.halves[d.rawValue].offset,
           fin - c.halves[d.rawValue].offset < (1 << 31) {
            emitGap(c, d, length: fin - c.halves[d.rawValue].offset, reason: reason, packet: packet)
        }
    }

    func ackedUnseen(_ c: Connection, _ d: Direction, ack: UInt32, packet: PacketRef) {
        let h = d.rawValue
        guard c.halves[h].started else { return }
        var limit = c.halves[h].offsetOf(ack)
        if let fin = c.halves[h].finOffset, limit > Int64(fin) { limit = Int64(fin) }
        let cur = Int64(c.halves[h].offset)
        guard limit > cur else { return }
        // Only up to the first segment we do hold; the rest follows from draining.
        if let first = c.halves[h].pending.first, Int64(first.offset) < limit { limit = Int64(first.offset) }
        if limit > cur {
            emitGap(c, d, length: UInt64(limit - cur), reason: .ackedUnseen, packet: packet)
        }
        drain(c, d)
    }

    func checkFinished(_ c: Connection, _ d: Direction) {
        let h = d.rawValue
        if let fin = c.halves[h].finOffset, c.halves[h].offset >= fin { c.halves[h].finished = true }
    }

    /// Keeps pending segments sorted and non-overlapping; the first copy of a range wins,
    /// and a later copy with different bytes is reported.
    func insertPending(_ c: Connection, _ d: Direction, _ seg: PendingSegment) {
        let h = d.rawValue
        var pieces = [seg]
        for existing in c.halves[h].pending where existing.end > seg.offset && existing.offset < seg.end {
            var next: [PendingSegment] = []
            for p in pieces {
                let lo = max(p.offset, existing.offset), hi = min(p.end, existing.end)
                guard lo < hi else { next.append(p); continue }
                if p.missingLength == 0 && existing.missingLength == 0 {
                    let a = p.bytes[Int(lo - p.offset)..<Int(hi - p.offset)]
                    let b = existing.bytes[Int(lo - existing.offset)..<Int(hi - existing.offset)]
                    if !a.elementsEqual(b) {
                        stats.conflicts += 1
                        consumer.conflict(c, d, offset: lo, length: hi - lo, packet: seg.packet)
                    }
                }
                if p.offset < lo { next.append(cut(p, p.offset, lo)) }
                if hi < p.end { next.append(cut(p, hi, p.end)) }
            }
            pieces = next
            if pieces.isEmpty { stats.retransmittedSegments += 1; return }
        }
        for p in pieces {
            let idx = c.halves[h].pending.firstIndex { $0.offset > p.offset } ?? c.halves[h].pending.count
            c.halves[h].pending.insert(p, at: idx)
            c.halves[h].pendingBytes += p.bytes.count
        }
    }

    func cut(_ p: PendingSegment, _ lo: UInt64, _ hi: UInt64) -> PendingSegment {
        if p.missingLength > 0 {
            return PendingSegment(offset: lo, bytes: [], missingLength: Int(hi - lo), packet: p.packet)
        }
        return PendingSegment(offset: lo, bytes: Array(p.bytes[Int(lo - p.offset)..<Int(hi - p.offset)]),
                              missingLength: 0, packet: p.packet)
    }
}
