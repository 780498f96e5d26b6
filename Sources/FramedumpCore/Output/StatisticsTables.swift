/// `-z`'s tables: counts `StatisticsRecord`s in the run's order, then prints the tables asked
/// for (plain, or one JSON object per table with `-T json`).
final class StatisticsTables {
    let kinds: [StatisticsKind]
    let out: OutputBuffer
    let json: Bool

    struct MessageKey: Hashable { var proto: String; var name: String; var dir: Direction }
    @exclusivity(unchecked) var perMessage: [MessageKey: (count: UInt64, bytes: UInt64)] = [:]
    @exclusivity(unchecked) var messageOrder: [MessageKey] = []

    /// Messages and bytes each way, and the time from the first to the last.
    class Traffic {
        var first: Timestamp
        var last: Timestamp
        var messages = [UInt64](repeating: 0, count: 2)
        var bytes = [UInt64](repeating: 0, count: 2)
        init(ts: Timestamp) { first = ts; last = ts }

        @inline(__always)
        final func count(_ r: StatisticsRecord) {
            messages[r.dir.rawValue] += 1
            bytes[r.dir.rawValue] += r.bytes
            if r.ts > last { last = r.ts }
        }
    }

    final class Conversation: Traffic {
        let text: String
        let proto: String
        var gaps: UInt64 = 0
        var malformed: UInt64 = 0
        /// A layer below the protocol (TLS: `tls 1.3`), shown beside its name.
        var below: String?
        var shownProto: String { below.map { "\(proto) in \($0)" } ?? proto }
        /// Its parts (HTTP/2 streams) in the order they came, at most `maxSubstreams`.
        var substreams: [UInt64: Substream] = [:]
        var substreamOrder: [Substream] = []
        /// Messages of parts past the bound.
        var otherSubstreams: UInt64 = 0
        init(text: String, proto: String, ts: Timestamp) { self.text = text; self.proto = proto; super.init(ts: ts) }
    }
    /// A part of a conversation (an HTTP/2 stream), by its number and label (its method).
    final class Substream: Traffic {
        let number: UInt64
        let label: String
        init(number: UInt64, label: String, ts: Timestamp) { self.number = number; self.label = label; super.init(ts: ts) }
    }
    static let maxSubstreams = 4096
    /// Open conversations by connection number (a closed one's is forgotten).
    @exclusivity(unchecked) var conversations: [UInt64: Conversation] = [:]
    @exclusivity(unchecked) var conversationOrder: [Conversation] = []

    /// Latencies in nanoseconds per request message (at most `maxSamples` kept each).
    @exclusivity(unchecked) var latencies: [String: [Int64]] = [:]
    @exclusivity(unchecked) var latencyOrder: [String] = []
    /// Per request message: how many were sent, and how many answered (the rest are unanswered).
    @exclusivity(unchecked) var requested: [String: UInt64] = [:]
    @exclusivity(unchecked) var answered: [String: UInt64] = [:]
    /// What pairing saw, to say why a table came out empty.
    @exclusivity(unchecked) var pairing = (requests: 0, responses: 0, unmatched: 0, withoutKey: 0, withoutRule: Set<String>())
    static let maxSamples = 1 << 20

    /// Per `rate` statistic (in the order asked): message counts per interval, index = intervals
    /// since the whole second of the first message; and the messages past the table's end.
    @exclusivity(unchecked) var rates: [(nanos: Int64, counts: [UInt64], beyond: UInt64)] = []
    @exclusivity(unchecked) var rateStart: Int64?
    @exclusivity(unchecked) var ratePrinted = Set<Int>()
    static let maxRateSlots = 1 << 20

    init(kinds: [StatisticsKind], output: OutputBuffer, json: Bool) {
        self.kinds = kinds
        out = output
        self.json = json
        for case .rate(let n) in kinds { rates.append((n, [], 0)) }
    }

    /// The record's conversation; a new one when its connection has none open.
    func conversation(_ r: StatisticsRecord) -> Conversation {
        if let x = conversations[r.conn] { return x }
        let x = Conversation(text: r.text ?? "", proto: r.proto ?? "tcp", ts: r.ts)
        conversations[r.conn] = x
        conversationOrder.append(x)
        return x
    }

    func count(_ r: StatisticsRecord) {
        switch r.kind {
        case .message: message(r)
        case .opened: _ = conversation(r)
        case .malformed: conversation(r).malformed += 1
        case .gap: conversation(r).gaps += 1
        case .below: conversation(r).below = r.name
        case .closed:
            let conv = conversation(r)
            if r.ts > conv.last { conv.last = r.ts }
            // Forgotten: the number's next record would be another conversation's.
            conversations[r.conn] = nil
        }
    }

    func message(_ r: StatisticsRecord) {
        let ts = r.ts
        let key = MessageKey(proto: r.proto ?? "tcp", name: r.name, dir: r.dir)
        if let v = perMessage[key] { perMessage[key] = (v.count + 1, v.bytes + r.bytes) } else {
            perMessage[key] = (1, r.bytes)
            messageOrder.append(key)
        }
        let conv = conversation(r)
        conv.count(r)
        if r.substream.layer != 255 { substream(conv, r) }
        switch r.pairing {
        case .none: break
        case .noRule: pairing.withoutRule.insert(r.proto ?? "tcp")
        case .noKey: pairing.withoutKey += 1
        case .request:
            pairing.requests += 1
            requested[r.name, default: 0] += 1
            if latencies[r.name] == nil { latencies[r.name] = []; latencyOrder.append(r.name) }
        case .answered(let request, let ns):
            pairing.responses += 1
            answered[request, default: 0] += 1
            if latencies[request] == nil { latencies[request] = []; latencyOrder.append(request) }
            if latencies[request]!.count < Self.maxSamples { latencies[request]!.append(ns) }
        case .unmatched:
            pairing.responses += 1
            pairing.unmatched += 1
        }
        if !rates.isEmpty { countRate(ts) }
    }

