/// `framedump diff A B`: what changed in the protocol between two runs of one scenario.
///
/// 1. Each input (a capture decoded with the loaded dissectors, or an NDJSON export) is read
///    once into per-connection, per-direction fingerprints (`MessagePrint`, 32 bytes each).
/// 2. Connections get stable keys and are paired per protocol and server by the similarity
///    of their items (`ConnectionPairing`); one left over is itself added or removed.
/// 3. Each pair's directions are aligned (`Alignment`): removed, added, changed items.
/// 4. Only the items in differences are read again (a second pass) and compared field by field.
public enum DiffInput: Sendable {
    /// One capture, or several merged in time order into one run (as `-r` merges them).
    case captures([String])
    case ndjson(String)

    /// NDJSON when the file starts with `{`, else a capture.
    public static func at(_ path: String) -> DiffInput {
        NDJSONInput.looks(path) ? .ndjson(path) : .captures([path])
    }

    /// One side named by several files: each a capture (an NDJSON export is compared alone).
    public static func at(_ paths: [String]) throws(DiffInputError) -> DiffInput {
        if paths.count == 1 { return at(paths[0]) }
        if let json = paths.first(where: NDJSONInput.looks) {
            throw DiffInputError("\(RawPath.display(json)) is an NDJSON export: an export is compared alone, not merged with other inputs")
        }
        return .captures(paths)
    }
}

public struct FieldChange: Sendable, Equatable {
    /// In the NDJSON naming: `Content`, `body.to`, `items[1].price`; keys outside `fields`
    /// by their own names (`length`, `ws.compressed`).
    public var path: String
    public var old: JSONValue?
    public var new: JSONValue?
}

public struct Difference: Sendable {
    public enum Change: String, Sendable { case added, removed, changed }
    public var change: Change
    /// The stable key (the old side's, unless the connection is only on the new side).
    public var conn: String
    /// The new side's key, when it differs.
    public var newConn: String?
    /// The connection's client in each input, when the input says.
    public var clients: (old: String?, new: String?) = (nil, nil)
    /// Nil for a whole connection added or removed.
    public var dir: Direction?
    public var message: String?
    public var old: ItemRef?
    public var new: ItemRef?
    public var oldPackets: (UInt64, UInt64)?
    public var newPackets: (UInt64, UInt64)?
    public var fields: [FieldChange] = []
    /// The added or removed item's line.
    public var line: JSONValue?
    /// A whole connection: how many items it has.
    public var items: Int?
}

public struct DiffResult: Sendable {
    public var differences: [Difference] = []
    public var oldItems = 0, newItems = 0
    public var oldConnections = 0, newConnections = 0
    public var pairs = 0

    public var counts: (changed: Int, added: Int, removed: Int) {
        differences.reduce((0, 0, 0)) { c, d in
            switch d.change {
            case .changed: return (c.0 + 1, c.1, c.2)
            case .added: return (c.0, c.1 + 1, c.2)
            case .removed: return (c.0, c.1, c.2 + 1)
            }
        }
    }
}

public final class CaptureDiff {
    let options: PipelineOptions
    let ignore: [IgnorePattern]
    /// Per `--ignore` pattern: whether it matched anything in either input.
    var matched: [Bool]

    /// The `--ignore` patterns that matched nothing in either input (after `run`).
    public var unmatchedIgnores: [String] {
        zip(ignore, matched).filter { !$0.1 }.map(\.0.text)
    }

    /// `options`: how captures are decoded (dissectors, keys, reassembly limits).
    public init(options: PipelineOptions, ignore: [IgnorePattern]) {
        self.options = options
        self.ignore = ignore
        matched = Array(repeating: false, count: ignore.count)
    }

    func note(_ m: [Bool]) {
        for (i, hit) in m.enumerated() where hit && i < matched.count { matched[i] = true }
    }

