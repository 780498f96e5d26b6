/// Cuts one direction of a stream into length-prefixed frames (the sticky/split packet
/// problem): several frames in one segment, one frame over many, a header itself split,
/// a stream that starts mid-frame, and gaps.
///
/// The common path reads frames straight out of the borrowed segment bytes; only a frame
/// that straddles segments is copied, once, into a per-direction buffer. After a gap or a bad
/// header it hunts for the next plausible header (valid length, constants, known id, and the
/// header after it lining up) and reports every byte it passes over.
public final class Deframer {
    public enum State: Equatable, Sendable {
        /// At a frame boundary (or inside a frame whose start we saw).
        case synced
        /// Looking for a plausible header after a gap, a bad header or a mid-stream start.
        case hunting
    }

    let layout: FrameLayout
    let dir: Direction
    // The session owns this deframer and outlives it; unowned(unsafe) skips a check per frame.
    unowned(unsafe) let consumer: FrameConsumer
    /// Plausibility of a message id while hunting (nil: any id goes).
    let knownID: ((UInt64) -> Bool)?
    /// Plausibility of a whole frame's body while hunting, for a protocol whose headers alone
    /// cannot tell frames from noise (nil: not asked).
    let plausibleBody: ((UnsafeRawBufferPointer) -> Bool)?

