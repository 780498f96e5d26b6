/// `--ignore PATH`: fields left out of `--diffable` exports and of `framedump diff`.
///
/// A value's full path is `protocol.message.field.subfield…` (a key outside `fields`, such as
/// `length` or `ws.wire_length`, stands where a field would). A pattern names the end of that
/// path, one name per dot; `*` in a name matches any run of characters. So `ClientTime`
/// matches that field in every message, `Cs_10002.ClientTime` in one message,
/// `game.*.Timestamp` in every message of one protocol. Array elements are not named:
/// `items.price` is the price of every element of `items`.
public struct IgnorePattern: Sendable, Equatable {
    public let text: String
    let segments: [[UInt8]]

    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Array($0.utf8) }
        guard !text.isEmpty, !parts.contains(where: \.isEmpty) else { return nil }
        self.text = text
        segments = parts
    }

    /// Whether the pattern matches the end of `path` (names as raw bytes: JSON keys as written).
    func matches(_ path: UnsafeBufferPointer<(Int, Int)>, in line: UnsafeRawBufferPointer) -> Bool {
        guard segments.count <= path.count else { return false }
        let skip = path.count - segments.count
        for (k, seg) in segments.enumerated() {
            let (o, l) = path[skip + k]
            if !Self.glob(seg, UnsafeRawBufferPointer(rebasing: line[o..<(o + l)])) { return false }
        }
        return true
    }

    /// The same for a path of names.
    func matches(_ path: [String]) -> Bool {
        guard segments.count <= path.count else { return false }
        let skip = path.count - segments.count
        for (k, seg) in segments.enumerated() {
            var name = path[skip + k]
            let ok = name.withUTF8 { Self.glob(seg, UnsafeRawBufferPointer($0)) }
            if !ok { return false }
        }
        return true
    }

    /// `*` matches any run of bytes; everything else matches itself.
    static func glob(_ p: [UInt8], _ s: UnsafeRawBufferPointer) -> Bool {
        var pi = 0, si = 0, star = -1, mark = 0
        while si < s.count {
            if pi < p.count && p[pi] != 0x2a && p[pi] == s[si] {
                pi += 1; si += 1
            } else if pi < p.count && p[pi] == 0x2a {
                star = pi; mark = si; pi += 1
            } else if star >= 0 {
                pi = star + 1; mark += 1; si = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == 0x2a { pi += 1 }
        return pi == p.count
    }
}