    /// One pass over an input: fingerprints (no `wanted`), or the lines of the wanted items.
    func load(_ input: DiffInput, wanted: Set<ItemRef>?) throws -> (connections: [TrackedConnection], fetched: [ItemRef: JSONValue]) {
        switch input {
        case .ndjson(let path):
            var m: [Bool] = []
            let r = try NDJSONInput.load(path, ignore: ignore, wanted: wanted, matched: &m)
            note(m)
            return r
        case .captures(let paths):
            let sink = ConnectionCollector(wanted.map { .fetch($0) } ?? .fingerprints, ignore: ignore)
            let pipeline = try Pipeline(options: options, output: OutputBuffer(fd: nil), messageSink: sink)
            let source = try MergedSource.open(paths)
            // The second pass ends with the last line it needs.
            sink.onAllFetched = { source.stop() }
            // Cut off mid-record: compared up to its last whole record, and said.
            if let e = try pipeline.runToLastWholeRecord(source), !cutInputs.contains(e.description) { cutInputs.append(e.description) }
            pipeline.finish()
            note(sink.scanner.matched)
            return (sink.connections, sink.fetched)
        }
    }

    /// The inputs cut off mid-record, as their read errors say (compared up to there).
    public private(set) var cutInputs: [String] = []

    public func run(_ a: DiffInput, _ b: DiffInput) throws -> DiffResult {
        let old = try load(a, wanted: nil).connections
        let new = try load(b, wanted: nil).connections
        StableKeys.assign(old)
        StableKeys.assign(new)
        var result = DiffResult()
        result.oldConnections = old.count
        result.newConnections = new.count
        result.oldItems = old.reduce(0) { $0 + $1.messageCount }
        result.newItems = new.reduce(0) { $0 + $1.messageCount }

        var wantOld = Set<ItemRef>(), wantNew = Set<ItemRef>()
        for (x, y) in ConnectionPairing.pairs(StableKeys.ordered(old), StableKeys.ordered(new)) {
            guard let x, let y else {
                let c = (x ?? y)!
                var d = Difference(change: x == nil ? .added : .removed, conn: c.key)
                d.clients = (x?.client, y?.client)
                d.items = c.messageCount
                let span = c.firstPacket > 0 ? (c.firstPacket, c.lastPacket) : nil
                if x == nil { d.newPackets = span } else { d.oldPackets = span }
                result.differences.append(d)
                continue
            }
            result.pairs += 1
            for dir in Direction.allCases {
                let pa = x.prints[dir.rawValue], pb = y.prints[dir.rawValue]
                for step in Alignment.script(pa, pb) {
                    var d = Difference(change: .changed, conn: x.key, newConn: y.key == x.key ? nil : y.key, dir: dir)
                    d.clients = (x.client, y.client)
                    switch step {
                    case .removed(let i):
                        d.change = .removed
                        d.old = ItemRef(conn: x.order, dir: dir.rawValue, index: i)
                        d.oldPackets = packets(pa[i])
                    case .added(let j):
                        d.change = .added
                        d.new = ItemRef(conn: y.order, dir: dir.rawValue, index: j)
                        d.newPackets = packets(pb[j])
                    case .changed(let i, let j):
                        d.old = ItemRef(conn: x.order, dir: dir.rawValue, index: i)
                        d.new = ItemRef(conn: y.order, dir: dir.rawValue, index: j)
                        d.oldPackets = packets(pa[i])
                        d.newPackets = packets(pb[j])
                    }
                    if let r = d.old { wantOld.insert(r) }
                    if let r = d.new { wantNew.insert(r) }
                    result.differences.append(d)
                }
            }
        }
        // The second pass: only the lines the report shows.
        let linesOld = wantOld.isEmpty ? [:] : try load(a, wanted: wantOld).fetched
        let linesNew = wantNew.isEmpty ? [:] : try load(b, wanted: wantNew).fetched
        var kept: [Difference] = []
        for var d in result.differences {
            let lo = d.old.flatMap { linesOld[$0] }, ln = d.new.flatMap { linesNew[$0] }
            d.message = Self.name(of: lo ?? ln)
            switch d.change {
            case .changed:
                guard let lo, let ln else { break }
                d.fields = FieldCompare.changes(lo, ln, ignore: ignore)
                // Equal once read (a difference of spelling only, such as escapes): no change.
                if d.fields.isEmpty { continue }
            case .added: d.line = ln.map { FieldCompare.without(ignore, $0) }
            case .removed: d.line = lo.map { FieldCompare.without(ignore, $0) }
            }
            kept.append(d)
        }
        result.differences = kept
        return result
    }

    func packets(_ p: MessagePrint) -> (UInt64, UInt64)? { p.first > 0 ? (p.first, p.last) : nil }

