/// "did you mean …?" for a name the checker or `-Y` refuses: the candidates within a small
/// edit distance (case ignored), a few, sorted.
enum DidYouMean {
    /// `" (did you mean a, b?)"`, or "" when nothing is close.
    static func hint(_ name: String, _ candidates: [String], prefix: String = "") -> String {
        let n = name.lowercased()
        // Close: a few edits away, or the same start for most of the name (`bodyLenn`, `bodyLength`).
        let close = Set(candidates.filter {
            let c = $0.lowercased()
            let common = zip(c, n).prefix { $0 == $1 }.count
            return distance(c, n) <= max(2, n.count / 3) || (common >= 4 && common * 5 >= n.count * 3)
        })
            .sorted().prefix(5).map { prefix + $0 }
        return close.isEmpty ? "" : " (did you mean \(close.joined(separator: ", "))?)"
    }

    /// Levenshtein distance over characters.
    static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty { return y.count }
        var prev = Array(0...y.count)
        for i in 1...x.count {
            var cur = [i] + Array(repeating: 0, count: y.count)
            for j in stride(from: 1, through: y.count, by: 1) {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[y.count]
    }
}

extension ProtocolSchema {
    /// The hint for a name that is no header field of this protocol.
    func headerFieldHint(_ name: String) -> String {
        let names = header.filter { !$0.isPadding }.map(\.name)
        return names.isEmpty ? " (the protocol has no header block)" : DidYouMean.hint(name, names)
    }

    /// The built-in type names, as the language doc writes them (for suggestions).
    static let builtinTypeNames = ["Uint8", "Uint16", "Uint24", "Uint32", "Uint64", "Int8", "Int16", "Int24", "Int32", "Int64",
                                   "uint16le", "uint32le", "uint64le", "uint16be", "uint32be", "uint64be",
                                   "Varint", "Svarint", "Varint32", "Svarint32", "Float", "Double", "Bool", "String", "Bytes"]
}

/// An option that names something the loaded dissectors do not have (`-O nosuch`): said, exit 2.
public struct NameError: Error, CustomStringConvertible, Sendable {
    public var description: String
}
