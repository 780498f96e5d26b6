import Foundation
import FramedumpCore

/// Takes a run's decoded stream: each message's tree (the terminal's own rendering, so the
/// page says what `framedump -r` says, with the printer's table of its lines: fields, byte
/// ranges, notes, warnings) and bytes go to the spill file, a 56-byte entry to the index, and
/// the connection's counts and problems to its record. Entries are handed over in
/// batches (one at a time live, so messages show as they come). The index owns the
/// connections' records: a batch works on copies of those it changes (`changed`), handed back
/// with its entries.
final class IndexSink: MessageSink {
    let spill: Spill
    let printer: TreePrinter
    let index: MessageIndex
    let filters: FilterResults
    let batch: Int
    let live: Bool
    /// The packet counter of the run, read when a batch is handed over.
    var packets: () -> UInt64 = { 0 }
    /// The bounds the run has hit, read at most once a second (live) and at the end.
    var limits: () -> [LimitHit] = { [] }
    var limitsAt: UInt64 = 0
    /// Live: told the oldest message the index holds once older ones were dropped (the spill's
    /// and the capture's segments before it go).
    var dropped: ((IndexEntry) -> Void)?
    private var droppedBefore = 0

    var pending: [IndexEntry] = []
    var pendingPairs: [(UInt32, UInt32)] = []
    var pendingCut: [(Int, UInt64)] = []
    var changed: [Int: ConnectionRecord] = [:]
    var newNames: [String] = []
    var next = 0

    /// How many records there are (the next one's index).
    var recordCount = 0
    /// Each connection's record index by its number (numbers count up from 1 in order of
    /// appearance): 4 bytes a connection, `UInt32.max` for one with no record.
    var byNumber = ChunkedArray<UInt32>()
    /// Requests waiting for their response: per connection, the page's number of each by its
    /// number in its connection (the session pairs them; this finds the request's row).
    var waiting: [Int: [UInt64: UInt32]] = [:]
    var nameIndex: [String: UInt32] = [:]
    var nameCount: UInt32 = 0
    /// Names by (protocol, schema message), so a known message costs no string hashing.
    var knownNames: [ObjectIdentifier: [Int: UInt32]] = [:]

    init(spill: Spill, index: MessageIndex, filters: FilterResults, live: Bool) {
        self.spill = spill
        self.index = index
        self.filters = filters
        printer = TreePrinter(output: spill.out, hexDump: false, verbose: false, color: false)
        // Each message's lines, stored after its text: the page's fields and byte ranges.
        printer.lines = TreeLineTable()
        self.live = live
        batch = live ? 1 : 4096
        pending.reserveCapacity(batch)
    }

    func record(_ c: Connection, _ p: ProtocolRuntime?) -> Int {
        if let i = recordIndex(c.number) {
            // Opened before its protocol was known (a WebSocket on any port, known by its
            // handshake): named by its first message or event that knows it.
            if let p, !unnamed.isEmpty, unnamed.remove(i) != nil {
                update(i) { r in
                    let below = r.protocolName.range(of: " in ").map { String(r.protocolName[$0.lowerBound...]) } ?? ""
                    r.protocolName = p.schema.name + below
                }
            }
            return i
        }
        let i = recordCount
        recordCount += 1
        if p == nil { unnamed.insert(i) }
        let ts = c.firstPacket.ts
        changed[i] = ConnectionRecord(
            number: c.number, client: c.client.text, server: c.server.text,
            protocolName: p?.schema.name ?? (c.udp ? "udp" : "tcp"), udp: c.udp, midStream: !c.rolesFromSYN && !c.udp,
            first: Self.seconds(ts), last: Self.seconds(ts))
        let n = Int(clamping: c.number)
        while byNumber.count <= n { byNumber.append(UInt32.max) }
        byNumber[n] = UInt32(truncatingIfNeeded: i)
        return i
    }

    func recordIndex(_ number: UInt64) -> Int? {
        guard number < UInt64(byNumber.count) else { return nil }
        let i = byNumber[Int(number)]
        return i == UInt32.max ? nil : Int(i)
    }

    /// Records opened with no protocol yet ("tcp", "udp").
    var unnamed: Set<Int> = []

    static func seconds(_ t: Timestamp) -> Double { Double(t.seconds) + Double(t.nanos) / 1e9 }

