import Foundation
import FramedumpCore

/// One message of the list: where its rendering is in the spill file, and what the list and
/// the plots show without reading it. 56 bytes, so a million messages take 56 MB.
package struct IndexEntry: Sendable {
    /// Where the message's tree is in the spill (its text, then the table of its lines:
    /// `TreeLineTable`; then its frame bytes, then, when transforms ran, the bytes its fields
    /// count in), below bit 56; `flags` and the direction in the byte above.
    private var place: UInt64
    /// Nanoseconds since 1970 (the years 1678 to 2262; a time outside is `timeUnknown`).
    private var nanoseconds: Int64
    /// The message id (meaningful when `hasID`).
    var id: UInt64
    // (The 8-byte fields first, then the 4-byte ones: no padding between.)
    package var treeLength: UInt32
    package var frameLength: UInt32
    package var transformedLength: UInt32
    /// The packets that carried it, first and last (numbered from 1, as NDJSON's `pkts`;
    /// clamped past 2³²).
    var firstPacket: UInt32
    var lastPacket: UInt32
    /// Index into `MessageIndex.connections`.
    var connection: UInt32
    /// Index into `MessageIndex.names`.
    var name: UInt32
    /// The ordinal of the request this answers, or of the response that answered it
    /// (`pair_by`); `noPair` when there is none.
    var pair: UInt32

    init(spillOffset: UInt64, treeLength: UInt32, frameLength: UInt32, transformedLength: UInt32, nanos: UInt32,
         seconds: Int64, firstPacket: UInt32, lastPacket: UInt32, id: UInt64, connection: UInt32, name: UInt32,
         pair: UInt32, direction: UInt8, flags: UInt8) {
        place = min(spillOffset, Self.offsetMask)
        self.treeLength = treeLength
        self.frameLength = frameLength
        self.transformedLength = transformedLength
        let (s, over) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (t, over2) = s.addingReportingOverflow(Int64(nanos))
        nanoseconds = over || over2 ? 0 : t
        self.firstPacket = firstPacket
        self.lastPacket = lastPacket
        self.id = id
        self.connection = connection
        self.name = name
        self.pair = pair
        self.direction = direction
        self.flags = flags | (over || over2 ? Self.timeUnknown : 0)
    }

    private static let offsetMask: UInt64 = 1 << 56 - 1

    package var spillOffset: UInt64 { place & Self.offsetMask }

    /// `hasID`, `hasWarnings`, `signedID`, `pairID`, `isLoss`, `isCut`, `timeUnknown` (7 bits).
    var flags: UInt8 {
        get { UInt8(truncatingIfNeeded: place >> 56) & 0x7f }
        set { place = place & (Self.offsetMask | 1 << 63) | UInt64(newValue & 0x7f) << 56 }
    }

    /// 0 client to server, 1 server to client.
    var direction: UInt8 {
        get { UInt8(truncatingIfNeeded: place >> 63) }
        set { place = place & ~(1 << 63) | UInt64(newValue & 1) << 63 }
    }

    static let noPair = UInt32.max
    static let hasID: UInt8 = 1
    static let hasWarnings: UInt8 = 2
    /// The id is a signed id field's bit pattern (shown negative when it is).
    static let signedID: UInt8 = 4
    /// The id is a pair (`3:7`), written as a JSON string.
    static let pairID: UInt8 = 8
    /// Not a message but a loss (`LossEvent`): its name is the kind's tag, `id` the bytes it
    /// lost or concerns.
    static let isLoss: UInt8 = 16

    /// The capture lost part of the frame (`[cut: N captured]`): `frameLength` counts what was
    /// captured, `MessageIndex.declaredLength` what the frame said it had.
    static let isCut: UInt8 = 32

    var isLossRow: Bool { flags & Self.isLoss != 0 }
    /// Its packet's time is beyond what `nanoseconds` holds: shown as none (null).
    static let timeUnknown: UInt8 = 0x40

    /// The id as NDJSON writes it, or "null".
    var idText: String {
        guard flags & Self.hasID != 0 else { return "null" }
        if flags & Self.pairID != 0 { return "\"" + IDText.of(id, signed: false, pair: true) + "\"" }
        return flags & Self.signedID != 0 ? String(Int64(bitPattern: id)) : String(id)
    }

    var time: Double {
        if flags & Self.timeUnknown != 0 { return .nan }
        let (seconds, nanos) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return nanos < 0 ? Double(seconds - 1) + Double(nanos + 1_000_000_000) / 1e9 : Double(seconds) + Double(nanos) / 1e9
    }
}

