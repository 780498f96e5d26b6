/// A message's tree as the terminal prints it, read back into lines the page can link to
/// bytes: `    [6+1]     Res: 1 (success)` is a field at depth 0 over bytes 6..<7; other
/// indented lines are the layers' and transforms' notes, or warnings.
package struct TreeText {
    package enum Line {
        case field(depth: Int, offset: Int, width: Int, text: String)
        case note(String)
        case warning(String)
    }

    let summary: String
    package let lines: [Line]

    package init(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        var all = text.split(separator: "\n", omittingEmptySubsequences: true)
        summary = all.isEmpty ? "" : String(all.removeFirst())
        lines = all.map(Self.line)
    }

    static func line(_ s: Substring) -> Line {
        let u = Array(s.utf8)
        var i = 0
        while i < u.count && u[i] == 0x20 { i += 1 }
        let body = s.utf8.dropFirst(i)
        if i >= 4, i < u.count, u[i] == 0x5b, let close = u[i...].firstIndex(of: 0x5d), let plus = u[i..<close].firstIndex(of: 0x2b),
           let o = Int(String(decoding: u[(i + 1)..<plus], as: UTF8.self)),
           let w = Int(String(decoding: u[(plus + 1)..<close], as: UTF8.self)) {
            var j = close + 1
            while j < u.count && u[j] == 0x20 { j += 1 }
            return .field(depth: (i - 4) / 2, offset: o, width: w, text: String(decoding: u[j...], as: UTF8.self))
        }
        let rest = String(decoding: body, as: UTF8.self)
        if rest.hasPrefix("warning: ") { return .warning(String(rest.dropFirst(9))) }
        return .note(rest)
    }

    /// The list's one line: the body's top-level fields, after the framing header's.
    func oneLine(skippingHeader header: Int, limit: Int = 200) -> String {
        var skipped = 0, out = ""
        for l in lines {
            guard case .field(let depth, _, _, let text) = l, depth == 0 else { continue }
            if skipped < header { skipped += 1; continue }
            if !out.isEmpty { out += "  " }
            out += text
            if out.count > limit { return String(out.prefix(limit)) + "…" }
        }
        return out
    }
}
