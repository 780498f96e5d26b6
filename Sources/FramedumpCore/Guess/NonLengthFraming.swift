/// Framings without a length field: a WebSocket (told by its HTTP Upgrade handshake) and
/// records ended by a delimiter.
public enum Delimiter: String, Sendable, CaseIterable {
    case crlf = "\\r\\n"
    case lf = "\\n"
    case nul = "NUL"

    var bytes: [UInt8] {
        switch self {
        case .crlf: return [0x0d, 0x0a]
        case .lf: return [0x0a]
        case .nul: return [0]
        }
    }
}

public struct DelimiterGuess: Sendable {
    public var delimiter: Delimiter
    public var records: Int
    /// Of the pieces that end where the stream ends (not cut), those that end with it.
    public var endingPieces: Int
    public var endedPieces: Int
    /// Records that are printable UTF-8 text.
    public var textRecords: Int
}

enum NonLengthFraming {
    /// A client's first bytes ask for a WebSocket (`GET … Upgrade: websocket`).
    static func isWebSocketHandshake(_ streams: [SampledStream]) -> Bool {
        let starts = streams.filter { $0.direction == .c2s }.compactMap { $0.pieces.first(where: { $0.startsAtBoundary }) }
        guard !starts.isEmpty else { return false }
        let asking = starts.filter { p in
            let head = p.bytes.prefix(4096)
            guard head.starts(with: Array("GET ".utf8)) else { return false }
            let text = String(decoding: head, as: UTF8.self).lowercased()
            return text.contains("\r\nupgrade: websocket") || text.contains("\r\nupgrade:websocket")
        }
        return asking.count * 2 > starts.count
    }

    /// The delimiter most records end with, when nearly every piece that ends with its stream
    /// ends with it and records are mostly text.
    static func delimiter(_ streams: [SampledStream]) -> DelimiterGuess? {
        var best: DelimiterGuess?
        for d in Delimiter.allCases {
            var g = DelimiterGuess(delimiter: d, records: 0, endingPieces: 0, endedPieces: 0, textRecords: 0)
            for s in streams {
                for p in s.pieces where !p.bytes.isEmpty {
                    let b = p.bytes
                    if !p.endsCut {
                        g.endedPieces += 1
                        if b.count >= d.bytes.count, Array(b.suffix(d.bytes.count)) == d.bytes { g.endingPieces += 1 }
                    }
                    var start = 0, i = 0
                    while i + d.bytes.count <= b.count {
                        if b[i] == d.bytes[0] && (d.bytes.count == 1 || b[i + 1] == d.bytes[1]) {
                            g.records += 1
                            if BodyClassifier.isText(b[start..<i]) || start == i { g.textRecords += 1 }
                            i += d.bytes.count
                            start = i
                        } else {
                            i += 1
                        }
                    }
                }
            }
            guard g.records >= 2, g.endedPieces == 0 || g.endingPieces * 10 >= g.endedPieces * 9 else { continue }
            // Binary bytes hold NULs and newlines by chance: records must read as text.
            if g.textRecords * 10 < g.records * 9 { continue }
            // \r\n wins over \n when both hold (its records are the \n's without the \r).
            if best == nil { best = g }
        }
        return best
    }
}
