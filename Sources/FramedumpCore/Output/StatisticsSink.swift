/// What `-z` counts of one event, in plain values that name no object of the decoding side:
/// made where the event is decoded, counted where the tables are kept. On one thread that is
/// the same place; in a connection-sharded run the shards make them and the merging thread
/// counts them in the run's order, so the tables come out as one thread's.
package struct StatisticsRecord {
    enum Kind: UInt8 { case opened, message, malformed, gap, closed, below }
    package enum Pairing {
        /// `-z rtt` not asked, or not a message.
        case none
        /// The protocol says no `pair_by`.
        case noRule
        /// The message lacks the field its pairing reads.
        case noKey
        /// A request (waits for its answer) or a response (answers the oldest request of that key).
        case key(String, request: Bool)
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
}

/// `-z`: sits in front of the printer, turns what passes on to it into `StatisticsRecord`s and
/// hands them to the tables (`StatisticsTables`), or, in a shard of a sharded run, keeps them
/// for the merge to count in order.
public final class StatisticsSink: MessageSink {
    let inner: MessageSink?
    let rtt: Bool
    /// Nil in a shard: the records wait in `records` for the merge.
    let tables: StatisticsTables?
    @exclusivity(unchecked) var records: [StatisticsRecord] = []
    /// Connections whose conversation the tables already have (so its text goes once).
    @exclusivity(unchecked) var known = Set<UInt64>()

    public init(inner: MessageSink?, kinds: [StatisticsKind], output: OutputBuffer, json: Bool) {
        self.inner = inner
        rtt = kinds.contains(.rtt)
        tables = StatisticsTables(kinds: kinds, output: output, json: json)
    }

    /// A shard's: records are kept, not counted.
    init(recordingFor inner: MessageSink?, kinds: [StatisticsKind]) {
        self.inner = inner
        rtt = kinds.contains(.rtt)
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

    /// How message `m` takes part in pairing: a `pair A -> B` it is one end of (its role by its
    /// type), else the protocol's `pair_by` (its role by its direction).
    package static func pairing(_ m: DecodedMessage, _ p: ProtocolRuntime) -> StatisticsRecord.Pairing {
        let s = p.schema
        if !s.pairs.isEmpty {
            if let mi = m.message, let i = s.pairs.firstIndex(where: { $0.request == mi || $0.response == mi }) {
                let spec = s.pairs[i]
                // One message on both ends (paired by a field): the client's is the request.
                let request = spec.request == spec.response ? m.direction == .c2s : spec.request == mi
                let tag = "\u{1}\(i)\u{1}"
                guard let name = request ? spec.requestField : spec.responseField else { return .key(tag, request: request) }
                guard let value = field(m, p, named: name) else { return .noKey }
                return .key(tag + value, request: request)
            }
            if s.pairBy == nil { return .none }
        }
        guard let rule = s.pairBy else { return .noRule }
        return pairKey(m, p, rule).map { .key($0, request: m.direction == .c2s) } ?? .noKey
    }

    /// The value that pairs a response with its request.
    package static func pairKey(_ m: DecodedMessage, _ p: ProtocolRuntime, _ rule: PairRule) -> String? {
        switch rule {
        case .messageID: return m.idText
        case .field(let request, let response):
            return field(m, p, named: m.direction == .c2s ? request : response)
        }
    }

    /// The value of header field or top-level field `name` of `m`, as text.
    static func field(_ m: DecodedMessage, _ p: ProtocolRuntime, named name: String) -> String? {
        for f in m.headerFields {
            if case .header(let i) = f.name, p.schema.header[Int(i)].name == name { return Self.text(f, m) }
        }
        for f in m.fields where f.depth == 0 {
            if case .field(let mi, let fi) = f.name, p.schema.messages[Int(mi)].fields[Int(fi)].name == name {
                return Self.text(f, m)
            }
        }
        return nil
    }

    static func text(_ f: DecodedField, _ m: DecodedMessage) -> String? {
        switch f.value {
        case .unsigned(let v): return String(v)
        case .signed(let v): return String(v)
        case .string, .validString, .bytes, .jsonString, .jsonNumber: return String(decoding: m.fieldBytes.slice(Int(f.offset), Int(f.width)), as: UTF8.self)
        default: return nil
        }
    }
}
