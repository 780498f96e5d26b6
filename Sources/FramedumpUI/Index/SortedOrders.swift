import Foundation

/// A column the list can be sorted by (`/api/messages?sort=`), and each entry's key for it.
package enum SortColumn: String, Sendable, CaseIterable {
    case n, time, conn, dir, name, id, len

    /// The key an entry sorts by; ties keep the ordinal order. `nameRank` ranks each name
    /// index by its text, so names sort alphabetically without reading them per entry.
    func key(_ e: IndexEntry, nameRank: [Int]) -> (Int, Double, UInt64) {
        switch self {
        case .n: return (0, 0, 0)
        case .time: return (0, e.time, 0)
        case .conn: return (0, 0, UInt64(e.connection))
        case .dir: return (0, 0, UInt64(e.direction))
        case .name: return (0, 0, UInt64(Int(e.name) < nameRank.count ? nameRank[Int(e.name)] : Int.max))
        case .len: return (0, 0, UInt64(e.frameLength))
        case .id:
            // No id first, then negative ids (their bit patterns order as the numbers), then the rest.
            guard e.flags & IndexEntry.hasID != 0 else { return (0, 0, 0) }
            let negative = e.flags & IndexEntry.signedID != 0 && Int64(bitPattern: e.id) < 0
            return (negative ? 1 : 2, 0, e.id)
        }
    }
}

/// Sorted orders of a selection, kept like filters' answers (the last few): sorting is made
/// once per (column, direction, connection, filter, messages held), not once per page asked.
final class SortedOrders: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [(key: String, ordinals: [Int])] = []
    /// Orders kept (each an ordinal a message of the selection); the oldest is forgotten beyond this.
    static let limit = 4
    /// How many orders were sorted (the tests: a page asked again is not sorted again).
    private var made = 0
    var sortsMade: Int { lock.lock(); defer { lock.unlock() }; return made }

    /// The selection's ordinals in `column`'s order, from the cache or sorted now.
    func order(_ column: SortColumn, descending: Bool, scope: String, selection: [Int]?, index: MessageIndex) -> [Int] {
        let range = index.range
        // The held range and the selection's size name the selection: live, new messages make a new order.
        let key = "\(column.rawValue)|\(descending)|\(scope)|\(range.lowerBound)-\(range.upperBound)|\(selection?.count ?? -1)"
        if let hit = cached(key) { return hit }
        let sorted = Self.sort(column, descending: descending, selection: selection, index: index)
        store(key, sorted)
        lock.lock(); made += 1; lock.unlock()
        return sorted
    }

    static func sort(_ column: SortColumn, descending: Bool, selection: [Int]?, index: MessageIndex) -> [Int] {
        let names = index.allNames
        var rank = [Int](repeating: 0, count: names.count)
        for (r, i) in names.indices.sorted(by: { names[$0] < names[$1] }).enumerated() { rank[i] = r }
        var keyed: [(Int, (Int, Double, UInt64))] = []
        if let selection {
            keyed.reserveCapacity(selection.count)
            for (o, e) in index.entries(selection) { keyed.append((o, column.key(e, nameRank: rank))) }
        } else {
            keyed.reserveCapacity(index.range.count)
            index.forEach { o, e in keyed.append((o, column.key(e, nameRank: rank))) }
        }
        keyed.sort { a, b in
            if a.1 != b.1 { return descending ? a.1 > b.1 : a.1 < b.1 }
            return descending ? a.0 > b.0 : a.0 < b.0
        }
        return keyed.map { $0.0 }
    }

    private func cached(_ key: String) -> [Int]? {
        lock.lock(); defer { lock.unlock() }
        return kept.first { $0.key == key }?.ordinals
    }

    private func store(_ key: String, _ ordinals: [Int]) {
        lock.lock(); defer { lock.unlock() }
        kept.removeAll { $0.key == key }
        kept.append((key, ordinals))
        if kept.count > Self.limit { kept.removeFirst() }
    }
}
