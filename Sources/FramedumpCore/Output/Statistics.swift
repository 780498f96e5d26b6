/// `-z` statistics, printed at the end of a run (after `-Y`: they count what the filter
/// selected): plain tables, or one JSON object per table with `-T json`.
public enum StatisticsKind: Sendable, Equatable {
    /// Messages and bytes per protocol, message and direction.
    case msgs
    /// Per connection: duration, messages and bytes each way, gaps, malformed reports.
    case conv
    /// Messages per interval of packet time.
    case rate(seconds: Int)

    /// `msgs`, `conv`, `rate` or `rate,SECONDS`.
    public init?(argument: String) {
        let parts = argument.split(separator: ",", maxSplits: 1).map(String.init)
        switch parts[0] {
        case "msgs": self = .msgs
        case "conv": self = .conv
        case "rate":
            let s = parts.count > 1 ? Int(parts[1]) : 1
            guard let s, s >= 1, s <= 86_400 else { return nil }
            self = .rate(seconds: s)
        default: return nil
        }
    }
}

/// Counts what passes on to the output, then prints the tables asked for.
public final class StatisticsSink: MessageSink {
    let inner: MessageSink?
    let kinds: [StatisticsKind]
    let out: OutputBuffer
    let json: Bool

    struct MessageKey: Hashable { var proto: String; var name: String; var dir: Direction }
    var perMessage: [MessageKey: (count: UInt64, bytes: UInt64)] = [:]
    var messageOrder: [MessageKey] = []

    final class Conversation {
        let text: String
        let proto: String
        var first: Timestamp
        var last: Timestamp
        var messages = [UInt64](repeating: 0, count: 2)
        var bytes = [UInt64](repeating: 0, count: 2)
        var gaps: UInt64 = 0
        var malformed: UInt64 = 0
        init(text: String, proto: String, ts: Timestamp) { self.text = text; self.proto = proto; first = ts; last = ts }
    }
    var conversations: [ObjectIdentifier: Conversation] = [:]
    var conversationOrder: [Conversation] = []

    /// Message counts per interval (index = interval since the first message).
    var rate: [UInt64] = []
    var rateStart: Int64?

    public init(inner: MessageSink?, kinds: [StatisticsKind], output: OutputBuffer, json: Bool) {
        self.inner = inner
        self.kinds = kinds
        out = output
        self.json = json
    }

    func conversation(_ c: Connection, _ p: ProtocolRuntime?, _ ts: Timestamp) -> Conversation {
        let id = ObjectIdentifier(c)
        if let x = conversations[id] { return x }
        let x = Conversation(text: "\(c.client.text)-\(c.server.text)", proto: p?.schema.name ?? "tcp", ts: ts)
        conversations[id] = x
        conversationOrder.append(x)
        return x
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let ts = m.frame.lastPacket.ts
        let name = m.message.map { p.schema.messages[$0].name } ?? m.webSocket.map { String(describing: $0.opcode.name) }
            ?? m.id.map { "id \($0)" } ?? "(no id)"
        let key = MessageKey(proto: p.schema.name, name: name, dir: m.direction)
        let n = UInt64(m.frame.bytes.count)
        if let v = perMessage[key] { perMessage[key] = (v.count + 1, v.bytes + n) } else {
            perMessage[key] = (1, n)
            messageOrder.append(key)
        }
        let conv = conversation(c, p, ts)
        conv.messages[m.direction.rawValue] += 1
        conv.bytes[m.direction.rawValue] += n
        if ts > conv.last { conv.last = ts }
        for k in kinds {
            guard case .rate(let s) = k else { continue }
            let start = rateStart ?? ts.seconds
            rateStart = start
            let slot = Int((ts.seconds - start) / Int64(s))
            // Bounded: a packet stamped far in the future does not make a giant table.
            guard slot >= 0 && slot < 1 << 20 else { continue }
            if rate.count <= slot { rate += [UInt64](repeating: 0, count: slot + 1 - rate.count) }
            rate[slot] += 1
        }
        inner?.message(m, c, p)
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        _ = conversation(c, p, packet.ts)
        inner?.opened(c, p, packet: packet)
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        conversation(c, p, packet.ts).malformed += 1
        inner?.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        conversation(c, p, packet.ts).gaps += 1
        inner?.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        inner?.conflict(c, d, offset: offset, length: length, packet: packet)
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        let conv = conversation(c, p, packet.ts)
        if packet.ts > conv.last { conv.last = packet.ts }
        // The connection object may be reused for a later connection: forget its identity.
        conversations[ObjectIdentifier(c)] = nil
        inner?.closed(c, p, reason: reason, packet: packet)
    }

