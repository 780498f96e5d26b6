/// An item of an input: the `index`th item (message, malformed frame, gap or handshake) of
/// one direction of the connection that appeared `conn`th.
public struct ItemRef: Hashable, Sendable {
    public var conn: Int
    public var dir: Int
    public var index: Int
    public init(conn: Int, dir: Int, index: Int) {
        self.conn = conn
        self.dir = dir
        self.index = index
    }
}

/// Takes the decoded stream in place of a printer and keeps it per connection and direction:
/// - `.export`: the `--diffable` NDJSON, written at the end grouped by connection (stable
///   keys, c2s items then s2c), with `--ignore`d fields cut out;
/// - `.fingerprints`: only a `MessagePrint` per item (the first pass of `framedump diff`);
/// - `.fetch`: the lines of a few items, parsed (the second pass, for the report).
/// Each line is made by the NDJSON printer in its `--diffable` form, so the export, the diff
/// of two captures and the diff of two exports all see the same text.
public final class ConnectionCollector: MessageSink {
    public enum Mode {
        case export(OutputBuffer)
        case fingerprints
        case fetch(Set<ItemRef>)
    }

    let mode: Mode
    let mem = OutputBuffer(fd: nil)
    let printer: JSONPrinter
    let scanner: LineScanner
    public private(set) var connections: [TrackedConnection] = []
    @exclusivity(unchecked) var byNumber: [UInt64: TrackedConnection] = [:]
    /// Per connection (by order) and direction: items seen (the fetch pass counts, keeps nothing).
    @exclusivity(unchecked) var counts: [[Int]] = []
    public private(set) var fetched: [ItemRef: JSONValue] = [:]
    let fetching: Bool
    let exporting: Bool
    /// Lines come from the printer; without `--ignore` their rest is hashed unread.
    let trusted: Bool

    public init(_ mode: Mode, ignore: [IgnorePattern]) {
        self.mode = mode
        printer = JSONPrinter(output: mem, diffable: true)
        scanner = LineScanner(ignore: ignore)
        trusted = ignore.isEmpty
        if case .fetch = mode { fetching = true } else { fetching = false }
        if case .export = mode { exporting = true } else { exporting = false }
    }

    /// A shard's (of a sharded run): the export is written by the run's collector, which
    /// takes the shards' connections at the end (`absorb`).
    var defersExport = false
    /// A shard's: where the event being run stands in the whole run (its shard sets it).
    @exclusivity(unchecked) var position: UInt64 = 0

    /// The shards' connections, in the order one thread would have seen them appear, become
    /// this (the run's) collector's, to be written at `finish`.
    func absorb(_ shards: [ConnectionCollector]) {
        var all: [(at: UInt64, shard: Int, t: TrackedConnection)] = connections.map { (0, -1, $0) }
        for (i, s) in shards.enumerated() {
            for t in s.connections {
                if !t.spooled[0].isEmpty || !t.spooled[1].isEmpty { t.spool = s.spoolFile }
                all.append((t.firstSeen, i, t))
            }
        }
        all.sort { ($0.at, $0.shard, $0.t.order) < ($1.at, $1.shard, $1.t.order) }
        connections = all.map(\.t)
        for (i, t) in connections.enumerated() { t.order = i }
    }

    /// The connection of the previous call (consecutive messages are often of one connection).
    @exclusivity(unchecked) var last: TrackedConnection?
    @exclusivity(unchecked) var lastNumber: UInt64 = 0

    @inline(__always)
    func track(_ c: Connection, _ p: ProtocolRuntime?) -> TrackedConnection {
        if let t = last, lastNumber == c.number, p == nil || t.protocolName != nil { return t }
        let t: TrackedConnection
        if let x = byNumber[c.number] {
            t = x
        } else {
            t = TrackedConnection(order: connections.count, server: c.server.text)
            t.client = c.client.text
            t.firstSeen = position
            connections.append(t)
            counts.append([0, 0])
            byNumber[c.number] = t
        }
        if let p, t.protocolName == nil { t.protocolName = p.schema.name }
        last = t
        lastNumber = c.number
        return t
    }

    /// One item of a direction: whether the printer should write its line (then `took`).
    @inline(__always)
    func wants(_ t: TrackedConnection, _ d: Direction, _ first: UInt64, _ last: UInt64) -> Bool {
        t.packet(first, last)
        let index = counts[t.order][d.rawValue]
        counts[t.order][d.rawValue] += 1
        guard fetching else { return true }
        guard case .fetch(let wanted) = mode else { return false }
        let ref = ItemRef(conn: t.order, dir: d.rawValue, index: index)
        guard wanted.contains(ref) else { return false }
        pendingRef = ref
        return true
    }

    @exclusivity(unchecked) var pendingRef: ItemRef?
    /// Fetch: called once every wanted line is in (the reading can stop there).
    public var onAllFetched: (() -> Void)?

