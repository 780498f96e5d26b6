/// Evaluates a display filter on one decoded message, with Wireshark's semantics: a comparison
/// with a field the message does not have is false, and for an array or repeated field any
/// element that matches is enough.
public struct FilterEvaluator {
    let expr: FilterExpr
    /// Compiled regular expressions, by their text.
    let regexes: [String: FilterRegex]
    /// Field paths resolved against each protocol's schema, made on first use.
    let paths = PathCache()

    package init(_ e: FilterExpr) {
        expr = e
        var r: [String: FilterRegex] = [:]
        func collect(_ e: FilterExpr) {
            switch e {
            case .or(let a, let b), .and(let a, let b): collect(a); collect(b)
            case .not(let a): collect(a)
            case .matches(_, let re): r[re] = r[re] ?? (try? FilterRegex(re))
            default: break
            }
        }
        collect(e)
        regexes = r
    }

    /// One value the message holds for a reference.
    enum Observed {
        case integer(negative: Bool, magnitude: UInt64, label: String?)
        case float(Double)
        case text(String)
        case bytes([UInt8])
    }

    /// The patterns that gave up on some messages (see FilterRegex), by pattern.
    package var regexesGaveUp: [FilterRegexGaveUp] {
        regexes.values.filter { $0.gaveUp > 0 }.sorted { $0.pattern < $1.pattern }
            .map { FilterRegexGaveUp(pattern: $0.pattern, gaveUp: $0.gaveUp, notTried: $0.notTried) }
    }

    package func matches(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) -> Bool {
        let prog = paths.program(expr, p, self)
        return run(prog, prog.root, m, c, p)
    }

    /// Before decoding: whether the filter can still select a message of this protocol,
    /// direction, id and schema message. `false` only when it surely cannot (the body is then
    /// not decoded at all); fields make the answer "maybe".
    func mayMatch(_ p: ProtocolRuntime, _ dir: Direction, id: UInt64?, message: Int?) -> Bool {
        early(paths.program(expr, p, self).bound, p, dir, id, message) != false
    }

    /// Three-valued: true, false, or nil when it depends on what decoding finds.
    func early(_ e: FilterExpr, _ p: ProtocolRuntime, _ dir: Direction, _ id: UInt64?, _ mi: Int?) -> Bool? {
        early(bind(e, p), p, dir, id, mi)
    }

    func early(_ e: Bound, _ p: ProtocolRuntime, _ dir: Direction, _ id: UInt64?, _ mi: Int?) -> Bool? {
        switch e {
        case .or(let a, let b):
            let x = early(a, p, dir, id, mi), y = early(b, p, dir, id, mi)
            if x == true || y == true { return true }
            return x == false && y == false ? false : nil
        case .and(let a, let b):
            let x = early(a, p, dir, id, mi)
            if x == false { return false }
            let y = early(b, p, dir, id, mi)
            if y == false { return false }
            return x == true && y == true ? true : nil
        case .not(let a): return early(a, p, dir, id, mi).map { !$0 }
        case .constant(let v): return v
        case .present: return nil
        case .test(.path, _): return nil
        case .test(.attribute(let r), let t):
            guard let o = earlyValue(r, p, dir, id, mi) else { return nil }
            return o.contains { test($0, t) }
        }
    }

    /// The attributes known before decoding; nil for the others.
    func earlyValue(_ r: FieldReference, _ p: ProtocolRuntime, _ dir: Direction, _ id: UInt64?, _ mi: Int?) -> [Observed]? {
        switch r {
        case .msgID:
            guard let id else { return [] }
            if p.layout(dir).idPair { return [.text(IDText.of(id, signed: false, pair: true))] }
            if p.layout(dir).idSigned, Int64(bitPattern: id) < 0 { return [.integer(negative: true, magnitude: 0 &- id, label: nil)] }
            return [.integer(negative: false, magnitude: id, label: nil)]
        case .msgName: return mi.map { [.text(p.schema.messages[$0].name)] }
        case .msgDir: return [.text(dir == .c2s ? "c2s" : "s2c")]
        case .msgProtocol: return [.text(p.schema.name)]
        default: return nil
        }
    }

