/// What a diff holds per message: a fingerprint, not the message (32 bytes, whatever its size).
public struct MessagePrint: Sendable, Equatable {
    /// Event type, protocol and message name (or id): what a message "is".
    public var identity: UInt64
    /// Everything a diff compares (see `LineScanner`).
    public var content: UInt64
    /// First and last packet numbers; 0 when the input does not say (a `--diffable` export).
    public var first: UInt64
    public var last: UInt64

    public init(identity: UInt64, content: UInt64, first: UInt64 = 0, last: UInt64 = 0) {
        self.identity = identity
        self.content = content
        self.first = first
        self.last = last
    }
}

/// One connection of one input, as the diff and the grouped export see it: its protocol and
/// server, the fingerprints of its items per direction, and (for the export) their lines.
public final class TrackedConnection {
    /// Order of first appearance in its input, from 0.
    public internal(set) var order: Int
    /// A sharded run: where in the run the connection first appeared (its shard's
    /// `ConnectionCollector.position`), and the spool holding its blocks, once merged.
    var firstSeen: UInt64 = 0
    var spool: LineSpool?
    public var protocolName: String?
    public var server: String
    /// The client's address and port, when the input says (not in a `--diffable` export): the
    /// report shows it, as the ordinal follows content that `--ignore` changes.
    public var client: String?
    /// `protocol@server#ordinal`, set by `StableKeys.assign` (or read from an export).
    public var key = ""
    var givenKey = false
    /// Every item's fingerprint, per direction (kept by `diff`; the export keeps only `summary`).
    @exclusivity(unchecked) public var prints: [[MessagePrint]] = [[], []]
    /// What the stable key's order reads of each direction.
    @exclusivity(unchecked) var summary: [OrderSummary] = [OrderSummary(), OrderSummary()]
    @exclusivity(unchecked) public var firstPacket: UInt64 = 0
    @exclusivity(unchecked) public var lastPacket: UInt64 = 0
    /// Export only: each direction's latest lines (after `conn` and `dir`, `--ignore` applied),
    /// the earlier ones as blocks in the spool (offset, length), and the open and close lines.
    @exclusivity(unchecked) var lines: [[UInt8]] = [[], []]
    var spooled: [[(Int, Int)]] = [[], []]
    var openLine: [UInt8]?
    var closeLine: [UInt8]?

    init(order: Int, server: String) {
        self.order = order
        self.server = server
    }

    public var messageCount: Int { summary[0].count + summary[1].count }

    /// One item of a direction: its fingerprint noted (and kept, for a diff).
    func add(_ d: Int, _ p: MessagePrint, keep: Bool) {
        summary[d].note(p.content)
        if keep { prints[d].append(p) }
    }

    func packet(_ first: UInt64, _ last: UInt64) {
        guard first > 0 else { return }
        if firstPacket == 0 || first < firstPacket { firstPacket = first }
        lastPacket = max(lastPacket, last)
    }
}

/// A direction in brief, for ordering connections by content in bounded memory: its first
/// `headLength` content fingerprints, its item count, and one hash of all of them.
struct OrderSummary {
    static let headLength = 64
    var head: [UInt64] = []
    var count = 0
    var all = Hash()

    mutating func note(_ content: UInt64) {
        if head.count < Self.headLength { head.append(content) }
        count += 1
        all.mix(content)
    }
}

/// Stable connection keys: `protocol@server#ordinal`. Among the connections to one server
/// the ordinal follows their content (the fingerprints of their c2s items, then s2c), not the
/// order they opened in, so two recordings of one scenario give each connection the same key.
public enum StableKeys {
    public static func assign(_ conns: [TrackedConnection]) {
        var groups: [String: [TrackedConnection]] = [:]
        for c in conns where !c.givenKey { groups[group(c), default: []].append(c) }
        for (g, members) in groups {
            let sorted = members.sorted(by: before)
            for (n, c) in sorted.enumerated() { c.key = g + "#\(n + 1)" }
        }
    }

    /// `protocol@server` (`tcp@…` for a connection no dissector claimed).
    public static func group(_ c: TrackedConnection) -> String { (c.protocolName ?? "tcp") + "@" + c.server }

    /// Content order: the first items' fingerprints one by one, c2s first (a shorter head
    /// first); then the item counts; then a hash of every item; then the order of appearance.
    /// Connections usually differ in their first messages, so a later edit keeps the keys.
    /// The content is what the comparison sees, so `--ignore` can renumber connections whose
    /// first messages differ only in an ignored field: reports also name each client.
    static func before(_ a: TrackedConnection, _ b: TrackedConnection) -> Bool {
        for d in 0..<2 {
            let x = a.summary[d].head, y = b.summary[d].head
            for k in 0..<min(x.count, y.count) where x[k] != y[k] { return x[k] < y[k] }
            if x.count != y.count { return x.count < y.count }
        }
        for d in 0..<2 where a.summary[d].count != b.summary[d].count { return a.summary[d].count < b.summary[d].count }
        for d in 0..<2 where a.summary[d].all.value != b.summary[d].all.value {
            return a.summary[d].all.value < b.summary[d].all.value
        }
        return a.order < b.order
    }

    /// Sorted for output: by group, then ordinal.
    public static func ordered(_ conns: [TrackedConnection]) -> [TrackedConnection] {
        conns.sorted { a, b in
            let ga = group(a), gb = group(b)
            if ga != gb { return ga < gb }
            let oa = ordinal(a.key), ob = ordinal(b.key)
            return oa != ob ? oa < ob : a.order < b.order
        }
    }

    static func ordinal(_ key: String) -> Int {
        guard let h = key.lastIndex(of: "#") else { return 0 }
        return Int(key[key.index(after: h)...]) ?? 0
    }

    /// A key read from an export (`game@127.0.0.1:8000#2`): protocol and server, or nil for a
    /// `conn` of another form.
    static func parse(_ key: String) -> (protocolName: String, server: String)? {
        guard let at = key.firstIndex(of: "@"), let h = key.lastIndex(of: "#"), at < h,
              Int(key[key.index(after: h)...]) != nil else { return nil }
        return (String(key[..<at]), String(key[key.index(after: at)..<h]))
    }

    /// The server side of a plain `conn` (`CLIENT:PORT-SERVER:PORT`).
    static func client(ofConn conn: String) -> String? {
        guard let dash = conn.firstIndex(of: "-") else { return nil }
        return String(conn[..<dash])
    }

    static func server(ofConn conn: String) -> String {
        guard let dash = conn.firstIndex(of: "-") else { return conn }
        return String(conn[conn.index(after: dash)...])
    }
}
