/// `-z` statistics, printed at the end of a run (after `-Y`: they count what the filter
/// selected): plain tables, or one JSON object per table with `-T json`.
public enum StatisticsKind: Sendable, Equatable {
    /// Messages and bytes per protocol, message and direction.
    case msgs
    /// Per connection: duration, messages and bytes each way, gaps, malformed reports.
    case conv
    /// Messages per interval of packet time (1 ms to a day).
    case rate(nanos: Int64)
    /// Request/response latency, where a dissector says how responses pair with requests.
    case rtt
    /// A layer's own table (`kcp`: per conversation, retransmissions and round trips).
    case layer(String)

    /// `msgs`, `conv`, `rate` or `rate,SECONDS` (a decimal: `rate,0.02` for 20 ms game ticks).
    public init?(argument: String) {
        let parts = argument.split(separator: ",", maxSplits: 1).map(String.init)
        switch parts[0] {
        case "msgs": self = .msgs
        case "conv": self = .conv
        case "rtt": self = .rtt
        case let name where LayerRegistry.kind(named: name)?.hasStatistics == true: self = .layer(name)
        case "rate":
            guard let n = parts.count > 1 ? Self.nanos(parts[1]) : 1_000_000_000,
                  n >= 1_000_000, n <= 86_400_000_000_000 else { return nil }
            self = .rate(nanos: n)
        default: return nil
        }
    }

    /// A decimal number of seconds as nanoseconds, exactly (`0.02` → 20,000,000); nil if it
    /// is not one or has more than nine decimals.
    static func nanos(_ s: String) -> Int64? {
        let parts = s.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts[0].isEmpty && parts.count > 1 ? 0 : Int64(parts[0]), whole >= 0, whole < 1 << 32 else { return nil }
        var frac: Int64 = 0
        if parts.count > 1 {
            let f = parts[1]
            guard !f.isEmpty, f.count <= 9, f.allSatisfy({ $0.isASCII && $0.isNumber }), let v = Int64(f) else { return nil }
            frac = v
            for _ in f.count..<9 { frac *= 10 }
        }
        return whole * 1_000_000_000 + frac
    }

    /// An interval as the tables show it: `1`, `0.02`.
    static func secondsText(_ nanos: Int64) -> String {
        let whole = nanos / 1_000_000_000, frac = nanos % 1_000_000_000
        guard frac != 0 else { return "\(whole)" }
        var f = String(frac)
        f = String(repeating: "0", count: 9 - f.count) + f
        while f.last == "0" { f.removeLast() }
        return "\(whole).\(f)"
    }
}

/// Counts what passes on to the output, then prints the tables asked for.
public final class StatisticsSink: MessageSink {
    let inner: MessageSink?
    let kinds: [StatisticsKind]
    let out: OutputBuffer
    let json: Bool

    struct MessageKey: Hashable { var proto: String; var name: String; var dir: Direction }
    @exclusivity(unchecked) var perMessage: [MessageKey: (count: UInt64, bytes: UInt64)] = [:]
    @exclusivity(unchecked) var messageOrder: [MessageKey] = []

    final class Conversation {
        let text: String
        let proto: String
        var first: Timestamp
        var last: Timestamp
        var messages = [UInt64](repeating: 0, count: 2)
        var bytes = [UInt64](repeating: 0, count: 2)
        var gaps: UInt64 = 0
        var malformed: UInt64 = 0
        /// A layer below the protocol (TLS: `tls 1.3`), shown beside its name.
        var below: String?
        var shownProto: String { below.map { "\(proto) in \($0)" } ?? proto }
        init(text: String, proto: String, ts: Timestamp) { self.text = text; self.proto = proto; first = ts; last = ts }
    }
    @exclusivity(unchecked) var conversations: [ObjectIdentifier: Conversation] = [:]
    @exclusivity(unchecked) var conversationOrder: [Conversation] = []

    /// Requests waiting for their response, per connection and pairing key (oldest first).
    @exclusivity(unchecked) var pending: [ObjectIdentifier: [String: [(Timestamp, String)]]] = [:]
    /// Latencies in nanoseconds per request message (at most `maxSamples` kept each).
    @exclusivity(unchecked) var latencies: [String: [Int64]] = [:]
    @exclusivity(unchecked) var latencyOrder: [String] = []
    @exclusivity(unchecked) var unanswered: [String: UInt64] = [:]
    /// What pairing saw, to say why a table came out empty.
    @exclusivity(unchecked) var pairing = (requests: 0, responses: 0, unmatched: 0, withoutKey: 0, withoutRule: Set<String>())
    @exclusivity(unchecked) var pendingCount = 0
    static let maxSamples = 1 << 20
    static let maxPending = 1 << 16