    /// A message of a part of its connection (an HTTP/2 stream): counted under it.
    func substream(_ conv: Conversation, _ r: StatisticsRecord) {
        let s = r.substream
        let sub: Substream
        if let x = conv.substreams[s.number] { sub = x } else {
            guard conv.substreamOrder.count < Self.maxSubstreams else { conv.otherSubstreams += 1; return }
            sub = Substream(number: s.number, label: LayerRegistry.kinds[Int(s.layer)].substreamLabel(s.label), ts: r.ts)
            conv.substreams[s.number] = sub
            conv.substreamOrder.append(sub)
        }
        sub.count(r)
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

    /// Why no response was paired with a request, in the numbers that tell.
    func emptyPairingReason() -> String? {
        let p = pairing
        if p.requests == 0 && p.responses == 0 && p.withoutKey == 0 {
            if !p.withoutRule.isEmpty {
                return "no response paired: no loaded dissector of " + p.withoutRule.sorted().joined(separator: ", ")
                    + " says pair_by (pair_by id; pair_by FIELD; or pair_by REQUEST_FIELD = RESPONSE_FIELD;)"
                    + " or pair (pair REQUEST -> RESPONSE; for a response of another message type)"
            }
            return "no response paired: no messages"
        }
        return "no response paired: \(p.requests) requests and \(p.responses) responses carried the pair_by key, "
            + "\(p.unmatched) responses matched no waiting request, \(p.withoutKey) messages lacked the key field; "
            + "if responses carry the request's value in another field, say pair_by REQUEST_FIELD = RESPONSE_FIELD;"
            + " if they are of another message type, say pair REQUEST -> RESPONSE;"
    }

    /// End of the run: the tables are written.
    func finish() {
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
            func seconds(_ c: Conversation) -> String { seconds(c.first, c.last) }
            func seconds(_ first: Timestamp, _ last: Timestamp) -> String {
                let ns = last.nanos(since: first)
                let us = max(0, ns) / 1000
                let frac = String(us % 1_000_000)
                return "\(us / 1_000_000)." + String(repeating: "0", count: 6 - frac.count) + frac
            }
            if json {
                let rows = conversationOrder.map { c in
                    "{\"conn\":\(JSONText.quoted(c.text)),\"protocol\":\(JSONText.quoted(c.proto)),\"below\":\(c.below.map(JSONText.quoted) ?? "null"),\"duration\":\(seconds(c)),\"messages\":{\"c2s\":\(c.messages[0]),\"s2c\":\(c.messages[1])},\"bytes\":{\"c2s\":\(c.bytes[0]),\"s2c\":\(c.bytes[1])},\"gaps\":\(c.gaps),\"malformed\":\(c.malformed)"
                        + (c.substreamOrder.isEmpty ? "" : ",\"streams\":[" + c.substreamOrder.map { s in
                            "{\"stream\":\(s.number),\"method\":\(s.label.isEmpty ? "null" : JSONText.quoted(s.label)),\"duration\":\(seconds(s.first, s.last)),\"messages\":{\"c2s\":\(s.messages[0]),\"s2c\":\(s.messages[1])},\"bytes\":{\"c2s\":\(s.bytes[0]),\"s2c\":\(s.bytes[1])}}"
                        }.joined(separator: ",") + "]" + (c.otherSubstreams > 0 ? ",\"other_stream_messages\":\(c.otherSubstreams)" : ""))
                        + "}"
                }
                line("{\"type\":\"stats\",\"stat\":\"conv\",\"rows\":[" + rows.joined(separator: ",") + "]}")
            } else {
                table("conversations", ["connection", "protocol", "duration s", "msgs c2s", "msgs s2c", "bytes c2s", "bytes s2c", "gaps", "malformed"],
                      conversationOrder.flatMap { c in
                          // Its streams under it, by number and method (an HTTP/2 connection's).
                          [[c.text, c.shownProto, seconds(c), "\(c.messages[0])", "\(c.messages[1])", "\(c.bytes[0])", "\(c.bytes[1])",
                            "\(c.gaps)", "\(c.malformed)"]]
                          + c.substreamOrder.map { s in
                              ["  stream \(s.number)", s.label, seconds(s.first, s.last), "\(s.messages[0])", "\(s.messages[1])",
                               "\(s.bytes[0])", "\(s.bytes[1])", "", ""]
                          }
                          + (c.otherSubstreams > 0 ? [["  other streams", "", "", "\(c.otherSubstreams) msgs", "", "", "", "", ""]] : [])
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
                let unanswered = (requested[name] ?? 0) - min(requested[name] ?? 0, answered[name] ?? 0)
                guard !v.isEmpty else { return ["0", "-", "-", "-", "-", "-", "\(unanswered)"] }
                func pct(_ q: Double) -> Int64 { v[min(v.count - 1, Int((Double(v.count) * q).rounded(.up)) - 1)] }
                return ["\(v.count)", ms(v[0]), ms(pct(0.5)), ms(pct(0.9)), ms(pct(0.99)), ms(v[v.count - 1]), "\(unanswered)"]
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
