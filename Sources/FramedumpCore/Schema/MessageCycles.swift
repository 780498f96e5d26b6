/// A message that contains itself on every path (directly or through other messages) would
/// need infinitely many bytes: no frame can hold it, so the file is refused.
///
/// A field is a "must contain" edge when it is always there: a plain field not under a `when`,
/// a fixed array of at least one element, or an `until` array (its last element at least). An array with a count prefix or a count field can have zero
/// elements, so recursion through it can end (a tree of `Node[u8] children`), and is allowed.
enum MessageCycles {
    static func find(in s: ProtocolSchema, fieldTokens: [[Token]],
                     error: (Token, String) -> DissectorError) -> [DissectorError] {
        // Each message's edges: (target message, field index).
        let edges: [[(Int, Int)]] = s.messages.map { m in
            m.fields.enumerated().compactMap { fi, f in
                // (A field under a `when` may be left out: recursion through it can end.)
                guard case .message(let target) = f.type, f.condition == nil else { return nil }
                switch f.array {
                case nil, .until?: return (target, fi)
                case .fixed(let n) where n > 0: return (target, fi)
                default: return nil
                }
            }
        }
        var found: [DissectorError] = []
        var done = [Bool](repeating: false, count: s.messages.count)
        var onPath = [Bool](repeating: false, count: s.messages.count)
        // The depth-first path: (message, index of the next edge to follow, field taken into it).
        var path: [(message: Int, edge: Int, field: Int)] = []
        for root in s.messages.indices where !done[root] {
            path = [(root, 0, -1)]
            onPath[root] = true
            while let top = path.last {
                let es = edges[top.message]
                if top.edge == es.count {
                    path.removeLast()
                    onPath[top.message] = false
                    done[top.message] = true
                    continue
                }
                path[path.count - 1].edge += 1
                let (target, fi) = es[top.edge]
                if onPath[target] {
                    // Past the report's limit the rest would not be shown: stop (a file of many
                    // cycles must not cost a chain each).
                    guard found.count < Diagnostics.limit else { return found }
                    // A cycle: from where `target` is on the path, round to it again.
                    let start = path.firstIndex { $0.message == target }!
                    var steps: [(message: Int, field: Int)] = []
                    for k in start..<path.count {
                        let field = k + 1 < path.count ? path[k + 1].field : fi
                        steps.append((path[k].message, field))
                    }
                    // A long chain is shown by its first steps.
                    var chain = steps.prefix(8).map { "\(s.messages[$0.message].name).\(s.messages[$0.message].fields[$0.field].name)" }
                    if steps.count > 8 { chain.append("… (\(steps.count - 8) more)") }
                    chain.append(s.messages[target].name)
                    let first = steps[0]
                    let f = s.messages[first.message].fields[first.field]
                    let type = s.messages[steps.count > 1 ? steps[1].message : target].name
                    found.append(error(fieldTokens[first.message][first.field],
                        "message '\(s.messages[target].name)' contains itself with nothing to end the recursion: \(chain.joined(separator: " → ")) (an array with a count can be empty: '\(type)[u8] \(f.name)')"))
                } else if !done[target] {
                    onPath[target] = true
                    path.append((target, 0, fi))
                }
            }
        }
        return found
    }
}
