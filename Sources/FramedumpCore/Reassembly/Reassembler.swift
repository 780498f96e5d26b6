/// Turns TCP segments into ordered per-direction byte streams, one connection at a time.
///
/// In-order payload is handed on without a copy; only out-of-order segments are copied,
/// and only up to `maxBufferedBytes` per direction. The caller's packet timestamps are the
/// clock, so idle timeouts work the same offline and live.
public final class Reassembler {
    public let options: ReassemblyOptions
    @exclusivity(unchecked) public private(set) var stats = ReassemblyStats()
    let consumer: StreamConsumer
    /// Which ports a dissector claims as server ports (for connections seen without a SYN).
    let isServerPort: (UInt16) -> Bool

    @exclusivity(unchecked) package var table = ConnectionTable()
    // Ends of the least-recently-used list.
    @exclusivity(unchecked) var newest: Connection?
    @exclusivity(unchecked) var oldest: Connection?
    /// Counts packets: the clock of the lazy LRU order.
    @exclusivity(unchecked) var tick: UInt64 = 0
    /// The packet clock (see `advanceClock`): idle timeouts and grace periods use it.
    @exclusivity(unchecked) var clock = Timestamp(seconds: .min, nanos: 0)
    @exclusivity(unchecked) var jumpTarget: Int64 = 0
    @exclusivity(unchecked) var jumpVotes = 0
    /// Connections touched by the packets of a jump not followed yet (at most 8).
    @exclusivity(unchecked) var jumpTouched: [Connection] = []
    /// Connections closed by FIN or RST, remembered for `timeWaitSeconds` (oldest first).
    @exclusivity(unchecked) var timeWait = ConnectionTable(capacity: 16)
    @exclusivity(unchecked) var timeWaitOrder: [Connection] = []
    @exclusivity(unchecked) var timeWaitHead = 0
    /// Connections that may hold an ACK hole, swept once per second of packet time.
    @exclusivity(unchecked) var ackList: [Connection] = []
    /// Connections lingering after a RST, swept once per second of packet time.
    @exclusivity(unchecked) var resetList: [Connection] = []
    /// `RecentBytes` buffers in use (bounded by `maxRecentBuffers`).
    @exclusivity(unchecked) var recentBuffers = 0
    @exclusivity(unchecked) var nextNumber: UInt64 = 1

