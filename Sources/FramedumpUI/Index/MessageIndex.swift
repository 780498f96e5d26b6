import Foundation
import FramedumpCore

/// One message of the list: where its rendering is in the spill file, and what the list and
/// the plots show without reading it. 64 bytes, so a million messages take 64 MB.
package struct IndexEntry: Sendable {
    /// The message's tree (its text, then the table of its lines: `TreeLineTable`), then its
    /// frame bytes, then (when transforms ran) the bytes its fields count in.
    package var spillOffset: UInt64
    package var treeLength: UInt32
    package var frameLength: UInt32
    package var transformedLength: UInt32
    var nanos: UInt32
    var seconds: Int64
    /// The packets that carried it, first and last (numbered from 1, as NDJSON's `pkts`;
    /// clamped past 2³²).
    var firstPacket: UInt32
    var lastPacket: UInt32
    /// The message id (meaningful when `hasID`).
    var id: UInt64
    /// Index into `MessageIndex.connections`.
    var connection: UInt32
    /// Index into `MessageIndex.names`.
    var name: UInt32
    /// The ordinal of the request this answers, or of the response that answered it
    /// (`pair_by`); `noPair` when there is none.
    var pair: UInt32
    var direction: UInt8
    var flags: UInt8

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

    /// The id as NDJSON writes it, or "null".
    var idText: String {
        guard flags & Self.hasID != 0 else { return "null" }
        if flags & Self.pairID != 0 { return "\"" + IDText.of(id, signed: false, pair: true) + "\"" }
        return flags & Self.signedID != 0 ? String(Int64(bitPattern: id)) : String(id)
    }

    var time: Double { Double(seconds) + Double(nanos) / 1e9 }
}

/// What the connection view says about one connection.
struct ConnectionRecord: Sendable {
    var number: UInt64
    /// `client-server`, as NDJSON's `conn` writes it.
    var key: String
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
    private var connections: [ConnectionRecord] = []
    /// The message ordinals of each connection, in order.
    private var perConnection: [[UInt32]] = []
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

    init(keep: Int) { self.keep = max(keep, Self.chunkSize) }

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
                while perConnection.count <= Int(e.connection) { perConnection.append([]) }
                perConnection[Int(e.connection)].append(UInt32(truncatingIfNeeded: total))
                total += 1
            }
            for (request, response) in pairs { setPair(Int(request), response) }
            for (i, c) in changed {
                while connections.count <= i { connections.append(c) }
                connections[i] = c
            }
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

    func connection(_ i: Int) -> ConnectionRecord? { locked { i >= 0 && i < connections.count ? connections[i] : nil } }
    var allConnections: [ConnectionRecord] { locked { connections } }
    package var connectionCount: Int { locked { connections.count } }

    /// Index of the connection whose key (`client-server`) or number is `text`.
    func connectionIndex(_ text: String) -> Int? {
        locked {
            if let n = Int(text), n >= 0, n < connections.count { return n }
            return connections.firstIndex { $0.key == text }
        }
    }

    /// The ordinals of one connection that are still held.
    func ordinals(ofConnection i: Int) -> [Int] {
        locked {
            guard i >= 0, i < connections.count else { return [] }
            let b = base
            guard i < perConnection.count else { return [] }
            return perConnection[i].lazy.map(Int.init).filter { $0 >= b }
        }
    }
}