    /// The per-message path: the bound filter laid out flat (`FilterProgram`), walked by index,
    /// so nothing is copied or reference-counted per node.
    func run(_ prog: FilterProgram, _ i: Int, _ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) -> Bool {
        let op = prog.ops[i]
        switch op.kind {
        case .or: return run(prog, op.a, m, c, p) || run(prog, op.b, m, c, p)
        case .and: return run(prog, op.a, m, c, p) && run(prog, op.b, m, c, p)
        case .not: return !run(prog, op.a, m, c, p)
        case .constant: return op.value
        case .present:
            var found = false
            Self.walk(m, p, prog.path(op.a)) { _ in found = true; return false }
            return found
        case .compareInteger:
            // The common case, a field against a number: no value is built, nothing copied.
            var hit = false
            Self.walk(m, p, prog.path(op.a)) { f in
                let o: (Bool, UInt64)
                switch f.value {
                case .unsigned(let v): o = (false, v)
                case .signed(let v): o = (v < 0, v.magnitude)
                case .bool(let v): o = (false, v ? 1 : 0)
                default:
                    guard let x = Self.observe(f, m, p), Self.compare(x, op.op, .integer(negative: op.negative, magnitude: op.magnitude)) else { return true }
                    hit = true
                    return false
                }
                if op.op.holds(Self.order(o.0, o.1, op.negative, op.magnitude)) { hit = true; return false }
                return true
            }
            return hit
        case .testPath:
            var hit = false
            let t = prog.tests[op.b]
            Self.walk(m, p, prog.path(op.a)) { f in
                if let o = Self.observe(f, m, p), test(o, t) { hit = true; return false }
                return true
            }
            return hit
        case .testAttribute:
            let t = prog.tests[op.b]
            return Self.values(prog.attributes[op.a], m, c, p).contains { test($0, t) }
        }
    }

    func test(_ o: Observed, _ t: Test) -> Bool {
        switch t {
        case .compare(let op, let v): return Self.compare(o, op, v)
        case .member(let vs): return vs.contains { Self.compare(o, .eq, $0) }
        case .exists: return true
        case .contains(let needle, let literal):
            switch o {
            case .text(let s): return Self.find(Array(s.utf8), needle)
            case .bytes(let b): return Self.find(b, literal ?? needle)
            case .integer(_, _, let label): return label.map { Self.find(Array($0.utf8), needle) } ?? false
            case .float: return false
            }
        case .matches(let re):
            guard let regex = regexes[re] else { return false }
            switch o {
            case .text(let s): return regex.matches(text: s)
            // Bytes as Wireshark matches them: each byte one character (`\x00` matches a zero byte).
            case .bytes(let b): return regex.matches(bytes: b)
            case .integer(_, _, let label?): return regex.matches(text: label)
            default: return false
            }
        }
    }

    /// The expression for one protocol: its protocol tests made constants, its paths resolved.
    indirect enum Bound {
        case or(Bound, Bound), and(Bound, Bound), not(Bound), constant(Bool)
        case present(CompiledPath)
        case test(Source, Test)
    }

    enum Source {
        case path(CompiledPath)
        case attribute(FieldReference)
    }

    enum Test {
        case compare(CompareOp, FilterValue)
        case member([FilterValue])
        /// The text's bytes, and for a bytes field the bytes a byte literal (`47:4d:5f`) names.
        case contains([UInt8], bytes: [UInt8]?)
        case matches(String)
        /// Any value at all (a bare `ws.compressed`: the message came through that layer).
        case exists
    }

    func bind(_ e: FilterExpr, _ p: ProtocolRuntime) -> Bound {
        let name = p.schema.name.lowercased()
        func source(_ r: FieldReference) -> Source? {
            switch r {
            case .field(let proto, let path): return proto == name ? .path(CompiledPath(path, p.schema)) : nil
            case .proto(let proto): return proto == name ? .attribute(r) : nil
            case .event, .eventLen: return nil
            default: return .attribute(r)
            }
        }
        func test(_ r: FieldReference, _ t: Test) -> Bound {
            guard let s = source(r) else { return .constant(false) }
            return .test(s, t)
        }
        switch e {
        case .or(let a, let b): return .or(bind(a, p), bind(b, p))
        case .and(let a, let b): return .and(bind(a, p), bind(b, p))
        case .not(let a): return .not(bind(a, p))
        case .present(.proto(let proto)): return .constant(proto == name)
        case .present(let r) where { if case .layer = r { return true } else { return false } }(): return .test(.attribute(r), .exists)
        case .present(.field(let proto, let path)): return proto == name ? .present(CompiledPath(path, p.schema)) : .constant(false)
        // A message is no loss event (`matches(event:)` answers for those).
        case .present(.event), .present(.eventLen): return .constant(false)
        case .present: return .constant(true)
        case .compare(let r, let op, let v): return test(r, .compare(op, v))
        case .member(let r, let vs): return test(r, .member(vs))
        case .contains(let r, let v): return test(r, Self.containsTest(v))
        case .matches(let r, let re): return test(r, .matches(re))
        }
    }

