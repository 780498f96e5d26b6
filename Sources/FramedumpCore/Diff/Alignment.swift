/// One step of an edit script between two item sequences (indexes into old and new).
public enum EditStep: Equatable, Sendable {
    case removed(Int)
    case added(Int)
    /// The same message (identity) with other content: compared field by field.
    case changed(Int, Int)
}

/// Sequence alignment of two directions' items: the shortest edit script where equal items
/// (same content) cost nothing, a removed or added item costs one, and an item replaced by
/// one of the same identity (same message, other fields) costs one as a `changed` pair.
///
/// Myers' O(ND) greedy diff in its Landau–Vishkin form (the furthest point each diagonal
/// reaches with d edits, then a slide along equal items), after the common prefix and suffix
/// are set aside; so one inserted message is one insertion, however long the sequences.
/// Beyond `maxEdits` the rest of the differing middle is compared position by position.
public enum Alignment {
    public static let maxEdits = 2000

    public static func script(_ a: [MessagePrint], _ b: [MessagePrint], maxEdits: Int = Alignment.maxEdits) -> [EditStep] {
        var lo = 0
        while lo < a.count && lo < b.count && same(a[lo], b[lo]) { lo += 1 }
        var ha = a.count, hb = b.count
        while ha > lo && hb > lo && same(a[ha - 1], b[hb - 1]) { ha -= 1; hb -= 1 }
        if lo == ha { return (lo..<hb).map { .added($0) } }
        if lo == hb { return (lo..<ha).map { .removed($0) } }
        return a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                middle(UnsafeBufferPointer(rebasing: pa[lo..<ha]), UnsafeBufferPointer(rebasing: pb[lo..<hb]), maxEdits)
                    .map { shift($0, lo) }
            }
        }
    }

    @inline(__always) static func same(_ x: MessagePrint, _ y: MessagePrint) -> Bool {
        x.content == y.content && x.identity == y.identity
    }

    static func shift(_ s: EditStep, _ by: Int) -> EditStep {
        switch s {
        case .removed(let i): return .removed(i + by)
        case .added(let j): return .added(j + by)
        case .changed(let i, let j): return .changed(i + by, j + by)
        }
    }

    /// How each (d, k) point was reached.
    enum Op: UInt8 { case start, remove, add, change }

    static func middle(_ a: UnsafeBufferPointer<MessagePrint>, _ b: UnsafeBufferPointer<MessagePrint>, _ maxEdits: Int) -> [EditStep] {
        let n = a.count, m = b.count
        // Layer d holds diagonals k = j - i in -d...d at index k + d: the furthest i, or -1.
        var rows: [[Int32]] = []
        var ops: [[Op]] = []
        func slide(_ i0: Int, _ k: Int) -> Int {
            var i = i0
            while i < n && i + k < m && same(a[i], b[i + k]) { i += 1 }
            return i
        }
        rows.append([Int32(slide(0, 0))])
        ops.append([.start])
        var end: (d: Int, k: Int)? = rows[0][0] == n && n == m ? (0, 0) : nil
        var d = 0
        while end == nil && d < min(maxEdits, n + m) {
            d += 1
            let prev = rows[d - 1]
            var row = [Int32](repeating: -1, count: 2 * d + 1)
            var op = [Op](repeating: .start, count: 2 * d + 1)
            func at(_ k: Int) -> Int { abs(k) <= d - 1 ? Int(prev[k + d - 1]) : -1 }
            for k in max(-d, -n)...min(d, m) {
                var best = -1
                var how = Op.start
                // Remove a[i] (from diagonal k + 1), add b[j] (from k - 1, i stays), or change
                // a[i] into b[j] of the same identity (along k): whichever reaches furthest.
                let r = at(k + 1)
                if r >= 0 && r < n && r + 1 > best { best = r + 1; how = .remove }
                let s = at(k - 1)
                if s >= 0 && s + k - 1 < m && s > best { best = s; how = .add }
                let c = at(k)
                if c >= 0 && c < n && c + k < m && c + 1 > best && a[c].identity == b[c + k].identity {
                    best = c + 1
                    how = .change
                }
                guard best >= 0 else { continue }
                let i = slide(best, k)
                row[k + d] = Int32(i)
                op[k + d] = how
                if i == n && i + k == m { end = (d, k) }
            }
            rows.append(row)
            ops.append(op)
        }
        guard let e = end else { return positional(a, b, rows, ops, d) }
        return backtrack(a, b, rows, ops, e.d, e.k)
    }

    static func backtrack(_ a: UnsafeBufferPointer<MessagePrint>, _ b: UnsafeBufferPointer<MessagePrint>,
                          _ rows: [[Int32]], _ ops: [[Op]], _ d0: Int, _ k0: Int) -> [EditStep] {
        var out: [EditStep] = []
        var d = d0, k = k0
        while d > 0 {
            let prev = rows[d - 1]
            switch ops[d][k + d] {
            case .remove:
                let i = Int(prev[k + 1 + d - 1])
                out.append(.removed(i))
                k += 1
            case .add:
                let i = Int(prev[k - 1 + d - 1])
                out.append(.added(i + k - 1))
                k -= 1
            case .change:
                let i = Int(prev[k + d - 1])
                out.append(.changed(i, i + k))
            case .start: break
            }
            d -= 1
        }
        return out.reversed()
    }

    /// Too many edits for the exact search: keep the best point reached, align what led there
    /// exactly, and compare the rest position by position.
    static func positional(_ a: UnsafeBufferPointer<MessagePrint>, _ b: UnsafeBufferPointer<MessagePrint>,
                           _ rows: [[Int32]], _ ops: [[Op]], _ d: Int) -> [EditStep] {
        var bestK = 0, bestSum = -1
        let last = rows[d]
        for (x, r) in last.enumerated() where r >= 0 {
            let k = x - d
            if 2 * Int(r) + k > bestSum { bestSum = 2 * Int(r) + k; bestK = k }
        }
        var out = backtrack(a, b, rows, ops, d, bestK)
        var i = Int(last[bestK + d]), j = i + bestK
        while i < a.count || j < b.count {
            if i < a.count && j < b.count {
                if !same(a[i], b[j]) {
                    if a[i].identity == b[j].identity { out.append(.changed(i, j)) } else { out.append(.removed(i)); out.append(.added(j)) }
                }
                i += 1; j += 1
            } else if i < a.count {
                out.append(.removed(i)); i += 1
            } else {
                out.append(.added(j)); j += 1
            }
        }
        return out
    }
}