    /// Per `rate` statistic (in the order asked): message counts per interval, index = intervals
    /// since the whole second of the first message; and the messages past the table's end.
    @exclusivity(unchecked) var rates: [(nanos: Int64, counts: [UInt64], beyond: UInt64)] = []
    @exclusivity(unchecked) var rateStart: Int64?
    @exclusivity(unchecked) var ratePrinted = Set<Int>()
    static let maxRateSlots = 1 << 20

    public init(inner: MessageSink?, kinds: [StatisticsKind], output: OutputBuffer, json: Bool) {
        self.inner = inner
        self.kinds = kinds
        out = output
        self.json = json
        for case .rate(let n) in kinds { rates.append((n, [], 0)) }
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
        let name = m.name(in: p) ?? m.id.map { "id \($0)" } ?? "(no id)"
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
        if kinds.contains(.rtt) {
            if let rule = p.schema.pairBy {
                if let key = Self.pairKey(m, p, rule) { pair(m, c, name, key, ts) } else { pairing.withoutKey += 1 }
            } else {
                pairing.withoutRule.insert(p.schema.name)
            }
        }
        if !rates.isEmpty { countRate(ts) }
        inner?.message(m, c, p)
    }

    func countRate(_ ts: Timestamp) {
        let start = rateStart ?? ts.seconds
        rateStart = start
        let since = ts.nanos(since: Timestamp(seconds: start, nanos: 0))
        for i in rates.indices {
            let slot = since / rates[i].nanos
            // Bounded: a packet stamped far in the future (or past) does not make a giant
            // table; what falls outside is counted and said.
            guard since >= 0 && since != .max && slot < Int64(Self.maxRateSlots) else { rates[i].beyond += 1; continue }
            let s = Int(slot)
            if rates[i].counts.count <= s { rates[i].counts += [UInt64](repeating: 0, count: s + 1 - rates[i].counts.count) }
            rates[i].counts[s] += 1
        }
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        _ = conversation(c, p, packet.ts)
        inner?.opened(c, p, packet: packet)
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef, bytes: UnsafeRawBufferPointer) {
        if !reason.isCaptureCut { conversation(c, p, packet.ts).malformed += 1 }
        inner?.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        conversation(c, p, packet.ts).gaps += 1
        inner?.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        inner?.conflict(c, d, offset: offset, length: length, packet: packet)
    }

