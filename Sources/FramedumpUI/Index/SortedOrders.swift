import Foundation

/// A column the list can be sorted by (`/api/messages?sort=`), and each entry's key for it.
package enum SortColumn: String, Sendable, CaseIterable {
    case n, time, conn, dir, name, id, len

    /// The key an entry sorts by; ties keep the ordinal order. `nameRank` ranks each name
    /// index by its text, so names sort alphabetically without reading them per entry.
    func key(_ o: Int, _ e: IndexEntry, nameRank: [Int], declared: [Int: UInt64]) -> (Int, Double, UInt64) {
        switch self {
        case .n: return (0, 0, 0)
        case .time: return (0, e.time, 0)
        case .conn: return (0, 0, UInt64(e.connection))
        case .dir: return (0, 0, UInt64(e.direction))
        case .name: return (0, 0, UInt64(Int(e.name) < nameRank.count ? nameRank[Int(e.name)] : Int.max))
        case .len:
            // The length the row shows: a loss's bytes, a cut frame's declared length.
            if e.isLossRow { return (0, 0, e.id) }
            return (0, 0, e.flags & IndexEntry.isCut != 0 ? declared[o] ?? UInt64(e.frameLength) : UInt64(e.frameLength))
        case .id:
            // No id first (losses have none), then negative ids (their bit patterns order as the
            // numbers), then the rest.
            guard e.flags & IndexEntry.hasID != 0, !e.isLossRow else { return (0, 0, 0) }
            let negative = e.flags & IndexEntry.signedID != 0 && Int64(bitPattern: e.id) < 0
            return (negative ? 1 : 2, 0, e.id)
        }
    }
}

/// Sorted orders of a selection, kept like filters' answers (the last few): sorting is made
/// once per (column, direction, connection, filter), not once per page asked. Live, messages
/// that came since an order was made are sorted alone and merged in (and dropped ones left
/// out), so a growing capture costs a pass over the order, not a sort of it, per update.
final class SortedOrders: @unchecked Sendable {
    typealias Key = (Int, Double, UInt64)
    private struct Kept { var key: String; var range: Range<Int>; var ordinals: [Int] }
    private let lock = NSLock()
    private let gate = NSLock()
    private var kept: [Kept] = []
    /// Orders kept (each an ordinal a message of the selection); the oldest is forgotten beyond this.
    static let limit = 4
    private var made = 0
    /// How many orders were sorted whole (the tests: a page asked again is not sorted again,
    /// nor is an order that grew).
    var sortsMade: Int { lock.lock(); defer { lock.unlock() }; return made }

    /// The selection's ordinals in `column`'s order, from the cache, extended, or sorted now.
    func order(_ column: SortColumn, descending: Bool, scope: String, selection: [Int]?, index: MessageIndex) -> [Int] {
        let range = index.range
        let key = "\(column.rawValue)|\(descending)|\(scope)"
        let count = selection?.count ?? range.count
        if let k = cached(key), k.range == range && k.ordinals.count == count { return k.ordinals }
        // One sort at a time: requests for the same order wait for it rather than each sorting.
        gate.lock()
        defer { gate.unlock() }
        let sorter = Sorter(column: column, descending: descending, names: index.allNames, declared: index.declaredLengths)
        if let k = cached(key) {
            if k.range == range && k.ordinals.count == count { return k.ordinals }
            if let grown = extend(k, to: range, count: count, selection: selection, sorter: sorter, index: index) {
                store(Kept(key: key, range: range, ordinals: grown))
                return grown
            }
        }
        let sorted: [Int]
        if let selection {
            sorted = sorter.sort(sorter.keyed(index.entries(selection)))
        } else {
            // Keyed as they are read: no copy of a million entries.
            var keyed: [(Int, Key)] = []
            keyed.reserveCapacity(range.count)
            index.forEach { o, e in keyed.append((o, sorter.key(o, e))) }
            sorted = sorter.sort(keyed)
        }
        store(Kept(key: key, range: range, ordinals: sorted))
        lock.lock(); made += 1; lock.unlock()
        return sorted
    }

    /// `k`'s order with the messages held now: those dropped since left out, those that came
    /// since sorted and merged in. Nil when the selection changed otherwise (sorted anew).
    private func extend(_ k: Kept, to range: Range<Int>, count: Int, selection: [Int]?, sorter: Sorter,
                        index: MessageIndex) -> [Int]? {
        guard range.lowerBound >= k.range.lowerBound, range.upperBound >= k.range.upperBound else { return nil }
        let added = selection.map { s in s.filter { $0 >= k.range.upperBound } } ?? Array(k.range.upperBound..<range.upperBound)
        let old = index.entries(k.ordinals.lazy.filter { $0 >= range.lowerBound })
        guard old.count + added.count == count else { return nil }
        let new = sorter.keyed(index.entries(added)).sorted(by: sorter.less)
        let held = sorter.keyed(old)
        var out: [Int] = []
        out.reserveCapacity(count)
        var i = 0, j = 0
        while i < held.count || j < new.count {
            if j == new.count || (i < held.count && !sorter.less(new[j], held[i])) {
                out.append(held[i].0); i += 1
            } else {
                out.append(new[j].0); j += 1
            }
        }
        return out
    }

    private func cached(_ key: String) -> Kept? {
        lock.lock(); defer { lock.unlock() }
        return kept.first { $0.key == key }
    }

    private func store(_ k: Kept) {
        lock.lock(); defer { lock.unlock() }
        kept.removeAll { $0.key == k.key }
        kept.append(k)
        if kept.count > Self.limit { kept.removeFirst() }
    }
}

/// One column's order: each entry's key, ties in ordinal order.
struct Sorter {
    let column: SortColumn
    let descending: Bool
    /// Each name index's rank among the names' texts (names sort alphabetically).
    let rank: [Int]

    /// Cut frames' declared lengths (what their rows show), by ordinal.
    let declared: [Int: UInt64]

    init(column: SortColumn, descending: Bool, names: [String], declared: [Int: UInt64]) {
        self.column = column
        self.descending = descending
        self.declared = declared
        var rank = [Int](repeating: 0, count: names.count)
        for (r, i) in names.indices.sorted(by: { names[$0] < names[$1] }).enumerated() { rank[i] = r }
        self.rank = rank
    }

    func key(_ o: Int, _ e: IndexEntry) -> SortedOrders.Key {
        column.key(o, e, nameRank: rank, declared: declared)
    }

    func keyed(_ entries: [(Int, IndexEntry)]) -> [(Int, SortedOrders.Key)] {
        entries.map { ($0.0, key($0.0, $0.1)) }
    }

    func less(_ a: (Int, SortedOrders.Key), _ b: (Int, SortedOrders.Key)) -> Bool {
        if a.1 != b.1 { return descending ? a.1 > b.1 : a.1 < b.1 }
        return descending ? a.0 > b.0 : a.0 < b.0
    }

    func sort(_ keyed: [(Int, SortedOrders.Key)]) -> [Int] {
        keyed.sorted(by: less).map { $0.0 }
    }
}