    static func containsTest(_ v: FilterValue) -> Test {
        switch v {
        case .text(let s): return .contains(Array(s.utf8), bytes: byteLiteral(s))
        case .integer(let n, let mag): return .contains(Array(((n ? "-" : "") + String(mag)).utf8), bytes: nil)
        case .float(let d): return .contains(Array(String(d).utf8), bytes: nil)
        }
    }

    /// A loss event against the filter: its `event.*` fields and its connection's addresses and
    /// ports; every message field is absent from it (so `not game` is true of a gap, as `!tcp`
    /// is of a UDP packet in Wireshark). Events are rare: the expression is walked as parsed.
    package func matches(event e: LossEvent, _ c: Connection) -> Bool { holds(expr, e, c) }

    func holds(_ x: FilterExpr, _ e: LossEvent, _ c: Connection) -> Bool {
        func some(_ r: FieldReference, _ t: Test) -> Bool { Self.values(event: r, e, c).contains { test($0, t) } }
        switch x {
        case .or(let a, let b): return holds(a, e, c) || holds(b, e, c)
        case .and(let a, let b): return holds(a, e, c) && holds(b, e, c)
        case .not(let a): return !holds(a, e, c)
        case .present(.event(let k)): return k == nil || k == e.kind
        case .present(let r): return !Self.values(event: r, e, c).isEmpty
        case .compare(let r, let op, let v): return some(r, .compare(op, v))
        case .member(let r, let vs): return some(r, .member(vs))
        case .contains(let r, let v): return some(r, Self.containsTest(v))
        case .matches(let r, let re): return some(r, .matches(re))
        }
    }

    /// What a loss event holds for a reference: `event.len` and the endpoints.
    static func values(event r: FieldReference, _ e: LossEvent, _ c: Connection) -> [Observed] {
        if r == .eventLen { return [.integer(negative: false, magnitude: e.length, label: nil)] }
        return endpoints(r, e.direction, c) ?? []
    }

    /// Wireshark's byte-string literal, two hex digits a byte separated by `:`, `.` or `-`
    /// (`47:4d:5f`, `de.ad.be.ef`); nil for anything else.
    static func byteLiteral(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count >= 5, (u.count + 1) % 3 == 0 else { return nil }
        let sep = u[2]
        guard sep == 0x3a || sep == 0x2e || sep == 0x2d else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity((u.count + 1) / 3)
        var i = 0
        while i < u.count {
            guard i + 1 < u.count, let hi = ProtoLexer.hexValue(u[i]), let lo = ProtoLexer.hexValue(u[i + 1]) else { return nil }
            out.append(UInt8(hi << 4 | lo))
            if i + 2 < u.count { guard u[i + 2] == sep else { return nil } }
            i += 3
        }
        return out
    }

