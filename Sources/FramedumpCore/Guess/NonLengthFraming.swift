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
    /// Lines that announce a counted block (`payload`), found in the text.
    public var payloads: [PayloadGuess] = []
}

/// `payload "VERB" word N;` (or `last`, or `prefix "$"`) as the streams show it: lines that
/// start so and whose count was followed, that many bytes later, by the delimiter.
public struct PayloadGuess: Sendable, Equatable {
    public var verb: String
    /// The counting word (the verb is word 1); 0: the last word (or, with `prefix`, the rest of
    /// the line after the prefix).
    public var word: Int
    public var prefix: Bool
    /// Lines seen with the verb and a number there, and those whose count held.
    public var lines: Int
    public var held: Int

    /// Its dissector line.
    public var setting: String {
        prefix ? "payload prefix \"\(verb)\";" : "payload \"\(verb)\" \(word == 0 ? "last" : "word \(word)");"
    }
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
        if var b = best, b.delimiter != .nul { b.payloads = payloads(streams, b.delimiter.bytes); best = b }
        return best
    }

    /// Whether the streams' delimited records (`delimiter`) are text lines, to be taken before
    /// any length field: ended by CR LF or LF, nearly all text (a repeated text value reads as a
    /// length field's frames).
    static func isTextLines(_ d: DelimiterGuess) -> Bool { d.delimiter != .nul && d.records >= 4 }

    /// The lines that announce a counted block: for each first word (a verb of letters, or one
    /// punctuation byte glued to a number: RESP's `$5`) and each word that holds a number, how
    /// often the delimiter follows that many bytes after the line. A rule holds when it did for
    /// at least 2 lines and 9 in 10 of those whose bytes were all sampled.
    static func payloads(_ streams: [SampledStream], _ delim: [UInt8]) -> [PayloadGuess] {
        struct Key: Hashable { var verb: [UInt8]; var word: Int; var prefix: Bool }
        var seen: [Key: (lines: Int, held: Int)] = [:]
        func number(_ w: ArraySlice<UInt8>) -> Int? {
            guard !w.isEmpty, w.count <= 12, w.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return w.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        for s in streams {
            for p in s.pieces {
                let b = p.bytes
                var start = b.startIndex, i = b.startIndex
                var lines = 0
                while i + delim.count <= b.endIndex && lines < 20000 {
                    guard b[i] == delim[0] && (delim.count == 1 || b[i + 1] == delim[1]) else { i += 1; continue }
                    let line = b[start..<i], next = i + delim.count
                    lines += 1
                    func check(_ k: Key, _ n: Int) {
                        let end = next + n
                        guard end + delim.count <= b.endIndex else { return }
                        var e = seen[k] ?? (0, 0)
                        e.lines += 1
                        if Array(b[end..<(end + delim.count)]) == delim { e.held += 1 }
                        seen[k] = e
                    }
                    if let c = line.first, c < 0x80, !(c >= 0x30 && c <= 0x39), !(c | 0x20 >= 0x61 && c | 0x20 <= 0x7a), c > 0x20,
                       let n = number(line.dropFirst()) {
                        check(Key(verb: [c], word: 0, prefix: true), n)
                    } else {
                        let words = line.split(separator: 0x20, maxSplits: 16)
                        if let verb = words.first, verb.count <= 32, verb.allSatisfy({ $0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a || $0 == 0x5f }) {
                            for (k, w) in words.enumerated().dropFirst() {
                                if let n = number(w) { check(Key(verb: Array(verb), word: k + 1, prefix: false), n) }
                            }
                            // The last word, for lines whose number of words varies (NATS's PUB).
                            if words.count >= 2, let n = number(words[words.count - 1]) { check(Key(verb: Array(verb), word: 0, prefix: false), n) }
                        }
                    }
                    i = next
                    start = i
                }
            }
        }
        var out: [PayloadGuess] = []
        for (k, v) in seen where v.held >= 2 && v.held * 10 >= v.lines * 9 {
            out.append(PayloadGuess(verb: String(decoding: k.verb, as: UTF8.self), word: k.word, prefix: k.prefix, lines: v.lines, held: v.held))
        }
        // One rule a verb: the word that held most often; on a tie, a numbered word before
        // `last` (memcached's `set` counts with word 5 whether `noreply` follows or not).
        func rank(_ g: PayloadGuess) -> (Int, Int) { (g.held, g.word == 0 ? -100 : -g.word) }
        var best: [String: PayloadGuess] = [:]
        for g in out where best[g.verb].map({ rank(g) > rank($0) }) ?? true { best[g.verb] = g }
        return best.values.sorted { ($0.held, $1.verb) > ($1.held, $0.verb) }
    }
}
