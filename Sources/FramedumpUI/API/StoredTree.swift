import FramedumpCore

/// A message's tree as the index stored it: the terminal's text and the printer's table of its
/// lines (`TreeLineTable`), so each field comes with its depth and byte range as the printer
/// knew them, with no text read back.
package struct StoredTree {
    package enum Line: Equatable {
        case field(depth: Int, offset: Int, width: Int, text: String)
        case note(String)
        case warning(String)
    }

    let summary: String
    package let lines: [Line]
    /// Whether each line is the framing header's (the list's summary leaves them out).
    let header: [Bool]

    /// Nil for bytes that are not a stored tree (a spill read short).
    package init?(_ stored: [UInt8]) {
        guard let (text, table) = TreeLineTable.decode(stored) else { return nil }
        func slice(_ l: TreeLine) -> String {
            String(decoding: text[(text.startIndex + Int(l.textStart))..<(text.startIndex + Int(l.textEnd))], as: UTF8.self)
        }
        var summary = "", lines: [Line] = [], header: [Bool] = []
        for l in table {
            switch l.kind {
            case .summary: summary = slice(l); continue
            case .note: lines.append(.note(slice(l)))
            case .warning: lines.append(.warning(slice(l)))
            case .header, .field:
                lines.append(.field(depth: Int(l.depth), offset: Int(l.offset), width: Int(l.width), text: slice(l)))
            }
            header.append(l.kind == .header)
        }
        self.summary = summary
        self.lines = lines
        self.header = header
    }

    /// A loss row's account of what happened: its first line, a note (`IndexSink.lossRow`).
    var lossText: String? {
        if case .note(let text)? = lines.first { return text }
        return nil
    }

    /// The list's one line: the body's top-level fields.
    func oneLine(limit: Int = 200) -> String {
        var out = ""
        for (l, isHeader) in zip(lines, header) where !isHeader {
            guard case .field(let depth, _, _, let text) = l, depth == 0 else { continue }
            if !out.isEmpty { out += "  " }
            out += text
            if out.count > limit { return String(out.prefix(limit)) + "…" }
        }
        return out
    }
}