    static func find(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard hay.count >= needle.count else { return false }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] {
            if hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    // MARK: - Comparing

    static func compare(_ o: Observed, _ op: CompareOp, _ v: FilterValue) -> Bool {
        switch (o, v) {
        case (.integer(let n, let mag, _), .integer(let vn, let vmag)):
            return op.holds(Self.order(n, mag, vn, vmag))
        case (.integer(let n, let mag, _), .float(let d)):
            let x = n ? -Double(mag) : Double(mag)
            return op.holds(x < d ? -1 : x > d ? 1 : 0)
        case (.float(let x), .integer(let vn, let vmag)):
            let d = vn ? -Double(vmag) : Double(vmag)
            return op.holds(x < d ? -1 : x > d ? 1 : 0)
        case (.float(let x), .float(let d)):
            return op.holds(x < d ? -1 : x > d ? 1 : 0)
        case (.integer(_, _, let label?), .text(let s)):
            // Enum and value labels compare by name.
            return op.holds(label < s ? -1 : label > s ? 1 : 0)
        case (.text(let t), .text(let s)):
            return op.holds(t < s ? -1 : t > s ? 1 : 0)
        case (.text(let t), .integer(let vn, let vmag)):
            // A JSON or text value that is a number written as text ("12") compares as one.
            guard let (n, mag) = Self.integer(t) else { return false }
            return op.holds(Self.order(n, mag, vn, vmag))
        case (.bytes(let b), .text(let s)):
            let x = Self.byteLiteral(s) ?? Array(s.utf8)
            return op.holds(b.lexicographicallyPrecedes(x) ? -1 : b == x ? 0 : 1)
        default:
            return false
        }
    }

    /// -1, 0, 1: sign-and-magnitude integers compared exactly.
    static func order(_ an: Bool, _ a: UInt64, _ bn: Bool, _ b: UInt64) -> Int {
        if an != bn { return an ? -1 : 1 }
        if a == b { return 0 }
        return (a < b) != an ? -1 : 1
    }

    static func integer(_ t: String) -> (Bool, UInt64)? {
        let neg = t.hasPrefix("-")
        guard let m = UInt64(neg ? String(t.dropFirst()) : t) else { return nil }
        return (neg && m != 0, m)
    }

    // MARK: - What the message holds

    /// The message's own attributes and endpoints.
    static func values(_ r: FieldReference, _ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) -> [Observed] {
        switch r {
        case .msgID:
            guard let id = m.id else { return [] }
            if m.idPair { return [.text(IDText.of(id, signed: false, pair: true))] }
            if m.idSigned, Int64(bitPattern: id) < 0 { return [.integer(negative: true, magnitude: 0 &- id, label: nil)] }
            return [.integer(negative: false, magnitude: id, label: nil)]
        case .msgName: return m.name(in: p).map { [.text($0)] } ?? []
        case .msgDir: return [.text(m.direction == .c2s ? "c2s" : "s2c")]
        case .msgLen: return [.integer(negative: false, magnitude: UInt64(m.frame.bytes.count), label: nil)]
        case .msgProtocol: return [.text(p.schema.name)]
        case .msgPhase: return m.phase.current >= 0 ? [.text(p.schema.phases.names[Int(m.phase.current)])] : []
        case .ipSrc, .ipDst, .ipAddr, .tcpPort, .udpPort, .tcpSrcPort, .udpSrcPort, .tcpDstPort, .udpDstPort:
            return endpoints(r, m.direction, c) ?? []
        case .proto(let name): return p.schema.name.lowercased() == name ? [.text(p.schema.name)] : []
        case .field, .event, .eventLen: return []
        case .layer(let key, let field):
            var out: [Observed] = []
            func observed(_ v: LayerFieldValue) -> Observed {
                switch v {
                case .text(let t): return .text(t)
                case .bool(let b): return .integer(negative: false, magnitude: b ? 1 : 0, label: b ? "true" : "false")
                case .unsigned(let u): return .integer(negative: false, magnitude: u, label: nil)
                }
            }
            m.layerNotes.forEach { n in
                let k = n.kind
                guard "\(k.key)" == key, let v = k.fields(n).first(where: { $0.name == field })?.value else { return }
                out.append(observed(v))
            }
            // A layer below the stack says it of the whole connection (TLS's SNI).
            if out.isEmpty, let below = m.connectionLayer, below.layerKey == key,
               let v = below.fields.first(where: { $0.name == field })?.value {
                out.append(observed(v))
            }
            return out
        }
    }

    /// The addresses and ports of a message or event going `d` on `c`; nil for any other reference.
    static func endpoints(_ r: FieldReference, _ d: Direction, _ c: Connection) -> [Observed]? {
        let src = d == .c2s ? c.client : c.server
        let dst = d == .c2s ? c.server : c.client
        switch r {
        case .ipSrc: return [.text(src.address.text)]
        case .ipDst: return [.text(dst.address.text)]
        case .ipAddr: return [.text(src.address.text), .text(dst.address.text)]
        // `tcp.*` on TCP connections, `udp.*` on UDP flows (a port of the other transport is absent).
        case .tcpPort, .udpPort:
            guard c.udp == (r == .udpPort) else { return [] }
            return [src.port, dst.port].map { .integer(negative: false, magnitude: UInt64($0), label: nil) }
        case .tcpSrcPort, .udpSrcPort:
            guard c.udp == (r == .udpSrcPort) else { return [] }
            return [.integer(negative: false, magnitude: UInt64(src.port), label: nil)]
        case .tcpDstPort, .udpDstPort:
            guard c.udp == (r == .udpDstPort) else { return [] }
            return [.integer(negative: false, magnitude: UInt64(dst.port), label: nil)]
        default: return nil
        }
    }

    /// Calls `visit` with every field whose name path (elements left out) is the compiled
    /// path, until it returns false. Names are compared as indexes, JSON keys as bytes: no
    /// allocation per field.
    static func walk(_ m: DecodedMessage, _ p: ProtocolRuntime, _ cp: CompiledPath, _ visit: (DecodedField) -> Bool) {
        let n = cp.count
        if n == 1, cp.header[0] >= 0 {
            let hi = cp.header[0]
            for h in m.headerFields {
                if case .header(let i) = h.name, Int(i) == hi { if !visit(h) { return } }
            }
        }
        // `flags.compressed`: a named bit group of a header field, as its own number.
        if n == 2, cp.header[0] >= 0, let bit = cp.bit {
            let hi = cp.header[0]
            for h in m.headerFields {
                guard case .header(let i) = h.name, Int(i) == hi, case .unsigned(let v) = h.value else { continue }
                var x = h
                x.value = .unsigned(bit.value(v))
                if !visit(x) { return }
            }
        }
        let frame = m.fieldBytes
        // matched[d]: path components matched by the ancestors of a field at depth d (-1: none).
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 130) { matched in
            matched[0] = 0
            m.fields.withUnsafeBufferPointer { fs in
                for f in fs {
                    let d = Int(f.depth)
                    guard d < 128 else { continue }
                    let k = matched[d]
                    var state = -1
                    if k >= 0 {
                        if case .element = f.name {
                            state = k
                        } else if k < n && cp.matches(k, f.name, frame) {
                            state = k + 1
                        }
                    }
                    matched[d + 1] = state
                    if state == n {
                        let named: Bool
                        if case .element = f.name { named = false } else { named = true }
                        if named || !Self.isContainer(f) { if !visit(f) { return } }
                    }
                }
            }
        }
    }

