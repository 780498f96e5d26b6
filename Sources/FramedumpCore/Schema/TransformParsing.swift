/// `transform` lines in a protocol block: how bodies are wrapped, undone in the order written.
///
///     transform xor key "5a17c3e1" when flags & 0x02;     // a repeating key (hex, or a key NAME)
///     transform zlib when flags.compressed;                // zlib | gzip | deflate
///     transform lz4 when flags & 0x04;                     // the LZ4 frame format
///     transform lz4_block size rawLength;                  // a raw block: size from a header field,
///                                                          // `size prefix` (u32le before it), `max N`
///     transform aes_gcm key session;                       // aes_cbc | aes_ecb | aes_ctr | aes_gcm
///     transform base64;
///
/// `when` tests a header field: `F` or `F & MASK` (not zero), `F == N`, `F != N`,
/// `F & MASK == N`, or a named bit field `F.BIT` (alone, or `== N`). The older
/// `cipher aes_cbc key K iv "HEX" when F == N;` is an AES transform.
struct PendingTransform {
    var kind: String
    var token: Token
    var key: (name: String?, hex: String?, token: Token)?
    var iv: (String, Token)?
    var size: (field: String?, token: Token)?
    var max: (Int64, Token)?
    var when: PendingCondition?
    /// `in play, trade`: only in these connection phases (names still text).
    var phases: [(String, Token)]?
}

struct PendingCondition {
    var field: String
    var token: Token
    var mask: UInt64?
    var test: TransformCondition.Test = .nonZero
}

extension Parser {
    static let transformKinds = "xor, zlib, gzip, deflate, lz4, lz4_block, base64, aes_cbc, aes_ecb, aes_ctr, aes_gcm"

    mutating func parseTransform(cipherLine: Bool, _ kt: Token, _ p: inout PendingProtocol) throws(DissectorError) {
        let (kind, mt) = try ident(cipherLine ? "aes_cbc, aes_ecb, aes_ctr or aes_gcm" : Self.transformKinds)
        var t = PendingTransform(kind: kind.lowercased(), token: mt)
        while case .ident(let w) = tok.kind {
            let wt = next()
            switch w.lowercased() {
            case "key":
                if case .string = tok.kind {
                    let (hex, ht) = try quoted("the key as hex")
                    t.key = (nil, hex, ht)
                } else {
                    let (name, nt) = try ident("a key name or the key in quotes")
                    t.key = (name, nil, nt)
                }
            case "iv", "nonce": t.iv = try quoted("the IV as hex")
            case "size":
                let (f, ft) = try ident("a header field name, or 'prefix'")
                t.size = (f.lowercased() == "prefix" ? nil : f, ft)
            case "max":
                let vt = tok
                t.max = (try number("a size in bytes"), vt)
            case "when", "if":
                t.when = try condition()
            case "in":
                // `in play`: bodies are wrapped so only once the connection is in that phase.
                var names = [try ident("a phase name")]
                while accept(",") { names.append(try ident("a phase name")) }
                t.phases = names
            default:
                throw err(wt, "expected key, iv, size, max, when or in after '\(kind)', found '\(w)'")
            }
        }
        p.proto.transforms.append(t)
    }

    /// `F`, `F & MASK`, `F == N`, `F != N`, `F & MASK == N`, `F.BIT`, `F.BIT == N`.
    mutating func condition() throws(DissectorError) -> PendingCondition {
        let (f, ft) = try ident("a header field name")
        var c = PendingCondition(field: f, token: ft)
        if accept("&") {
            let (m, _) = try bits("a mask")
            c.mask = m
        }
        if accept("==") {
            c.test = .equal(try bits("the value").value)
        } else if accept("!=") {
            c.test = .notEqual(try bits("the value").value)
        } else if at("=") {
            throw err(tok, "'=' sets; to compare write '=='")
        }
        return c
    }
}

