import Foundation
import FramedumpCore

/// The messages a `-Y` filter selects, by ordinal. A filter is answered by decoding the
/// capture again with it (the index holds no decoded fields); live, the capture so far is
/// read again from the file the packets are written to, and the decoding thread evaluates the
/// same filter on every message after that point.
final class FilterResults: @unchecked Sendable {
    private let lock = NSLock()
    private var done: [String: [Int]] = [:]
    private var order: [String] = []
    /// Live: the filter the page shows, evaluated by the decoding thread from `from` on.
    private var live: (text: String, evaluator: FilterEvaluator, from: Int, matches: [Int])?
    /// Filters kept (each a list of ordinals); the oldest is forgotten beyond this.
    static let kept = 8

    func cached(_ text: String) -> [Int]? {
        lock.lock(); defer { lock.unlock() }
        if let l = live, l.text == text, let before = done[text] { return before + l.matches }
        return live?.text == text ? nil : done[text]
    }

    func store(_ text: String, _ ordinals: [Int]) {
        lock.lock(); defer { lock.unlock() }
        if done[text] == nil { order.append(text) }
        done[text] = ordinals
        while order.count > Self.kept {
            let old = order.removeFirst()
            if live?.text != old { done[old] = nil }
        }
    }

    /// Live: messages the decoding thread has seen (each is in the file before it is seen).
    private var seen = 0

    /// Live: from the next message on, the decoding thread evaluates `text`; returns the
    /// ordinal it starts at (what came before is answered from the file).
    func startLive(_ text: String, _ e: FilterEvaluator) -> Int {
        lock.lock(); defer { lock.unlock() }
        live = (text, e, seen, [])
        done[text] = nil
        return seen
    }

    var liveText: String? {
        lock.lock(); defer { lock.unlock() }
        return live?.text
    }

    /// The decoding thread, for each message of a live capture.
    func observe(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime, ordinal: Int) {
        lock.lock(); defer { lock.unlock() }
        seen = ordinal + 1
        guard let l = live, ordinal >= l.from, l.evaluator.matches(m, c, p) else { return }
        live!.matches.append(ordinal)
    }

    /// The decoding thread, for each loss row of a live capture.
    func observe(_ loss: LossEvent, _ c: Connection, ordinal: Int) {
        lock.lock(); defer { lock.unlock() }
        seen = ordinal + 1
        guard let l = live, ordinal >= l.from, l.evaluator.matches(event: loss, c) else { return }
        live!.matches.append(ordinal)
    }
}

/// A message a filter's run selected, by what finds it in the index when the run did not
/// start at the capture's first packet (live, once older files of the capture were dropped).
struct FoundMessage {
    /// Its last packet's number in the whole capture.
    var packet: UInt64
    /// How many messages ended in that packet after it (counted from the packet's end: the
    /// index may hold a packet's last messages only).
    var after: Int = 0
    var key: String
    var direction: UInt8
    var length: UInt32
}

/// Collects the ordinals of the messages and losses a filter selects, in a run of its own:
/// numbered as `IndexSink` numbers its rows (a message, or a loss: each malformed stretch, gap,
/// conflict, notice, layer event with problems, and eviction).
final class FilterMatchSink: MessageSink {
    let evaluator: FilterEvaluator
    let below: Int
    /// Packets of the capture before the first this run reads (0: it reads from the first,
    /// and a message's ordinal is its place in the run).
    let packetsBefore: UInt64
    var next = 0
    var matches: [Int] = []
    var found: [FoundMessage] = []
    /// The packet messages last ended in, and the found ones and messages of it so far.
    private var packet: UInt64 = 0
    private var inPacket: (found: Int, messages: Int) = (0, 0)

    init(_ e: FilterEvaluator, below: Int, packetsBefore: UInt64 = 0) {
        evaluator = e
        self.below = below
        self.packetsBefore = packetsBefore
    }

    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let o = next
        next += 1
        if packetsBefore > 0, let f = m.frame {
            let at = packetsBefore + f.lastPacket.number
            if at != packet { endPacket(); packet = at }
            inPacket.messages += 1
            guard evaluator.matches(m, c, p) else { return }
            found.append(FoundMessage(packet: at, after: inPacket.messages, key: c.client.text + "-" + c.server.text,
                                      direction: UInt8(m.direction.rawValue), length: UInt32(clamping: f.bytes.count)))
            inPacket.found += 1
            return
        }
        if o < below, evaluator.matches(m, c, p) { matches.append(o) }
    }

    func loss(_ e: LossEvent, _ c: Connection) {
        // (A run from a later file finds messages only: see `MessageIndex.ordinals(found:)`.)
        guard packetsBefore == 0 else { return }
        let o = next
        next += 1
        if o < below, evaluator.matches(event: e, c) { matches.append(o) }
    }

    /// The found messages of the packet just ended: `after` was their place in it, now the
    /// number of its messages after them.
    private func endPacket() {
        for k in (found.count - inPacket.found)..<found.count { found[k].after = inPacket.messages - found[k].after }
        inPacket = (0, 0)
    }

    func finish() { endPacket() }

    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) {
        loss(.malformed(d, offset: offset, length: length, reason: reason), c)
    }
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {
        loss(.gap(d, offset: offset, length: length, reason: reason), c)
    }
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        loss(.conflict(d, offset: offset, length: length), c)
    }
    func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        loss(.notice(n, d), c)
    }
    func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {
        if let l = LossEvent.layer(e, d) { loss(l, c) }
    }
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        if let l = LossEvent.limit(reason) { loss(l, c) }
    }
}
