#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads one NDJSON line (ours, or any strict JSON object line) in a single pass without
/// building a tree: the keys a diff groups by (`conn`, `dir`, `type`, `protocol`, `message`,
/// `pkts`), and two hashes — the message's identity (protocol and message name, or id, or
/// event type) and its content (everything but the per-run keys `conn`, `dir`, `ts`, `pkts`,
/// `pkt`, `offset`, and the fields `--ignore` names). It also notes the byte ranges of the
/// ignored members, so an export can cut them out of the line.
public struct LineFacts {
    public var conn: Range<Int>?
    public var dir: Direction?
    public var type: Range<Int>?
    public var proto: Range<Int>?
    public var message: Range<Int>?
    public var pkts: (UInt64, UInt64)?
    public var identity: UInt64 = 0
    public var content: UInt64 = 0
    /// Where the line goes on after its `conn` and `dir` members (a `,` or the closing brace).
    public var tailStart = 1
}

public final class LineScanner {
    let ignore: [IgnorePattern]
    /// The full path of the value being read: protocol, message, then keys (see `IgnorePattern`).
    @exclusivity(unchecked) var path: [(Int, Int)] = []
    /// Byte ranges of ignored members, in order.
    @exclusivity(unchecked) public private(set) var cuts: [Range<Int>] = []

    /// Per `--ignore` pattern: whether it matched a member of any line scanned (a pattern that
    /// never does is probably misspelt, and `diff` says so).
    @exclusivity(unchecked) public private(set) var matched: [Bool]

    public init(ignore: [IgnorePattern]) {
        self.ignore = ignore
        matched = Array(repeating: false, count: ignore.count)
    }

    /// `trusted`: a line the NDJSON printer just wrote (no white space, no per-run keys after
    /// `dir`): after the keys that name the message, the rest is hashed without being read.
    public func scan(_ line: UnsafeRawBufferPointer, trusted: Bool = false) throws(JSONSyntaxError) -> LineFacts {
        var t = JSONTokens(line)
        var f = LineFacts()
        cuts.removeAll(keepingCapacity: true)
        var content = Hash()
        var idText: Range<Int>?
        try t.expect(0x7b, "'{'")
        f.tailStart = t.i
        t.skipSpace()
        var keptAny = false
        var prevEnd = t.i
        if t.peek == 0x7d {
            t.i += 1
        } else {
            while true {
                t.skipSpace()
                let memberStart = t.i
                var ignored = false
                let (k, _) = try t.string()
                try t.expect(0x3a, "':'")
                t.skipSpace()
                let key = UnsafeRawBufferPointer(rebasing: line[k])
                switch Self.topKey(key) {
                case .conn:
                    if t.peek == 0x22 { f.conn = try t.string().0 } else { try t.skipValue(depth: 1) }
                    f.tailStart = t.i
                case .dir:
                    if t.peek == 0x22 {
                        let (r, _) = try t.string()
                        let v = UnsafeRawBufferPointer(rebasing: line[r])
                        f.dir = Self.equal(v, "c2s") ? .c2s : Self.equal(v, "s2c") ? .s2c : nil
                    } else {
                        try t.skipValue(depth: 1)
                    }
                    f.tailStart = t.i
                case .perRun:
                    try t.skipValue(depth: 1)
                case .pkts:
                    f.pkts = try Self.packets(&t)
                case .named(let which):
                    // type, protocol, message, id: part of the identity and of the content.
                    let start = t.i
                    try t.skipValue(depth: 1)
                    let r = start..<t.i
                    let isString = line[start] == 0x22
                    let inner = isString ? (start + 1)..<(t.i - 1) : r
                    switch which {
                    case 0: f.type = inner
                    case 1: if isString { f.proto = inner }
                    case 2: if isString { f.message = inner }
                    default: idText = r
                    }
                    content.byte(0x2c)
                    content.add(line, memberStart..<t.i)
                case .other:
                    if ignore.isEmpty {
                        // The content is the stream of kept members, each after a comma, then
                        // the closing brace: for a printer's line, the raw rest of the line.
                        if trusted {
                            content.add(line, prevEnd..<line.count)
                            f.identity = identity(line, f, idText)
                            f.content = content.value
                            return f
                        }
                        content.byte(0x2c)
                        try t.skipValue(depth: 1)
                        content.add(line, memberStart..<t.i)
                    } else {
                        resetPath(f)
                        let inFields = Self.equal(key, "fields")
                        if !inFields { path.append((k.lowerBound, k.count)) }
                        if !inFields && matchesIgnore(line) {
                            try t.skipValue(depth: 1)
                            cut(t, memberStart: memberStart, prevEnd: prevEnd, keptAny: keptAny)
                            ignored = true
                        } else {
                            content.add(line, k)
                            try walk(&t, line, &content, depth: 1)
                        }
                    }
                }
                if !ignored { keptAny = true }
                prevEnd = t.i
                t.skipSpace()
                guard let n = t.peek else { throw t.fail("unterminated object") }
                t.i += 1
                if n == 0x7d { break }
                guard n == 0x2c else { throw t.fail("expected ',' or '}'") }
            }
        }
        t.skipSpace()
        guard t.i == line.count else { throw t.fail("text after the object") }
        content.byte(0x7d)
        f.identity = identity(line, f, idText)
        f.content = content.value
        return f
    }