    /// The line the printer wrote for an item: fingerprinted (and kept for the export), or
    /// parsed (fetch).
    func took(_ t: TrackedConnection, _ d: Direction, _ first: UInt64, _ last: UInt64) {
        var n = mem.count
        if n > 0 && mem.base[n - 1] == 0x0a { n -= 1 }
        let line = UnsafeRawBufferPointer(start: mem.base, count: n)
        defer { mem.count = 0 }
        if let ref = pendingRef {
            pendingRef = nil
            if let v = try? JSONValue.parse(line) { fetched[ref] = v }
            if case .fetch(let wanted) = mode, fetched.count == wanted.count { onAllFetched?() }
            return
        }
        guard let f = try? scanner.scan(line, trusted: trusted) else { return }
        t.add(d.rawValue, MessagePrint(identity: f.identity, content: f.content, first: first, last: last), keep: !exporting)
        if exporting {
            appendTail(line, f, to: &t.lines[d.rawValue])
            if t.lines[d.rawValue].count >= Self.block { spool(t, d.rawValue) }
        }
    }

    func item(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, _ first: UInt64, _ last: UInt64, _ write: () -> Void) {
        let t = track(c, p)
        guard wants(t, d, first, last) else { return }
        write()
        took(t, d, first, last)
    }

    /// A line that is not an item: kept by the export only.
    func other(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction?, open: Bool = false, _ write: () -> Void) {
        let t = track(c, p)
        guard case .export = mode else { return }
        write()
        withLine { line in
            guard let f = try? scanner.scan(line) else { return }
            var tail: [UInt8] = []
            appendTail(line, f, to: &tail)
            if let d { t.lines[d.rawValue] += tail } else if open { t.openLine = tail } else { t.closeLine = tail }
        }
    }

    /// Lines held per direction before they go to the spool as one block.
    static let block = 16 << 10
    lazy var spoolFile = LineSpool()

    func spool(_ t: TrackedConnection, _ d: Int) {
        guard !t.lines[d].isEmpty, let at = spoolFile.append(t.lines[d]) else { return }
        t.spooled[d].append((at, t.lines[d].count))
        t.lines[d] = []
    }

    /// The line in `mem` (without its newline), then `mem` emptied.
    func withLine(_ body: (UnsafeRawBufferPointer) -> Void) {
        var n = mem.count
        if n > 0 && mem.base[n - 1] == 0x0a { n -= 1 }
        body(UnsafeRawBufferPointer(start: mem.base, count: n))
        mem.count = 0
    }

    /// The line after its `conn` and `dir`, without the ignored members, and a newline.
    func appendTail(_ line: UnsafeRawBufferPointer, _ f: LineFacts, to out: inout [UInt8]) {
        var at = f.tailStart
        for c in scanner.cuts where c.lowerBound >= at {
            out.append(contentsOf: line[at..<c.lowerBound])
            at = c.upperBound
        }
        out.append(contentsOf: line[at..<line.count])
        out.append(0x0a)
    }

    // MARK: MessageSink

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        other(c, p, nil, open: true) { printer.opened(c, p, packet: packet) }
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        // The common path, without a closure.
        let first = m.frame.firstPacket.number, last = m.frame.lastPacket.number
        let t = track(c, p)
        guard wants(t, m.direction, first, last) else { return }
        printer.message(m, c, p)
        took(t, m.direction, first, last)
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        item(c, p, d, packet.number, packet.number) {
            printer.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
        }
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        item(c, p, d, packet.number, packet.number) {
            printer.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
        }
    }

    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                           packet: PacketRef) {
        item(c, p, d, packet.number, packet.number) {
            printer.layerEvent(e, c, p, d, packet: packet)
        }
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        other(c, nil, d) { printer.conflict(c, d, offset: offset, length: length, packet: packet) }
    }

    public func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        other(c, p, d) { printer.notice(n, c, p, d, packet: packet) }
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        other(c, p, nil) { printer.closed(c, p, reason: reason, packet: packet) }
        // A closed connection's lines wait in the spool.
        if exporting, let t = byNumber[c.number] { spool(t, 0); spool(t, 1) }
    }

    public func finish() {
        guard case .export(let out) = mode, !defersExport else { return }
        StableKeys.assign(connections)
        for t in StableKeys.ordered(connections) {
            var key = ""
            JSONValue.quote(t.key, to: &key)
            let opening = "{\"conn\":" + key
            if let l = t.openLine { out.write(opening); out.write(l) }
            for d in Direction.allCases {
                // Each line of the direction gets the opening again.
                let open = opening + (d == .c2s ? ",\"dir\":\"c2s\"" : ",\"dir\":\"s2c\"")
                func emit(_ block: [UInt8]) {
                    block.withUnsafeBytes { b in
                        var s = 0
                        for k in 0..<b.count where b[k] == 0x0a {
                            out.write(open)
                            out.write(UnsafeRawBufferPointer(rebasing: b[s...k]))
                            s = k + 1
                        }
                    }
                    if out.count >= 1 << 20 { out.flush() }
                }
                for (at, n) in t.spooled[d.rawValue] { emit((t.spool ?? spoolFile).read(at, n)) }
                emit(t.lines[d.rawValue])
                t.lines[d.rawValue] = []
                t.spooled[d.rawValue] = []
            }
            if let l = t.closeLine { out.write(opening); out.write(l) }
        }
        out.flush()
    }
}