    /// The value that pairs a response with its request.
    package static func pairKey(_ m: DecodedMessage, _ p: ProtocolRuntime, _ rule: PairRule) -> String? {
        switch rule {
        case .messageID: return m.id.map { String($0) }
        case .field(let request, let response):
            let name = m.direction == .c2s ? request : response
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
    }

    static func text(_ f: DecodedField, _ m: DecodedMessage) -> String? {
        switch f.value {
        case .unsigned(let v): return String(v)
        case .signed(let v): return String(v)
        case .string, .validString, .bytes, .jsonString, .jsonNumber: return String(decoding: m.fieldBytes.slice(Int(f.offset), Int(f.width)), as: UTF8.self)
        default: return nil
        }
    }

    func pair(_ m: DecodedMessage, _ c: Connection, _ name: String, _ key: String, _ ts: Timestamp) {
        let id = ObjectIdentifier(c)
        if m.direction == .c2s { pairing.requests += 1 } else { pairing.responses += 1 }
        if m.direction == .c2s {
            // Bounded: a client that is never answered does not grow the table without end.
            guard pendingCount < Self.maxPending else { unanswered[name, default: 0] += 1; return }
            pending[id, default: [:]][key, default: []].append((ts, name))
            pendingCount += 1
            if latencies[name] == nil { latencies[name] = []; latencyOrder.append(name) }
            return
        }
        guard var queue = pending[id]?[key], !queue.isEmpty else { pairing.unmatched += 1; return }
        let (sent, request) = queue.removeFirst()
        pending[id]![key] = queue.isEmpty ? nil : queue
        pendingCount -= 1
        // Saturating: a capture may stamp packets anywhere in the 64-bit range.
        let ns = ts.nanos(since: sent)
        if latencies[request]!.count < Self.maxSamples { latencies[request]!.append(max(0, ns)) }
    }

    /// Why no response was paired with a request, in the numbers that tell.
    func emptyPairingReason() -> String? {
        let p = pairing
        if p.requests == 0 && p.responses == 0 && p.withoutKey == 0 {
            if !p.withoutRule.isEmpty {
                return "no response paired: no loaded dissector of " + p.withoutRule.sorted().joined(separator: ", ")
                    + " says pair_by (pair_by id; pair_by FIELD; or pair_by REQUEST_FIELD = RESPONSE_FIELD;)"
            }
            return "no response paired: no messages"
        }
        return "no response paired: \(p.requests) requests and \(p.responses) responses carried the pair_by key, "
            + "\(p.unmatched) responses matched no waiting request, \(p.withoutKey) messages lacked the key field; "
            + "if responses carry the request's value in another field, say pair_by REQUEST_FIELD = RESPONSE_FIELD;"
    }

    /// Requests still waiting when their connection closes are unanswered.
    func closePending(_ c: Connection) {
        guard let left = pending.removeValue(forKey: ObjectIdentifier(c)) else { return }
        for (_, queue) in left {
            for (_, name) in queue { unanswered[name, default: 0] += 1 }
            pendingCount -= queue.count
        }
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        closePending(c)
        let conv = conversation(c, p, packet.ts)
        if packet.ts > conv.last { conv.last = packet.ts }
        // The connection object may be reused for a later connection: forget its identity.
        conversations[ObjectIdentifier(c)] = nil
        inner?.closed(c, p, reason: reason, packet: packet)
    }

    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                           packet: PacketRef) {
        if let b = e.belowProtocol { conversation(c, p, packet.ts).below = b }
        inner?.layerEvent(e, c, p, d, packet: packet)
    }

