/// What `-z` counts of one event, in plain values that name no object of the decoding side:
/// made where the event is decoded, counted where the tables are kept. On one thread that is
/// the same place; in a connection-sharded run the shards make them and the merging thread
/// counts them in the run's order, so the tables come out as one thread's.
package struct StatisticsRecord {
    enum Kind: UInt8 { case opened, message, malformed, gap, closed, below }
    package enum Pairing {
        /// `-z rtt` not asked, or not a message, or one that takes no part.
        case none
        /// The protocol says neither `pair_by` nor `pair`.
        case noRule
        /// The message lacks the field its pairing reads.
        case noKey
        /// A request (`name` is the message's).
        case request
        /// A response, `nanos` after the request it answers (named `request`).
        case answered(request: String, nanos: Int64)
        /// A response that no waiting request matched.
        case unmatched
    }

    var kind: Kind
    var dir: Direction
    /// The connection's number (unique in the run).
    var conn: UInt64
    var ts: Timestamp
    /// The protocol (nil: none claimed the connection).
    var proto: String?
    /// `message`: its name; `below`: the layer under the protocol, in its words.
    var name = ""
    var bytes: UInt64 = 0
    /// The connection's `client-server` text, on the first record of its conversation.
    var text: String?
    var pairing = Pairing.none
    /// `-z conv`: the part of the connection the message came on (an HTTP/2 stream), its label's
    /// number and the layer that reads it (`LayerKind.substreamLabel`); `layer` 255: none.
    var substream: (number: UInt64, label: UInt32, layer: UInt8) = (0, 0, 255)
}

/// `-z`: sits in front of the printer, turns what passes on to it into `StatisticsRecord`s and
/// hands them to the tables (`StatisticsTables`), or, in a shard of a sharded run, keeps them
/// for the merge to count in order.
public final class StatisticsSink: MessageSink {
    let inner: MessageSink?
    let rtt: Bool
    let conv: Bool
    /// Nil in a shard: the records wait in `records` for the merge.
    let tables: StatisticsTables?
    @exclusivity(unchecked) var records: [StatisticsRecord] = []
    /// Connections whose conversation the tables already have (so its text goes once).
    @exclusivity(unchecked) var known = Set<UInt64>()

    public init(inner: MessageSink?, kinds: [StatisticsKind], output: OutputBuffer, json: Bool) {
        self.inner = inner
        rtt = kinds.contains(.rtt)
        conv = kinds.contains(.conv)
        tables = StatisticsTables(kinds: kinds, output: output, json: json)
    }

    /// A shard's: records are kept, not counted.
    init(recordingFor inner: MessageSink?, kinds: [StatisticsKind]) {
        self.inner = inner
        rtt = kinds.contains(.rtt)
        conv = kinds.contains(.conv)
        tables = nil
    }

    @inline(__always)
    func emit(_ r: StatisticsRecord) {
        if let t = tables { t.count(r) } else { records.append(r) }
    }

    /// A record of connection `c`, with its text if this is its conversation's first.
    @inline(__always)
    func record(_ k: StatisticsRecord.Kind, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, _ ts: Timestamp) -> StatisticsRecord {
        var r = StatisticsRecord(kind: k, dir: d, conn: c.number, ts: ts, proto: p?.schema.name)
        if known.insert(c.number).inserted { r.text = "\(c.client.text)-\(c.server.text)" }
        return r
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        var r = record(.message, c, p, m.direction, m.frame.lastPacket.ts)
        r.name = m.name(in: p) ?? m.idText.map { "id \($0)" } ?? "(no id)"
        r.bytes = UInt64(m.frame.bytes.count)
        if rtt { r.pairing = Self.pairing(m, p) }
        if conv && !m.layerNotes.isEmpty {
            for n in m.layerNotes.all { if let s = n.kind.substream(n) { r.substream = (s.number, s.label, n.layer); break } }
        }
        emit(r)
        inner?.message(m, c, p)
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        emit(record(.opened, c, p, .c2s, packet.ts))
        inner?.opened(c, p, packet: packet)
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef, bytes: UnsafeRawBufferPointer) {
        // A frame the capture's end cut is not the peer's fault: not counted as malformed.
        if !reason.isCaptureCut { emit(record(.malformed, c, p, d, packet.ts)) }
        inner?.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        emit(record(.gap, c, p, d, packet.ts))
        inner?.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        inner?.conflict(c, d, offset: offset, length: length, packet: packet)
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        emit(record(.closed, c, p, .c2s, packet.ts))
        // The tables forget the conversation's identity too.
        known.remove(c.number)
        inner?.closed(c, p, reason: reason, packet: packet)
    }

    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                           packet: PacketRef) {
        if let b = e.belowProtocol {
            var r = record(.below, c, p, d, packet.ts)
            r.name = b
            emit(r)
        }
        inner?.layerEvent(e, c, p, d, packet: packet)
    }

    public func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        inner?.notice(n, c, p, d, packet: packet)
    }

    /// The printer's end first (its lines come before the tables), then the tables.
    public func finish() {
        inner?.finish()
        tables?.finish()
    }

    /// How message `m` took part in pairing (its connection's `PairTable` said it).
    package static func pairing(_ m: DecodedMessage, _ p: ProtocolRuntime) -> StatisticsRecord.Pairing {
        switch m.pair.role {
        case .none: return p.pairRules == nil ? .noRule : .none
        case .noKey: return .noKey
        case .request: return .request
        case .unmatched: return .unmatched
        case .answered:
            let request = m.pair.request >= 0 ? p.schema.messages[Int(m.pair.request)].name : m.idText.map { "id \($0)" } ?? "(no id)"
            return .answered(request: request, nanos: m.pair.latency(to: m.frame.lastPacket.ts))
        }
    }
}
