/// `payload "VALUE" word 4;`: a text line that announces a payload (memcached's `VALUE key flags
/// bytes`, `set key flags exptime bytes`; NATS's `MSG subject sid bytes`) is followed by as many
/// bytes as one of its words says in ASCII decimal, then the line delimiter again; the frame is
/// the line, the payload and that delimiter. Lines that start with another word are frames of
/// their own, cut at `frame_end` as usual. The verb is word 1; `last` is the line's last word
/// (NATS's `PUB subject [reply-to] bytes`, whose word count varies). `payload prefix "$";`: a
/// line that starts with `$` and goes on with the count alone (RESP's bulk string `$5`).
enum CountedPayloadFraming: FramingKind {
    static let name = "payload"
    static let keywords = ["payload"]

    /// One rule: the verb, and which word counts the bytes (0: the last; `prefix`: the rest of
    /// the line after the verb).
    struct Rule: Equatable {
        var verb: [UInt8]
        var word: Int

        static let prefix = -1
    }

    /// `payload "VERB"[, "VERB"...] (word N | last);` or `payload prefix "P"[, "P"...];`
    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError) {
        if case .ident("prefix") = p.tok.kind {
            _ = p.next()
            var prefixes: [(String, Token)] = []
            repeat {
                let t = p.tok
                let v: String = try p.quoted("the bytes a line starts with, the count following them (\"$\")")
                guard !v.isEmpty, v.utf8.count <= 8, !v.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7f || ($0 >= 0x30 && $0 <= 0x39) }) else {
                    throw p.err(t, "a payload's prefix is 1 to 8 printable ASCII characters, without spaces or digits")
                }
                prefixes.append((v, t))
            } while p.accept(",")
            return try add(prefixes, word: Rule.prefix, p, &s)
        }
        var verbs: [(String, Token)] = []
        repeat {
            let t = p.tok
            let v: String = try p.quoted("the first word of a line that a payload follows (\"VALUE\", \"set\", \"MSG\")")
            guard !v.isEmpty, v.utf8.count <= 32, !v.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7f }) else {
                throw p.err(t, "a payload's verb is one word of 1 to 32 printable ASCII characters, without spaces")
            }
            verbs.append((v, t))
        } while p.accept(",")
        let (which, wt) = try p.ident("'word N' (the verb is word 1) or 'last'")
        let word: Int
        switch which {
        case "last": word = 0
        case "word":
            let nt = p.tok
            let n = try p.number("the number of the word that counts the payload's bytes")
            guard n >= 2 && n <= 64 else { throw p.err(nt, "the word that counts the bytes is word 2 to 64 (the verb is word 1)") }
            word = Int(n)
        default: throw p.err(wt, "expected 'word N' (the verb is word 1) or 'last', found '\(which)'")
        }
        try add(verbs, word: word, p, &s)
    }

    static func add(_ verbs: [(String, Token)], word: Int, _ p: Parser, _ s: inout ProtocolSchema) throws(DissectorError) {
        var rules = s.framingSettings[name] ?? []
        for (v, t) in verbs {
            guard !rules.contains(where: { decode($0)?.verb == Array(v.utf8) }) else { throw p.err(t, "payload \"\(v)\" is given twice") }
            rules.append(encode(Rule(verb: Array(v.utf8), word: word)))
        }
        s.framingSettings[name] = rules
    }

    static func chosen(by s: ProtocolSchema) -> Bool { s.framingSettings[name] != nil }

    static func check(_ s: ProtocolSchema) -> String? {
        if DelimitedFraming.delimiter(s) == nil {
            return "payload needs frame_end (the line that announces a payload ends with it, and so does the payload)"
        }
        return DelimitedFraming.check(s)
    }

    static func describe(_ s: ProtocolSchema) -> [String] {
        DelimitedFraming.describe(s) + rules(s).map { r in
            let v = String(decoding: r.verb, as: UTF8.self)
            if r.word == Rule.prefix { return "  payload prefix \"\(v)\" (the number after it counts the bytes after the line, then frame_end)" }
            return "  payload \"\(v)\" \(r.word == 0 ? "last" : "word \(r.word)") (that word counts the bytes after the line, then frame_end)"
        }
    }

    static func frameEnd(_ s: ProtocolSchema, _ dir: Direction?) -> any FrameEnd {
        CountedPayloadEnd(delimiter: DelimitedFraming.delimiter(s) ?? [0x0a], rules: rules(s))
    }

    static func rules(_ s: ProtocolSchema) -> [Rule] { (s.framingSettings[name] ?? []).compactMap(decode) }

    /// A rule as the schema keeps framing settings (strings): the word number, a space, the verb.
    static func encode(_ r: Rule) -> String { "\(r.word) " + String(decoding: r.verb, as: UTF8.self) }

    static func decode(_ t: String) -> Rule? {
        guard let sp = t.firstIndex(of: " "), let w = Int(t[..<sp]) else { return nil }
        return Rule(verb: Array(t[t.index(after: sp)...].utf8), word: w)
    }
}

/// Finds where a line ends and, for a line whose verb announces a payload, where the payload and
/// its delimiter end. The payload is never searched (it may hold the delimiter); only its count
/// is read, and a count past `max_frame` is refused before any byte of it is kept. Checked for
/// every frame: the rules are flat memory (verbs packed in one block), looked up with no
/// allocation or reference count.
final class CountedPayloadEnd: FrameEnd {
    let line: DelimiterEnd
    /// Each rule: where its verb is in `verbs`, its length, the word that counts (0: the last).
    let rules: UnsafeMutableBufferPointer<(start: Int, length: Int, word: Int)>
    let verbs: UnsafeMutableBufferPointer<UInt8>
    /// Bytes that can start a verb, for the common line that names none.
    let firstBytes: UnsafeMutableBufferPointer<Bool>