    @exclusivity(unchecked) public private(set) var state: State
    /// Bytes of a frame that straddles segments, or of the stream while hunting.
    @exclusivity(unchecked) var buffer: [UInt8] = []
    @exclusivity(unchecked) var bufferOffset: UInt64 = 0
    @exclusivity(unchecked) var bufferPacket = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))
    /// Frames found in the current segment, emitted once its frame count is known.
    @exclusivity(unchecked) var found: [(start: Int, length: Int)] = []

    public init(layout: FrameLayout, direction: Direction, consumer: FrameConsumer,
                startsAtBoundary: Bool, first: FrameLayout? = nil, knownID: ((UInt64) -> Bool)? = nil,
                plausibleBody: ((UnsafeRawBufferPointer) -> Bool)? = nil) {
        self.layout = layout
        self.firstLayout = first
        firstPending = startsAtBoundary && first != nil && first?.after == nil
        self.dir = direction
        self.consumer = consumer
        self.knownID = knownID
        self.plausibleBody = plausibleBody
        self.state = startsAtBoundary ? .synced : .hunting
    }

    // MARK: - Input

    /// Whether any byte has arrived yet.
    @exclusivity(unchecked) public private(set) var started = false

    /// Before the first byte: whether the stream starts at a frame boundary (it began with a
    /// SYN) or mid-frame (capture started late). Known only once that direction has begun.
    public func start(atBoundary: Bool) {
        guard !started else { return }
        started = true
        state = atBoundary ? .synced : .hunting
        firstPending = atBoundary && firstLayout != nil && (firstLayout?.after == nil || armed)
    }

    // MARK: - The first frame of its own layout (the rare path)

    /// `first c2s { ... }`: the direction's first frame has a layout of its own. Until it is
    /// cut, bytes are held here (the main path, and its `layout`, never see them).
    let firstLayout: FrameLayout?
    @exclusivity(unchecked) var firstPending: Bool
    /// `first s2c after NAME`: the other side's first frame was such a message.
    @exclusivity(unchecked) var armed = false

    /// The other side's first frame was one after which this side's first frame comes
    /// (PostgreSQL's one-byte answer to an SSLRequest): expected next, at a frame boundary.
    func armFirst() {
        armed = true
        guard firstLayout != nil, state == .synced, buffer.isEmpty else { return }
        firstPending = true
    }

    /// A first frame was cut: `again after` it, the next frame is a first one too; `first s2c
    /// after` it, the other side's next frame is its first.
    func firstEmitted(_ b: UnsafeRawBufferPointer) {
        let first = firstLayout.unsafelyUnwrapped
        guard first.namesMessage, let mi = first.firstMessage(b) else { return }
        if first.again.contains(mi) { firstPending = true }
        if let p = peer, let after = p.firstLayout?.after, after.contains(mi) { p.armFirst() }
    }

    /// Takes bytes for the first frame; returns how many of `b` it used (the rest go the main way).
    func firstData(_ b: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) -> Int {
        let first = firstLayout.unsafelyUnwrapped
        if buffer.isEmpty {
            bufferOffset = offset
            bufferPacket = packet
        } else {
            bufferPacket = bufferPacket.carried(with: packet)
        }
        let before = buffer.count
        buffer.append(contentsOf: b)
        let check = buffer.count >= first.headerSize && measureNow(first, packet) ? buffer.withUnsafeBytes { first.check($0, at: 0) } : .needMoreData
        switch check {
        case .needMoreData:
            return b.count
        case .ok(let n) where n > buffer.count:
            return b.count
        case .ok(let n) where n <= before:
            // (Its measuring was put off: it ended in bytes held before.)
            firstPending = false
            emitHeldFrame(n, packet: packet, first: true)
            return b.count
        case .ok(let n):
            firstPending = false
            buffer.withUnsafeBytes { fb in
                var f = Frame(bytes: UnsafeRawBufferPointer(rebasing: fb[..<n]), offset: bufferOffset,
                              firstPacket: bufferPacket.asFirst, lastPacket: packet, coalesced: 1)
                f.first = true
                consumer.frame(f, dir)
                firstEmitted(f.bytes)
            }
            buffer.removeAll(keepingCapacity: true)
            // (Its end is past the bytes held before: they were not enough to cut it.)
            return max(n - before, 0)
        default:
            // Not the first frame its block describes: said, and the stream read the main way
            // from its next byte (a frame of the main layout is looked for).
            firstPending = false
            buffer.withUnsafeBytes { hb in
                consumer.malformed(dir, offset: bufferOffset, length: 1, reason: reason(check, first), packet: packet,
                                   bytes: UnsafeRawBufferPointer(rebasing: hb.prefix(first.headerSize)))
            }
            let held = buffer
            let from = bufferOffset
            buffer.removeAll(keepingCapacity: true)
            state = .hunting
            // The bytes after the bad one: those held before this chunk, then the chunk.
            guard before > 0 else { return 1 }
            held.withUnsafeBytes { h in
                appendForHunt(UnsafeRawBufferPointer(rebasing: h[1..<before]), offset: from + 1, packet: packet)
            }
            return 0
        }
    }

    /// The first frame will not come whole (a gap, the end): what was held is reported.
    func abandonFirst(_ packet: PacketRef, _ reason: (_ have: Int, _ need: Int?) -> MalformedReason) {
        guard firstPending else { return }
        firstPending = false
        let first = firstLayout.unsafelyUnwrapped
        if settleDeferred(packet, first: first) { return }
        reportUnfinished(packet, layout: first, reason)
    }

    public func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        started = true
        if let p = peer, _slowPath(p.measureDeferred) { p.peerSpoke() }
        var b = bytes
        var off = offset
        if _slowPath(firstPending) {
            // (`again after`: first frames may follow each other.)
            repeat {
                let used = firstData(b, offset: off, packet: packet)
                b = UnsafeRawBufferPointer(rebasing: b[used...])
                off += UInt64(used)
            } while firstPending && !b.isEmpty
            if b.isEmpty && state == .synced { return }
        }
        if let end = skipTo {
            let n = Int(min(UInt64(b.count), end &- off))
            b = UnsafeRawBufferPointer(rebasing: b[n...])
            off += UInt64(n)
            if off < end { return }
            skipTo = nil
            if b.isEmpty { return }
        }
        if state == .synced && !buffer.isEmpty {
            let used = completeBuffered(b, packet: packet)
            b = UnsafeRawBufferPointer(rebasing: b[used...])
            off += UInt64(used)
            if b.isEmpty { return }
        }
        if state == .hunting {
            appendForHunt(b, offset: off, packet: packet)
            hunt(final: false, packet: packet)
            return
        }
        scan(b, offset: off, packet: packet)
    }

    /// Bytes the stream lost: a frame in progress is cut, and we hunt afterwards.
    public func gap(offset: UInt64, length: UInt64, packet: PacketRef) {
        judged = 0  // (a hunt after a gap is a new one)
        if _slowPath(firstPending) { abandonFirst(packet) { .cutByGap(have: $0, need: $1) } }
        settleDeferred(packet)
        let gapEnd = offset.addingReportingOverflow(length)
        defer { if state == .hunting && !gapEnd.overflow { resumeAt = gapEnd.partialValue } }
        // Hunting since the last gap, the bytes right after it begin with a plausible header
        // whose frame this gap cuts (a snap length cuts every long segment): that frame.
        if state == .hunting, let r = resumeAt, bufferOffset == r, buffer.count >= layout.headerSize,
           let n = buffer.withUnsafeBytes({ plausible($0, 0) }), n > buffer.count {
            state = .synced
            judged = 0
        }
        resumeAt = nil
        if state == .hunting {
            hunt(final: true, packet: packet)
        }
        flushSkipped(packet)
        // A frame whose header came whole (the snap length cut the rest, or a segment was
        // lost): shown as far as it was captured; and when the gap ends inside it, the next
        // frame starts where its header says it ends.
        if state == .synced, skipTo == nil, buffer.count >= layout.headerSize,
           case .ok(let n) = buffer.withUnsafeBytes({ layout.check($0, at: 0) }), n > buffer.count {
            let frameEnd = bufferOffset + UInt64(n)
            buffer.withUnsafeBytes { fb in
                var f = Frame(bytes: fb, offset: bufferOffset, firstPacket: bufferPacket.asFirst, lastPacket: packet, coalesced: 1)
                f.missing = n - fb.count
                consumer.frame(f, dir)
            }
            buffer.removeAll(keepingCapacity: true)
            huntSpans.removeAll(keepingCapacity: true)
            if !gapEnd.overflow && gapEnd.partialValue <= frameEnd {
                if gapEnd.partialValue < frameEnd { skipTo = frameEnd }
                return
            }
            state = .hunting
            return
        }
        reportUnfinished(packet) { .cutByGap(have: $0, need: $1) }
        state = .hunting
    }

    /// After a gap inside a frame of known length: where the next frame starts. The bytes
    /// before it (the rest of the cut frame) are passed over.
    @exclusivity(unchecked) var skipTo: UInt64?
    /// Hunting since a gap: the stream offset right after it.
    @exclusivity(unchecked) var resumeAt: UInt64?

    /// End of the stream: whatever is left is reported (`captureEnded`: the capture stopped,
    /// not the connection, so a frame in progress was cut by the capture, not malformed).
    public func finish(packet: PacketRef, captureEnded: Bool) {
        if _slowPath(firstPending) {
            abandonFirst(packet) { captureEnded ? .cutByCaptureEnd(have: $0, need: $1) : .incompleteAtEnd(have: $0, need: $1) }
        }
        settleDeferred(packet)
        if state == .hunting { hunt(final: true, packet: packet) }
        flushSkipped(packet)
        reportUnfinished(packet) { captureEnded ? .cutByCaptureEnd(have: $0, need: $1) : .incompleteAtEnd(have: $0, need: $1) }
    }

    /// The end of a unit no frame crosses (a datagram; a message of the layer below): a frame
    /// in progress was cut by it, and the next unit starts at a frame boundary.
    @inline(__always)
    public func endOfUnit(packet: PacketRef) {
        if _slowPath(firstPending) { abandonFirst(packet) { .cutByUnitEnd(have: $0, need: $1) } }
        if state == .synced && buffer.isEmpty && skipped.isEmpty { return }
        settleDeferred(packet)
        if state == .hunting { hunt(final: true, packet: packet) }
        flushSkipped(packet)
        reportUnfinished(packet) { .cutByUnitEnd(have: $0, need: $1) }
        huntSpans.removeAll(keepingCapacity: true)
        state = .synced
        judged = 0
    }

    /// A frame that will never complete: report what we had (and how long it said it was).
    /// Reports are dated by the packet that makes them known (as a message is by its last
    /// packet), so the output stays in time order; the stream offset says where they began.
    /// `first`: the layout of a first frame that will not come whole (else the main one).
    func reportUnfinished(_ packet: PacketRef, layout first: FrameLayout? = nil,
                          _ reason: (_ have: Int, _ need: Int?) -> MalformedReason) {
        guard !buffer.isEmpty else { return }
        let layout = first ?? self.layout
        var need: Int?
        if case .ok(let n) = buffer.withUnsafeBytes({ layout.check($0, at: 0) }) { need = n }
        buffer.withUnsafeBytes { b in
            consumer.malformed(dir, offset: bufferOffset, length: UInt64(buffer.count),
                               reason: reason(buffer.count, need), packet: packet,
                               bytes: UnsafeRawBufferPointer(rebasing: b.prefix(MalformedSample.limit)))
        }
        buffer.removeAll(keepingCapacity: true)
    }

    // MARK: - Synced: the fast path

    /// Frames straight out of the segment; a trailing partial frame is copied aside.
    ///
    /// `spans` (after a resync) says which packet carried which bytes of `b`; without it, the
    /// whole of `b` came in `packet`.
    func scan(_ b: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef,
              spans: [(end: UInt64, packet: PacketRef)]? = nil) {
        let fromHunt = spans != nil
        func packetAt(_ o: UInt64) -> PacketRef {
            guard let spans else { return packet }
            return Self.packet(at: o, in: spans) ?? packet
        }
        /// The packet that carried `o..<end` first (the earliest carrier of any of its bytes).
        func carrierOf(_ o: UInt64, _ end: UInt64) -> PacketRef {
            guard let spans else { return packet }
            return Self.carrier(of: o, end, in: spans) ?? packet
        }
        var i = 0
        found.removeAll(keepingCapacity: true)
        var bad: (Int, MalformedReason)?
        while b.count - i >= layout.headerSize {
            switch layout.check(b, at: i) {
            case .ok(let n):
                if b.count - i < n { break }
                found.append((i, n))
                i += n
                continue
            case .needMoreData: break
            case let other: bad = (i, reason(other))
            }
            break
        }
        // After a resync the bytes came in several packets: a frame is coalesced with the
        // others of its run that lie whole in the same one packet.
        var run = (end: 0, count: found.count)
        for (k, f) in found.enumerated() {
            let start = offset + UInt64(f.start)
            let first = carrierOf(start, start + UInt64(f.length)).asFirst, last = packetAt(start + UInt64(f.length) - 1)
            if fromHunt && k >= run.end {
                run = (k + 1, 1)
                if first.number == last.number {
                    while run.end < found.count {
                        let g = found[run.end], gs = offset + UInt64(g.start)
                        guard carrierOf(gs, gs + UInt64(g.length)).number == last.number,
                              packetAt(gs + UInt64(g.length) - 1).number == last.number else { break }
                        run.end += 1
                        run.count += 1
                    }
                }
            }
            consumer.frame(Frame(bytes: UnsafeRawBufferPointer(rebasing: b[f.start..<(f.start + f.length)]),
                                 offset: start, firstPacket: first, lastPacket: last,
                                 coalesced: run.count), dir)
        }
        if let (at, why) = bad {
            flushSkipped(packet)
            // Report the bad header's first byte, then hunt from the next one.
            // With -x the bad header is shown (as much of it as is here).
            consumer.malformed(dir, offset: offset + UInt64(at), length: 1, reason: why, packet: packet,
                               bytes: UnsafeRawBufferPointer(rebasing: b[at..<min(at + layout.headerSize, b.count)]))
            state = .hunting
            let restStart = offset + UInt64(at + 1)
            if let spans {
                appendForHunt(UnsafeRawBufferPointer(rebasing: b[(at + 1)...]), offset: restStart, spans: spans, packet: packet)
            } else {
                appendForHunt(UnsafeRawBufferPointer(rebasing: b[(at + 1)...]), offset: restStart, packet: packet)
                hunt(final: false, packet: packet)
            }
            return
        }
        if i < b.count {
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[i...]))
            bufferOffset = offset + UInt64(i)
            bufferPacket = carrierOf(bufferOffset, offset + UInt64(b.count))
        }
    }

    /// Completes the frame in `buffer` from the front of `b`; returns the bytes of `b` used.
    func completeBuffered(_ b: UnsafeRawBufferPointer, packet: PacketRef) -> Int {
        var used = 0
        bufferPacket = bufferPacket.carried(with: packet)
        while true {
            if buffer.count < layout.headerSize {
                let take = min(layout.headerSize - buffer.count, b.count - used)
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[used..<(used + take)]))
                used += take
                if buffer.count < layout.headerSize { return used }
            }
            // (A kind that measures by decoding, `frame_length = message`, is not asked again
            // about the very bytes it found short: the answer is the same.)
            let known = searched(bufferOffset, buffer.count)
            var check: FrameLayout.Check = known > 0 && known == buffer.count && layout.end?.marksBoundaries == false ? .needMoreData
                : buffer.withUnsafeBytes { layout.check($0, at: 0, from: known) }
            if case .needMoreData = check {
                // A framing that looks for its end (a delimiter): it is not in the bytes held.
                // Take the rest of the chunk and look on from where the search stopped.
                let before = buffer.count
                searchedUpTo = (bufferOffset, before)
                guard used < b.count else { return used }
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[used...]))
                check = measureNow(layout, packet) ? buffer.withUnsafeBytes { layout.check($0, at: 0, from: before) } : .needMoreData
                switch check {
                case .needMoreData:
                    searchedUpTo = (bufferOffset, buffer.count)
                    return b.count
                case .ok(let n) where n > buffer.count:
                    // A header that was still arriving (a varint): the frame is longer than what is held.
                    used = b.count
                    searchedUpTo = (0, 0)
                case .ok(let n) where n <= before:
                    // It ended in bytes held while its measuring was put off: the frame, then
                    // every byte after it read again.
                    emitHeldFrame(n, packet: packet)
                    return b.count
                case .ok(let n):
                    // It ends in what was just taken: keep that frame, leave the rest in `b`.
                    buffer.removeLast(buffer.count - n)
                    used += n - before
                    buffer.withUnsafeBytes { fb in
                        consumer.frame(Frame(bytes: fb, offset: bufferOffset, firstPacket: bufferPacket.asFirst,
                                             lastPacket: packet, coalesced: 1), dir)
                    }
                    buffer.removeAll(keepingCapacity: true)
                    return used
                default:
                    // (No end within max_frame: the bad header below; what was taken stays to hunt in.)
                    used = b.count
                }
            }
            guard case .ok(let n) = check else {
                // A bad header that arrived in pieces: report its first byte and hunt in the rest.
                flushSkipped(packet)
                buffer.withUnsafeBytes { hb in
                    consumer.malformed(dir, offset: bufferOffset, length: 1, reason: reason(check), packet: packet,
                                       bytes: UnsafeRawBufferPointer(rebasing: hb.prefix(layout.headerSize)))
                }
                buffer.removeFirst()
                bufferOffset += 1
                state = .hunting
                return used
            }
            let take = min(n - buffer.count, b.count - used)
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[used..<(used + take)]))
            used += take
            if buffer.count < n { return used }
            buffer.withUnsafeBytes { fb in
                consumer.frame(Frame(bytes: fb, offset: bufferOffset, firstPacket: bufferPacket.asFirst,
                                     lastPacket: packet, coalesced: 1), dir)
            }
            buffer.removeAll(keepingCapacity: true)
            return used
        }
    }

    // MARK: - Frames measured by decoding them (`frame_length = message`)

    /// A kind that measures a frame by decoding it from its start (`frame_length = message`)
    /// measures again, from the start, as a frame's bytes grow: in many small pieces that is
    /// quadratic. So once measuring the frame in `buffer` has cost `remeasureFactor` times its
    /// bytes, it is measured again only when they grew by an eighth, or the stream ends (the
    /// work stays linear; a frame sent in thousands of tiny segments may be cut a little late).
    @exclusivity(unchecked) var measured: (offset: UInt64, count: Int, work: Int) = (0, 0, 0)
    var remeasureFactor = 64
    /// The bytes measured again over the stream (what the rule above keeps linear; for tests).
    var measuredBytes = 0
    /// Which packet carried the bytes of `buffer` not yet measured (so a frame cut late is
    /// still dated by the packet of its last byte).
    @exclusivity(unchecked) var unmeasuredSpans: [(end: UInt64, packet: PacketRef)] = []

    /// Whether to measure the frame in `buffer`, just grown by a chunk of `packet`, now (always,
    /// for kinds that do not measure by decoding).
    @inline(__always)
    func measureNow(_ layout: FrameLayout, _ packet: PacketRef) -> Bool {
        guard layout.end?.marksBoundaries == false else { return true }
        if measured.offset != bufferOffset || measured.count > buffer.count {
            measured = (bufferOffset, 0, 0)
            unmeasuredSpans.removeAll(keepingCapacity: true)
        }
        let end = bufferOffset + UInt64(buffer.count)
        if measured.work > remeasureFactor * buffer.count && buffer.count - measured.count < measured.count / 8 {
            unmeasuredSpans.append((end, packet))
            return false
        }
        // (A frame ends past the bytes of the last measure: who carried those no longer matters.)
        let done = bufferOffset + UInt64(measured.count)
        unmeasuredSpans.removeAll { $0.end <= done }
        unmeasuredSpans.append((end, packet))
        measured.count = buffer.count
        measured.work += buffer.count
        measuredBytes += buffer.count
        return true
    }

    /// Whether the frame in `buffer` holds bytes it was not measured on (its measuring was put off).
    var measureDeferred: Bool {
        measured.offset == bufferOffset && measured.count < buffer.count && measured.count > 0
    }

    /// The other direction of the connection, when this one measures frames by decoding them
    /// (set by `link`; both are owned by the same stack, which outlives them).
    unowned(unsafe) var peer: Deframer?

    /// Links the two directions of a stack whose frames are measured by decoding, so that a
    /// frame whose measuring was put off is cut before the other side's next bytes are read:
    /// a peer that answers has most likely read the whole request, and its answer must not be
    /// shown (or paired) before it.
    static func link(_ a: Deframer, _ b: Deframer) {
        func measures(_ d: Deframer) -> Bool {
            d.layout.end?.marksBoundaries == false || d.firstLayout?.end?.marksBoundaries == false
        }
        // (A first frame that follows the other side's needs it too.)
        guard measures(a) || measures(b) || a.firstLayout?.after != nil || b.firstLayout?.after != nil else { return }
        a.peer = b
        b.peer = a
    }

    /// Protocol `p`'s deframers for the two directions of a connection, linked; `startsAtBoundary`
    /// says whether each direction is read from its first byte.
    static func both(_ p: ProtocolRuntime, consumer: FrameConsumer, startsAtBoundary: (Direction) -> Bool) -> [Deframer] {
        let d = Direction.allCases.map { d in
            Deframer(layout: p.layout(d), direction: d, consumer: consumer, startsAtBoundary: startsAtBoundary(d),
                     first: p.firstLayout(d), knownID: p.knownID(d), plausibleBody: p.plausibleBody(d))
        }
        link(d[0], d[1])
        return d
    }

    /// The other side sent bytes while a frame here waits to be measured again: it is measured
    /// on all its bytes now, within twice the budget `measureNow` keeps (so a stream whose two
    /// sides alternate tiny pieces still costs linear work; past it, the eighth rule alone).
    func peerSpoke() {
        guard measured.work <= 2 * remeasureFactor * buffer.count else { return }
        measured.work += buffer.count
        measuredBytes += buffer.count
        // (Dated by this side's last packet: the peer's says nothing of these bytes.)
        let packet = unmeasuredSpans.last?.packet ?? bufferPacket
        if _slowPath(firstPending) {
            firstPending = false
            if !settleDeferred(packet, first: firstLayout) { firstPending = true }
        } else {
            settleDeferred(packet)
        }
        if state == .hunting { hunt(final: false, packet: packet) }
    }

    /// The first `n` bytes of `buffer` are a frame whose measuring was put off: it is emitted,
    /// and the bytes after it, held as this frame's, are read again as the stream's next ones
    /// (carried, as far as the output can tell, by the packet that let the frame be cut).
    func emitHeldFrame(_ n: Int, packet: PacketRef, first: Bool = false) {
        let spans = unmeasuredSpans
        let restOffset = bufferOffset + UInt64(n)
        buffer.withUnsafeBytes { fb in
            var f = Frame(bytes: UnsafeRawBufferPointer(rebasing: fb[..<n]), offset: bufferOffset,
                          firstPacket: bufferPacket.asFirst, lastPacket: Self.packet(at: restOffset - 1, in: spans) ?? packet,
                          coalesced: 1)
            f.first = first
            consumer.frame(f, dir)
            if first { firstEmitted(f.bytes) }
        }
        let rest = Array(buffer[n...])
        buffer.removeAll(keepingCapacity: true)
        measured = (0, 0, 0)
        unmeasuredSpans.removeAll(keepingCapacity: true)
        guard !rest.isEmpty else { return }
        // (Another first frame comes next: the rest is read that way.)
        if _slowPath(firstPending) { rest.withUnsafeBytes { data($0, offset: restOffset, packet: packet) }; return }
        rest.withUnsafeBytes { scan($0, offset: restOffset, packet: packet, spans: spans.filter { $0.end > restOffset }) }
    }

    /// Before the stream ends or breaks: a frame whose measuring was put off is measured on
    /// all its bytes, and cut (with those after it) if it is whole, or reported with what is
    /// wrong with it (its first byte, and the rest hunted in) if it can be no frame; `first`:
    /// the direction's first frame, of that layout. Whether a frame was cut or reported.
    @discardableResult
    func settleDeferred(_ packet: PacketRef, first: FrameLayout? = nil) -> Bool {
        var settled = false
        var l = first ?? layout
        while state == .synced, measureDeferred, buffer.count >= l.headerSize {
            measured.count = buffer.count
            let check = buffer.withUnsafeBytes { l.check($0, at: 0) }
            switch check {
            case .ok(let n) where n <= buffer.count:
                emitHeldFrame(n, packet: packet, first: !settled && first != nil)
            case .ok, .needMoreData:
                return settled
            default:
                reportHeldBad(check, layout: l, packet: packet)
                return true
            }
            settled = true
            l = layout
        }
        return settled
    }

    /// The frame in `buffer`, measured late, can be no frame: its first byte is reported with
    /// the reason, and the bytes after it are hunted in, each still dated by its packet.
    func reportHeldBad(_ check: FrameLayout.Check, layout l: FrameLayout, packet: PacketRef) {
        let spans = unmeasuredSpans
        flushSkipped(packet)
        buffer.withUnsafeBytes { hb in
            consumer.malformed(dir, offset: bufferOffset, length: 1, reason: reason(check, l), packet: packet,
                               bytes: UnsafeRawBufferPointer(rebasing: hb.prefix(l.headerSize)))
        }
        let rest = Array(buffer.dropFirst())
        let restOffset = bufferOffset + 1
        buffer.removeAll(keepingCapacity: true)
        measured = (0, 0, 0)
        unmeasuredSpans.removeAll(keepingCapacity: true)
        state = .hunting
        rest.withUnsafeBytes { appendForHunt($0, offset: restOffset, spans: spans, packet: packet) }
    }

    /// How far a search for the frame's end in `buffer` got (its stream offset then, and the
    /// bytes searched), so a long frame arriving in many segments is searched once.
    @exclusivity(unchecked) var searchedUpTo: (offset: UInt64, count: Int) = (0, 0)

    /// Where a search for the end of the frame at `offset` may resume in `count` bytes.
    @inline(__always)
    func searched(_ offset: UInt64, _ count: Int) -> Int {
        searchedUpTo.offset == offset && searchedUpTo.count <= count ? searchedUpTo.count : 0
    }

    func reason(_ c: FrameLayout.Check, _ layout: FrameLayout? = nil) -> MalformedReason {
        let layout = layout ?? self.layout
        switch c {
        case .tooShort(let l): return .lengthTooShort(l, minimum: layout.headerSize)
        case .tooLong(let l): return .lengthTooLong(l, maximum: layout.maxFrame)
        case .constantMismatch(let f, let v):
            let h = layout.fields[f]
            // A hex field's value is masked to its width, as the tree shows it.
            let mask: UInt64 = h.width >= 8 || h.isVarint ? .max : (1 << UInt64(h.width * 8)) - 1
            return .constantMismatch(field: h.name, value: h.hex ? v & mask : v, expected: h.hex ? (h.constant ?? 0) & mask : h.constant ?? 0,
                                     hex: h.hex, signed: h.signed)
        case .badVarint(let f): return .badVarint(field: layout.fields[f].name, maxBytes: layout.fields[f].varintMax)
        case .unknownSize(let id): return .unknownSize(id: id)
        case .badValue: return .badValue((layout.end as? MessageEnd)?.invalidText ?? "a field holds no value of its type")
        default: return .skipped
        }
    }

    // MARK: - Hunting: the rare path

    /// Which packet carried which bytes of the hunting buffer: (end offset, packet), in order.
    @exclusivity(unchecked) var huntSpans: [(end: UInt64, packet: PacketRef)] = []

    func appendForHunt(_ b: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        if buffer.isEmpty {
            bufferOffset = offset
            bufferPacket = packet
            huntSpans.removeAll(keepingCapacity: true)
        }
        buffer.append(contentsOf: b)
        if !b.isEmpty { huntSpans.append((offset + UInt64(b.count), packet)) }
    }

    /// Bytes `b` at stream offset `offset` held for the hunt, each kept with the packet `spans`
    /// says carried it (past the last span, `packet`).
    func appendForHunt(_ b: UnsafeRawBufferPointer, offset: UInt64, spans: [(end: UInt64, packet: PacketRef)], packet: PacketRef) {
        var from = 0
        for sp in spans where sp.end > offset + UInt64(from) {
            let to = min(Int(sp.end - offset), b.count)
            appendForHunt(UnsafeRawBufferPointer(rebasing: b[from..<to]), offset: offset + UInt64(from), packet: sp.packet)
            from = to
            if from == b.count { return }
        }
        if from < b.count { appendForHunt(UnsafeRawBufferPointer(rebasing: b[from...]), offset: offset + UInt64(from), packet: packet) }
    }

    static func packet(at o: UInt64, in spans: [(end: UInt64, packet: PacketRef)]) -> PacketRef? {
        var lo = 0, hi = spans.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if spans[mid].end > o { hi = mid } else { lo = mid + 1 }
        }
        return lo < spans.count ? spans[lo].packet : nil
    }

    /// The packet of `o`, carried as early as the earliest carrier of any byte of `o..<end`.
    static func carrier(of o: UInt64, _ end: UInt64, in spans: [(end: UInt64, packet: PacketRef)]) -> PacketRef? {
        var lo = 0, hi = spans.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if spans[mid].end > o { hi = mid } else { lo = mid + 1 }
        }
        guard lo < spans.count else { return nil }
        var p = spans[lo].packet
        var i = lo + 1
        while i < spans.count && spans[i - 1].end < end {
            p = p.carried(with: spans[i].packet)
            i += 1
        }
        return p
    }

    /// Whether a frame could start at `i`: a sane header whose id we know.
    func plausible(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int? {
        // A framing kind that measures a candidate by decoding it (`frame_length = message`):
        // what it reads is charged to the hunt's budget, so no input makes it decode a long
        // candidate at every offset (a fuzz helper's finding: stream length × max_frame).
        if let end = layout.end, !end.marksBoundaries {
            judged += min(b.count - i, layout.maxFrame)
            if judged > Self.judgeBudget { return nil }
        }
        guard case .ok(let n) = layout.check(b, at: i) else { return nil }
        if let knownID, let id = layout.messageID(b, at: i), !knownID(id) { return nil }
        // (A frame not all here yet is judged when it is.)
        if let plausibleBody, n <= b.count - i {
            // Bytes judged are bounded per hunt, so no input can make the hunt decode a long
            // candidate at every offset; past the bound nothing more is taken for a frame.
            judged += n
            if judged > Self.judgeBudget || !plausibleBody(UnsafeRawBufferPointer(rebasing: b[i..<(i + n)])) { return nil }
        }
        return n
    }

    /// Bytes of candidate frames decoded since the last resync (see `plausibleBody`).
    @exclusivity(unchecked) var judged = 0
    static let judgeBudget = 64 << 20

    /// Looks for the next frame boundary in `buffer`; once found, reports what was skipped
    /// and goes back to the fast path with the rest.
    func hunt(final: Bool, packet: PacketRef) {
        // A loop, not recursion: each round either syncs and scans (consuming bytes) or stops.
        // Bytes before the first position still worth waiting for are reported at once, so
        // no byte is examined twice and the buffer never holds more than one frame's worth.
        while state == .hunting {
            switch findBoundary(final: final) {
            case .wait(let p):
                if p > 0 { skip(p, packet: packet) }
                return
            case .none:
                let excess = final ? buffer.count : buffer.count - max(layout.maxHeaderSize - 1, 0)
                if excess > 0 { skip(excess, packet: packet) }
                return
            case .found(let p):
                if p > 0 { skip(p, packet: packet) }
                flushSkipped(packet)
                state = .synced
                judged = 0
                let rest = buffer
                let off = bufferOffset
                let spans = huntSpans
                buffer.removeAll(keepingCapacity: true)
                huntSpans.removeAll(keepingCapacity: true)
                rest.withUnsafeBytes { b in
                    scan(b, offset: off, packet: packet, spans: spans)
                }
            }
        }
    }

    /// The first position in `buffer` where a frame plausibly starts, confirmed by the header
    /// after it when the data reach that far; or the first position that needs more data.
    func findBoundary(final: Bool) -> ResyncBoundary {
        let r = findBoundaryMeasuring(final: final)
        // (`frame_length = message`: where it waited, and on how many bytes; see `huntWait`.)
        if case .wait(let p) = r, layout.end?.marksBoundaries == false {
            huntWait = (bufferOffset + UInt64(p), buffer.count - p)
        }
        return r
    }

    /// `frame_length = message`: where the hunt last waited for more bytes (a candidate, or the
    /// frame after one that confirms it, found short), and the bytes from there it had then.
    /// Until they grew by an eighth it waits again without measuring (as `measureNow` does on
    /// the synced path): measured again at every small segment, a long candidate costs its
    /// length squared, up to the hunt's budget (64 MiB of decoding).
    @exclusivity(unchecked) var huntWait: (offset: UInt64, count: Int) = (.max, 0)

    func findBoundaryMeasuring(final: Bool) -> ResyncBoundary {
        buffer.withUnsafeBytes { b -> ResyncBoundary in
            // A framing that marks its ends (a delimiter) says where the next frame starts.
            if let end = layout.end, end.marksBoundaries {
                if let p = end.boundary(in: b, from: 0) { return .found(p) }
                return final ? .none : .wait(max(0, b.count - (end.trailerSize - 1)))
            }
            if !final, layout.end != nil, judged <= Self.judgeBudget, bufferOffset == huntWait.offset,
               b.count - huntWait.count < huntWait.count / 8 {
                return .wait(0)
            }
            var p = 0
            while b.count - p >= layout.headerSize {
                // A varint of the header still arriving, or (`frame_length = message`) a field
                // of the message: this candidate is judged when they are here (a measure is
                // charged to the hunt's budget, as `plausible`'s are).
                if !final, layout.variable || layout.end != nil, judged <= Self.judgeBudget,
                   case .needMoreData = layout.check(b, at: p) {
                    if layout.end?.marksBoundaries == false { judged += min(b.count - p, layout.maxFrame) }
                    return .wait(p)
                }
                if let n = plausible(b, p) {
                    let after = b.count - p - n
                    if after < 0 {
                        // Could be a frame still arriving: wait, unless nothing more will come.
                        if !final { return .wait(p) }
                    } else if after >= layout.headerSize && !((layout.variable || layout.end != nil) && layout.check(b, at: p + n) == .needMoreData) {
                        if plausible(b, p + n) != nil { return .found(p) }
                    } else if final || after == 0 {
                        return .found(p)
                    } else {
                        return .wait(p)  // the next header (or a varint of it) is still arriving
                    }
                }
                p += 1
            }
            return .none
        }
    }

    /// Passes over `n` bytes at the front of the buffer. Consecutive skips are reported as
    /// one run (flushed before the next frame, gap or end), not once per segment.
    func skip(_ n: Int, packet: PacketRef) {
        let n = min(n, buffer.count)
        skipped.add(buffer.prefix(n), at: bufferOffset) { o, l, b in
            consumer.malformed(dir, offset: o, length: l, reason: .skipped, packet: packet, bytes: b)
        }
        buffer.removeFirst(n)
        bufferOffset += UInt64(n)
        // Forget the packets whose bytes are all gone.
        var drop = 0
        while drop < huntSpans.count && huntSpans[drop].end <= bufferOffset { drop += 1 }
        if drop > 0 { huntSpans.removeFirst(drop) }
        bufferPacket = huntSpans.first?.packet ?? packet
    }

    @exclusivity(unchecked) var skipped = SkippedRun()

    /// Reports the run of skipped bytes, dated by `packet`: the one that ended the run.
    func flushSkipped(_ packet: PacketRef) {
        guard !skipped.isEmpty else { return }
        skipped.flush { o, l, b in consumer.malformed(dir, offset: o, length: l, reason: .skipped, packet: packet, bytes: b) }
    }
}