    /// Event type, protocol, and message name (or `#id`).
    func identity(_ line: UnsafeRawBufferPointer, _ f: LineFacts, _ idText: Range<Int>?) -> UInt64 {
        var id = Hash()
        if let r = f.type { id.add(line, r) }
        id.byte(0x1f)
        if let r = f.proto { id.add(line, r) }
        id.byte(0x1f)
        if let r = f.message { id.add(line, r) } else if let r = idText { id.byte(0x23); id.add(line, r) }
        return id.value
    }

    /// A value with `--ignore` in force: its members' paths are matched, ignored ones cut.
    func walk(_ t: inout JSONTokens, _ line: UnsafeRawBufferPointer, _ h: inout Hash, depth: Int) throws(JSONSyntaxError) {
        t.skipSpace()
        guard let c = t.peek else { throw t.fail("expected a value") }
        guard c == 0x7b || c == 0x5b else {
            let start = t.i
            try t.skipValue(depth: depth)
            h.add(line, start..<t.i)
            return
        }
        guard depth < JSONTokens.maxDepth else { throw t.fail("nested deeper than \(JSONTokens.maxDepth) levels") }
        let close: UInt8 = c == 0x7b ? 0x7d : 0x5d
        h.byte(c)
        t.i += 1
        t.skipSpace()
        if t.peek == close { t.i += 1; h.byte(close); return }
        var keptAny = false
        var prevEnd = t.i
        while true {
            if c == 0x7b {
                t.skipSpace()
                let memberStart = t.i
                let (k, _) = try t.string()
                try t.expect(0x3a, "':'")
                path.append((k.lowerBound, k.count))
                if matchesIgnore(line) {
                    try t.skipValue(depth: depth + 1)
                    cut(t, memberStart: memberStart, prevEnd: prevEnd, keptAny: keptAny)
                } else {
                    h.add(line, k)
                    try walk(&t, line, &h, depth: depth + 1)
                    keptAny = true
                }
                path.removeLast()
            } else {
                try walk(&t, line, &h, depth: depth + 1)
                keptAny = true
            }
            prevEnd = t.i
            t.skipSpace()
            guard let n = t.peek else { throw t.fail("unterminated") }
            t.i += 1
            if n == close { break }
            guard n == 0x2c else { throw t.fail("expected ',' or a closing bracket") }
        }
        h.byte(close)
    }

    /// Records the cut of a member just skipped (`t` is right after its value). With a member
    /// kept before it, the cut runs from the end of the previous member; otherwise from its key
    /// through the comma after it.
    func cut(_ t: JSONTokens, memberStart: Int, prevEnd: Int, keptAny: Bool) {
        if keptAny {
            cuts.append(prevEnd..<t.i)
            return
        }
        var u = t
        u.skipSpace()
        cuts.append(memberStart..<(u.peek == 0x2c ? u.i + 1 : t.i))
    }

    func resetPath(_ f: LineFacts) {
        path.removeAll(keepingCapacity: true)
        path.append(f.proto.map { ($0.lowerBound, $0.count) } ?? (0, 0))
        path.append(f.message.map { ($0.lowerBound, $0.count) } ?? (0, 0))
    }