    /// Changes a record: this batch's copy, taken from the index the first time the batch touches it.
    func update(_ i: Int, _ body: (inout ConnectionRecord) -> Void) {
        guard var r = changed[i] ?? index.connection(i) else { return }
        body(&r)
        changed[i] = r
    }

    func note(_ i: Int, _ text: String) {
        update(i) { r in if r.notes.count < ConnectionRecord.maxNotes { r.notes.append(text) } }
    }

    func intern(_ name: String) -> UInt32 {
        if let n = nameIndex[name] { return n }
        let n = nameCount
        nameCount += 1
        nameIndex[name] = n
        newNames.append(name)
        return n
    }

    func nameOf(_ m: DecodedMessage, _ p: ProtocolRuntime) -> UInt32 {
        let pid = ObjectIdentifier(p)
        if let mi = m.message, let n = knownNames[pid]?[mi] { return n }
        let n = intern(m.name(in: p) ?? m.idText.map { "unknown id \($0)" } ?? "?")
        if let mi = m.message { knownNames[pid, default: [:]][mi] = n }
        return n
    }

    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        _ = record(c, p)
        // Connections that carry no message yet still reach the index in bounded batches.
        if changed.count >= max(batch, 1024) { handOver() }
    }

    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let ci = record(c, p)
        let f = m.frame!
        let ordinal = next
        next += 1
        spill.startSegmentIfFull()
        let start = spill.position
        printer.message(m, c, p)
        printer.lines?.write(to: spill.out)
        let treeEnd = spill.position
        spill.out.write(f.bytes)
        if let t = m.transformed { spill.out.write(t) }
        let ts = f.lastPacket.ts
        var e = IndexEntry(
            spillOffset: start, treeLength: UInt32(clamping: treeEnd - start), frameLength: UInt32(clamping: f.bytes.count),
            transformedLength: UInt32(clamping: m.transformed?.count ?? 0), nanos: ts.nanos, seconds: ts.seconds,
            firstPacket: UInt32(clamping: f.firstPacket.number), lastPacket: UInt32(clamping: f.lastPacket.number),
            id: m.id ?? 0, connection: UInt32(ci), name: nameOf(m, p), pair: IndexEntry.noPair,
            direction: UInt8(m.direction.rawValue), flags: 0)
        if m.id != nil { e.flags |= IndexEntry.hasID }
        if m.idSigned { e.flags |= IndexEntry.signedID }
        if m.idPair { e.flags |= IndexEntry.pairID }
        if !m.warnings.isEmpty { e.flags |= IndexEntry.hasWarnings }
        if f.missing > 0 {
            e.flags |= IndexEntry.isCut
            pendingCut.append((ordinal, UInt64(f.bytes.count) + UInt64(f.missing)))
        }
        switch m.pair.role {
        case .request:
            waiting[ci, default: [:]][m.number] = UInt32(truncatingIfNeeded: ordinal)
        case .answered:
            if let request = waiting[ci]?.removeValue(forKey: m.pair.number) {
                e.pair = request
                pendingPairs.append((request, UInt32(truncatingIfNeeded: ordinal)))
            }
        default: break
        }
        let length = UInt64(f.bytes.count), warned = !m.warnings.isEmpty
        update(ci) { r in
            if m.direction == .c2s { r.messages.c2s += 1; r.bytes.c2s += length } else { r.messages.s2c += 1; r.bytes.s2c += length }
            if warned { r.warnings += 1 }
            r.last = e.time
        }
        if live { filters.observe(m, c, p, ordinal: ordinal) }
        pending.append(e)
        if pending.count >= batch { handOver() }
    }

    /// Everything written so far reaches the file, then the index.
    func handOver(last: Bool = false) {
        spill.out.flush()
        let now = DispatchTime.now().uptimeNanoseconds
        if last || now &- limitsAt > 1_000_000_000 {
            limitsAt = now
            index.setLimits(limits())
        }
        index.publish(entries: pending, pairs: pendingPairs, connections: changed, newNames: newNames, packets: packets(),
                      losses: losses, lostBytes: lostBytes, cut: pendingCut)
        pending.removeAll(keepingCapacity: true)
        pendingCut.removeAll()
        pendingPairs.removeAll()
        changed.removeAll()
        newNames.removeAll()
        if let dropped, index.range.lowerBound != droppedBefore, let oldest = index.entry(index.range.lowerBound) {
            droppedBefore = index.range.lowerBound
            dropped(oldest)
        }
    }

    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) {
        malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef, bytes: UnsafeRawBufferPointer) {
        let i = record(c, p)
        update(i) { $0.malformed += 1 }
        note(i, "\(reason.isCaptureCut ? "cut" : "malformed") \(d) at stream offset \(offset), \(length) bytes: \(reason.text)")
        lossRow(.malformed(d, offset: offset, length: length, reason: reason), c, p, packet: packet, bytes: bytes) {
            $0.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
        }
    }

    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {
        let i = record(c, p)
        update(i) { $0.gaps += 1 }
        note(i, "gap \(d): \(length) bytes missing at stream offset \(offset) (\(reason.rawValue))")
        lossRow(.gap(d, offset: offset, length: length, reason: reason), c, p, packet: packet) {
            $0.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
        }
    }

    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        note(record(c, nil), "\(length) bytes \(d) at stream offset \(offset) retransmitted with different content")
        lossRow(.conflict(d, offset: offset, length: length), c, nil, packet: packet) {
            $0.conflict(c, d, offset: offset, length: length, packet: packet)
        }
    }

    /// A loss as a row of the list, numbered among the messages (a filter's run numbers it the
    /// same way: `FilterMatchSink`): the terminal's line as its summary, what happened as its
    /// note, and a malformed stretch's first bytes as its frame.
    func lossRow(_ loss: LossEvent, _ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef,
                 bytes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                 terminal: (TreePrinter) -> Void) {
        let ci = record(c, p)
        let ordinal = next
        next += 1
        let line = OutputBuffer(fd: nil)
        terminal(TreePrinter(output: line, hexDump: false, verbose: false, color: false))
        let first = line.text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        let out = spill.out, start = spill.position
        var table = TreeLineTable()
        table.start = start
        out.write(first)
        table.line(.summary, depth: 0, offset: 0, width: 0, text: start, end: spill.position)
        out.newline()
        let at = spill.position
        out.write(loss.text)
        table.line(.note, depth: 0, offset: 0, width: 0, text: at, end: spill.position)
        out.newline()
        table.write(to: out)
        let treeEnd = spill.position
        out.write(bytes)
        let ts = packet.ts
        let e = IndexEntry(
            spillOffset: start, treeLength: UInt32(clamping: treeEnd - start), frameLength: UInt32(clamping: bytes.count),
            transformedLength: 0, nanos: ts.nanos, seconds: ts.seconds,
            firstPacket: UInt32(clamping: packet.number), lastPacket: UInt32(clamping: packet.number),
            id: loss.length, connection: UInt32(ci), name: intern(loss.kind.tag), pair: IndexEntry.noPair,
            direction: UInt8(loss.direction.rawValue), flags: IndexEntry.isLoss)
        losses[loss.kind.index] += 1
        if loss.kind == .gap { lostBytes += loss.length }
        if live { filters.observe(loss, c, ordinal: ordinal) }
        pending.append(e)
        if pending.count >= batch { handOver() }
    }

    /// Rows of each kind of loss (`LossEvent.Kind`'s order), and the bytes the gaps lost.
    var losses = [Int](repeating: 0, count: LossEvent.Kind.allCases.count)
    var lostBytes: UInt64 = 0

    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        let i = record(c, p)
        let t = Self.seconds(packet.ts)
        waiting[i] = nil   // (its requests never answered stay unanswered)
        unnamed.remove(i)
        update(i) { r in
            r.closed = reason.rawValue
            r.last = max(r.last, t)
        }
        if let loss = LossEvent.limit(reason) {
            lossRow(loss, c, p, packet: packet) { $0.closed(c, p, reason: reason, packet: packet) }
        }
    }

    func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {
        let i = record(c, p)
        for problem in e.problems { note(i, problem.layer + ": " + problem.text) }
        if let below = e.belowProtocol {
            update(i) { r in if !r.protocolName.contains(" in ") { r.protocolName += " in " + below } }
        }
        if let loss = LossEvent.layer(e, d) {
            lossRow(loss, c, p, packet: packet) { $0.layerEvent(e, c, p, d, packet: packet) }
        }
    }

    func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        note(record(c, p), n.text)
        lossRow(.notice(n, d), c, p, packet: packet) { $0.notice(n, c, p, d, packet: packet) }
    }

    func finish() { handOver(last: true) }
}