    init(delimiter: [UInt8], rules rs: [CountedPayloadFraming.Rule]) {
        line = DelimiterEnd(delimiter)
        rules = .allocate(capacity: max(1, rs.count))
        verbs = .allocate(capacity: max(1, rs.reduce(0) { $0 + $1.verb.count }))
        firstBytes = .allocate(capacity: 256)
        firstBytes.initialize(repeating: false)
        var at = 0
        for (i, r) in rs.enumerated() {
            rules[i] = (at, r.verb.count, r.word)
            for (j, c) in r.verb.enumerated() { verbs[at + j] = c }
            at += r.verb.count
            if let c = r.verb.first { firstBytes[Int(c)] = true }
        }
        ruleCount = rs.count
    }

    let ruleCount: Int

    deinit {
        rules.deallocate()
        verbs.deallocate()
        firstBytes.deallocate()
    }

    var trailerSize: Int { line.trailerSize }

    /// The longest line that announces a payload: past it, a line is a plain line.
    static let maxAnnouncement = 4096

    func check(_ b: UnsafeRawBufferPointer, at base: Int, from: Int, headerSize: Int, maxFrame: Int) -> FrameLayout.Check {
        let s = base + headerSize
        if let rule = announcing(b, from: s) {
            // The line is found again on each call (it is short), never from `from`, which may
            // lie inside a payload that has not all arrived (a payload may hold the delimiter).
            let window = min(b.count, s + Self.maxAnnouncement + line.trailerSize)
            if let lineEnd = line.find(b, from: s, to: window) {
                let r = rules[rule]
                let count = r.word == CountedPayloadFraming.Rule.prefix
                    ? number(b, from: s + r.length, to: lineEnd - line.trailerSize)
                    : payloadCount(b, from: s, to: lineEnd - line.trailerSize, word: r.word)
                guard let count else {
                    return .ok(frameLength: lineEnd - base)
                }
                let total = Int64(lineEnd - base) + count + Int64(line.trailerSize)
                guard total <= Int64(maxFrame) else { return .tooLong(total) }
                guard b.count - base >= Int(total) else { return .needMoreData }
                return .ok(frameLength: Int(total))
            }
            if window < s + Self.maxAnnouncement + line.trailerSize { return .needMoreData }
            // Too long to announce a payload: a plain line.
        }
        return line.check(b, at: base, from: from, headerSize: headerSize, maxFrame: maxFrame)
    }

    /// The rule whose verb starts the line at `s` (a verb is known once a space or the
    /// delimiter follows it; until then a line cannot have ended either), nil for none.
    @inline(__always)
    func announcing(_ b: UnsafeRawBufferPointer, from s: Int) -> Int? {
        guard s < b.count, firstBytes[Int(b[s])] else { return nil }
        let stop = line.first, limit = min(b.count, s + 33)
        var e = s
        while e < limit && b[e] != 0x20 && b[e] != stop { e += 1 }
        guard e < limit else { return nil }
        let n = e - s
        var i = 0
        while i < ruleCount {
            let r = rules[i]
            // A verb is the whole first word; a prefix its start (the count follows it).
            if r.word == CountedPayloadFraming.Rule.prefix ? r.length <= n : r.length == n {
                var j = 0
                while j < r.length && b[s + j] == verbs[r.start + j] { j += 1 }
                if j == r.length { return i }
            }
            i += 1
        }
        return nil
    }

    /// The payload's size that word `word` (0: the last) of the line `b[start..<end]` says, nil
    /// when there is no such word or it is not a decimal number (the line is then a frame of its
    /// own, and what follows it is read as lines).
    func payloadCount(_ b: UnsafeRawBufferPointer, from start: Int, to end: Int, word: Int) -> Int64? {
        var ws = -1, we = -1
        if word == 0 {
            // The last word: back from the line's end, past trailing spaces.
            var e = end
            while e > start && b[e - 1] == 0x20 { e -= 1 }
            var s = e
            while s > start && b[s - 1] != 0x20 { s -= 1 }
            // The verb alone is not a count.
            guard s > start else { return nil }
            (ws, we) = (s, e)
        } else {
            var i = start, n = 0
            while i < end {
                while i < end && b[i] == 0x20 { i += 1 }
                guard i < end else { break }
                let s = i
                while i < end && b[i] != 0x20 { i += 1 }
                n += 1
                if n == word { (ws, we) = (s, i); break }
            }
        }
        guard ws >= 0 else { return nil }
        return number(b, from: ws, to: we)
    }

    /// `b[start..<end]` as a decimal number of 1 to 18 digits, nil for anything else (`-1`).
    @inline(__always)
    func number(_ b: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int64? {
        guard end - start >= 1, end - start <= 18 else { return nil }
        var v: Int64 = 0
        for j in start..<end {
            let d = b[j] &- 0x30
            guard d <= 9 else { return nil }
            v = v &* 10 &+ Int64(d)
        }
        return v
    }

    func boundary(in b: UnsafeRawBufferPointer, from p: Int) -> Int? {
        line.boundary(in: b, from: p)
    }

    /// Just past the announcing line's delimiter, for a body that starts with one and goes on.
    func payloadStart(_ b: UnsafeRawBufferPointer, body: Int) -> Int? {
        // (A body holds a delimiter only after a line that announced a block: the frame's last
        // delimiter is not the body's.)
        guard announcing(b, from: body) != nil else { return nil }
        return line.find(b, from: body, to: min(b.count, body + Self.maxAnnouncement + line.trailerSize))
    }
}