    func matchesIgnore(_ line: UnsafeRawBufferPointer) -> Bool {
        guard let i = path.withUnsafeBufferPointer({ p in ignore.firstIndex { $0.matches(p, in: line) } }) else { return false }
        matched[i] = true
        return true
    }

    enum TopKey { case conn, dir, perRun, pkts, named(Int), other }

    static func topKey(_ k: UnsafeRawBufferPointer) -> TopKey {
        switch k.count {
        case 2: if equal(k, "ts") { return .perRun }; if equal(k, "id") { return .named(3) }
        case 3: if equal(k, "dir") { return .dir }; if equal(k, "pkt") { return .pkts }
        case 4: if equal(k, "conn") { return .conn }; if equal(k, "pkts") { return .pkts }; if equal(k, "type") { return .named(0) }
        case 6: if equal(k, "offset") { return .perRun }
        // (Which request a response answers, and how fast: the export's word on pairing.)
        case 7: if equal(k, "message") { return .named(2) }; if equal(k, "answers") || equal(k, "latency") { return .perRun }
        case 8: if equal(k, "protocol") { return .named(1) }
        default: break
        }
        return .other
    }

    @inline(__always) static func equal(_ a: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        a.count == s.utf8CodeUnitCount && memcmp(a.baseAddress!, s.utf8Start, a.count) == 0
    }

    /// `"pkts":[first,last]` or `"pkt":n`.
    static func packets(_ t: inout JSONTokens) throws(JSONSyntaxError) -> (UInt64, UInt64)? {
        func number(_ t: inout JSONTokens) throws(JSONSyntaxError) -> UInt64? {
            // Anything but a plain number: nil, nothing read (the caller reads the value whole).
            t.skipSpace()
            guard let c = t.peek, JSONTokens.isDigit(c) else { return nil }
            let r = try t.number()
            var v: UInt64 = 0
            for k in r {
                let d = t.b[k]
                guard JSONTokens.isDigit(d) else { return nil }
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(UInt64(d - 0x30))
                if o1 || o2 { return nil }
                v = s
            }
            return v
        }
        t.skipSpace()
        if t.peek == 0x5b {
            let save = t
            t.i += 1
            t.skipSpace()
            if let a = try number(&t) {
                t.skipSpace()
                if t.peek == 0x2c {
                    t.i += 1
                    if let b = try number(&t) {
                        t.skipSpace()
                        if t.peek == 0x5d { t.i += 1; return (a, b) }
                    }
                }
            }
            t = save
            try t.skipValue(depth: 1)
            return nil
        }
        let save = t
        if let n = try number(&t) { return (n, n) }
        t = save
        try t.skipValue(depth: 1)
        return nil
    }
}

/// A 64-bit hash of a byte stream fed in pieces, eight bytes at a time; how the stream is cut
/// into pieces does not change it (not cryptographic: a collision would hide a difference, at
/// odds of about one in 2^64 per pair of items compared).
struct Hash {
    var state: UInt64 = 0x9e3779b97f4a7c15
    var word: UInt64 = 0
    var filled: UInt64 = 0
    var length: UInt64 = 0

    @inline(__always) mutating func mix(_ w: UInt64) {
        state = (state ^ w) &* 0xff51afd7ed558ccd
        state ^= state >> 33
    }

    @inline(__always) mutating func byte(_ c: UInt8) {
        word |= UInt64(c) << (filled << 3)
        filled += 1
        length += 1
        if filled == 8 {
            mix(word)
            word = 0
            filled = 0
        }
    }

    @inline(__always) mutating func add(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) {
        var k = r.lowerBound
        while filled != 0 && k < r.upperBound { byte(b[k]); k += 1 }
        while k + 8 <= r.upperBound {
            mix(b.loadUnaligned(fromByteOffset: k, as: UInt64.self))
            length += 8
            k += 8
        }
        while k < r.upperBound { byte(b[k]); k += 1 }
    }

    var value: UInt64 {
        var h = self
        h.mix(word ^ (length << 8) ^ 0x5555)
        h.state ^= h.state >> 29
        h.state = h.state &* 0xc4ceb9fe1a85ec53
        return h.state ^ (h.state >> 32)
    }
}
