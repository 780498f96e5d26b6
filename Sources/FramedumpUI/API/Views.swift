import FramedumpCore

/// The API's answers, one function a view of the page, each read from the index (and, for
/// what a message says, the spill file: the tree's text and its table of lines).
package struct Views {
    let indexer: CaptureIndexer
    /// The most rows, arrows and plot intervals one answer holds.
    static let rowsAtOnce = 1000, arrowsAtOnce = 2000, bucketsAtMost = 2000

    package init(indexer: CaptureIndexer) { self.indexer = indexer }
    var index: MessageIndex { indexer.index }

    func status() -> String {
        let s = index.snapshot
        return JSONOut.object([
            ("state", JSONOut.quoted(s.state.rawValue)),
            ("capture", JSONOut.quoted(indexer.shownName)),
            ("live", indexer.isLive ? "true" : "false"),
            ("messages", String(s.messages)),
            ("rows", String(s.rows)),
            // The losses listed among the messages, by kind, and the bytes the gaps lost.
            ("losses", JSONOut.object(LossEvent.Kind.allCases.map { ($0.rawValue, String(s.losses[$0.index])) })),
            ("lostBytes", String(s.lostBytes)),
            ("limits", JSONOut.array(s.limits.map { l in
                JSONOut.object([("flag", JSONOut.quoted(l.flag)), ("value", String(l.value)), ("hits", String(l.hits)),
                                ("what", JSONOut.quoted(l.what))])
            })),
            ("dropped", String(s.dropped)),
            ("connections", String(s.connections)),
            ("packets", String(s.packets)),
            ("error", s.readError.map(JSONOut.quoted) ?? "null"),
            ("summary", JSONOut.quoted(s.summary)),
            ("diff", indexer.configuration.diffWith.map(JSONOut.quoted) ?? "null"),
            ("filter", indexer.filters.liveText.map(JSONOut.quoted) ?? "null"),
        ])
    }

    /// Connections `from..<from+count` (at most `maxConnections`) and how many there are.
    package func connections(from: Int, count: Int) -> String {
        let (total, page) = index.connections(from: from, count: min(count, Self.maxConnections))
        let lo = max(0, min(from, total))
        return JSONOut.object([("total", String(total)), ("from", String(lo)), ("connections", JSONOut.array(page.map { i, c in
            JSONOut.object([
                ("index", String(i)),
                ("conn", JSONOut.quoted(c.key)),
                ("client", JSONOut.quoted(c.client)),
                ("server", JSONOut.quoted(c.server)),
                ("protocol", JSONOut.quoted(c.protocolName)),
                ("transport", JSONOut.quoted(c.udp ? "udp" : "tcp")),
                ("midstream", c.midStream ? "true" : "false"),
                ("first", JSONOut.number(c.first)),
                ("duration", JSONOut.number(c.last - c.first)),
                ("messages", "[\(c.messages.c2s),\(c.messages.s2c)]"),
                ("bytes", "[\(c.bytes.c2s),\(c.bytes.s2c)]"),
                ("gaps", String(c.gaps)),
                ("malformed", String(c.malformed)),
                ("warnings", String(c.warnings)),
                ("closed", c.closed.map(JSONOut.quoted) ?? "null"),
                ("notes", JSONOut.array(c.notes.map(JSONOut.quoted))),
            ])
        }))])
    }

    /// The most connections one answer holds.
    package static let maxConnections = 500

    /// The ordinals a list shows: all held messages, or one connection's, or a filter's (or both).
    func selection(connection: Int?, filter: [Int]?) -> [Int]? {
        switch (connection, filter) {
        case (nil, nil): return nil
        case (let c?, nil): return index.ordinals(ofConnection: c)
        case (nil, let f?): return f
        case (let c?, let f?):
            let mine = Set(index.ordinals(ofConnection: c))
            return f.filter { mine.contains($0) }
        }
    }

    /// Rows `from..<from+count` of a selection (nil: every message held).
    package func rows(_ selection: [Int]?, from: Int, count: Int, note: String? = nil) -> String {
        let range = index.range
        let total = selection?.count ?? range.count
        let lo = max(0, min(from, total)), hi = min(total, lo + max(0, min(count, Self.rowsAtOnce)))
        let ordinals: [Int] = selection.map { Array($0[lo..<hi]) } ?? Array((range.lowerBound + lo)..<(range.lowerBound + hi))
        let names = index.allNames
        let rows = index.entries(ordinals).map { o, e in row(o, e, names) }
        // The times the page's time column counts from: the first message held (relative),
        // and the row shown before this page's first (delta).
        let before = lo == 0 ? nil : index.entry(selection.map { $0[lo - 1] } ?? range.lowerBound + lo - 1)
        return JSONOut.object([
            ("total", String(total)), ("from", String(lo)),
            ("first", index.entry(range.lowerBound).map { JSONOut.number($0.time) } ?? "null"),
            ("before", before.map { JSONOut.number($0.time) } ?? "null"),
            ("rows", JSONOut.array(rows)),
        ] + (note.map { [("note", JSONOut.quoted($0))] } ?? []))
    }

    /// A selection in a column's order (sorted once, then kept: `SortedOrders`).
    func sorted(_ selection: [Int]?, by column: SortColumn, descending: Bool, scope: String) -> [Int]? {
        if column == .n && !descending { return selection }
        return indexer.sorts.order(column, descending: descending, scope: scope, selection: selection, index: index)
    }

    /// Which of `ordinals` a filter's answer (ascending ordinals) holds.
    func matching(_ ordinals: [Int], in answer: [Int]) -> String {
        let hits = ordinals.filter { o in
            var lo = 0, hi = answer.count
            while lo < hi { let mid = (lo + hi) / 2; if answer[mid] < o { lo = mid + 1 } else { hi = mid } }
            return lo < answer.count && answer[lo] == o
        }
        return JSONOut.object([("matches", JSONOut.array(hits.map(String.init)))])
    }

    /// Follow stream: a connection's messages' frame bytes in order, with their direction, from
    /// its `from`th row on: at most `count` rows and `maxBytes` bytes (one message at least, its
    /// bytes cut to `maxBytes` and said so). A loss's row (bytes in no message) is a marker: its
    /// kind, the bytes it lost or concerns, what happened; no bytes.
    package func follow(connection c: Int, from: Int, count: Int, maxBytes: Int = Views.followBytes) -> String {
        let all = index.ordinals(ofConnection: c)
        let lo = min(from, all.count)
        var items: [String] = [], bytes = 0, next = lo
        let names = index.allNames
        for (o, e) in index.entries(all[lo..<min(all.count, lo + count)]) {
            if e.isLossRow {
                // Bytes in no message: a marker where the loss happened, not bytes.
                let said = StoredTree(indexer.spill.read(offset: e.spillOffset, count: Int(e.treeLength)))?.lossText ?? ""
                let tag = Int(e.name) < names.count ? names[Int(e.name)] : "?"
                items.append(JSONOut.object([
                    ("n", String(o)), ("t", JSONOut.number(e.time)),
                    ("dir", e.direction == 0 ? "\"c2s\"" : "\"s2c\""),
                    ("name", JSONOut.quoted(tag)), ("event", JSONOut.quoted(Self.lossKind(tag))),
                    ("len", String(e.id)), ("summary", JSONOut.quoted(said)),
                ]))
                next += 1
                continue
            }
            // A cut frame (the capture lost its end) shows its captured bytes, and its declared length.
            let length = Int(e.frameLength), declared = Int(index.shownLength(o, e))
            if !items.isEmpty && bytes + length > maxBytes { break }
            let shown = min(length, maxBytes)
            let frame = indexer.spill.read(offset: e.spillOffset + UInt64(e.treeLength), count: shown)
            bytes += shown
            next += 1
            items.append(JSONOut.object([
                ("n", String(o)), ("t", JSONOut.number(e.time)),
                ("dir", e.direction == 0 ? "\"c2s\"" : "\"s2c\""),
                ("name", JSONOut.quoted(Int(e.name) < names.count ? names[Int(e.name)] : "?")),
                ("len", String(declared)), ("cut", shown < declared ? "true" : "false"),
                ("bytes", JSONOut.hex(frame)),
            ]))
        }
        let conn = index.connection(c)
        return JSONOut.object([
            ("conn", JSONOut.quoted(conn?.key ?? "")),
            ("client", JSONOut.quoted(conn?.client ?? "")),
            ("server", JSONOut.quoted(conn?.server ?? "")),
            ("gaps", String(conn?.gaps ?? 0)), ("malformed", String(conn?.malformed ?? 0)),
            ("total", String(all.count)), ("from", String(lo)),
            ("next", next < all.count ? String(next) : "null"),
            ("messages", JSONOut.array(items)),
        ])
    }

    /// The most bytes (and messages) one follow answer holds.
    package static let followBytes = 256 * 1024
    package static let followMessages = 500

    func row(_ o: Int, _ e: IndexEntry, _ names: [String]) -> String {
        let tree = StoredTree(indexer.spill.read(offset: e.spillOffset, count: Int(e.treeLength)))
        if e.isLossRow { return lossRow(o, e, names, tree) }
        return JSONOut.object([
            ("n", String(o)),
            ("t", JSONOut.number(e.time)),
            ("c", String(e.connection)),
            ("dir", e.direction == 0 ? "\"c2s\"" : "\"s2c\""),
            ("name", JSONOut.quoted(Int(e.name) < names.count ? names[Int(e.name)] : "?")),
            ("id", e.idText),
            ("len", String(index.shownLength(o, e))),
            ("warn", e.flags & IndexEntry.hasWarnings != 0 ? "true" : "false"),
            ("pair", pairJSON(o, e)),
            ("summary", JSONOut.quoted(tree?.oneLine() ?? "")),
        ])
    }

    /// A loss's row: its kind, the bytes it lost or concerns as its length, what happened as
    /// its summary.
    func lossRow(_ o: Int, _ e: IndexEntry, _ names: [String], _ tree: StoredTree?) -> String {
        let tag = Int(e.name) < names.count ? names[Int(e.name)] : "?"
        let said = tree?.lossText ?? ""
        return JSONOut.object([
            ("n", String(o)),
            ("t", JSONOut.number(e.time)),
            ("c", String(e.connection)),
            ("dir", e.direction == 0 ? "\"c2s\"" : "\"s2c\""),
            ("name", JSONOut.quoted(tag)),
            ("id", "null"),
            ("len", String(e.id)),
            ("warn", "true"),
            ("pair", "null"),
            ("summary", JSONOut.quoted(said)),
            ("event", JSONOut.quoted(Self.lossKind(tag))),
        ])
    }

    /// The kind (`gap`, ...) of a loss row's tag (`GAP`, ...).
    static func lossKind(_ tag: String) -> String {
        LossEvent.Kind.allCases.first { $0.tag == tag }?.rawValue ?? "loss"
    }

    /// The request a response answers (or the response a request got), and the latency.
    func pairJSON(_ o: Int, _ e: IndexEntry) -> String {
        guard e.pair != IndexEntry.noPair, let other = index.entry(Int(e.pair)) else { return "null" }
        let latency = abs(e.time - other.time) * 1000
        return "{\"n\":\(e.pair),\"ms\":\(JSONOut.number(latency))}"
    }

    /// One message in full: the tree (fields with byte ranges), its bytes, where it came from.
    package func message(_ o: Int) -> String? {
        guard let e = index.entry(o) else { return nil }
        let conn = index.connection(Int(e.connection))
        let stored = indexer.spill.read(offset: e.spillOffset, count: Int(e.treeLength))
        let frame = indexer.spill.read(offset: e.spillOffset + UInt64(e.treeLength), count: Int(e.frameLength))
        let transformed = e.transformedLength == 0 ? nil
            : indexer.spill.read(offset: e.spillOffset + UInt64(e.treeLength) + UInt64(e.frameLength), count: Int(e.transformedLength))
        guard let tree = StoredTree(stored) else { return nil }
        let lines = tree.lines.map { l -> String in
            switch l {
            case .field(let d, let off, let w, let text):
                return "{\"depth\":\(d),\"offset\":\(off),\"width\":\(w),\"text\":\(JSONOut.quoted(text))}"
            case .note(let t): return "{\"note\":\(JSONOut.quoted(t))}"
            case .warning(let t): return "{\"warning\":\(JSONOut.quoted(t))}"
            }
        }
        return JSONOut.object([
            ("n", String(o)),
            ("t", JSONOut.number(e.time)),
            ("c", String(e.connection)),
            ("conn", JSONOut.quoted(conn?.key ?? "")),
            ("protocol", JSONOut.quoted(conn?.protocolName ?? "")),
            ("dir", e.direction == 0 ? "\"c2s\"" : "\"s2c\""),
            ("name", JSONOut.quoted(index.name(e.name))),
            ("id", e.isLossRow ? "null" : e.idText),
            ("len", String(index.shownLength(o, e))),
            ("event", e.isLossRow ? JSONOut.quoted(Self.lossKind(index.name(e.name))) : "null"),
            ("pkts", "[\(e.firstPacket),\(e.lastPacket)]"),
            ("summary", JSONOut.quoted(tree.summary)),
            ("lines", JSONOut.array(lines)),
            ("bytes", JSONOut.hex(frame)),
            // Body fields count in these bytes when transforms (decryption, inflation) ran.
            ("fieldBytes", transformed.map(JSONOut.hex) ?? "null"),
            ("pair", pairJSON(o, e)),
        ])
    }

    /// The sequence diagram of one connection: an arrow a message.
    package func sequence(connection c: Int, from: Int, count: Int) -> String {
        let all = index.ordinals(ofConnection: c)
        let lo = max(0, min(from, all.count)), hi = min(all.count, lo + max(0, min(count, Self.arrowsAtOnce)))
        let names = index.allNames
        let arrows = index.entries(all[lo..<hi]).map { o, e in
            JSONOut.object([
                ("n", String(o)),
                ("t", JSONOut.number(e.time)),
                ("dir", e.direction == 0 ? "\"c2s\"" : "\"s2c\""),
                ("name", JSONOut.quoted(Int(e.name) < names.count ? names[Int(e.name)] : "?")),
                ("len", String(index.shownLength(o, e))),
                ("pair", pairJSON(o, e)),
                // A loss in the connection (a gap, a malformed stretch): drawn across the lanes.
                ("event", e.isLossRow ? JSONOut.quoted(Self.lossKind(Int(e.name) < names.count ? names[Int(e.name)] : "?")) : "null"),
            ])
        }
        let conn = index.connection(c)
        return JSONOut.object([
            ("conn", JSONOut.quoted(conn?.key ?? "")),
            ("client", JSONOut.quoted(conn?.client ?? "")),
            ("server", JSONOut.quoted(conn?.server ?? "")),
            ("total", String(all.count)), ("from", String(lo)), ("arrows", JSONOut.array(arrows)),
        ])
    }

    /// Message rate over time per name (the busiest eight, the rest as "other") and the
    /// request/response latency histogram, over the selection.
    package func plots(_ selection: [Int]?, buckets: Int) -> String {
        let names = index.allNames
        var times: (Double, Double) = (.infinity, -.infinity)
        var perName = [Int](repeating: 0, count: names.count + 1)
        var answered: [(Double, Int)] = []
        // (Losses are rows of the list, not messages: the rates and latencies leave them out.)
        func visit(_ o: Int, _ e: IndexEntry) {
            guard !e.isLossRow else { return }
            times = (min(times.0, e.time), max(times.1, e.time))
            if Int(e.name) < perName.count { perName[Int(e.name)] += 1 }
            if e.direction == 1, e.pair != IndexEntry.noPair { answered.append((e.time, Int(e.pair))) }
        }
        if let s = selection {
            for (o, e) in index.entries(s) { visit(o, e) }
        } else {
            index.forEach(visit)
        }
        var sent = [Int: Double]()
        for (o, e) in index.entries(answered.map { $0.1 }) { sent[o] = e.time }
        let latencies = answered.compactMap { t, r in sent[r].map { (t - $0) * 1000 } }
        let n = max(1, min(buckets, Self.bucketsAtMost))
        let span = max(times.1 - times.0, 1e-9)
        let top = perName.indices.filter { perName[$0] > 0 }.sorted { perName[$0] > perName[$1] }.prefix(8)
        var series = [Int: [Int]]()
        for t in top { series[t] = [Int](repeating: 0, count: n) }
        var other = [Int](repeating: 0, count: n)
        func bin(_ o: Int, _ e: IndexEntry) {
            guard !e.isLossRow else { return }
            let b = min(n - 1, Int((e.time - times.0) / span * Double(n)))
            if series[Int(e.name)] != nil { series[Int(e.name)]![b] += 1 } else { other[b] += 1 }
        }
        if let s = selection {
            for (o, e) in index.entries(s) { bin(o, e) }
        } else if times.0.isFinite {
            index.forEach(bin)
        }
        var lines = top.map { t in
            JSONOut.object([("name", JSONOut.quoted(names[t])), ("counts", JSONOut.array(series[t]!.map(String.init)))])
        }
        if other.contains(where: { $0 > 0 }) {
            lines.append(JSONOut.object([("name", "\"other\""), ("counts", JSONOut.array(other.map(String.init)))]))
        }
        return JSONOut.object([
            ("start", times.0.isFinite ? JSONOut.number(times.0) : "null"),
            ("seconds", JSONOut.number(times.0.isFinite ? span : 0)),
            ("buckets", String(n)),
            ("rate", JSONOut.array(lines)),
            ("latency", histogram(latencies)),
        ])
    }

    /// Latencies in milliseconds, in 30 bins between the smallest and the largest.
    func histogram(_ ms: [Double]) -> String {
        guard let lo = ms.min(), let hi = ms.max() else { return "{\"count\":0,\"bins\":[]}" }
        let n = 30, width = max((hi - lo) / Double(n), 1e-6)
        var bins = [Int](repeating: 0, count: n)
        for x in ms { bins[min(n - 1, Int((x - lo) / width))] += 1 }
        let sorted = ms.sorted()
        func q(_ p: Double) -> String { JSONOut.number(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) }
        return JSONOut.object([
            ("count", String(ms.count)), ("min", JSONOut.number(lo)), ("max", JSONOut.number(hi)),
            ("p50", q(0.5)), ("p99", q(0.99)), ("width", JSONOut.number(width)),
            ("bins", JSONOut.array(bins.map(String.init))),
        ])
    }
}