    /// The message's name, or its event type in brackets, or its id.
    static func name(of line: JSONValue?) -> String? {
        guard let line else { return nil }
        if let t = line["type"]?.stringValue { return "[\(t)]" }
        if let m = line["message"]?.stringValue { return m }
        if case .number(let n)? = line["id"] { return "id \(n)" }
        return nil
    }
}

/// Pairs the connections of two inputs: per protocol and server, greedily by the share of
/// items they have in common (equal content first, then equal identity), ties by ordinal.
public enum ConnectionPairing {
    /// Beyond this many candidate pairs in one group, connections pair by ordinal.
    static let maxCandidates = 40_000

    public static func pairs(_ old: [TrackedConnection], _ new: [TrackedConnection]) -> [(TrackedConnection?, TrackedConnection?)] {
        var groups: [String] = []
        var byGroup: [String: ([TrackedConnection], [TrackedConnection])] = [:]
        for c in old {
            let g = StableKeys.group(c)
            if byGroup[g] == nil { groups.append(g); byGroup[g] = ([], []) }
            byGroup[g]!.0.append(c)
        }
        for c in new {
            let g = StableKeys.group(c)
            if byGroup[g] == nil { groups.append(g); byGroup[g] = ([], []) }
            byGroup[g]!.1.append(c)
        }
        var out: [(TrackedConnection?, TrackedConnection?)] = []
        for g in groups {
            let (xs, ys) = byGroup[g]!
            out += pairGroup(xs, ys)
        }
        return out
    }

    static func pairGroup(_ xs: [TrackedConnection], _ ys: [TrackedConnection]) -> [(TrackedConnection?, TrackedConnection?)] {
        var matchOfX = [Int?](repeating: nil, count: xs.count)
        var takenY = [Bool](repeating: false, count: ys.count)
        if xs.count * ys.count <= maxCandidates {
            let sx = xs.map(Signature.init), sy = ys.map(Signature.init)
            var cands: [(score: (Double, Double), x: Int, y: Int)] = []
            for i in xs.indices {
                for j in ys.indices { cands.append((sx[i].similarity(sy[j]), i, j)) }
            }
            cands.sort { a, b in
                if a.score != b.score { return a.score > b.score }
                let da = abs(a.x - a.y), db = abs(b.x - b.y)
                return da != db ? da < db : (a.x, a.y) < (b.x, b.y)
            }
            for c in cands where matchOfX[c.x] == nil && !takenY[c.y] {
                matchOfX[c.x] = c.y
                takenY[c.y] = true
            }
        } else {
            for i in 0..<min(xs.count, ys.count) { matchOfX[i] = i; takenY[i] = true }
        }
        var out: [(TrackedConnection?, TrackedConnection?)] = []
        for (i, x) in xs.enumerated() { out.append((x, matchOfX[i].map { ys[$0] })) }
        for (j, y) in ys.enumerated() where !takenY[j] { out.append((nil, y)) }
        return out
    }

    /// A connection's items in brief: a bottom-k sketch of its content hashes (the k smallest
    /// distinct ones, direction folded in; exact below k), and its item count per identity.
    struct Signature {
        static let k = 256
        var sketch: [UInt64] = []
        var names: [UInt64: Int] = [:]
        var total = 0

        init(_ c: TrackedConnection) {
            total = c.messageCount
            for d in 0..<2 {
                let mix = UInt64(d) &* 0x9e3779b97f4a7c15
                for p in c.prints[d] {
                    names[p.identity ^ mix, default: 0] += 1
                    let h = p.content ^ mix
                    // Most hashes are above the current k-th smallest: one comparison each.
                    if sketch.count == Self.k, h >= sketch[Self.k - 1] { continue }
                    var lo = 0, hi = sketch.count
                    while lo < hi {
                        let m = (lo + hi) / 2
                        if sketch[m] < h { lo = m + 1 } else { hi = m }
                    }
                    if lo < sketch.count && sketch[lo] == h { continue }
                    sketch.insert(h, at: lo)
                    if sketch.count > Self.k { sketch.removeLast() }
                }
            }
        }