    static func isContainer(_ f: DecodedField) -> Bool {
        switch f.value {
        case .object, .array: return true
        default: return false
        }
    }

    static func observe(_ f: DecodedField, _ m: DecodedMessage, _ p: ProtocolRuntime) -> Observed? {
        let b = m.fieldBytes
        var label: String?
        if case .field(let mi, let fi) = f.name, let labels = p.schema.messages[Int(mi)].fields[Int(fi)].labels {
            switch f.value {
            case .unsigned(let v): label = labels[Int64(bitPattern: v)]
            case .signed(let v): label = labels[v]
            default: break
            }
        }
        switch f.value {
        case .unsigned(let v): return .integer(negative: false, magnitude: v, label: label)
        case .signed(let v): return .integer(negative: v < 0, magnitude: v.magnitude, label: label)
        case .float(let d): return .float(d)
        case .bool(let v): return .integer(negative: false, magnitude: v ? 1 : 0, label: v ? "true" : "false")
        case .string, .validString: return .text(String(decoding: b.slice(Int(f.offset), Int(f.width)), as: UTF8.self))
        case .bytes: return .bytes(Array(b.slice(Int(f.offset), Int(f.width))))
        case .jsonString: return .text(JSONText.unescaped(b.slice(Int(f.offset), Int(f.width))))
        case .jsonNumber:
            let t = String(decoding: b.slice(Int(f.offset), Int(f.width)), as: UTF8.self)
            if let (n, mag) = Self.integer(t) { return .integer(negative: n, magnitude: mag, label: nil) }
            return Double(t).map { .float($0) }
        case .jsonLiteral:
            let t = String(decoding: b.slice(Int(f.offset), Int(f.width)), as: UTF8.self)
            if t == "true" || t == "false" { return .integer(negative: false, magnitude: t == "true" ? 1 : 0, label: t) }
            return .text(t)
        case .null: return .text("null")
        case .ext(let type):
            let d = b.slice(Int(f.offset), Int(f.width))
            if type == MessagePackTimestamp.type, let t = MessagePackTimestamp.text(d) { return .text(t) }
            return .bytes(Array(d))
        case .object, .array: return nil
        }
    }
}

extension CompareOp {
    func holds(_ order: Int) -> Bool {
        switch self {
        case .eq: return order == 0
        case .ne: return order != 0
        case .lt: return order < 0
        case .le: return order <= 0
        case .gt: return order > 0
        case .ge: return order >= 0
        }
    }
}

