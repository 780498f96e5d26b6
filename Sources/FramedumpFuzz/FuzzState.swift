import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh state`): the per-connection state tables (connection phases,
/// replies typed by their request, request/response pairing) under traffic whose interleaving
/// of the two directions the input chooses, as a server's packet that switches a phase or
/// answers a request may come before or after the client's next one. Each decoded message
/// must keep the tables' promises: a phase the protocol has, a response paired with a request
/// made earlier on its own connection that is one end of a pair; and NDJSON stays strict JSON.
///
/// Input: `[protocol][piece]` then runs `[u16 BE: bit 15 the server's, the rest the length][bytes]`.
public enum FuzzState {
    /// Protocols with every kind of state: phases with `= *` and a switch from any phase,
    /// `answers`, `pair` in order and by a field, and `pair_by`.
    static let dissector = """
    protocol st {
        port 8420; header { uint32 length; uint16 cmd; uint32 seq; } frame_length = length; message_id = cmd; body fields;
        max_frame 4096;
        phase login; phase play midstream; phase trade;
        phase login -> play after LoginOK;
        phase play -> trade after TradeOpen;
        phase trade -> play after TradeClose;
        phase * -> login after Logout;
        pair Login -> LoginOK;
        pair Offer -> Deal by seq = ack;
    }
    Message Login = 1 c2s in login { Uint8 who; }
    Message LoginOK = 2 s2c in login { }
    Message Move = 5 c2s in play { Uint16 x; }
    Message Offer = 5 c2s in trade { Uint32 gold; }
    Message Deal = 8 s2c in trade { Uint32 ack; }
    Message TradeOpen = 6 s2c in play { }
    Message TradeClose = 7 s2c { }
    Message Logout = 9 c2s { }
    Message Get = 10 c2s { Uint32 tag; }
    Message GetReply answers Get by tag = seq { Uint16 n; }
    Message Item = * s2c in trade { Uint8 kind; }
    protocol sp {
        port 8421; header { uint16 length; uint16 id; } frame_length = length; message_id = id; pair_by id;
    }
    Message Ping = 1 c2s { Uint32 t; }
    Message Pong = 1 s2c { Uint32 t; }
    """

    nonisolated(unsafe) static var loaded: [ProtocolSchema]?
    static var schemas: [ProtocolSchema] {
        if let loaded { return loaded }
        let s = try! DissectorLoader.parse(text: dissector, file: "state.dissector")
        loaded = s
        return s
    }

    /// Checks what each message says of the state tables, then hands it on.
    final class Checker: MessageSink {
        let inner: MessageSink
        var numbers: [UInt64: UInt64] = [:]
        /// Per connection, its requests still waiting (number, rule, key, which request of the
        /// connection it was), oldest first, and how many it made: a request is forgotten once
        /// the bound's count of newer ones were made.
        var waiting: [UInt64: [(number: UInt64, rule: Int32, key: UInt64, made: Int)]] = [:]
        var made: [UInt64: Int] = [:]
        init(_ inner: MessageSink) { self.inner = inner }
        func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
            let s = p.schema
            precondition(m.phase.current < Int32(s.phases.names.count) && m.phase.next < Int32(s.phases.names.count), "a phase the protocol has")
            precondition(m.number > (numbers[c.number] ?? 0), "messages numbered in order")
            numbers[c.number] = m.number
            pairModel(m, c, p)
            if m.pair.role == .answered {
                precondition(m.pair.number < m.number, "a response answers an earlier message")
                if m.pair.request >= 0, let mi = m.message, !s.pairs.isEmpty, s.pairBy == nil {
                    // (Pairs that share a rule answer each other's requests.)
                    let rules = s.pairs.indices.map { s.pairs[$0].rule ?? $0 }
                    precondition(s.pairs.indices.contains { i in
                        s.pairs[i].response == mi && s.pairs.indices.contains { rules[$0] == rules[i] && s.pairs[$0].request == Int(m.pair.request) }
                    }, "paired by a rule")
                }
            }
            inner.message(m, c, p)
        }
        /// The response pairs with the oldest waiting request of its rule and key, exactly.
        func pairModel(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
            let how = p.pairing(of: m)
            switch m.pair.role {
            case .request:
                guard let how, how.request else { preconditionFailure("a request by its rule") }
                let n = made[c.number, default: 0] + 1
                made[c.number] = n
                waiting[c.number, default: []].removeAll { $0.made <= n - ProtocolRuntime.pairsWaitingLimit }
                waiting[c.number]!.append((m.number, how.rule, how.key, n))
            case .answered, .unmatched:
                guard let how, !how.request else { preconditionFailure("a response by its rule") }
                let i = waiting[c.number]?.firstIndex { $0.rule == how.rule && $0.key == how.key }
                if m.pair.role == .unmatched { precondition(i == nil, "unmatched while its request waits"); return }
                guard let i else { preconditionFailure("answered with no request waiting") }
                precondition(waiting[c.number]![i].number == m.pair.number, "answers the oldest waiting request of its key")
                waiting[c.number]!.remove(at: i)
            case .noKey: precondition(how == nil, "no key")
            case .none: break
            }
        }
        func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) { inner.opened(c, p, packet: packet) }
        func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                       reason: MalformedReason, packet: PacketRef) {
            inner.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
        }
        func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason,
                 packet: PacketRef) {
            inner.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
        }
        func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
            inner.conflict(c, d, offset: offset, length: length, packet: packet)
        }
        func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) { inner.closed(c, p, reason: reason, packet: packet) }
        func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {
            inner.layerEvent(e, c, p, d, packet: packet)
        }
        func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
            inner.notice(n, c, p, d, packet: packet)
        }
        func finish() { inner.finish() }
    }

    public static func run(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 2 else { return }
        let port: UInt16 = data[0] & 1 == 0 ? 8420 : 8421
        let piece = max(1, Int(data[1]))
        var runs: [(client: Bool, bytes: [UInt8])] = []
        var i = 2
        while i + 2 <= data.count {
            let h = Int(data[i]) << 8 | Int(data[i + 1])
            let n = min(h & 0x7fff, data.count - i - 2)
            runs.append((h & 0x8000 == 0, Array(UnsafeRawBufferPointer(rebasing: data[(i + 2)..<(i + 2 + n)]))))
            i += 2 + n
        }
        for json in [false, true] {
            let out = OutputBuffer(fd: nil)
            let printer: MessageSink = json ? JSONPrinter(output: out, diffable: false)
                : TreePrinter(output: out, hexDump: false, verbose: false, color: false)
            let sink = StatisticsSink(inner: Checker(printer), kinds: [.rtt], output: out, json: json)
            FuzzStreams.feed(SessionManager(protocols: schemas, sink: sink), runs: runs, piece: piece, port: port)
            if json { FuzzDeframer.checkNDJSON(out.bytes) }
        }
    }
}