        /// (share of content in common, share of items with a name in common), each 0...1.
        func similarity(_ o: Signature) -> (Double, Double) {
            var i = 0, j = 0, seen = 0, both = 0
            while seen < Self.k && (i < sketch.count || j < o.sketch.count) {
                if j == o.sketch.count || (i < sketch.count && sketch[i] < o.sketch[j]) {
                    i += 1
                } else if i == sketch.count || o.sketch[j] < sketch[i] {
                    j += 1
                } else {
                    both += 1; i += 1; j += 1
                }
                seen += 1
            }
            var common = 0
            for (n, c) in names { common += min(c, o.names[n] ?? 0) }
            let content = seen == 0 ? 1 : Double(both) / Double(seen)
            return (content, 2 * Double(common) / Double(max(1, total + o.total)))
        }
    }
}

/// Field by field: what differs between two lines of one message.
public enum FieldCompare {
    /// Keys that change from run to run (or are the grouping itself): never compared.
    static let perRun: Set<String> = ["conn", "dir", "ts", "pkts", "pkt", "offset", "answers", "latency"]

    public static func changes(_ a: JSONValue, _ b: JSONValue, ignore: [IgnorePattern]) -> [FieldChange] {
        guard case .object(let ma) = a, case .object(let mb) = b else {
            return a == b ? [] : [FieldChange(path: "", old: a, new: b)]
        }
        let base = [a["protocol"]?.stringValue ?? "", a["message"]?.stringValue ?? ""]
        var inFields: [FieldChange] = [], outside: [FieldChange] = []
        for key in keys(ma, mb) where !perRun.contains(key) {
            let x = ma.first { $0.key == key }?.value, y = mb.first { $0.key == key }?.value
            if key == "fields" {
                walk(x, y, "", base, ignore, &inFields)
            } else if !ignore.contains(where: { $0.matches(base + [key]) }) {
                walk(x, y, key, base + [key], ignore, &outside)
            }
        }
        // The frame's length follows its fields: shown only when no field explains it.
        if !inFields.isEmpty { outside.removeAll { $0.path == "length" } }
        return inFields + outside
    }

    /// A line without the `--ignore`d values (for showing an added or removed message).
    public static func without(_ ignore: [IgnorePattern], _ line: JSONValue) -> JSONValue {
        guard !ignore.isEmpty, case .object(let ms) = line else { return line }
        let base = [line["protocol"]?.stringValue ?? "", line["message"]?.stringValue ?? ""]
        func strip(_ v: JSONValue, _ names: [String]) -> JSONValue {
            switch v {
            case .object(let ms):
                return .object(ms.compactMap { m in
                    let n = names + [m.key]
                    return ignore.contains { $0.matches(n) } ? nil : JSONMember(key: m.key, value: strip(m.value, n))
                })
            case .array(let a): return .array(a.map { strip($0, names) })
            default: return v
            }
        }
        return .object(ms.compactMap { m in
            if m.key == "fields" { return JSONMember(key: m.key, value: strip(m.value, base)) }
            if FieldCompare.perRun.contains(m.key) { return m }
            let n = base + [m.key]
            return ignore.contains { $0.matches(n) } ? nil : JSONMember(key: m.key, value: strip(m.value, n))
        })
    }

    static func keys(_ a: [JSONMember], _ b: [JSONMember]) -> [String] {
        var seen = Set<String>(), out: [String] = []
        for m in a + b where seen.insert(m.key).inserted { out.append(m.key) }
        return out
    }

    static func walk(_ x: JSONValue?, _ y: JSONValue?, _ path: String, _ names: [String], _ ignore: [IgnorePattern],
                     _ out: inout [FieldChange]) {
        if x == y { return }
        switch (x, y) {
        case (.object(let a)?, .object(let b)?):
            for key in keys(a, b) {
                let n = names + [key]
                if ignore.contains(where: { $0.matches(n) }) { continue }
                walk(a.first { $0.key == key }?.value, b.first { $0.key == key }?.value,
                     path.isEmpty ? key : path + "." + key, n, ignore, &out)
            }
        case (.array(let a)?, .array(let b)?):
            for k in 0..<max(a.count, b.count) {
                walk(k < a.count ? a[k] : nil, k < b.count ? b[k] : nil, path + "[\(k)]", names, ignore, &out)
            }
        default:
            out.append(FieldChange(path: path, old: x, new: y))
        }
    }
}
