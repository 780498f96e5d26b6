/// One direction of one KCP conversation on a flow: segments put back in sequence order,
/// copies seen twice dropped (and counted), messages joined from their fragments (message
/// mode) or the byte stream cut by the protocol's deframer (stream mode), and every message
/// handed up with its note. Sequence numbers that never arrive are reported once: when the
/// peer acknowledges past them (`una`), when too much waits behind them, or at the end.
final class KCPConversation: FrameConsumer {
    // The connection owns its conversations and outlives them.
    unowned(unsafe) let connection: KCPConnection
    let dir: Direction
    let conv: UInt32
    let stream: Bool
    /// The protocol's deframer (a length rule); nil: a KCP message is one protocol message.
    @exclusivity(unchecked) private(set) var deframer: Deframer?
    let stats: KCPConversationStats

    /// The next sequence number to deliver (nil until the first segment or the peer's `una`).
    @exclusivity(unchecked) var next: UInt32?
    /// Segments that came ahead of a missing one, copied aside until it comes.
    struct Held {
        var frg: UInt8
        var ts: UInt32
        var copies: UInt16
        var bytes: [UInt8]
        var packet: PacketRef
    }
    @exclusivity(unchecked) var held: [UInt32: Held] = [:]
    @exclusivity(unchecked) var heldBytes = 0
    /// Message mode: the fragments of the message being joined.
    @exclusivity(unchecked) var partial: [UInt8] = []
    @exclusivity(unchecked) var partialInfo = KCPInfo(conv: 0, sn: 0, ts: 0, fragments: 0, retransmitted: 0, delayed: false, stream: false)
    @exclusivity(unchecked) var partialFirstPacket = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))
    /// Message mode: the next message follows lost segments, so it may be the tail of one
    /// whose start was lost.
    @exclusivity(unchecked) var afterLoss = false
    /// Bytes handed up so far: the offsets of this direction's messages.
    @exclusivity(unchecked) var offset: UInt64 = 0
    /// The note of what is being delivered (the deframer's frames take it).
    @exclusivity(unchecked) var note: KCPInfo

    static let maxHeldSegments = 1024
    static let maxHeldBytes = 4 << 20
    /// A sequence number further ahead than any window allows: the conversation restarted.
    static let maxAhead: UInt32 = 1 << 16

    init(connection: KCPConnection, dir: Direction, conv: UInt32, stats: KCPConversationStats) {
        self.connection = connection
        self.dir = dir
        self.conv = conv
        stream = connection.stream
        self.stats = stats
        note = KCPInfo(conv: conv, sn: 0, ts: 0, fragments: 1, retransmitted: 0, delayed: false, stream: connection.stream)
        let p = connection.frames.runtime
        // Its frames come back here, to take the note of the segment or message they came in.
        if p.schema.length != nil {
            deframer = Deframer(layout: p.layout, direction: dir, consumer: self, startsAtBoundary: true, knownID: p.knownID(dir), plausibleBody: p.plausibleBody(dir))
        }
    }

    // MARK: - Segments in

    func push(_ s: KCPSegment, _ data: UnsafeRawBufferPointer, _ packet: PacketRef) {
        stats.pushes[dir.rawValue] += 1
        if next == nil {
            // ikcp numbers a conversation from 0: a first segment near it is taken for the start
            // (the ones before it were lost, or come later); one far from it, a capture that
            // began mid-conversation.
            begin(at: s.sn < Self.nearStart ? 0 : s.sn)
        }
        let n = next!
        if s.sn == n {
            if !held.isEmpty { stats.recovered[dir.rawValue] += 1 }
            deliver(sn: s.sn, frg: s.frg, ts: s.ts, data, packet: packet, copies: 0, delayed: !held.isEmpty)
            next = n &+ 1
            drain(packet)
        } else if kcpBefore(s.sn, n) || held[s.sn] != nil {
            // A copy of a segment seen already: a retransmission (its ACK was lost or late).
            stats.retransmitted[dir.rawValue] += 1
            connection.state.retransmitted += 1
            if held[s.sn] != nil { held[s.sn]!.copies &+= 1 }
        } else if s.sn &- n > Self.maxAhead {
            lose(upTo: s.sn, packet)
            push(s, data, packet)
        } else {
            held[s.sn] = Held(frg: s.frg, ts: s.ts, copies: 0, bytes: [UInt8](data), packet: packet)
            heldBytes += data.count
            if held.count > Self.maxHeldSegments || heldBytes > Self.maxHeldBytes {
                connection.state.heldLimit += 1
                lose(upTo: firstHeld()!, packet)
                drain(packet)
            }
        }
    }

    /// The peer acknowledged every segment before `una`: those never seen are lost.
    func acknowledged(_ una: UInt32, _ packet: PacketRef) {
        if next == nil {
            // The peer's word on where this direction stands, before its first segment: near
            // the start, the segments before `una` were sent and not captured (lost below).
            begin(at: una < Self.nearStart ? 0 : una)
        }
        guard let n = next else { return }
        guard kcpBefore(n, una), una &- n <= Self.maxAhead else { return }
        while let n = next, kcpBefore(n, una) {
            if let h = firstHeld(), kcpBefore(h, una) {
                lose(upTo: h, packet)
                drain(packet)
            } else {
                lose(upTo: una, packet)
            }
        }
    }

    /// ikcp numbers a conversation from 0: a first sequence number below this is taken for a
    /// conversation whose start is in the capture (the segments before it were lost, or come
    /// later); one above, for a capture that began mid-conversation.
    static let nearStart: UInt32 = 1024

    /// The first sequence number this direction delivers. Mid-conversation, the first message
    /// may be the tail of one whose start was not captured.
    func begin(at sn: UInt32) {
        next = sn
        guard sn != 0 else { return }
        if stream { deframer?.start(atBoundary: false) } else { afterLoss = true }
    }

    /// The lowest sequence number held.
    func firstHeld() -> UInt32? {
        guard let n = next else { return nil }
        return held.keys.min { ($0 &- n) < ($1 &- n) }
    }

    /// Delivers the held segments that follow in order.
    func drain(_ packet: PacketRef) {
        while let n = next, let h = held.removeValue(forKey: n) {
            heldBytes -= h.bytes.count
            // Dated by the packet that filled the hole; first carried by the one that brought it.
            let ref = PacketRef(number: packet.number, ts: packet.ts, carrier: h.packet.carrier)
            h.bytes.withUnsafeBytes { deliver(sn: n, frg: h.frg, ts: h.ts, $0, packet: ref, copies: h.copies, delayed: true) }
            next = n &+ 1
        }
    }

    /// Segments `next ..< to` never arrived: reported once; what they cut is reported too.
    func lose(upTo to: UInt32, _ packet: PacketRef) {
        guard let n = next, n != to else { return }
        let count = to &- n
        stats.lost[dir.rawValue] += UInt64(count)
        connection.state.lost += UInt64(count)
        let range = count == 1 ? "sn \(n) never arrived" : "sn \(n)-\(to &- 1) never arrived (\(count) segments)"
        var text = "KCP conv \(conv): " + range
        if !stream && !partial.isEmpty {
            text += "; the message they cut is lost (\(partialInfo.fragments) fragments, \(partial.count) bytes held)"
            partial.removeAll(keepingCapacity: true)
        }
        connection.frames.malformed(dir, offset: offset, length: 0,
                                    reason: .layer(LayerProblem(layer: KCPLayer.name, kind: "lost-segments", text: text)),
                                    packet: packet)
        next = to
        if stream {
            deframer?.gap(offset: offset, length: 0, packet: packet)
        } else {
            afterLoss = true
        }
    }

    /// End of the flow: what still waits behind a missing segment is delivered after it,
    /// the missing ones reported; a message or frame left unfinished is reported.
    func finish(_ packet: PacketRef, captureEnded: Bool) {
        while let h = firstHeld() {
            lose(upTo: h, packet)
            drain(packet)
        }
        if !stream && !partial.isEmpty {
            let text = "KCP conv \(conv): message incomplete at the end (\(partialInfo.fragments) fragments, \(partial.count) bytes; more were to come)"
            connection.frames.malformed(dir, offset: offset, length: UInt64(partial.count),
                                        reason: .layer(LayerProblem(layer: KCPLayer.name, kind: "incomplete-message", text: text)),
                                        packet: packet)
            partial.removeAll()
        }
        deframer?.finish(packet: packet, captureEnded: captureEnded)
    }

    // MARK: - Messages up

    func deliver(sn: UInt32, frg: UInt8, ts: UInt32, _ data: UnsafeRawBufferPointer, packet: PacketRef,
                 copies: UInt16, delayed: Bool) {
        if stream {
            note = KCPInfo(conv: conv, sn: sn, ts: ts, fragments: 1, retransmitted: copies, delayed: delayed, stream: true)
            deframer!.data(data, offset: offset, packet: packet)
            offset += UInt64(data.count)
            return
        }
        if partial.isEmpty && frg == 0 {
            unit(data, KCPInfo(conv: conv, sn: sn, ts: ts, fragments: 1, retransmitted: copies, delayed: delayed, stream: false),
                 first: packet, packet)
            return
        }
        if partial.isEmpty {
            partialInfo = KCPInfo(conv: conv, sn: sn, ts: ts, fragments: 0, retransmitted: 0, delayed: false, stream: false)
            partialFirstPacket = packet
        }
        partialFirstPacket = partialFirstPacket.carried(with: packet)
        partial.append(contentsOf: data)
        partialInfo.fragments &+= 1
        partialInfo.retransmitted &+= copies
        partialInfo.delayed = partialInfo.delayed || delayed
        if frg == 0 {
            let info = partialInfo
            partial.withUnsafeBytes { unit($0, info, first: partialFirstPacket, packet) }
            partial.removeAll(keepingCapacity: true)
        }
    }

    /// One whole KCP message (message mode).
    func unit(_ b: UnsafeRawBufferPointer, _ info: KCPInfo, first: PacketRef, _ packet: PacketRef) {
        stats.messages[dir.rawValue] += 1
        connection.state.messages += 1
        connection.state.fragments += UInt64(info.fragments)
        defer { offset += UInt64(b.count) }
        if afterLoss {
            afterLoss = false
            // The first message after lost segments may be the tail of one whose start was
            // lost: taken only when the protocol's frames fill it exactly.
            if let d = deframer, !d.layout.tiles(b) {
                let text = "KCP conv \(conv): \(b.count) bytes after lost segments, not a whole message (the tail of one whose start was lost)"
                connection.frames.malformed(dir, offset: offset, length: UInt64(b.count),
                                            reason: .layer(LayerProblem(layer: KCPLayer.name, kind: "lost-segments", text: text)),
                                            packet: packet, bytes: UnsafeRawBufferPointer(rebasing: b.prefix(MalformedSample.limit)))
                return
            }
        }
        note = info
        if let d = deframer {
            d.data(b, offset: offset, packet: packet)
            d.endOfUnit(packet: packet)
        } else {
            connection.frames.layered(Frame(bytes: b, offset: offset, firstPacket: first.asFirst, lastPacket: packet, coalesced: 1),
                                      dir, KCPLayer.note(info))
        }
    }

    // MARK: - FrameConsumer: the deframer's frames, with the note

    func frame(_ f: Frame, _ dir: Direction) {
        connection.frames.layered(f, dir, KCPLayer.note(note))
    }

    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef) {
        connection.frames.malformed(dir, offset: offset, length: length, reason: reason, packet: packet)
    }

    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef,
                   bytes: UnsafeRawBufferPointer) {
        connection.frames.malformed(dir, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
    }
}