    public func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        inner?.notice(n, c, p, d, packet: packet)
    }

    public func finish() {
        for id in Array(pending.keys) {
            for (_, queue) in pending[id]! { for (_, name) in queue { unanswered[name, default: 0] += 1 } }
        }
        pending.removeAll()
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

    /// A layer's table, asked of the layer at the end (set once the session manager exists).
    @exclusivity(unchecked) var layerTable: ((String) -> (title: String, header: [String], rows: [[String]])?)?

    func write(_ k: StatisticsKind) {
        switch k {
        case .layer(let name):
            guard let t = layerTable?(name) else { return }
            if json {
                let rows = t.rows.map { r -> String in
                    "{" + zip(t.header, r).map { h, v in
                        JSONText.quoted(h.replacingOccurrences(of: " ", with: "_")) + ":"
                            + (!v.isEmpty && v.allSatisfy({ $0.isNumber || $0 == "." }) ? v : v == "-" ? "null" : JSONText.quoted(v))
                    }.joined(separator: ",") + "}"
                }
                line("{\"type\":\"stats\",\"stat\":\(JSONText.quoted(name)),\"rows\":[" + rows.joined(separator: ",") + "]}")
            } else {
                table(t.title, t.header, t.rows)
                if t.rows.isEmpty { line("(no \(name) traffic in this capture)") }
            }
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
                let ns = c.last.nanos(since: c.first)
                let us = max(0, ns) / 1000
                let frac = String(us % 1_000_000)
                return "\(us / 1_000_000)." + String(repeating: "0", count: 6 - frac.count) + frac
            }
            if json {
                let rows = conversationOrder.map { c in
                    "{\"conn\":\(JSONText.quoted(c.text)),\"protocol\":\(JSONText.quoted(c.proto)),\"below\":\(c.below.map(JSONText.quoted) ?? "null"),\"duration\":\(seconds(c)),\"messages\":{\"c2s\":\(c.messages[0]),\"s2c\":\(c.messages[1])},\"bytes\":{\"c2s\":\(c.bytes[0]),\"s2c\":\(c.bytes[1])},\"gaps\":\(c.gaps),\"malformed\":\(c.malformed)}"
                }
                line("{\"type\":\"stats\",\"stat\":\"conv\",\"rows\":[" + rows.joined(separator: ",") + "]}")
            } else {
                table("conversations", ["connection", "protocol", "duration s", "msgs c2s", "msgs s2c", "bytes c2s", "bytes s2c", "gaps", "malformed"],
                      conversationOrder.map { c in
                          [c.text, c.shownProto, seconds(c), "\(c.messages[0])", "\(c.messages[1])", "\(c.bytes[0])", "\(c.bytes[1])",
                           "\(c.gaps)", "\(c.malformed)"]
                      })
            }
        case .rtt:
            func ms(_ ns: Int64) -> String {
                let us = ns / 1000
                let frac = String(us % 1000)
                return "\(us / 1000)." + String(repeating: "0", count: 3 - frac.count) + frac
            }
            func stats(_ name: String) -> [String] {
                let v = latencies[name]!.sorted()
                guard !v.isEmpty else { return ["0", "-", "-", "-", "-", "-", "\(unanswered[name] ?? 0)"] }
                func pct(_ q: Double) -> Int64 { v[min(v.count - 1, Int((Double(v.count) * q).rounded(.up)) - 1)] }
                return ["\(v.count)", ms(v[0]), ms(pct(0.5)), ms(pct(0.9)), ms(pct(0.99)), ms(v[v.count - 1]), "\(unanswered[name] ?? 0)"]
            }
            let names = latencyOrder.sorted()
            if json {
                let rows = names.map { n -> String in
                    let s = stats(n)
                    let num = { (x: String) in x == "-" ? "null" : x }
                    return "{\"request\":\(JSONText.quoted(n)),\"answered\":\(s[0]),\"min_ms\":\(num(s[1])),\"median_ms\":\(num(s[2])),\"p90_ms\":\(num(s[3])),\"p99_ms\":\(num(s[4])),\"max_ms\":\(num(s[5])),\"unanswered\":\(s[6])}"
                }
                line("{\"type\":\"stats\",\"stat\":\"rtt\",\"rows\":[" + rows.joined(separator: ",") + "]}")
            } else {
                table("request/response latency (ms)", ["request", "answered", "min", "median", "p90", "p99", "max", "unanswered"],
                      names.map { [$0] + stats($0) })
            }
            if latencies.values.allSatisfy(\.isEmpty), let why = emptyPairingReason() {
                if json {
                    line("{\"type\":\"warning\",\"stat\":\"rtt\",\"text\":\(JSONText.quoted(why))}")
                } else {
                    line("(\(why))")
                }
            }
        case .rate(let n):
            // The first table of this interval not yet printed (the same interval twice prints twice).
            guard let i = rates.indices.first(where: { rates[$0].nanos == n && !ratePrinted.contains($0) }) else { return }
            ratePrinted.insert(i)
            let r = rates[i]
            let start = rateStart ?? 0
            func at(_ slot: Int) -> String {
                // slot × interval ≤ the time since the first message, which fits; the start is
                // the capture's (untrusted) seconds, so its sum saturates rather than traps.
                let offset = Int64(slot) * n
                let (whole, overflow) = start.addingReportingOverflow(offset / 1_000_000_000)
                let frac = StatisticsKind.secondsText(offset % 1_000_000_000)
                return "\(overflow ? .max : whole)" + (frac == "0" ? "" : frac.dropFirst())
            }
            let interval = StatisticsKind.secondsText(n)
            // Output grows with the messages, not with the time they span: NDJSON lists the
            // intervals that had messages (each with its start), the table folds a run of
            // empty intervals into one line.
            if json {
                let rows = r.counts.enumerated().filter { $0.element > 0 }.map { "{\"start\":\(at($0.offset)),\"messages\":\($0.element)}" }
                line("{\"type\":\"stats\",\"stat\":\"rate\",\"interval\":\(interval),\"rows\":[" + rows.joined(separator: ",")
                     + "],\"beyond\":\(r.beyond)}")
            } else {
                var rows: [[String]] = []
                var i = 0
                while i < r.counts.count {
                    var j = i
                    while j < r.counts.count && r.counts[j] == 0 { j += 1 }
                    if j - i >= 3 {
                        rows.append([at(i), "0"])
                        rows.append(["(\(j - i - 2) more empty)", ""])
                        rows.append([at(j - 1), "0"])
                        i = j
                        continue
                    }
                    rows.append([at(i), "\(r.counts[i])"])
                    i += 1
                }
                table("messages per \(interval) s", ["interval start", "messages"], rows)
                if r.beyond > 0 {
                    line("(\(r.beyond) messages fell outside the \(Self.maxRateSlots) intervals from the first message and are not in this table)")
                }
            }
        }
    }
}