    /// A connection number for a flow of another transport (UDP), so numbers stay unique.
    func takeNumber() -> UInt64 {
        defer { nextNumber += 1 }
        return nextNumber
    }
    /// Out-of-order bytes (with bookkeeping) held over every connection (`maxBufferedTotal`).
    @exclusivity(unchecked) package var heldTotal = 0
    /// The connection of the previous packet (cleared when it closes).
    @exclusivity(unchecked) var lastConnection: Connection?
    @exclusivity(unchecked) var lastPacket = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))

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
        let now = advanceClock(packet.ts)
        let key = ConnectionKey(s.src, s.dst)
        let syn = s.flags.contains(.syn), ackFlag = s.flags.contains(.ack)
        // Consecutive packets are usually of the same connection: skip the table then.
        var conn: Connection?
        if let last = lastConnection, last.key == key { conn = last } else { conn = table.find(key) }

        if let c = conn, c.rstSeen, let r = c.resetPacket {
            // Reset a while ago: what comes now belongs to the closed connection.
            c.packetsSinceReset += 1
            if c.packetsSinceReset > options.resetLingerPackets || now.nanos(since: r.ts) >= options.resetLingerNanos {
                close(c, reason: .rst, packet: r)
                conn = nil
            }
        }
        if let c = conn, syn, !ackFlag, s.src == c.client {
            // A new SYN with another ISN (or, without a known ISN, after the old connection
            // ended): port reuse. The same ISN again is a retransmitted or duplicated SYN.
            // After a RST the connection is over: a SYN starts a new one even with the same ISN
            // (a client retrying its handshake after the server reset the first).
            let reused = c.rstSeen || (c.clientISN.map { $0 != s.seq } ?? (c.halves[0].finOffset != nil))
            if reused {
                close(c, reason: c.rstSeen ? .rst : .reused, packet: c.resetPacket ?? packet)
                timeWait.remove(c.key)
                conn = nil
            }
        }
        if conn == nil {
            // A connection that closed a moment ago keeps its late segments (retransmissions
            // after FIN, duplicate copies, stray ACKs): only a SYN with a new ISN starts anew.
            var continuing: Connection?
            if timeWait.count > 0, let old = timeWait.find(key) {
                if startsNewConnection(old, s) {
                    timeWait.remove(key)
                } else if carriesNewBytes(old, s) {
                    // Bytes past the end of what the closed connection carried (after a RST,
                    // a peer that kept sending): not lost, but delivered on a continuation
                    // with the same roles.
                    timeWait.remove(key)
                    continuing = old
                    stats.continuedAfterClose += 1
                } else {
                    // The final ACK of every orderly close lands here: not worth a count.
                    if s.payloadLength > 0 || s.flags.rawValue & 0x07 != 0 { stats.afterCloseSegments += 1 }
                    consumer.afterClose(old, s.src == old.client ? .c2s : .s2c, length: s.payloadLength, packet: packet)
                    return
                }
            }
            // Pure ACKs and stray RSTs do not open a connection: they carry no stream.
            guard syn || s.payloadLength > 0 || s.flags.contains(.fin) else {
                stats.ignoredSegments += 1
                return
            }
            conn = open(s, packet: packet, continuing: continuing)
            // A connection opened by a packet whose jump the clock did not follow starts on the clock.
            if now < packet.ts { conn?.lastSeen = now }
        }
        guard let c = conn else { return }
        if lastConnection !== c { lastConnection = c }
        touch(c, now)
        if now.seconds != packet.ts.seconds { jumpTouched.append(c) }
        if c.ackHole { c.packetCount &+= 1 }

        let dir: Direction = s.src == c.client ? .c2s : .s2c
        let rst = s.flags.contains(.rst)
        if rst && !resetInWindow(c, dir, s) {
            // An injected or stale RST (RFC 5961): the connection goes on, its payload is not stream.
            stats.outOfWindowResets += 1
            consumer.outOfWindowReset(c, dir, packet: packet)
            if c.ackHole { settleAckHoles(c, now: now, packet: packet, force: false) }
            return
        }
        // (Compared first: windows rarely change, and a read costs less than a write.)
        if c.halves[dir.rawValue].window != UInt32(s.window) { c.halves[dir.rawValue].window = UInt32(s.window) }
        if syn {
            if dir == .c2s, !ackFlag, c.clientISN == nil { c.clientISN = s.seq }
            if dir == .s2c, ackFlag, c.serverISN == nil { c.serverISN = s.seq }
            else if dir == .s2c, ackFlag, let isn = c.serverISN, isn != s.seq, serverStreamUntouched(c) {
                // The handshake answered again with another ISN (the first SYN-ACK went
                // unanswered, or the server restarted it): the latest answer is the one the
                // client's ACK and the server's bytes follow. An ACK of an earlier one switches back.
                switchServerISN(c, to: s.seq)
                stats.retriedHandshakes += 1
            }
            if !c.halves[dir.rawValue].started {
                c.halves[dir.rawValue].started = true
                c.halves[dir.rawValue].startedAtSYN = true
                c.halves[dir.rawValue].nextSeq = s.seq &+ 1
                c.halves[dir.rawValue].windowScale = s.windowScale
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
        // The client acknowledging another of a retried handshake's SYN-ACKs.
        if dir == .c2s, ackFlag, !c.otherServerISNs.isEmpty, c.otherServerISNs.contains(s.ack &- 1), serverStreamUntouched(c) {
            switchServerISN(c, to: s.ack &- 1)
        }
        // The peer acknowledging bytes we have not seen (yet): evidence of a hole, final
        // only after a grace (most ACKs acknowledge exactly what was delivered: skip those).
        if ackFlag && !rst && s.ack != c.halves[dir.opposite.rawValue].nextSeq {
            ackedUnseen(c, dir.opposite, ack: s.ack, packet: packet, now: now)
        }
        if c.ackHole { settleAckHoles(c, now: now, packet: packet, force: false) }
        if rst {
            // Closed once the data in flight had its chance (see `resetLingerPackets`).
            if !c.rstSeen {
                c.rstSeen = true
                c.resetPacket = packet
                if !c.inResetList {
                    c.inResetList = true
                    resetList.append(c)
                }
            }
            return
        }
        checkFinished(c, dir)
        if c.bothFinished { close(c, reason: .fin, packet: packet) }
    }

    /// No server byte delivered or held yet: the server's ISN can still change.
    func serverStreamUntouched(_ c: Connection) -> Bool {
        let h = c.halves[Direction.s2c.rawValue]
        return h.offset == 0 && h.pending.isEmpty && h.finOffset == nil
    }

    func switchServerISN(_ c: Connection, to isn: UInt32) {
        let h = Direction.s2c.rawValue
        if let old = c.serverISN, old != isn {
            c.otherServerISNs.removeAll { $0 == isn }
            if c.otherServerISNs.count < 4 { c.otherServerISNs.append(old) }
        }
        c.serverISN = isn
        c.halves[h].nextSeq = isn &+ 1
        c.halves[h].ackedEnd = 0
    }

    /// Whether a segment for a connection in TIME-WAIT starts a new one: a SYN with a new ISN.
    func startsNewConnection(_ old: Connection, _ s: TCPSegment) -> Bool {
        guard s.flags.contains(.syn) else { return false }
        if !s.flags.contains(.ack) {
            // A SYN from the old server is a new connection in the other direction.
            return s.src != old.client || old.clientISN.map { $0 != s.seq } ?? true
        }
        // A SYN-ACK (its SYN not captured): new unless it repeats the old server's ISN.
        return s.src != old.server || old.serverISN.map { $0 != s.seq } ?? true
    }

    /// Whether a segment for a closed connection carries bytes past the end of its stream.
    func carriesNewBytes(_ old: Connection, _ s: TCPSegment) -> Bool {
        guard s.payloadLength > 0 else { return false }
        let h = old.halves[s.src == old.client ? 0 : 1]
        guard h.started else { return true }
        let seq = s.flags.contains(.syn) ? s.seq &+ 1 : s.seq
        return h.offsetOf(seq &+ UInt32(truncatingIfNeeded: s.payloadLength)) > Int64(h.offset)
    }

    /// RFC 5961: a RST is believed only when its sequence number lies in the window the
    /// receiver advertised (with its scale when both SYNs carried one; generously otherwise).
    func resetInWindow(_ c: Connection, _ dir: Direction, _ s: TCPSegment) -> Bool {
        let sender = c.halves[dir.rawValue], receiver = c.halves[dir.opposite.rawValue]
        if !sender.started {
            // An answer to a SYN (RFC 793, SYN-SENT): believed when it acknowledges the SYN.
            if receiver.startedAtSYN && receiver.offset == 0 && s.flags.contains(.ack) {
                return s.ack == receiver.nextSeq
            }
            return true
        }
        guard receiver.window != .max else { return true }
        var scale: UInt8 = 14
        if sender.startedAtSYN && receiver.startedAtSYN {
            scale = sender.windowScale != nil ? min(receiver.windowScale ?? 0, 14) : 0
        }
        let window = max(Int64(receiver.window) << Int64(scale), 65_535)
        let rel = Int64(Int32(bitPattern: s.seq &- sender.nextSeq))
        // Bytes held out of order are inside what the receiver may have seen already.
        let ahead = Int64(sender.pending.last.map { $0.end - sender.offset } ?? 0)
        return rel >= -window && rel <= ahead + window
    }

    /// The packet clock: follows the capture's timestamps, but a jump of more than
    /// `clockJumpSeconds` is followed only once 8 packets in a row agree with it.
    @inline(__always)
    func advanceClock(_ ts: Timestamp) -> Timestamp {
        if ts.seconds == clock.seconds { return ts }
        return advanceClockSlow(ts)
    }

    func advanceClockSlow(_ ts: Timestamp) -> Timestamp {
        if clock.seconds == .min { clock = ts; expireIdle(now: ts); return ts }
        if ts < clock { return ts }  // older packet: the clock never runs back
        if ts.seconds(since: clock) > options.clockJumpSeconds {
            let fromTarget = ts.seconds(since: Timestamp(seconds: jumpTarget, nanos: 0))
            if fromTarget <= options.clockJumpSeconds && fromTarget >= -options.clockJumpSeconds { jumpVotes += 1 } else {
                jumpTarget = ts.seconds
                jumpVotes = 1
                jumpTouched.removeAll(keepingCapacity: true)
            }
            guard jumpVotes >= 8 else { stats.clockJumps += 1; return clock }
            // The jump was real (a capture stitched from several, a long pause): the
            // connections its first packets touched are as recent as the new clock.
            stats.clockJumps -= UInt64(jumpVotes - 1)
            for c in jumpTouched where !c.isClosed { c.lastSeen = ts }
        }
        jumpVotes = 0
        jumpTouched.removeAll(keepingCapacity: true)
        clock = ts
        expireIdle(now: ts)
        return ts
    }

    /// Ends every connection still open (end of capture), in order of first appearance.
    public func finish() {
        let all = table.all.sorted { $0.number < $1.number }
        for c in all { close(c, reason: c.rstSeen ? .rst : .captureEnd, packet: c.resetPacket ?? lastPacket) }
    }

    // MARK: - Connection table

    /// A new connection; `continuing` a closed one, it keeps that one's roles and ISNs.
    func open(_ s: TCPSegment, packet: PacketRef, continuing old: Connection? = nil) -> Connection {
        if table.count >= options.maxConnections, let victim = leastRecentlyUsed() {
            stats.evicted += 1
            close(victim, reason: .evicted, packet: packet)
        }
        let syn = s.flags.contains(.syn), ack = s.flags.contains(.ack)
        let srcIsClient: Bool
        if let old { srcIsClient = s.src == old.client }
        else if syn { srcIsClient = !ack }
        else if isServerPort(s.dst.port) != isServerPort(s.src.port) { srcIsClient = isServerPort(s.dst.port) }
        else { srcIsClient = s.src.port > s.dst.port || (s.src.port == s.dst.port && s.src < s.dst) }
        // A continuation keeps the roles of the connection it continues, but did not begin at a SYN.
        let c = Connection(number: nextNumber, client: srcIsClient ? s.src : s.dst,
                           server: srcIsClient ? s.dst : s.src, rolesFromSYN: old == nil && syn, packet: packet)
        if let old {
            c.continues = old.number
            c.clientISN = old.clientISN
            c.serverISN = old.serverISN
        }
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
        // Closing makes every acknowledgement final.
        if c.ackHole { settleAckHoles(c, now: clock, packet: packet, force: true) }
        let gapReason: GapReason = reason == .captureEnd ? .captureEnd : .closed
        for d in Direction.allCases { flushPending(c, d, reason: gapReason, packet: packet) }
        c.isClosed = true
        for h in 0..<2 where c.halves[h].recent != nil {
            c.halves[h].recent = nil
            recentBuffers -= 1
        }
        c.deliveredAtClose = (c.bytesDelivered(.c2s), c.bytesDelivered(.s2c))
        consumer.closed(c, reason: reason, packet: packet)
        c.context = nil
        if reason == .fin || reason == .rst { rememberClosed(c) }
    }

    /// TIME-WAIT: the closed connection keeps its 4-tuple for a while, bounded in number.
    func rememberClosed(_ c: Connection) {
        guard options.maxTimeWait > 0 else { return }
        while timeWait.count >= options.maxTimeWait, timeWaitHead < timeWaitOrder.count { forgetOldestClosed() }
        // Only the 4-tuple, roles and ISNs matter from now on: let the rest go. (The outputs
        // let their text go themselves: they may print this connection after this point, on
        // their own thread.)
        c.halves[0].pending = []
        c.halves[1].pending = []
        c.halves[0].reportedGaps = []
        c.halves[1].reportedGaps = []
        timeWait.insert(c)
        timeWaitOrder.append(c)
        // Entries a new connection replaced stay in the order list until passed: drop them
        // when they pile up (port reuse at a high rate).
        if timeWaitOrder.count - timeWaitHead > 2 * options.maxTimeWait + 1024 {
            timeWaitOrder = timeWaitOrder[timeWaitHead...].filter { timeWait.find($0.key) === $0 }
            timeWaitHead = 0
        }
    }

    func forgetOldestClosed() {
        guard timeWaitHead < timeWaitOrder.count else { return }
        let c = timeWaitOrder[timeWaitHead]
        timeWaitHead += 1
        // Only if the table still holds this one (a new connection may have replaced it).
        if timeWait.find(c.key) === c { timeWait.remove(c.key) }
        if timeWaitHead > 1024 && timeWaitHead * 2 > timeWaitOrder.count {
            timeWaitOrder.removeFirst(timeWaitHead)
            timeWaitHead = 0
        }
    }

    func expireIdle(now: Timestamp) {
        while timeWaitHead < timeWaitOrder.count,
              now.seconds(since: timeWaitOrder[timeWaitHead].lastSeen) > options.timeWaitSeconds {
            forgetOldestClosed()
        }
        if !ackList.isEmpty { sweepAckHoles(now: now) }
        if !resetList.isEmpty {
            let list = resetList
            resetList = []
            for c in list where !c.isClosed {
                if let r = c.resetPacket, now.nanos(since: r.ts) >= options.resetLingerNanos {
                    close(c, reason: .rst, packet: r)
                } else {
                    resetList.append(c)
                }
            }
        }
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
        var rel = Int64(Int32(bitPattern: seq &- c.halves[h].nextSeq))
        if rel < -(1 << 17), rel < -inFlightBound(c, d) {
            // Further behind than the receiver's window lets any byte be in flight: no
            // retransmission, but a jump forward of over 2^31 (the middle of a long transfer
            // left out of the capture). The bytes skipped are a gap.
            flushPending(c, d, reason: .sequenceJump, packet: packet)
            emitGap(c, d, length: UInt64(seq &- c.halves[h].nextSeq), reason: .sequenceJump, packet: packet)
            stats.sequenceJumps += 1
            rel = 0
        }
        let present = bytes.count
        let total = Int64(announced)
        if rel + total <= 0 {
            // Entirely before what we have delivered: a retransmission or a keep-alive probe.
            let start = Int64(c.halves[h].offset) + rel
            // Bytes for a reported gap are late data, not a retransmission.
            let late = c.halves[h].reportedGaps.isEmpty ? 0 : checkLate(c, d, start, start + Int64(present), packet: packet)
            if late == 0 || late < present { stats.retransmittedSegments += 1 }
            stats.retransmittedBytes += UInt64(announced - late)
            if present > 0 { checkRetransmission(c, d, bytes, at: start, packet: packet) }
            return
        }
        if rel <= 0 {
            let skip = Int(-rel)
            if skip > 0 {
                stats.retransmittedBytes += UInt64(skip)
                let start = Int64(c.halves[h].offset) + rel
                if !c.halves[h].reportedGaps.isEmpty {
                    let late = checkLate(c, d, start, start + Int64(min(skip, present)), packet: packet)
                    stats.retransmittedBytes -= UInt64(late)
                }
                if present > 0 {
                    checkRetransmission(c, d, UnsafeRawBufferPointer(rebasing: bytes[..<min(skip, present)]),
                                        at: start, packet: packet)
                }
            }
            if skip < present {
                deliver(c, d, UnsafeRawBufferPointer(rebasing: bytes[skip...]), packet: packet)
            }
            let missing = Int(total) - max(skip, present)
            if missing > 0 {
                // The snaplen cut this segment: the tail was on the wire, not in the capture.
                emitGap(c, d, length: UInt64(missing), reason: .truncated, packet: packet)
            }
            if !c.halves[h].pending.isEmpty { drain(c, d, packet: packet) }
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
            skipToFirstPending(c, d, reason: .bufferLimit, packet: packet)
        }
        // Every connection together: this direction gives up its holes until the total fits
        // (it held nothing more before this segment came, so emptying it always suffices).
        while heldTotal > options.maxBufferedTotal && !c.halves[h].pending.isEmpty {
            stats.totalBufferLimitHits += 1
            skipToFirstPending(c, d, reason: .bufferLimit, packet: packet)
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
        if let r = c.halves[h].recent { r.append(bytes, at: off) }
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

    /// Hands on every pending segment that the delivered stream has reached. `packet` is the one
    /// being read, which completed them: it dates them, and each keeps its own packet as carrier.
    func drain(_ c: Connection, _ d: Direction, packet: PacketRef) {
        let h = d.rawValue
        var i = 0
        while i < c.halves[h].pending.count, c.halves[h].pending[i].offset <= c.halves[h].offset {
            let p = c.halves[h].pending[i]
            i += 1
            let cur = c.halves[h].offset
            guard p.end > cur else { stats.retransmittedBytes += UInt64(p.length); continue }
            let skip = Int(cur - p.offset)
            if p.missingLength > 0 {
                emitGap(c, d, length: UInt64(p.missingLength - skip), reason: .truncated, packet: packet)
            } else {
                let held = PacketRef(number: packet.number, ts: packet.ts, carrier: p.packet.carrier)
                p.bytes.withUnsafeBytes { b in
                    deliver(c, d, UnsafeRawBufferPointer(rebasing: b[skip...]), packet: held)
                }
            }
        }
        if i > 0 {
            heldTotal -= c.halves[h].pendingBytes + i * ReassemblyOptions.segmentOverhead
            c.halves[h].pending.removeFirst(i)
            c.halves[h].pendingBytes = c.halves[h].pending.reduce(0) { $0 + $1.bytes.count }
            heldTotal += c.halves[h].pendingBytes
        }
    }

    /// Gives up on the hole in front of the first pending segment.
    func skipToFirstPending(_ c: Connection, _ d: Direction, reason: GapReason, packet: PacketRef) {
        let h = d.rawValue
        guard let first = c.halves[h].pending.first else { return }
        let cur = c.halves[h].offset
        if first.offset > cur {
            emitGap(c, d, length: first.offset - cur, reason: reason, packet: packet)
            if reason == .bufferLimit { noteReportedGap(c, d, cur, first.offset) }
        }
        drain(c, d, packet: packet)
    }

    func flushPending(_ c: Connection, _ d: Direction, reason: GapReason, packet: PacketRef) {
        while !c.halves[d.rawValue].pending.isEmpty { skipToFirstPending(c, d, reason: reason, packet: packet) }
        // A FIN beyond what we saw: the bytes before it never arrived.
        if let fin = c.halves[d.rawValue].finOffset, fin > c.halves[d.rawValue].offset,
           fin - c.halves[d.rawValue].offset < (1 << 31) {
            emitGap(c, d, length: fin - c.halves[d.rawValue].offset, reason: reason, packet: packet)
        }
    }

    /// Notes that the peer acknowledged bytes up to `ack` in direction `d`. Nothing is
    /// declared missing yet: the segment may simply have been captured after its ACK.
    func ackedUnseen(_ c: Connection, _ d: Direction, ack: UInt32, packet: PacketRef, now: Timestamp) {
        let h = d.rawValue
        guard c.halves[h].started else { return }
        let acker = c.halves[d.opposite.rawValue]
        // RFC 793: before its own SYN a peer acknowledges nothing but the SYN it answers (a
        // stale connection's ACK to a new SYN is not about these bytes).
        if c.halves[h].startedAtSYN && !acker.started && c.halves[h].offset == 0 {
            stats.implausibleAcks += 1
            return
        }
        var limit = c.halves[h].offsetOf(ack)
        // Bytes in flight are bounded by the window the acker advertised: an ACK further
        // ahead is stray (another connection's, or corrupt), not evidence of lost bytes.
        if limit - Int64(c.halves[h].offset) > inFlightBound(c, d) {
            stats.implausibleAcks += 1
            return
        }
        // An ACK of the FIN counts the FIN's sequence number, not a byte.
        if let fin = c.halves[h].finOffset, limit > Int64(fin) { limit = Int64(fin) }
        let cur = Int64(c.halves[h].offset)
        guard limit > cur, UInt64(limit) > c.halves[h].ackedEnd else { return }
        if c.halves[h].ackedEnd <= c.halves[h].offset {
            // A new hole: its grace starts now.
            c.halves[h].ackMarkEnd = UInt64(limit)
            c.halves[h].ackMarkPacket = c.packetCount
            c.halves[h].ackMarkTime = now
        }
        c.halves[h].ackedEnd = UInt64(limit)
        c.ackHole = true
        if !c.inAckList {
            c.inAckList = true
            ackList.append(c)
        }
    }

    /// The most bytes of direction `d` that can be in flight: twice the window its receiver
    /// last advertised (scaled; 2^30 while unknown), and a megabyte of slack.
    func inFlightBound(_ c: Connection, _ d: Direction) -> Int64 {
        let acker = c.halves[d.opposite.rawValue]
        let scale = Int64(min(acker.windowScale ?? (acker.startedAtSYN ? 0 : 14), 14))
        let window = acker.window == .max ? Int64(1) << 30 : max(Int64(acker.window) << scale, 65_535)
        return 2 * window + (1 << 20)
    }

    /// Declares the acknowledged holes whose grace has run out (or all of them: `force`).
    func settleAckHoles(_ c: Connection, now: Timestamp, packet: PacketRef, force: Bool) {
        var open = false
        for d in Direction.allCases {
            let h = d.rawValue
            if let fin = c.halves[h].finOffset, c.halves[h].ackedEnd > fin { c.halves[h].ackedEnd = fin }
            guard c.halves[h].ackedEnd > c.halves[h].offset else { continue }
            let due = force || c.packetCount &- c.halves[h].ackMarkPacket >= options.ackGracePackets
                || now.nanos(since: c.halves[h].ackMarkTime) >= options.ackGraceNanos
            if due {
                let end = force ? c.halves[h].ackedEnd : max(c.halves[h].ackMarkEnd, c.halves[h].offset)
                declareAckedUnseen(c, d, upTo: end, packet: packet)
                // What was acknowledged since the mark gets a grace of its own.
                c.halves[h].ackMarkEnd = c.halves[h].ackedEnd
                c.halves[h].ackMarkPacket = c.packetCount
                c.halves[h].ackMarkTime = now
            }
            if c.halves[h].ackedEnd > c.halves[h].offset { open = true }
        }
        c.ackHole = open
    }

    /// The once-per-second look at connections whose ACK holes wait on the clock alone.
    func sweepAckHoles(now: Timestamp) {
        let list = ackList
        ackList = []
        for c in list {
            c.inAckList = false
            guard !c.isClosed, c.ackHole else { continue }
            settleAckHoles(c, now: now, packet: lastPacket, force: false)
            if c.ackHole {
                c.inAckList = true
                ackList.append(c)
            }
        }
    }

    /// Every byte up to `end` was acknowledged and never seen: gaps up to each segment we
    /// hold, which then drain.
    func declareAckedUnseen(_ c: Connection, _ d: Direction, upTo end: UInt64, packet: PacketRef) {
        let h = d.rawValue
        var limit = end
        if let fin = c.halves[h].finOffset, limit > fin { limit = fin }
        while c.halves[h].offset < limit {
            let cur = c.halves[h].offset
            var stop = limit
            if let first = c.halves[h].pending.first, first.offset < stop { stop = max(first.offset, cur) }
            if stop > cur {
                emitGap(c, d, length: stop - cur, reason: .ackedUnseen, packet: packet)
                noteReportedGap(c, d, cur, stop)
            }
            drain(c, d, packet: packet)
            if c.halves[h].offset == cur { break }
        }
    }

    /// Remembers a gap that late bytes could still fill, to say so when they come.
    func noteReportedGap(_ c: Connection, _ d: Direction, _ start: UInt64, _ end: UInt64) {
        let h = d.rawValue
        if c.halves[h].reportedGaps.count >= 8 { c.halves[h].reportedGaps.removeFirst() }
        c.halves[h].reportedGaps.append((start, end))
    }

    /// Bytes at stream offsets [start, end) arrived after the stream passed them: if they
    /// fall in a reported gap, they are late data, not a retransmission.
    /// Returns how many of the bytes were late.
    @discardableResult
    func checkLate(_ c: Connection, _ d: Direction, _ start: Int64, _ end: Int64, packet: PacketRef) -> Int {
        let h = d.rawValue
        var late = 0
        for g in c.halves[h].reportedGaps {
            let lo = max(start, Int64(g.start)), hi = min(end, Int64(g.end))
            if lo < hi {
                stats.lateSegments += 1
                stats.lateBytes += UInt64(hi - lo)
                late += Int(hi - lo)
                consumer.lateData(c, d, offset: UInt64(lo), length: UInt64(hi - lo), packet: packet)
            }
        }
        return late
    }

    /// A copy of bytes already delivered: compared with what was delivered, if still held.
    /// The first retransmission of a direction starts keeping its recent bytes.
    func checkRetransmission(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, at start: Int64,
                             packet: PacketRef) {
        let h = d.rawValue
        guard start >= 0 else { return }
        guard let r = c.halves[h].recent else {
            if recentBuffers < options.maxRecentBuffers && options.recentBytesPerDirection > 0 {
                recentBuffers += 1
                c.halves[h].recent = RecentBytes(capacity: options.recentBytesPerDirection, end: c.halves[h].offset)
            }
            return
        }
        if let (lo, hi) = r.differing(bytes, at: UInt64(start)) {
            stats.conflicts += 1
            consumer.conflict(c, d, offset: lo, length: hi - lo, packet: packet)
        }
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
            heldTotal += p.bytes.count + ReassemblyOptions.segmentOverhead
            if heldTotal > stats.peakBufferedTotal { stats.peakBufferedTotal = heldTotal }
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