/// Passes on the messages and the losses a filter selects; connection events are left out
/// (as tshark's -Y shows only the packets that match).
public final class FilteringSink: MessageSink {
    let inner: MessageSink
    public let evaluator: FilterEvaluator
    public private(set) var matched: UInt64 = 0
    /// Messages left undecoded because the filter could not select them.
    public var skipped: UInt64 = 0

    public init(_ inner: MessageSink, filter: FilterExpr) {
        self.inner = inner
        evaluator = FilterEvaluator(filter)
    }

    /// Matches per protocol and message, in the order first seen (for the summary).
    public private(set) var perMessage: [(protocolName: String, message: String, count: UInt64)] = []
    var index: [String: Int] = [:]

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        guard evaluator.matches(m, c, p) else { return }
        matched += 1
        let id = m.message.flatMap { p.schema.messages[$0].idText }.map { " (id \($0))" } ?? ""
        let name = m.name(in: p).map { $0 + id } ?? m.idText.map { "unknown id \($0)" } ?? "no message id"
        let key = p.schema.name + "\u{0}" + name
        if let i = index[key] { perMessage[i].count += 1 } else {
            index[key] = perMessage.count
            perMessage.append((p.schema.name, name, 1))
            firstSeen.append(position)
        }
        inner.message(m, c, p)
    }

    /// A sharded run: where the event being run stands in the whole run (its shard sets it),
    /// and where each entry of `perMessage` was first matched, so the shards' entries can be
    /// put back in the order one thread would have seen them.
    @exclusivity(unchecked) var position: UInt64 = 0
    @exclusivity(unchecked) var firstSeen: [UInt64] = []

    /// The patterns that gave up on some messages, this sink's and its shards'.
    public var regexesGaveUp: [FilterRegexGaveUp] {
        var byPattern: [String: FilterRegexGaveUp] = [:]
        for g in evaluator.regexesGaveUp + shardsGaveUp {
            let o = byPattern[g.pattern]
            byPattern[g.pattern] = FilterRegexGaveUp(pattern: g.pattern, gaveUp: g.gaveUp + (o?.gaveUp ?? 0),
                                                     notTried: g.notTried + (o?.notTried ?? 0))
        }
        return byPattern.values.sorted { $0.pattern < $1.pattern }
    }
    var shardsGaveUp: [FilterRegexGaveUp] = []

    /// Adds a shard's matches into this (the run's) filter's, at the end of the run.
    func absorb(_ shards: [FilteringSink]) {
        shardsGaveUp += shards.flatMap(\.regexesGaveUp)
        // Several entries first matched in one event come from one shard: their order there
        // (`local`) breaks the tie.
        var merged: [(at: UInt64, local: Int, protocolName: String, message: String, count: UInt64)] =
            perMessage.indices.map { (firstSeen[$0], $0, perMessage[$0].protocolName, perMessage[$0].message, perMessage[$0].count) }
        var where_: [String: Int] = [:]
        for (j, r) in merged.enumerated() { where_[r.protocolName + "\u{0}" + r.message] = j }
        for o in shards {
            matched += o.matched
            skipped += o.skipped
            for (i, r) in o.perMessage.enumerated() {
                let key = r.protocolName + "\u{0}" + r.message
                if let j = where_[key] {
                    merged[j].count += r.count
                    if o.firstSeen[i] < merged[j].at { (merged[j].at, merged[j].local) = (o.firstSeen[i], i) }
                } else {
                    where_[key] = merged.count
                    merged.append((o.firstSeen[i], i, r.protocolName, r.message, r.count))
                }
            }
        }
        merged.sort { ($0.at, $0.local) < ($1.at, $1.local) }
        perMessage = merged.map { ($0.protocolName, $0.message, $0.count) }
        firstSeen = merged.map(\.at)
        index = [:]
        for (i, r) in perMessage.enumerated() { index[r.protocolName + "\u{0}" + r.message] = i }
    }

    // Losses (`LossEvent`) pass when the filter is true of them (`-Y 'event.gap'`); the
    // connection's opening and closing never do.
    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        guard evaluator.matches(event: .malformed(d, offset: offset, length: length, reason: reason), c) else { return }
        inner.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
    }
    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef, bytes: UnsafeRawBufferPointer) {
        guard evaluator.matches(event: .malformed(d, offset: offset, length: length, reason: reason), c) else { return }
        inner.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet, bytes: bytes)
    }
    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        guard evaluator.matches(event: .gap(d, offset: offset, length: length, reason: reason), c) else { return }
        inner.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet)
    }
    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        guard evaluator.matches(event: .conflict(d, offset: offset, length: length), c) else { return }
        inner.conflict(c, d, offset: offset, length: length, packet: packet)
    }
    public func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        guard evaluator.matches(event: .notice(n, d), c) else { return }
        inner.notice(n, c, p, d, packet: packet)
    }
    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {
        guard let loss = LossEvent.layer(e, d), evaluator.matches(event: loss, c) else { return }
        inner.layerEvent(e, c, p, d, packet: packet)
    }
    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    public func finish() { inner.finish() }
}

