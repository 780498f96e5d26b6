/// Evaluates a display filter on one decoded message, with Wireshark's semantics: a comparison
/// with a field the message does not have is false, and for an array or repeated field any
/// element that matches is enough.
public struct FilterEvaluator {
    let expr: FilterExpr
    /// Compiled regular expressions, by their text.
    let regexes: [String: Regex<AnyRegexOutput>]

    init(_ e: FilterExpr) {
        expr = e
        var r: [String: Regex<AnyRegexOutput>] = [:]
        func collect(_ e: FilterExpr) {
            switch e {
            case .or(let a, let b), .and(let a, let b): collect(a); collect(b)
            case .not(let a): collect(a)
            case .matches(_, let re): r[re] = try? Regex(re)
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

    func matches(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) -> Bool { eval(expr, m, c, p) }

    /// Before decoding: whether the filter can still select a message of this protocol,
    /// direction, id and schema message. `false` only when it surely cannot (the body is then
    /// not decoded at all); fields make the answer "maybe".
    func mayMatch(_ p: ProtocolRuntime, _ dir: Direction, id: UInt64?, message: Int?) -> Bool {
        early(expr, p, dir, id, message) != false
    }

    /// Three-valued: true, false, or nil when it depends on what decoding finds.
    func early(_ e: FilterExpr, _ p: ProtocolRuntime, _ dir: Direction, _ id: UInt64?, _ mi: Int?) -> Bool? {
        switch e {
        case .or(let a, let b):
            let x = early(a, p, dir, id, mi), y = early(b, p, dir, id, mi)
            if x == true || y == true { return true }
            return x == false && y == false ? false : nil
        case .and(let a, let b):
            let x = early(a, p, dir, id, mi), y = early(b, p, dir, id, mi)
            if x == false || y == false { return false }
            return x == true && y == true ? true : nil
        case .not(let a): return early(a, p, dir, id, mi).map { !$0 }
        case .present(.proto(let name)): return p.schema.name.lowercased() == name
        case .present(.field(let proto, _)), .compare(.field(let proto, _), _, _), .contains(.field(let proto, _), _),
             .matches(.field(let proto, _), _), .member(.field(let proto, _), _):
            // A field of another protocol is never there; of this one, decoding decides.
            return p.schema.name.lowercased() == proto ? nil : false
        case .compare(let r, let op, let v):
            guard let o = earlyValue(r, p, dir, id, mi) else { return nil }
            return o.contains { compare($0, op, v) }
        case .member(let r, let vs):
            guard let o = earlyValue(r, p, dir, id, mi) else { return nil }
            return o.contains { x in vs.contains { compare(x, .eq, $0) } }
        default: return nil
        }
    }

    /// The attributes known before decoding; nil for the others.
    func earlyValue(_ r: FieldReference, _ p: ProtocolRuntime, _ dir: Direction, _ id: UInt64?, _ mi: Int?) -> [Observed]? {
        switch r {
        case .msgID: return id.map { [.integer(negative: false, magnitude: $0, label: nil)] } ?? []
        case .msgName: return mi.map { [.text(p.schema.messages[$0].name)] }
        case .msgDir: return [.text(dir == .c2s ? "c2s" : "s2c")]
        case .msgProtocol: return [.text(p.schema.name)]
        default: return nil
        }
    }

    func eval(_ e: FilterExpr, _ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) -> Bool {
        switch e {
        case .or(let a, let b): return eval(a, m, c, p) || eval(b, m, c, p)
        case .and(let a, let b): return eval(a, m, c, p) && eval(b, m, c, p)
        case .not(let a): return !eval(a, m, c, p)
        case .present(let r): return present(r, m, p)
        case .compare(let r, let op, let v): return values(r, m, c, p).contains { compare($0, op, v) }
        case .member(let r, let vs): return values(r, m, c, p).contains { o in vs.contains { compare(o, .eq, $0) } }
        case .contains(let r, let v):
            let needle: [UInt8]
            switch v {
            case .text(let s): needle = Array(s.utf8)
            case .integer(let n, let mag): needle = Array(((n ? "-" : "") + String(mag)).utf8)
            case .float(let d): needle = Array(String(d).utf8)
            }
            return values(r, m, c, p).contains { o in
                switch o {
                case .text(let s): return Self.find(Array(s.utf8), needle)
                case .bytes(let b): return Self.find(b, needle)
                case .integer(_, _, let label): return label.map { Self.find(Array($0.utf8), needle) } ?? false
                case .float: return false
                }
            }
        case .matches(let r, let re):
            guard let regex = regexes[re] else { return false }
            return values(r, m, c, p).contains { o in
                switch o {
                case .text(let s): return (try? regex.firstMatch(in: s)) != nil
                case .integer(_, _, let label?): return (try? regex.firstMatch(in: label)) != nil
                default: return false
                }
            }
        }
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

    func compare(_ o: Observed, _ op: CompareOp, _ v: FilterValue) -> Bool {
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
            let x = Array(s.utf8)
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

    func present(_ r: FieldReference, _ m: DecodedMessage, _ p: ProtocolRuntime) -> Bool {
        switch r {
        case .proto(let name): return p.schema.name.lowercased() == name
        case .field(let proto, let path):
            guard p.schema.name.lowercased() == proto else { return false }
            var found = false
            walk(m, p, path) { _ in found = true; return false }
            return found
        default: return true
        }
    }

    func values(_ r: FieldReference, _ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) -> [Observed] {
        let src = m.direction == .c2s ? c.client : c.server
        let dst = m.direction == .c2s ? c.server : c.client
        switch r {
        case .msgID: return m.id.map { [.integer(negative: false, magnitude: $0, label: nil)] } ?? []
        case .msgName:
            if let mi = m.message { return [.text(p.schema.messages[mi].name)] }
            if let ws = m.webSocket { return [.text(String(describing: ws.opcode.name))] }
            return []
        case .msgDir: return [.text(m.direction == .c2s ? "c2s" : "s2c")]
        case .msgLen: return [.integer(negative: false, magnitude: UInt64(m.frame.bytes.count), label: nil)]
        case .msgProtocol: return [.text(p.schema.name)]
        case .ipSrc: return [.text(src.address.text)]
        case .ipDst: return [.text(dst.address.text)]
        case .ipAddr: return [.text(src.address.text), .text(dst.address.text)]
        case .tcpPort: return [src.port, dst.port].map { .integer(negative: false, magnitude: UInt64($0), label: nil) }
        case .tcpSrcPort: return [.integer(negative: false, magnitude: UInt64(src.port), label: nil)]
        case .tcpDstPort: return [.integer(negative: false, magnitude: UInt64(dst.port), label: nil)]
        case .proto(let name): return p.schema.name.lowercased() == name ? [.text(p.schema.name)] : []
        case .field(let proto, let path):
            guard p.schema.name.lowercased() == proto else { return [] }
            var out: [Observed] = []
            walk(m, p, path) { f in
                if let o = observe(f, m, p) { out.append(o) }
                return true
            }
            return out
        }
    }

    /// Calls `visit` with every field whose name path (elements left out) is `path`, until it
    /// returns false.
    func walk(_ m: DecodedMessage, _ p: ProtocolRuntime, _ path: [String], _ visit: (DecodedField) -> Bool) {
        if path.count == 1 {
            for h in m.headerFields {
                if case .header(let i) = h.name, p.schema.header[Int(i)].name == path[0] {
                    if !visit(h) { return }
                }
            }
        }
        var stack: [String?] = []
        for f in m.fields {
            let d = Int(f.depth)
            if stack.count > d { stack.removeLast(stack.count - d) }
            while stack.count < d { stack.append(nil) }
            // An element has no name of its own: its path is its array's.
            stack.append(name(f, m, p))
            let names = stack.compactMap { $0 }
            if names == path && (stack.last! != nil || !isContainer(f)) {
                if !visit(f) { return }
            }
        }
    }

    func isContainer(_ f: DecodedField) -> Bool {
        switch f.value {
        case .object, .array: return true
        default: return false
        }
    }

    func name(_ f: DecodedField, _ m: DecodedMessage, _ p: ProtocolRuntime) -> String? {
        switch f.name {
        case .field(let mi, let fi): return p.schema.messages[Int(mi)].fields[Int(fi)].name
        case .header(let i): return p.schema.header[Int(i)].name
        case .key(let o, let l): return JSONText.unescaped(m.frame.bytes.slice(Int(o), Int(l)))
        case .builtin(let b): return String(describing: b.text)
        case .element: return nil
        }
    }

    func observe(_ f: DecodedField, _ m: DecodedMessage, _ p: ProtocolRuntime) -> Observed? {
        let b = m.frame.bytes
        var label: String?
        if case .field(let mi, let fi) = f.name, let labels = p.schema.messages[Int(mi)].fields[Int(fi)].labels {
            switch f.value {
            case .unsigned(let v) where v <= UInt64(Int64.max): label = labels[Int64(v)]
            case .signed(let v): label = labels[v]
            default: break
            }
        }
        switch f.value {
        case .unsigned(let v): return .integer(negative: false, magnitude: v, label: label)
        case .signed(let v): return .integer(negative: v < 0, magnitude: v.magnitude, label: label)
        case .float(let d): return .float(d)
        case .bool(let v): return .integer(negative: false, magnitude: v ? 1 : 0, label: v ? "true" : "false")
        case .string: return .text(String(decoding: b.slice(Int(f.offset), Int(f.width)), as: UTF8.self))
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

/// Passes on the messages a filter selects; connection events, gaps and reports are left out
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

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        guard evaluator.matches(m, c, p) else { return }
        matched += 1
        inner.message(m, c, p)
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {}
    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {}
    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    public func finish() { inner.finish() }
}

/// `-q` with a filter: nothing printed per message, the matches counted for the summary.
final class NullSink: MessageSink {
    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {}
    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) {}
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {}
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    func finish() {}
}