    public func handshake(_ h: HTTPHandshake, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                          deflate: DeflateParameters?, packet: PacketRef) {
        inner?.handshake(h, c, p, d, deflate: deflate, packet: packet)
    }

    public func finish() {
        inner?.finish()
        for k in kinds { write(k) }
        out.flush()
    }

    // MARK: - Tables

    func line(_ s: String) { out.write(s); out.newline() }

    /// Columns padded to their widest cell; numbers on the right.
    func table(_ title: String, _ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { i in all.map { $0[i].count }.max() ?? 0 }
        line("")
        line("=== \(title) ===")
        for r in all {
            let cells = r.enumerated().map { i, c in
                i == 0 ? c + String(repeating: " ", count: widths[i] - c.count)
                    : String(repeating: " ", count: widths[i] - c.count) + c
            }
            line(cells.joined(separator: "  "))
        }
    }

    func write(_ k: StatisticsKind) {
        switch k {
        case .msgs:
            let keys = messageOrder.sorted { ($0.proto, $0.name, $0.dir.rawValue) < ($1.proto, $1.name, $1.dir.rawValue) }
            if json {
                let rows = keys.map { key -> String in
                    let v = perMessage[key]!
                    return "{\"protocol\":\(JSONText.quoted(key.proto)),\"message\":\(JSONText.quoted(key.name)),\"dir\":\"\(key.dir == .c2s ? "c2s" : "s2c")\",\"messages\":\(v.count),\"bytes\":\(v.bytes)}"
                }
                line("{\"type\":\"stats\",\"stat\":\"msgs\",\"rows\":[" + rows.joined(separator: ",") + "]}")
            } else {
                table("messages per protocol, message and direction", ["protocol", "message", "dir", "messages", "bytes"],
                      keys.map { key in
                          let v = perMessage[key]!
                          return [key.proto, key.name, key.dir == .c2s ? "c2s" : "s2c", "\(v.count)", "\(v.bytes)"]
                      })
            }
        case .conv:
            func seconds(_ c: Conversation) -> String {
                let ns = (c.last.seconds - c.first.seconds) * 1_000_000_000 + Int64(c.last.nanos) - Int64(c.first.nanos)
                let us = max(0, ns) / 1000
                let frac = String(us % 1_000_000)
                return "\(us / 1_000_000)." + String(repeating: "0", count: 6 - frac.count) + frac
            }
            if json {
                let rows = conversationOrder.map { c in
                    "{\"conn\":\(JSONText.quoted(c.text)),\"protocol\":\(JSONText.quoted(c.proto)),\"duration\":\(seconds(c)),\"messages\":{\"c2s\":\(c.messages[0]),\"s2c\":\(c.messages[1])},\"bytes\":{\"c2s\":\(c.bytes[0]),\"s2c\":\(c.bytes[1])},\"gaps\":\(c.gaps),\"malformed\":\(c.malformed)}"
                }
                line("{\"type\":\"stats\",\"stat\":\"conv\",\"rows\":[" + rows.joined(separator: ",") + "]}")
            } else {
                table("conversations", ["connection", "protocol", "duration s", "msgs c2s", "msgs s2c", "bytes c2s", "bytes s2c", "gaps", "malformed"],
                      conversationOrder.map { c in
                          [c.text, c.proto, seconds(c), "\(c.messages[0])", "\(c.messages[1])", "\(c.bytes[0])", "\(c.bytes[1])",
                           "\(c.gaps)", "\(c.malformed)"]
                      })
            }
        case .rate(let s):
            let start = rateStart ?? 0
            if json {
                let rows = rate.enumerated().map { "{\"start\":\(start + Int64($0.offset * s)),\"messages\":\($0.element)}" }
                line("{\"type\":\"stats\",\"stat\":\"rate\",\"interval\":\(s),\"rows\":[" + rows.joined(separator: ",") + "]}")
            } else {
                table("messages per \(s) s", ["interval start", "messages"],
                      rate.enumerated().map { ["\(start + Int64($0.offset * s))", "\($0.element)"] })
            }
        }
    }
}