/// `-q` with a filter: nothing printed per message, the matches counted for the summary.
package final class NullSink: MessageSink {
    package init() {}
    package func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {}
    package func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    package func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) {}
    package func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {}
    package func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    package func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    package func finish() {}
}

/// A filter's field path resolved against one protocol's schema, laid out in plain memory so
/// matching a decoded field costs a few compares and no reference counting.
final class CompiledPath: @unchecked Sendable {
    let count: Int
    /// Per component: a header field's index (-1: none; first component only), a builtin name
    /// (-1: none), and where its message fields and key bytes are in the blocks below.
    let header: UnsafeMutableBufferPointer<Int>
    let builtin: UnsafeMutableBufferPointer<Int>
    let fieldRange: UnsafeMutableBufferPointer<(Int, Int)>
    let keyRange: UnsafeMutableBufferPointer<(Int, Int)>
    /// Message fields named like each component, as message << 32 | field.
    let fields: UnsafeMutableBufferPointer<Int64>
    let keys: UnsafeMutableBufferPointer<UInt8>
    /// For `HEADER.BIT`: the bit group of the header field named first.
    let bit: BitField?

    init(_ path: [String], _ s: ProtocolSchema) {
        count = path.count
        let h0 = path.first.flatMap { n in s.header.first { $0.name == n && !$0.isPadding } }
        bit = path.count == 2 ? h0?.bits.first { $0.name == path[1] } : nil
        var h: [Int] = [], b: [Int] = [], fr: [(Int, Int)] = [], kr: [(Int, Int)] = []
        var f: [Int64] = [], k: [UInt8] = []
        for (i, name) in path.enumerated() {
            h.append(i == 0 ? (s.header.firstIndex { $0.name == name && !$0.isPadding } ?? -1) : -1)
            b.append(BuiltinName.allNames.first { String(describing: $0.text) == name }.map { Int($0.rawValue) } ?? -1)
            let start = f.count
            for (mi, m) in s.messages.enumerated() {
                for (fi, x) in m.fields.enumerated() where x.name == name { f.append(Int64(mi) << 32 | Int64(fi)) }
            }
            fr.append((start, f.count - start))
            kr.append((k.count, name.utf8.count))
            k += Array(name.utf8)
        }
        func block<T>(_ a: [T]) -> UnsafeMutableBufferPointer<T> {
            let p = UnsafeMutableBufferPointer<T>.allocate(capacity: max(1, a.count))
            _ = p.initialize(from: a)
            return p
        }
        header = block(h); builtin = block(b); fieldRange = block(fr); keyRange = block(kr); fields = block(f); keys = block(k)
    }

    deinit {
        header.deallocate(); builtin.deallocate(); fieldRange.deallocate(); keyRange.deallocate()
        fields.deallocate(); keys.deallocate()
    }

    /// Whether a decoded field's name is component `i`.
    @inline(__always)
    func matches(_ i: Int, _ name: FieldName, _ frame: UnsafeRawBufferPointer) -> Bool {
        switch name {
        case .field(let mi, let fi):
            let v = Int64(mi) << 32 | Int64(fi)
            let (s, n) = fieldRange[i]
            var j = s
            while j < s + n { if fields[j] == v { return true }; j += 1 }
            return false
        case .header(let x): return header[i] == Int(x)
        case .builtin(let bn): return builtin[i] == Int(bn.rawValue)
        case .key(let o, let l):
            let key = frame.slice(Int(o), Int(l))
            let (s, n) = keyRange[i]
            let want = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(keys)[s..<(s + n)])
            if key.count == n && key.elementsEqual(want) { return true }
            // A key written with escapes: compared by its text (the rare path).
            return key.contains(0x5c) && Array(JSONText.unescaped(key).utf8).elementsEqual(want)
        case .stringKey(let o, let l), .textKey(let o, let l):
            let (s, n) = keyRange[i]
            let key = frame.slice(Int(o), Int(l))
            return key.count == n && key.elementsEqual(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(keys)[s..<(s + n)]))
        case .unknown(let number, _): return text(i) == String(number)
        case .intKey(let v): return text(i) == String(v)
        case .uintKey(let v): return text(i) == String(v)
        case .boolKey(let v): return text(i) == (v ? "true" : "false")
        case .element: return false
        }
    }

    /// Component `i` as text (the rare path: protobuf numbers and map keys).
    func text(_ i: Int) -> String {
        let (s, n) = keyRange[i]
        return String(decoding: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(keys)[s..<(s + n)]), as: UTF8.self)
    }
}