/// What the connection view says about one connection.
struct ConnectionRecord: Sendable {
    var number: UInt64
    var client: String
    var server: String
    var protocolName: String
    var udp: Bool
    var midStream: Bool
    var first: Double
    var last: Double
    var messages: (c2s: Int, s2c: Int) = (0, 0)
    var bytes: (c2s: UInt64, s2c: UInt64) = (0, 0)
    var gaps = 0
    var malformed = 0
    var warnings = 0
    var closed: String?
    /// What the layers said (a handshake, keys missing, a notice), the first few, in their words.
    var notes: [String] = []

    static let maxNotes = 16

    /// `client-server`, as NDJSON's `conn` writes it.
    var key: String { client + "-" + server }
}

/// The index of a capture's messages (and its losses, as rows among them), shared by the thread that decodes and the server's
/// handlers. Entries live in chunks so a live capture can drop its oldest (the ring).
package final class MessageIndex: @unchecked Sendable {
    static let chunkShift = 16
    static let chunkSize = 1 << chunkShift

    private let lock = NSLock()
    private var chunks: [[IndexEntry]] = []
    /// Ordinal of the first entry of `chunks[0]` (chunks dropped so far × chunk size).
    private var base = 0
    private var total = 0
    private let connections: ConnectionStore
    private var names: [String] = []
    /// Ring size for live captures: whole chunks beyond it are dropped, oldest first.
    let keep: Int
    private(set) var state = State.indexing
    private(set) var packets: UInt64 = 0
    private(set) var readError: String?
    /// Summary lines of the run (the protocols, gaps, limits), when it is done.
    private(set) var summary: String = ""
    /// Loss rows of each kind (`LossEvent.Kind`'s order) and the bytes the gaps lost, as
    /// counted by the decoding thread (dropped rows included).
    private var losses = [Int](repeating: 0, count: LossEvent.Kind.allCases.count)
    private var lostBytes: UInt64 = 0
    /// The declared lengths of cut frames (rare), by ordinal.
    private var declared: [Int: UInt64] = [:]

    enum State: String, Sendable { case indexing, done, live }

    init(keep: Int) throws {
        self.keep = max(keep, Self.chunkSize)
        connections = try ConnectionStore()
    }

    func locked<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Called by the decoding thread with what it has made since the last call.
    func publish(entries: [IndexEntry], pairs: [(UInt32, UInt32)], connections changed: [Int: ConnectionRecord],
                 newNames: [String], packets: UInt64, losses: [Int], lostBytes: UInt64, cut: [(Int, UInt64)] = []) {
        locked {
            for (o, length) in cut { declared[o] = length }
            self.losses = losses
            self.lostBytes = lostBytes
            for e in entries {
                if chunks.isEmpty || chunks[chunks.count - 1].count == Self.chunkSize {
                    var c: [IndexEntry] = []
                    c.reserveCapacity(Self.chunkSize)
                    chunks.append(c)
                }
                chunks[chunks.count - 1].append(e)
                total += 1
            }
            for (request, response) in pairs { setPair(Int(request), response) }
            connections.put(changed)
            names.append(contentsOf: newNames)
            self.packets = packets
            // The ring: whole chunks go once more than `keep` messages are held.
            while total - base > keep + Self.chunkSize, chunks.count > 1 {
                chunks.removeFirst()
                base += Self.chunkSize
                if !declared.isEmpty { declared = declared.filter { $0.key >= base } }
            }
        }
    }

    private func setPair(_ ordinal: Int, _ other: UInt32) {
        let i = ordinal - base
        guard i >= 0 else { return }
        chunks[i >> Self.chunkShift][i & (Self.chunkSize - 1)].pair = other
    }

    func finish(state: State, readError: String?, summary: String) {
        locked {
            self.state = state
            self.readError = readError
            self.summary = summary
        }
    }

    func setLive() { locked { state = .live } }

    /// The bounds the run has hit (`--max-connections`, ...), for the top bar.
    private(set) var limits: [LimitHit] = []
    func setLimits(_ l: [LimitHit]) { locked { limits = l } }

    // MARK: reading (callers hold no lock; each call takes it once)

    struct Snapshot: Sendable {
        var state: State
        /// Rows: messages and losses.
        var rows: Int
        var messages: Int
        var losses: [Int]
        var lostBytes: UInt64
        var limits: [LimitHit]
        var dropped: Int
        var connections: Int
        var packets: UInt64
        var readError: String?
        var summary: String
    }

    var snapshot: Snapshot {
        locked {
            Snapshot(state: state, rows: total, messages: total - losses.reduce(0, +), losses: losses, lostBytes: lostBytes, limits: limits, dropped: base, connections: connections.count, packets: packets,
                     readError: readError, summary: summary)
        }
    }

    /// The entry of an ordinal, if it is still held.
    package func entry(_ ordinal: Int) -> IndexEntry? {
        locked { entryLocked(ordinal) }
    }

    private func entryLocked(_ ordinal: Int) -> IndexEntry? {
        let i = ordinal - base
        guard i >= 0, ordinal < total else { return nil }
        return chunks[i >> Self.chunkShift][i & (Self.chunkSize - 1)]
    }

    /// Entries for a list of ordinals (those dropped from the ring are left out).
    func entries<S: Sequence>(_ ordinals: S) -> [(Int, IndexEntry)] where S.Element == Int {
        locked { ordinals.compactMap { o in entryLocked(o).map { (o, $0) } } }
    }

    /// Every held entry, in order, to `body` (under the lock: keep it short).
    func forEach(_ body: (Int, IndexEntry) -> Void) {
        locked {
            var o = base
            for c in chunks {
                for e in c { body(o, e); o += 1 }
            }
        }
    }

    package var range: Range<Int> { locked { base..<total } }

    /// The length a row shows: a message's frame as declared (cut ones included), a loss's bytes.
    func shownLength(_ o: Int, _ e: IndexEntry) -> UInt64 {
        if e.isLossRow { return e.id }
        if e.flags & IndexEntry.isCut != 0 { return locked { declared[o] } ?? UInt64(e.frameLength) }
        return UInt64(e.frameLength)
    }

    /// Cut frames' declared lengths by ordinal (few: a sort reads them once, not per entry).
    var declaredLengths: [Int: UInt64] { locked { declared } }

    func name(_ i: UInt32) -> String { locked { Int(i) < names.count ? names[Int(i)] : "?" } }
    var allNames: [String] { locked { names } }

    func connection(_ i: Int) -> ConnectionRecord? { locked { connections.get(i) } }
    package var connectionCount: Int { locked { connections.count } }

    /// The connections `from..<from+count` (within those there are) and how many there are.
    func connections(from: Int, count: Int) -> (total: Int, records: [(Int, ConnectionRecord)]) {
        locked {
            let total = connections.count
            let lo = max(0, min(from, total)), hi = min(total, lo + max(0, count))
            return (total, (lo..<hi).compactMap { i in connections.get(i).map { (i, $0) } })
        }
    }

    /// Index of the connection whose key (`client-server`) or number is `text`.
    func connectionIndex(_ text: String) -> Int? {
        locked {
            if let n = Int(text) { return n >= 0 && n < connections.count ? n : nil }
            return connections.find(key: text)
        }
    }

    /// The held ordinals (below `below`) of messages a filter's run found by packet: the held
    /// message that ended in the same packet with as many messages after it in that packet, if
    /// it is of the same connection, direction and length. A message the run decoded otherwise
    /// (a connection it picked up mid-stream) has none and is left out.
    func ordinals(found: [FoundMessage], below: Int) -> [Int] {
        var byPlace: [UInt64: [Int]] = [:]
        for (k, f) in found.enumerated() { byPlace[f.packet, default: []].append(k) }
        return locked {
            var keys: [UInt32: String] = [:]
            var out: [Int] = []
            // The held messages ending in one packet, in order (a run of entries).
            var run: [(Int, IndexEntry)] = []
            func endRun() {
                defer { run.removeAll(keepingCapacity: true) }
                guard let first = run.first, let candidates = byPlace[UInt64(first.1.lastPacket)] else { return }
                for (at, (o, e)) in run.enumerated() where o < below {
                    let after = run.count - 1 - at
                    guard let k = candidates.first(where: { found[$0].after == after }),
                          found[k].direction == e.direction, found[k].length == e.frameLength else { continue }
                    if keys[e.connection] == nil { keys[e.connection] = connections.get(Int(e.connection))?.key ?? "" }
                    if keys[e.connection] == found[k].key { out.append(o) }
                }
            }
            var o = base
            for chunk in chunks {
                for e in chunk {
                    // (Losses are not found this way: a run from a later file starts mid-stream
                    // and has losses of its own. Messages are counted without them.)
                    if e.isLossRow { o += 1; continue }
                    if let last = run.last, last.1.lastPacket != e.lastPacket { endRun() }
                    run.append((o, e))
                    o += 1
                }
            }
            endRun()
            return out.sorted()
        }
    }

    /// The ordinals of one connection that are still held: a pass over the held entries (as
    /// the plots make), so a connection costs no list of its own.
    func ordinals(ofConnection i: Int) -> [Int] {
        locked {
            guard i >= 0, i < connections.count else { return [] }
            let c = UInt32(truncatingIfNeeded: i)
            var out: [Int] = []
            var o = base
            for chunk in chunks {
                for e in chunk {
                    if e.connection == c { out.append(o) }
                    o += 1
                }
            }
            return out
        }
    }
}
