/// What the tree printer tells the page's index about each line of a message as it writes it
/// (`TreePrinter.lines`): what the line is (a field with its byte range, a layer's note, a
/// warning) and where its text lies in the output. So the page shows fields with their byte
/// ranges without reading the text back.
public enum TreeLineKind: UInt8, Sendable {
    /// The first line: time, endpoints, protocol, message name and size.
    case summary
    /// A layer's line (`websocket: binary, FIN, masked`) or the transforms' line.
    case note
    /// A field of the framing header (depth 0).
    case header
    /// A field of the body, at its depth.
    case field
    /// A warning (its text after `warning: `).
    case warning
}

/// One line of a message's tree: its kind, depth and byte range (fields), and where its text
/// is, counted from the start of the message's text.
public struct TreeLine: Sendable, Equatable {
    public var kind: TreeLineKind
    public var depth: UInt16
    /// The field's bytes in the buffer fields count in (the transformed frame, when there is one).
    public var offset: Int32
    public var width: Int32
    public var textStart: UInt32
    public var textEnd: UInt32

    public init(kind: TreeLineKind, depth: UInt16, offset: Int32, width: Int32, textStart: UInt32, textEnd: UInt32) {
        self.kind = kind
        self.depth = depth
        self.offset = offset
        self.width = width
        self.textStart = textStart
        self.textEnd = textEnd
    }

    /// Its 20 bytes in a stored table.
    public static let stride = 20
}

/// The lines of one message, for an index: positions relative to where its text begins.
public struct TreeLineTable {
    /// The output position of the message's first byte.
    public var start: UInt64 = 0
    public private(set) var lines: [TreeLine] = []

    public init() {}

    /// A line whose text runs from output position `text` to `end` (its newline excluded).
    package mutating func line(_ kind: TreeLineKind, depth: Int, offset: Int32, width: Int32, text: UInt64, end: UInt64) {
        lines.append(TreeLine(kind: kind, depth: UInt16(clamping: depth), offset: offset, width: width,
                              textStart: UInt32(clamping: text &- start), textEnd: UInt32(clamping: max(text, end) &- start)))
    }

    @inline(never)  // (the page's path: out of the tree printer's per-message code)
    public mutating func removeAll(startingAt position: UInt64) {
        start = position
        lines.removeAll(keepingCapacity: true)
    }

    /// The table as stored after the text: its lines, then their count (little-endian),
    /// written into `out` (the page's spill file) with no array per message.
    public func write(to out: OutputBuffer) {
        func put32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out.write($0) } }
        for l in lines {
            out.byte(l.kind.rawValue); out.byte(0)
            withUnsafeBytes(of: l.depth.littleEndian) { out.write($0) }
            put32(UInt32(bitPattern: l.offset)); put32(UInt32(bitPattern: l.width))
            put32(l.textStart); put32(l.textEnd)
        }
        put32(UInt32(truncatingIfNeeded: lines.count))
    }

    /// The same bytes as an array (tests).
    public func encoded() -> [UInt8] {
        let out = OutputBuffer(fd: nil)
        write(to: out)
        return out.bytes
    }

    /// A stored message tree split back into its text and lines (nil: not a table this wrote,
    /// or a line outside the text).
    public static func decode(_ stored: [UInt8]) -> (text: ArraySlice<UInt8>, lines: [TreeLine])? {
        func get32(_ at: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(stored[at + $1]) << (8 * UInt32($1)) }
        }
        guard stored.count >= 4 else { return nil }
        let n = Int(get32(stored.count - 4))
        guard n <= (stored.count - 4) / TreeLine.stride else { return nil }
        let tableStart = stored.count - 4 - n * TreeLine.stride
        var lines: [TreeLine] = []
        lines.reserveCapacity(n)
        for i in 0..<n {
            let at = tableStart + i * TreeLine.stride
            guard let kind = TreeLineKind(rawValue: stored[at]) else { return nil }
            let l = TreeLine(kind: kind, depth: UInt16(stored[at + 2]) | UInt16(stored[at + 3]) << 8,
                             offset: Int32(bitPattern: get32(at + 4)), width: Int32(bitPattern: get32(at + 8)),
                             textStart: get32(at + 12), textEnd: get32(at + 16))
            guard l.textStart <= l.textEnd, Int(l.textEnd) <= tableStart else { return nil }
            lines.append(l)
        }
        return (stored[..<tableStart], lines)
    }
}