/// A bound filter laid out flat: nodes as plain values that name their children, paths and
/// tests by index.
public final class FilterProgram: @unchecked Sendable {
    struct Op {
        enum Kind: UInt8 { case or, and, not, constant, present, compareInteger, testPath, testAttribute }
        var kind: Kind
        var a = 0
        var b = 0
        var value = false
        /// `compareInteger`: the operator and the number, inline.
        var op = CompareOp.eq
        var negative = false
        var magnitude: UInt64 = 0
    }
    var opList: [Op] = []
    /// The nodes in plain memory (made once the tree is laid out).
    var ops = UnsafeMutableBufferPointer<Op>(start: nil, count: 0)
    var paths: [CompiledPath] = []
    /// The paths as unretained references: the per-message path takes no reference counts.
    var pathRefs = UnsafeMutableBufferPointer<Unmanaged<CompiledPath>>(start: nil, count: 0)
    var tests: [FilterEvaluator.Test] = []
    var attributes: [FieldReference] = []
    var root = 0
    /// The tree it came from (for deciding before decoding, the rare path).
    let bound: FilterEvaluator.Bound

    init(_ b: FilterEvaluator.Bound) {
        bound = b
        root = add(b)
        ops = .allocate(capacity: max(1, opList.count))
        _ = ops.initialize(from: opList)
        pathRefs = .allocate(capacity: max(1, paths.count))
        _ = pathRefs.initialize(from: paths.map { Unmanaged.passUnretained($0) })
    }

    deinit {
        ops.deallocate()
        pathRefs.deallocate()
    }

    @inline(__always)
    func path(_ i: Int) -> CompiledPath { pathRefs[i].takeUnretainedValue() }

    func add(_ b: FilterEvaluator.Bound) -> Int {
        var op: Op
        switch b {
        case .or(let x, let y): op = Op(kind: .or, a: add(x), b: add(y))
        case .and(let x, let y): op = Op(kind: .and, a: add(x), b: add(y))
        case .not(let x): op = Op(kind: .not, a: add(x))
        case .constant(let v): op = Op(kind: .constant, value: v)
        case .present(let path): paths.append(path); op = Op(kind: .present, a: paths.count - 1)
        case .test(.path(let path), .compare(let cmp, .integer(let n, let mag))):
            paths.append(path)
            op = Op(kind: .compareInteger, a: paths.count - 1, op: cmp, negative: n, magnitude: mag)
        case .test(.path(let path), let t):
            paths.append(path); tests.append(t)
            op = Op(kind: .testPath, a: paths.count - 1, b: tests.count - 1)
        case .test(.attribute(let r), let t):
            attributes.append(r); tests.append(t)
            op = Op(kind: .testAttribute, a: attributes.count - 1, b: tests.count - 1)
        }
        opList.append(op)
        return opList.count - 1
    }
}

/// The filter bound to each protocol, made on first use (one evaluator serves every protocol).
final class PathCache: @unchecked Sendable {
    var programs: [ObjectIdentifier: FilterProgram] = [:]
    /// The last protocol asked for: runs of messages of one protocol skip the lookup.
    var last: (ObjectIdentifier, FilterProgram)?

    func program(_ e: FilterExpr, _ p: ProtocolRuntime, _ ev: FilterEvaluator) -> FilterProgram {
        let id = ObjectIdentifier(p)
        if let l = last, l.0 == id { return l.1 }
        let prog = programs[id] ?? FilterProgram(ev.bind(e, p))
        programs[id] = prog
        last = (id, prog)
        return prog
    }
}