extension Resolver {
    func attachTransforms(_ p: PendingProtocol, to s: inout ProtocolSchema) throws(DissectorError) {
        for t in p.proto.transforms {
            var spec = TransformSpec(try kind(t, p, s))
            if let c = t.when { spec.condition = try condition(c, s) }
            if let names = t.phases {
                spec.phases = try names.map { (name, nt) throws(DissectorError) -> Int in
                    guard !s.phases.isEmpty else {
                        throw err(nt, "'in \(name)': the protocol declares no phases (phase \(name);)")
                    }
                    guard let i = s.phases.names.firstIndex(where: { $0.lowercased() == name.lowercased() }) else {
                        throw err(nt, "unknown phase '\(name)'" + Self.suggestion(name, s.phases.names))
                    }
                    return i
                }
            }
            s.transforms.append(spec)
        }
    }

    func headerIndex(_ name: String, _ t: Token, _ s: ProtocolSchema) throws(DissectorError) -> Int {
        guard let i = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) else {
            throw err(t, "'\(name)' is not a header field" + s.headerFieldHint(name))
        }
        return i
    }

    func condition(_ c: PendingCondition, _ s: ProtocolSchema) throws(DissectorError) -> TransformCondition {
        // `flags.compressed`: a bit field of a header field.
        if s.header.firstIndex(where: { $0.name == c.field && !$0.isPadding }) == nil,
           let dot = c.field.lastIndex(of: ".") {
            let name = String(c.field[..<dot]), bit = String(c.field[c.field.index(after: dot)...])
            let i = try headerIndex(name, c.token, s)
            guard let b = s.header[i].bits.first(where: { $0.name == bit }) else {
                let known = s.header[i].bits.map(\.name)
                throw err(c.token, "'\(bit)' is not a bit field of '\(name)'" + (known.isEmpty ? " (it has none: declare them as \(name) { \(bit) = 0x01; })" : " (it has \(known.joined(separator: ", ")))"))
            }
            if c.mask != nil { throw err(c.token, "a bit field is already masked: write '\(c.field)' or '\(name) & MASK'") }
            return TransformCondition(field: i, mask: b.mask, shift: b.shift, test: c.test)
        }
        let i = try headerIndex(c.field, c.token, s)
        let width = s.header[i].width
        let top: UInt64 = width >= 8 ? .max : (1 << UInt64(width * 8)) - 1
        if let m = c.mask, m & top != m || m == 0 {
            throw err(c.token, "mask 0x\(String(c.mask!, radix: 16)) has no bits in (or bits outside) the \(width * 8)-bit field '\(c.field)'")
        }
        switch c.test {
        case .equal(let v), .notEqual(let v):
            if v & (c.mask ?? top) != v { throw err(c.token, "'\(c.field)' can never be \(v) (0x\(String(v, radix: 16))) here: the test is always \(c.test == .equal(v) ? "false" : "true")") }
        case .nonZero: break
        }
        return TransformCondition(field: i, mask: c.mask, test: c.test)
    }

    func kind(_ t: PendingTransform, _ p: PendingProtocol, _ s: ProtocolSchema) throws(DissectorError) -> TransformKind {
        func unused(_ what: String, _ present: Bool) throws(DissectorError) {
            if present { throw err(t.token, "'\(t.kind)' takes no \(what)") }
        }
        switch t.kind {
        case "zlib", "gzip", "deflate", "lz4", "lz4_frame", "base64":
            try unused("key", t.key != nil); try unused("iv", t.iv != nil)
            try unused("size", t.size != nil); try unused("max", t.max != nil)
            switch t.kind {
            case "zlib": return .zlib
            case "gzip": return .gzip
            case "deflate": return .deflate
            case "base64": return .base64
            default: return .lz4Frame
            }
        case "lz4_block":
            try unused("key", t.key != nil); try unused("iv", t.iv != nil)
            if let (field, ft) = t.size {
                if t.max != nil { throw err(ft, "give the size or a maximum, not both") }
                guard let field else { return .lz4Block(.prefixed) }
                return .lz4Block(.field(try headerIndex(field, ft, s)))
            }
            if let (m, mt) = t.max {
                guard m > 0 && m <= 1 << 30 else { throw err(mt, "max must be between 1 and 1073741824") }
                return .lz4Block(.atMost(Int(m)))
            }
            return .lz4Block(.prefixed)
        case "xor":
            try unused("iv", t.iv != nil); try unused("size", t.size != nil); try unused("max", t.max != nil)
            guard let k = t.key else { throw err(t.token, "xor needs its key: key \"HEX\" or key NAME") }
            let bytes = try keyBytes(k, p, for: "xor")
            return .xor(bytes)
        case "aes_cbc", "aes", "cbc", "aes_ecb", "ecb", "aes_ctr", "ctr", "aes_gcm", "gcm":
            try unused("size", t.size != nil); try unused("max", t.max != nil)
            let mode: BodyCipherSpec.Mode = t.kind.hasSuffix("ecb") ? .ecb : t.kind.hasSuffix("ctr") ? .ctr
                : t.kind.hasSuffix("gcm") ? .gcm : .cbc
            guard let k = t.key else { throw err(t.token, "\(t.kind) needs 'key NAME'") }
            let key = try keyBytes(k, p, for: "AES")
            guard [16, 24, 32].contains(key.count) else {
                throw err(k.token, "key \(k.name.map { "'\($0)' " } ?? "")is \(key.count) bytes: AES needs 16, 24 or 32")
            }
            var iv: [UInt8] = []
            if let (hex, it) = t.iv {
                guard let v = BodyCipherSpec.hex(hex) else { throw err(it, "the IV is not hex") }
                iv = v
                switch mode {
                case .cbc: guard iv.count == 16 else { throw err(it, "an AES-CBC IV is 16 bytes") }
                case .ctr: guard iv.count == 16 || iv.count == 12 else { throw err(it, "an AES-CTR IV is 16 bytes (or a 12-byte nonce)") }
                case .gcm: guard iv.count == 12 else { throw err(it, "an AES-GCM nonce is 12 bytes (leave it out when each body starts with its own)") }
                case .ecb: throw err(it, "ECB takes no IV")
                }
            } else if mode == .cbc || mode == .ctr {
                throw err(t.token, "\(t.kind) needs an IV: iv \"HEX\"")
            }
            return .aes(BodyCipherSpec(mode: mode, keyName: k.name ?? "", key: key, iv: iv))
        default:
            throw err(t.token, t.kind.hasPrefix("aes")
                      ? "unknown cipher '\(t.kind)' (expected aes_cbc, aes_ecb, aes_ctr or aes_gcm)"
                      : "unknown transform '\(t.kind)' (expected \(Parser.transformKinds))")
        }
    }

    /// A key given inline (hex) or by name: `--key NAME=HEX` first, then the file's `key` line.
    func keyBytes(_ k: (name: String?, hex: String?, token: Token), _ p: PendingProtocol, for what: String) throws(DissectorError) -> [UInt8] {
        if let hex = k.hex {
            guard let v = BodyCipherSpec.hex(hex), !v.isEmpty else { throw err(k.token, "the \(what) key is not hex") }
            return v
        }
        let name = k.name ?? ""
        if let v = options.keys[name] { return v }
        if let (hex, _) = p.proto.keys[name], let hex, let v = BodyCipherSpec.hex(hex) { return v }
        // Declared without a value, to come with --key: any valid length stands in for it.
        if options.keysGivenLater, let declared = p.proto.keys[name], declared.0 == nil { return [UInt8](repeating: 0, count: 16) }
        throw err(k.token, "no value for key '\(name)': declare it with key \(name) = \"HEX\"; or give --key \(name)=HEX")
    }
}
