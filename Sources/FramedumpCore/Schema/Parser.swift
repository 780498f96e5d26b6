/// Parses dissector files: `protocol NAME { ... }` blocks for framing, and message and enum
/// blocks in the server team's own syntax (`Message Cs_20001 { Uint8 SceneId = 1; // ... }`).
///
/// `include "file"` splices the included file's tokens in place, so its messages belong to
/// the protocol being declared, and every token still knows its own file for errors.
///
/// An error does not stop the parse: it is recorded, the rest of its statement is skipped, and
/// parsing goes on, so one run reports every mistake of a file (up to `Diagnostics.limit`).
struct Parser {
    var lexers: [Lexer]
    var tokens: [Token]
    var pos = 0
    var protocols: [PendingProtocol] = []
    var current: Int?
    /// Reads a file's text (nil when it cannot be read).
    let read: (String) -> String?
    var diagnostics = Diagnostics()
    /// Where each file (by lexer index) was included from, to show an include cycle's chain.
    var includedFrom: [Token?] = [nil]
    /// `--max-protocols` and `--max-messages` left for this file (what earlier files loaded is
    /// already taken off): past them the file is refused where the next one is declared.
    var protocolsLeft = Int.max
    var messagesLeft = Int.max

    /// Counts one more message or enum against `--max-messages`.
    mutating func countMessage(_ t: Token) throws(DissectorError) {
        guard messagesLeft > 0 else {
            throw err(t, "more messages and enums than --max-messages allows (over every dissector file)")
        }
        messagesLeft -= 1
    }

    init(lexer: Lexer, read: @escaping (String) -> String?) {
        lexers = [lexer]
        tokens = lexer.tokens
        self.read = read
        for e in lexer.errors { diagnostics.add(e) }
        diagnostics.dropped += lexer.droppedErrors
    }

    var tok: Token { tokens[pos] }
    mutating func next() -> Token { let t = tokens[pos]; if pos < tokens.count - 1 { pos += 1 }; return t }

    func err(_ t: Token, _ m: String) -> DissectorError { lexers[t.file].error(t.line, t.column, m) }

    mutating func splice(_ path: String, at t: Token) throws(DissectorError) {
        let from = lexers[t.file].file
        let dir = from.contains("/") ? String(from[..<from.lastIndex(of: "/")!]) + "/" : ""
        let target = path.hasPrefix("/") ? path : dir + path
        guard lexers.count < 64 else { throw err(t, "too many includes (64 at most)") }
        // Compared in a normal form, so `./s.dissector` and `a/../s.dissector` are seen as the same file.
        if let earlier = lexers.firstIndex(where: { Self.normalized($0.file) == Self.normalized(target) }) {
            // The files from the including one up its chain of includes: a cycle when `earlier` is among them.
            var chain = [t.file]
            while let up = includedFrom[chain.last!]?.file { chain.append(up) }
            if let k = chain.firstIndex(of: earlier) {
                let names = chain[...k].reversed().map { lexers[$0].file } + [target]
                throw err(t, "include cycle: " + names.joined(separator: " → "))
            }
            let site = includedFrom[earlier].map { " (first at \(lexers[$0.file].file):\($0.line))" } ?? ""
            throw err(t, "'\(path)' is included twice\(site)")
        }
        guard let text = read(target) else { throw err(t, "cannot read included file '\(target)'") }
        let l = Lexer(file: target, text: text, index: lexers.count)
        for e in l.errors { diagnostics.add(e) }
        diagnostics.dropped += l.droppedErrors
        lexers.append(l)
        includedFrom.append(t)
        tokens.insert(contentsOf: l.tokens.dropLast(), at: pos)
    }

    /// A path without `.` segments, `x/..` pairs or repeated slashes.
    static func normalized(_ path: String) -> String {
        var out: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == "..", let last = out.last, last != ".." { out.removeLast(); continue }
            out.append(part)
        }
        return (path.hasPrefix("/") ? "/" : "") + out.joined(separator: "/")
    }

    func describe(_ t: Token) -> String {
        switch t.kind {
        case .ident(let s): return "'\(s)'"
        case .number(let n): return "'\(n)'"
        case .string(let s): return "\"\(s)\""
        case .punct(let p): return "'\(p)'"
        case .end: return "end of file"
        }
    }

    mutating func expect(_ p: String) throws(DissectorError) {
        guard case .punct(p) = tok.kind else { throw err(tok, "expected '\(p)', found \(describe(tok))") }
        _ = next()
    }

    mutating func accept(_ p: String) -> Bool {
        if case .punct(p) = tok.kind { _ = next(); return true }
        return false
    }

    func at(_ p: String) -> Bool {
        if case .punct(p) = tok.kind { return true }
        return false
    }

    /// The end of a statement: its ';' (optional before the block's '}'). A missing one is
    /// recorded and parsing goes on as if it were there, so `Uint32le flags = 2 Uint8 extra = 9;`
    /// is an error, not two fields.
    mutating func endStatement(_ what: String) {
        if accept(";") || at("}") { return }
        if case .end = tok.kind { return }
        diagnostics.add(err(tok, "expected ';' after \(what), found \(describe(tok))"))
    }

    /// Inside a block: a token that can only start a new top-level block (first on its line)
    /// means the block being read was never closed.
    func unclosed(_ open: Token, _ what: String) -> DissectorError? {
        if case .end = tok.kind { return err(open, "\(what) is not closed with '}'") }
        if startsTopLevel(), tokens[pos - 1].line != tok.line || tokens[pos - 1].file != tok.file {
            return err(open, "\(what) is not closed with '}' before \(describe(tok)) at line \(tok.line)")
        }
        return nil
    }

    func startsTopLevel() -> Bool {
        guard case .ident(let w) = tok.kind else { return false }
        // (A first frame's `message NAME;` and `message NAME when ...;` lines are its own.)
        if w.lowercased() == "message", pos + 2 < tokens.count {
            if tokens[pos + 2].kind == .punct(";") { return false }
            if case .ident(let x) = tokens[pos + 2].kind, x.lowercased() == "when" { return false }
        }
        return ["protocol", "message", "enum", "include"].contains(w.lowercased())
    }

    /// After an error inside a block: skip past the statement's ';' or up to the block's '}'
    /// (a nested block is skipped whole), so the next statement is read from its start.
    mutating func skipStatement() {
        var depth = 0
        while true {
            switch tok.kind {
            case .end: return
            case .punct("{"): depth += 1
            case .punct("}"):
                if depth == 0 { return }
                depth -= 1
                if depth == 0 { _ = next(); return }
            case .punct(";") where depth == 0: _ = next(); return
            default: if depth == 0, startsTopLevel(), pos > 0, tokens[pos - 1].line != tok.line { return }
            }
            _ = next()
        }
    }

    /// After an error at the top level: skip to the next `protocol`, `Message`, `Enum` or
    /// `include` that starts a line.
    mutating func skipToTopLevel() {
        let from = pos
        while true {
            if case .end = tok.kind { return }
            if pos > from, startsTopLevel(), tokens[pos - 1].line != tok.line || tokens[pos - 1].file != tok.file { return }
            _ = next()
        }
    }

    mutating func ident(_ what: String) throws(DissectorError) -> (String, Token) {
        let t = tok
        guard case .ident(let s) = t.kind else { throw err(t, "expected \(what), found \(describe(t))") }
        _ = next()
        return (s, t)
    }

    mutating func quoted(_ what: String) throws(DissectorError) -> String {
        guard case .string(let v) = tok.kind else { throw err(tok, "expected \(what) in double quotes, found \(describe(tok))") }
        _ = next()
        return v
    }

    /// A signed number, -2⁶³ through 2⁶³-1.
    mutating func number(_ what: String) throws(DissectorError) -> Int64 {
        let t = tok
        let (n, neg) = try magnitude(what)
        if neg {
            guard n <= UInt64(Int64.max) + 1 else { throw err(t, "-\(n) is out of range (the smallest is -9223372036854775808)") }
            return n == UInt64(Int64.max) + 1 ? .min : -Int64(n)
        }
        guard n <= UInt64(Int64.max) else { throw err(t, "\(n) is out of range here (the largest is 9223372036854775807)") }
        return Int64(n)
    }

    /// A number as 64 bits: 0 through 2⁶⁴-1, or -2⁶³ through -1 as two's complement (for the
    /// values of header constants and enum labels, which can be of a signed or an unsigned type).
    mutating func bits(_ what: String) throws(DissectorError) -> (value: UInt64, negative: Bool) {
        let t = tok
        let (n, neg) = try magnitude(what)
        guard neg else { return (n, false) }
        guard n <= UInt64(Int64.max) + 1 else { throw err(t, "-\(n) is out of range (the smallest is -9223372036854775808)") }
        return (n == 0 ? 0 : UInt64(bitPattern: n == UInt64(Int64.max) + 1 ? .min : -Int64(n)), n != 0)
    }

    mutating func magnitude(_ what: String) throws(DissectorError) -> (UInt64, Bool) {
        let neg = accept("-")
        let t = tok
        guard case .number(let n) = t.kind else { throw err(t, "expected \(what), found \(describe(t))") }
        _ = next()
        return (n, neg)
    }

    // MARK: - Top level

    /// Reads the whole file; what went wrong is in `diagnostics`.
    mutating func parseFile() {
        while !diagnostics.full {
            let t = tok
            if case .end = t.kind { return }
            do throws(DissectorError) {
                try topLevel(t)
            } catch {
                diagnostics.add(error)
                skipToTopLevel()
            }
        }
    }

    mutating func topLevel(_ t: Token) throws(DissectorError) {
        switch t.kind {
        case .ident(let w) where w.lowercased() == "include":
            _ = next()
            guard case .string(let path) = tok.kind else { throw err(tok, "include needs a quoted file name") }
            let pt = next()
            _ = accept(";")
            try splice(path, at: pt)
        case .ident(let w) where w.lowercased() == "protocol":
            guard protocolsLeft > 0 else {
                throw err(t, "more protocols than --max-protocols allows (over every dissector file)")
            }
            protocolsLeft -= 1
            _ = next()
            try parseProtocol(t)
        case .ident(let w) where w.lowercased() == "message":
            _ = next()
            try parseMessage(t)
        case .ident(let w) where w.lowercased() == "enum":
            _ = next()
            try parseEnum(t)
        case .punct(";"):
            _ = next()
        default:
            throw err(t, "expected 'protocol', 'Message', 'Enum' or 'include', found \(describe(t))")
        }
    }

    mutating func currentProtocol(_ t: Token) throws(DissectorError) -> Int {
        guard let c = current else {
            throw err(t, "a message needs a protocol: put a 'protocol NAME { ... }' block before it, or include this file from one")
        }
        return c
    }

    // MARK: - protocol { ... }

    mutating func parseProtocol(_ start: Token) throws(DissectorError) {
        let (name, _) = try ident("a protocol name")
        var p = PendingProtocol(schema: ProtocolSchema(name: name, file: lexers[start.file].file))
        p.token = start
        p.schema.nameBytes = Array(name.utf8)
        p.line = start.line
        let open = tok
        try expect("{")
        // Entered before its settings are read, so an error in one still leaves the protocol
        // (and its messages) in place for the errors after it.
        protocols.append(p)
        current = protocols.count - 1
        while !accept("}") {
            if let e = unclosed(open, "protocol '\(name)'") { throw e }
            var cur = protocols[protocols.count - 1]
            do throws(DissectorError) {
                try protocolSetting(&cur)
            } catch {
                diagnostics.add(error)
                skipStatement()
                cur.hadErrors = true
            }
            protocols[protocols.count - 1] = cur
        }
    }

    mutating func protocolSetting(_ p: inout PendingProtocol) throws(DissectorError) {
        let (key, kt) = try ident("a protocol setting")
        switch key.lowercased() {
        case "udp":
            // `udp port N;`: the protocol's messages come in UDP datagrams to or from port N.
            let (w, wt) = try ident("'port'")
            guard w.lowercased() == "port" || w.lowercased() == "ports" else { throw err(wt, "expected 'udp port N;'") }
            guard p.schema.ports.isEmpty || p.schema.udp else {
                throw err(kt, "protocol '\(p.schema.name)' already has TCP ports: one protocol is carried by TCP or by UDP, not both")
            }
            p.schema.udp = true
            fallthrough
        case "port", "ports":
            if key.lowercased() != "udp" && p.schema.udp {
                throw err(kt, "protocol '\(p.schema.name)' has UDP ports: write 'udp port N;' for each (one protocol is carried by TCP or by UDP, not both)")
            }
            repeat {
                let n = try number("a port number")
                guard (1...65535).contains(n) else { throw err(kt, "port \(n) is out of range 1-65535") }
                guard !p.schema.ports.contains(UInt16(n)) else { throw err(tokens[pos - 1], "port \(n) is listed twice") }
                p.schema.ports.append(UInt16(n))
                let t = tokens[pos - 1]
                p.schema.portLocations[UInt16(n)] = lexers[t.file].location(t.line, t.column)
            } while accept(",")
        case "any_port", "detect":
            if key.lowercased() == "detect" { _ = try ident("'any'") }
            p.schema.anyPort = true
        case "byte_order", "byteorder", "endian":
            let (o, ot) = try ident("big or little")
            switch o.lowercased() {
            case "big", "be", "network": p.schema.order = .big
            case "little", "le": p.schema.order = .little
            default: throw err(ot, "byte order must be 'big' or 'little'")
            }
        case "strings", "string":
            p.schema.strings = try stringRule()
        case "header":
            // `header { }` for every frame, or `header c2s { }` / `header s2c { }` for one
            // direction's; each once (a second block would restart the offsets under the length
            // and id fields already named).
            // `header text { }`: the header of a layer's text messages (WebSocket's).
            var direction: Direction?
            var text = false
            if case .ident(let w) = tok.kind, let d = Direction(keyword: w) {
                _ = next()
                direction = d
            } else if case .ident(let w) = tok.kind, w.lowercased() == "text" {
                _ = next()
                text = true
            }
            if let earlier = p.headerBlocks.first(where: { !$0.first && $0.direction == direction && $0.text == text }) {
                throw err(kt, "the \(text ? "text " : direction.map { "\($0.name) " } ?? "")header is already declared at line \(earlier.token.line) (one header block per direction)")
            }
            var block = PendingHeaderBlock(direction: direction, first: false, token: kt)
            block.text = text
            block.fields = try parseHeader(&p, text: text)
            merge(&block, into: &p)
            p.headerBlocks.append(block)
            _ = accept(";")
            return
        case "first":
            try parseFirst(kt, &p)
            _ = accept(";")
            return
        case "frame_length", "body_length":
            if let earlier = p.lengthToken {
                throw err(kt, "the frame length is already given at line \(earlier.line) (frame_length and body_length exclude each other)")
            }
            _ = accept("=")
            // `frame_length = message;`: the frame is what its message takes (unless the header
            // has a field of that name, which is then the length).
            if key.lowercased() == "frame_length", case .ident(let w) = tok.kind, w == ConsumedFraming.setting,
               !p.schema.header.contains(where: { $0.name == w }), pos + 1 < tokens.count,
               tokens[pos + 1].kind == .punct(";") || tokens[pos + 1].kind == .punct("}") {
                _ = next()
                p.schema.framingSettings[ConsumedFraming.setting] = []
                p.lengthToken = kt
                break
            }
            p.lengthExpr = try lengthExpr()
            p.lengthToken = kt
            p.lengthWholeFrame = key.lowercased() == "frame_length"
        case "message_id", "id":
            // `message_id s2c = xid;`: one direction's id field (replies numbered apart).
            if case .ident(let w) = tok.kind, let d = Direction(keyword: w) {
                _ = next()
                _ = accept("=")
                guard p.directionIDNames[d] == nil else { throw err(kt, "the \(d.name) message id is already given") }
                p.directionIDNames[d] = try ident("a header field name")
                if at(",") { throw err(tok, "a direction's own message id is one field (a pair of fields is the protocol's: 'message_id = cmd, sub;')") }
                break
            }
            _ = accept("=")
            guard p.idName == nil else { throw err(kt, "the message id is already given") }
            let (f, ft) = try ident("a header field name")
            p.idName = (f, ft)
            // `message_id = cmd, sub;`: a main command and a sub-command, ids written `3:7`.
            if accept(",") { p.idName2 = try ident("the second id field's name") }
        case "max_frame":
            let n = try number("a size in bytes")
            guard n > 0 && n <= 1 << 30 else { throw err(kt, "max_frame must be between 1 and 1073741824") }
            p.schema.maxFrame = Int(n)
        case "body":
            let (b, bt) = try ident(BodyRegistry.names { $0.readsFrames })
            guard let e = BodyEncoding(rawValue: b) else {
                throw err(bt, "body must be one of " + BodyRegistry.kinds.filter { $0.readsFrames }.map { $0.name }.joined(separator: ", "))
            }
            guard e.kind.readsFrames else {
                throw err(bt, "'\(e.rawValue)' reads a WebSocket's text messages, not frames: write 'text \(e.rawValue);'")
            }
            p.schema.body = e
        case "pair_by":
            // `pair_by id;`, `pair_by FIELD;` or `pair_by REQUEST_FIELD = RESPONSE_FIELD;`: how
            // -z rtt pairs responses with requests.
            let (what, wt) = try ident("'id' or a field name")
            if accept("=") {
                let (answer, at) = try ident("the response's field that carries the request's \(what)")
                p.schema.pairBy = .field(request: what, response: answer)
                p.pairByTokens = (wt, at)
            } else {
                p.schema.pairBy = what.lowercased() == "id" ? .messageID : .field(request: what, response: what)
                p.pairByTokens = what.lowercased() == "id" ? nil : (wt, wt)
            }
        case "phase":
            try parsePhase(&p)
        case "pair":
            // `pair LoginReq -> LoginResp;`, `... by seq;`, `... by seq = ackSeq;`: a response
            // of another message type than its request (names resolved once all are read).
            let request = try ident("the request's message name")
            guard accept("-"), accept(">") else { throw err(tok, "expected '->' between the request and the response, found \(describe(tok))") }
            let response = try ident("the response's message name")
            var pair = PendingPair(request: request, response: response)
            if case .ident(let w) = tok.kind, w.lowercased() == "by" {
                _ = next()
                pair.by = try ident("the request's field that the response carries")
                if accept("=") { pair.answer = try ident("the response's field that carries the request's \(pair.by!.0)") }
            }
            p.pairs.append(pair)
        case "labels_from_comments":
            p.schema.labelsFromComments = true
        case "text":
            let (b, bt) = try ident(BodyRegistry.names { $0.readsText })
            guard let e = BodyEncoding(rawValue: b), e.kind.readsText else {
                throw err(bt, "text messages are " + BodyRegistry.names { $0.readsText })
            }
            p.schema.textBody = e
        case "proto", "proto_file", "proto_descriptor", "key", "cipher":
            try parseProtoSetting(key.lowercased(), kt, &p)
        case "transform":
            try parseTransform(cipherLine: false, kt, &p)
        default:
            // A layer's own settings (`websocket "/path";`), read by the layer.
            for k in LayerRegistry.kinds where k.keywords.contains(key.lowercased()) {
                try k.setting(key.lowercased(), &self, &p.schema)
                return endStatement("'\(key)'")
            }
            // A framing kind's (`frame_end "\r\n";`), read by the kind.
            for k in FramingRegistry.kinds where k.keywords.contains(key.lowercased()) {
                try k.setting(key.lowercased(), &self, &p.schema)
                return endStatement("'\(key)'")
            }
            throw err(kt, "unknown protocol setting '\(key)' (expected port, udp port, any_port, byte_order, strings, header, frame_length, body_length, frame_end, payload, message_id, max_frame, body, labels_from_comments, pair_by, pair, phase, websocket, subprotocol, text, proto, proto_descriptor, key, transform, cipher)")
        }
        endStatement("'\(key)'")
    }

    mutating func stringRule() throws(DissectorError) -> StringRule {
        let t = tok
        if case .number(let n) = t.kind {
            _ = next()
            guard n <= 1 << 20 else { throw err(t, "fixed string size out of range") }
            return .fixed(Int(n))
        }
        let (r, rt) = try ident("u8, u16, u32, nul or rest")
        if let (w, o) = Resolver.prefix(r) { return .prefixed(width: w, order: o) }
        switch r.lowercased() {
        case "nul", "null", "cstring", "zero": return .nulTerminated
        case "rest": return .rest
        default: throw err(rt, "string rule must be u8, u16, u32 (optionally le/be), nul, rest or a fixed size")
        }
    }

    /// A header block's fields, offsets from its start.
    mutating func parseHeader(_ p: inout PendingProtocol, text: Bool = false) throws(DissectorError) -> [HeaderField] {
        let open = tok
        try expect("{")
        var offset = 0
        var fields: [HeaderField] = []
        var hadError = false
        while !accept("}") {
            if let e = unclosed(open, "the header") { throw e }
            do throws(DissectorError) {
                offset += try headerField(&p, &fields, offset: offset, text: text)
            } catch {
                diagnostics.add(error)
                skipStatement()
                hadError = true
            }
        }
        // (A block whose fields all had errors was said to be wrong already.)
        guard offset > 0 || hadError else { throw err(tokens[pos - 1], "the header needs at least one field") }
        return fields
    }

    /// Enters a header block's fields in the protocol's `header`, the union of every block by
    /// name (a name is one field to the outputs and `-Y`), noting each one's index there.
    func merge(_ block: inout PendingHeaderBlock, into p: inout PendingProtocol) {
        block.global = block.fields.map { f in
            if !f.isPadding, let g = p.schema.header.firstIndex(where: { !$0.isPadding && $0.name == f.name }) {
                // Named bits declared in one block serve the field in all.
                if p.schema.header[g].bits.isEmpty { p.schema.header[g].bits = f.bits }
                return g
            }
            p.schema.header.append(f)
            return p.schema.header.count - 1
        }
    }

    /// `first c2s { header { ... } frame_length = ...; message NAME; }`: the direction's first
    /// frame (a startup message, a handshake) has its own header, length and message.
    mutating func parseFirst(_ kt: Token, _ p: inout PendingProtocol) throws(DissectorError) {
        guard case .ident(let w) = tok.kind, let d = Direction(keyword: w) else {
            throw err(tok, "expected c2s or s2c after 'first' (the direction whose first frame is laid out differently), found \(describe(tok))")
        }
        _ = next()
        if let earlier = p.headerBlocks.first(where: { $0.first && $0.direction == d }) {
            throw err(kt, "the first \(d.name) frame is already described at line \(earlier.token.line)")
        }
        var block = PendingHeaderBlock(direction: d, first: true, token: kt)
        // `first s2c after SSLRequest { ... }`: only when the other side's first frame was one of these.
        if case .ident(let a) = tok.kind, a.lowercased() == "after" {
            _ = next()
            block.after = [try ident("a message of the other direction's first frame")]
            while accept(",") { block.after!.append(try ident("a message of the other direction's first frame")) }
        }
        let open = tok
        try expect("{")
        while !accept("}") {
            if let e = unclosed(open, "'first \(d.name)'") { throw e }
            do throws(DissectorError) {
                let (key, st) = try ident("header, frame_length, body_length or message")
                switch key.lowercased() {
                case "header":
                    guard block.fields.isEmpty else { throw err(st, "'first \(d.name)' has one header") }
                    block.fields = try parseHeader(&p)
                    merge(&block, into: &p)
                    _ = accept(";")
                case "frame_length", "body_length":
                    guard block.lengthToken == nil else { throw err(st, "'first \(d.name)' already has its length") }
                    _ = accept("=")
                    block.lengthExpr = try lengthExpr()
                    block.lengthToken = st
                    block.lengthWholeFrame = key.lowercased() == "frame_length"
                    endStatement("'\(key)'")
                case "message":
                    let name = try ident("the message the first frame is")
                    // `message SSLRequest when code == 80877103;`: the first whose test holds.
                    if case .ident(let w) = tok.kind, w.lowercased() == "when" {
                        _ = next()
                        block.choices.append((name.0, name.1, try condition()))
                    } else {
                        guard block.message == nil else { throw err(st, "'first \(d.name)' already names its message (give the others a 'when')") }
                        block.message = name
                    }
                    endStatement("'message'")
                case "again":
                    // `again after SSLRequest;`: after such a frame, the next one is laid out as the first.
                    guard case .ident(let a) = tok.kind, a.lowercased() == "after" else {
                        throw err(tok, "expected 'after MESSAGE' (after which the next frame is laid out as the first again), found \(describe(tok))")
                    }
                    _ = next()
                    block.again.append(try ident("a message of the first frame"))
                    while accept(",") { block.again.append(try ident("a message of the first frame")) }
                    endStatement("'again'")
                default:
                    throw err(st, "unknown setting '\(key)' in 'first \(d.name)' (expected header, frame_length, body_length, message, again)")
                }
            } catch {
                diagnostics.add(error)
                skipStatement()
            }
        }
        p.headerBlocks.append(block)
    }

    /// One header field (or `pad N`), appended to `fields`; returns its width.
    mutating func headerField(_ p: inout PendingProtocol, _ fields: inout [HeaderField], offset: Int, text: Bool = false) throws(DissectorError) -> Int {
        let (tname, tt) = try ident("a header field type")
        var f: HeaderField
        if tname.lowercased() == "decimal" {
            guard text else { throw err(tt, "decimal header fields are read in text messages' header ('header text { ... }'); a binary header's fields are integers") }
            f = try decimalHeaderField(tt, offset: offset)
            if fields.contains(where: { $0.name == f.name }) { throw err(tt, "header field '\(f.name)' is declared twice") }
        } else if text {
            throw err(tt, "a text header's fields are numbers in ASCII digits: decimal(N) (N digits) or decimal(\"BYTES\") / decimal(crlf) (up to the bytes that end it)")
        } else if tname.lowercased() == "pad" || tname.lowercased() == "padding" || tname.lowercased() == "skip" {
            let n = try number("a byte count")
            guard n > 0 && n <= 64 else { throw err(tt, "padding must be 1-64 bytes") }
            f = HeaderField(name: "pad", width: Int(n), signed: false, order: p.schema.order, constant: nil,
                            isPadding: true, offset: offset, nameBytes: Array("pad".utf8))
        } else {
            let varint = try varintType(tname, tt)
            guard let it = varint?.type ?? IntegerType.parse(tname, default: p.schema.order) else {
                throw err(tt, "header fields are integers: uint8/16/24/32/64 or int8/16/32/64 (optionally le/be), varint, svarint, varint(N), or 'pad N'")
            }
            let (name, _) = try ident("a header field name")
            f = HeaderField(name: name, width: it.width, signed: it.signed, order: it.order, constant: nil,
                            isPadding: false, offset: offset, nameBytes: Array(name.utf8))
            if let varint {
                f.varintMax = varint.maxBytes
                f.zigzag = it.signed
            }
            if accept("==") {
                let vt = tok
                let (v, negative) = try bits("the constant value")
                f.constant = v
                // A constant the field cannot hold would make every frame malformed.
                let bitsWide = UInt64(f.isVarint ? min(64, varint!.maxBytes * 7) : it.width * 8)
                if it.signed {
                    let s = Int64(bitPattern: v)
                    let lo: Int64 = bitsWide >= 64 ? .min : -(1 << (bitsWide - 1)), hi: Int64 = bitsWide >= 64 ? .max : (1 << (bitsWide - 1)) - 1
                    if negative ? s < lo : (v > UInt64(hi)) {
                        throw err(vt, "\(negative ? String(s) : String(v)) does not fit in \(tname) '\(name)' (\(lo) to \(hi))")
                    }
                } else {
                    let hi: UInt64 = bitsWide >= 64 ? .max : (1 << bitsWide) - 1
                    if negative { throw err(vt, "\(tname) '\(name)' is unsigned: its constant cannot be negative") }
                    if v > hi { throw err(vt, "\(v) (0x\(String(v, radix: 16))) does not fit in \(tname) '\(name)' (0 to \(hi), 0x\(String(hi, radix: 16)))") }
                }
            }
            if at("[") {
                _ = try displayAttribute()
                f.hex = true
            }
            if at("{") {
                if f.isVarint { throw err(tok, "bit fields need a fixed-width integer ('\(name)' is a \(tname))") }
                f.bits = try bitFields(f, tname)
            }
            if fields.contains(where: { $0.name == name }) {
                throw err(tt, "header field '\(name)' is declared twice")
            }
        }
        fields.append(f)
        // A bit field block closes the statement itself, like a message's `}`.
        if f.bits.isEmpty { endStatement("header field '\(f.name)'") } else { _ = accept(";") }
        return f.width
    }

    /// `decimal(N) name;` (exactly N digits, 1-19) or `decimal("|") name;` (digits up to the
    /// bytes that end them, which belong to the field), optionally `== VALUE`.
    mutating func decimalHeaderField(_ tt: Token, offset: Int) throws(DissectorError) -> HeaderField {
        try expect("(")
        let pt = tok
        var digits = 0
        var end: [UInt8] = []
        if case .number = pt.kind {
            let n = try number("the number of digits (1-19)")
            guard n >= 1 && n <= 19 else { throw err(pt, "a decimal field has 1 to 19 digits, not \(n)") }
            digits = Int(n)
        } else {
            guard let d = Resolver.delimiter(pt) else {
                throw err(pt, "expected the number of digits or the bytes that end the number (crlf, lf or 1 to 16 bytes in quotes), found \(describe(pt))")
            }
            if let b = d.first(where: { $0 >= 0x30 && $0 <= 0x39 || $0 == 0x2d }) {
                throw err(pt, "a decimal's delimiter cannot hold '\(Character(Unicode.Scalar(b)))' (digits and '-' are the number's)")
            }
            end = d
            _ = next()
        }
        try expect(")")
        let (name, _) = try ident("a header field name")
        var f = HeaderField(name: name, width: digits > 0 ? digits : 1 + end.count, signed: true, order: .big, constant: nil,
                            isPadding: false, offset: offset, nameBytes: Array(name.utf8))
        f.decimalDigits = digits
        f.decimalEnd = end
        if accept("==") {
            let vt = tok
            let (v, negative) = try bits("the constant value")
            let s = Int64(bitPattern: v)
            if negative ? s >= 0 : s < 0 { throw err(vt, "\(v) does not fit in decimal '\(name)'") }
            f.constant = v
        }
        if at("[") { throw err(tok, "a decimal field is shown as its digits") }
        return f
    }

    /// A header varint (`VarintName`: `varint`, `svarint`, `varint32`, ...) and its `(N)`, at
    /// most N bytes (4 for MQTT's Remaining Length); nil for other types. The type's width is
    /// the varint's least size, one byte.
    mutating func varintType(_ name: String, _ t: Token) throws(DissectorError) -> (type: IntegerType, maxBytes: Int)? {
        guard var v = VarintName(name) else { return nil }
        if v.takesSize && accept("(") {
            let n = try number("the most bytes the varint takes (1-10)")
            guard VarintName.sizes.contains(Int(clamping: n)) else { throw err(tokens[pos - 1], "a varint takes 1 to 10 bytes, not \(n)") }
            v.maxBytes = Int(n)
            try expect(")")
        }
        return (IntegerType(width: 1, signed: v.signed, order: .big), v.maxBytes)
    }

    mutating func lengthExpr() throws(DissectorError) -> [(String?, Int64, Bool, Token)] {
        var terms: [(String?, Int64, Bool, Token)] = []
        var negative = false
        while true {
            let t = tok
            switch t.kind {
            case .ident(let s): _ = next(); terms.append((s, 0, negative, t))
            case .number(let n):
                guard n <= 1 << 32 else { throw err(t, "\(n) is out of range in a length expression") }
                _ = next(); terms.append((nil, Int64(n), negative, t))
            default: throw err(t, "expected a header field name or a number in the length expression")
            }
            if accept("+") { negative = false } else if accept("-") { negative = true } else { break }
        }
        return terms
    }

    // MARK: - Message NAME [= ID] { fields }

    /// `in auth, command`: the connection phases a message's id names it in.
    mutating func messagePhases(_ m: inout PendingMessage) throws(DissectorError) {
        guard case .ident(let w) = tok.kind, w.lowercased() == "in" else { return }
        _ = next()
        var names = [try ident("a phase name (declared with 'phase NAME;' in the protocol)")]
        while accept(",") { names.append(try ident("a phase name")) }
        m.phases = names
    }

    /// `phase NAME [midstream];` or `phase FROM -> TO after MESSAGE, MESSAGE;` (FROM `*`: any).
    mutating func parsePhase(_ p: inout PendingProtocol) throws(DissectorError) {
        var from: (String, Token)?
        if at("*") {
            _ = next()
        } else {
            let name = try ident("a phase name")
            guard at("-") else {
                var midstream: Token?
                if case .ident(let w) = tok.kind, w.lowercased() == "midstream" { midstream = next() }
                p.phases.names.append((name.0, name.1, midstream))
                return
            }
            from = name
        }
        guard accept("-"), accept(">") else { throw err(tok, "expected '->' and the phase the connection goes to, found \(describe(tok))") }
        let to = try ident("the phase the connection goes to")
        guard case .ident(let w) = tok.kind, w.lowercased() == "after" else {
            throw err(tok, "expected 'after MESSAGE' (the message after which the connection is in phase '\(to.0)'), found \(describe(tok))")
        }
        _ = next()
        var after = [try ident("a message name")]
        while accept(",") { after.append(try ident("a message name")) }
        // `after ColumnDefinition * ColumnCount.status`: after as many as that field of that message said.
        var count: (String, Token)?
        if accept("*") { count = try ident("MESSAGE.FIELD: the message whose field counts them") }
        // `after EOF when length == 5`: only when the message passes the test.
        var when: PendingCondition?
        if case .ident(let w) = tok.kind, w.lowercased() == "when" {
            _ = next()
            when = try condition()
        }
        p.phases.switches.append((from, to, after, count, when))
    }

    mutating func parseMessage(_ start: Token) throws(DissectorError) {
        let pi = try currentProtocol(start)
        var (name, nt) = try ident("a message name")
        // The server team's document sometimes has `SC _20001`: join the two parts.
        if ["cs", "sc"].contains(name.lowercased()), case .ident(let rest) = tok.kind, rest.hasPrefix("_") {
            _ = next()
            name += rest
        }
        try countMessage(nt)
        var m = PendingMessage(name: name, line: nt.line, token: nt)
        if let conv = MessageNaming.parse(name) { m.id = conv.id; m.direction = conv.direction }
        if at("="), pos + 1 < tokens.count, tokens[pos + 1].kind == .punct("*") {
            // `Message Row = * s2c { ... }`: a frame whose id names no other message.
            _ = next()
            m.otherwise = next()
        } else if accept("=") {
            let idToken = tok
            let (n, neg) = try magnitude("a message id")
            // `= 3:7`: a main and a sub id (`message_id = cmd, sub;`); `= 3 : pkg.Type` binds a
            // protobuf type (the token after the colon tells them apart).
            let pairFollows: Bool = {
                guard at(":"), pos + 1 < tokens.count else { return false }
                if case .number = tokens[pos + 1].kind { return true }
                return tokens[pos + 1].kind == .punct("-") && pos + 2 < tokens.count && { if case .number = tokens[pos + 2].kind { return true }; return false }()
            }()
            if !neg, pairFollows {
                _ = next()
                let st = tok
                let (sub, subNeg) = try magnitude("the second part of the message id")
                guard n <= UInt64(UInt32.max), !subNeg, sub <= UInt64(UInt32.max) else {
                    throw err(subNeg || n <= UInt64(UInt32.max) ? st : idToken, "each part of a message id pair is 0 to 4294967295")
                }
                m.id = n << 32 | sub
                m.idPair = idToken
            } else if neg {
                // A signed id field's negative value (ZooKeeper's xid -1), kept as its bit pattern.
                guard n <= 1 << 63 else { throw err(idToken, "message id -\(n) is out of range") }
                m.id = 0 &- n
                m.idNegative = idToken
            } else {
                m.id = n
            }
        }
        // `Message LoginReq = 1 c2s { ... }`: a direction for a name that does not carry one,
        // so a request and its response can share an id under their real names.
        if case .ident(let w) = tok.kind, ["c2s", "s2c"].contains(w.lowercased()) {
            let wt = next()
            let d: Direction = w.lowercased() == "c2s" ? .c2s : .s2c
            if let named = m.direction, named != d {
                throw err(wt, "'\(name)' is named as \(named == .c2s ? "client → server (Cs_)" : "server → client (Sc_)"): '\(w)' contradicts it")
            }
            m.direction = d
        }
        try messagePhases(&m)
        // `Message LoginReply answers LoginReq by seq { ... }`: typed by the request it answers.
        if case .ident(let w) = tok.kind, w.lowercased() == "answers" {
            _ = next()
            let request = try ident("the request's message name")
            guard case .ident(let b) = tok.kind, b.lowercased() == "by" else {
                throw err(tok, "expected 'by FIELD' after '\(request.0)' (the request's field whose value the reply's header carries)")
            }
            _ = next()
            let field = try ident("the request's field that the reply carries")
            let reply = accept("=") ? try ident("the reply's header field that carries the request's \(field.0)") : field
            m.answers = (request, field, reply)
            if m.phases == nil { try messagePhases(&m) }
        }
        // `Message NAME = ID : pkg.Type;`: the body is that protobuf message.
        if accept(":") {
            let (type, tt) = try ident("a protobuf message type (package.Message)")
            m.protoType = (type, tt)
            endStatement("message '\(name)'")
            protocols[pi].messages.append(m)
            return
        }
        // The nearest whole-line comment above, written like `// ===== Title =====`.
        let lex = lexers[start.file]
        var l = start.line - 1
        while l >= 1 && lex.lines[l - 1].trimmingSpaces.isEmpty { l -= 1 }
        if let c = lex.comments[l], c.wholeLine, MessageNaming.isTitle(c.text) {
            let title = c.text.trimmingCharacters(in: "=-*# ")
            if !title.isEmpty { m.title = title }
        }
        let open = tok
        try expect("{")
        // Kept even when a field has an error, so the messages that use it do not report more.
        defer { protocols[pi].messages.append(m) }
        while !accept("}") {
            if let e = unclosed(open, "message '\(name)'") { throw e }
            do throws(DissectorError) {
                let f = try parseField(pi)
                m.fields.append(f)
                endStatement("field '\(f.name)'")
            } catch {
                diagnostics.add(error)
                skipStatement()
            }
        }
    }

    mutating func parseField(_ pi: Int) throws(DissectorError) -> PendingField {
        let (typeName, tt) = try ident("a field type")
        var f = PendingField(typeName: typeName, token: tt)
        if accept("(") {
            f.param = tok
            _ = next()
            try expect(")")
        }
        if accept("[") {
            f.array = tok
            _ = next()
            // `Field[until type == 0] fields`: elements up to the one whose field passes the test.
            if case .ident(let w) = f.array!.kind, w.lowercased() == "until" { f.until = try condition() }
            try expect("]")
        }
        let (name, _) = try ident("a field name")
        f.name = name
        if accept("=") { f.tag = Int(try number("a field number")) }
        // `[hex]` on an integer; `[text]` on bytes that are often text; `[info]`: on the summary line.
        while at("[") {
            let a = try displayAttribute(allowText: true)
            guard case .ident(let w) = a.kind else { continue }
            switch w.lowercased() {
            case "text": f.text = a
            case "info": f.info = a
            default: f.hex = a
            }
        }
        if case .ident(let w) = tok.kind, w.lowercased() == "when" {
            _ = next()
            f.when = try condition()
        }
        let lex = lexers[tt.file]
        f.description = lex.comments[tt.line].flatMap { $0.wholeLine ? nil : $0.text }
        return f
    }

    /// `{ compressed = 0x01; codec = 0x0c; }` after a header field: named groups of its bits.
    mutating func bitFields(_ f: HeaderField, _ type: String) throws(DissectorError) -> [BitField] {
        let open = tok
        try expect("{")
        var out: [BitField] = []
        let top: UInt64 = f.width >= 8 ? .max : (1 << UInt64(f.width * 8)) - 1
        while !accept("}") {
            if let e = unclosed(open, "the bit fields of '\(f.name)'") { throw e }
            let (name, nt) = try ident("a bit field name")
            try expect("=")
            let mt = tok
            let (mask, negative) = try bits("the bit field's mask")
            if negative || mask == 0 || mask & top != mask {
                throw err(mt, "mask 0x\(String(mask, radix: 16)) is not within the \(f.width * 8) bits of \(type) '\(f.name)'")
            }
            // A mask must be one run of bits, or its value would not be a number.
            let shifted = mask >> UInt64(mask.trailingZeroBitCount)
            if shifted & (shifted &+ 1) != 0 {
                throw err(mt, "mask 0x\(String(mask, radix: 16)) is not one run of bits (give each run its own name)")
            }
            if out.contains(where: { $0.name == name }) { throw err(nt, "bit field '\(name)' is declared twice") }
            if let other = out.first(where: { $0.mask & mask != 0 }) {
                throw err(mt, "mask 0x\(String(mask, radix: 16)) overlaps '\(other.name)' (0x\(String(other.mask, radix: 16)))")
            }
            out.append(BitField(name: name, mask: mask, nameBytes: Array(name.utf8)))
            _ = accept(";") || accept(",")
        }
        if out.isEmpty { throw err(open, "a bit field block needs at least one NAME = MASK") }
        return out
    }

    /// `[hex]` after a field: how its value is shown. Returns where it was written.
    mutating func displayAttribute(allowText: Bool = false) throws(DissectorError) -> Token {
        try expect("[")
        let (a, at) = try ident(allowText ? "a display attribute ('hex', 'text', 'info')" : "a display attribute ('hex')")
        guard a.lowercased() == "hex" || allowText && ["text", "info"].contains(a.lowercased()) else {
            throw err(at, "unknown display attribute '\(a)' (expected 'hex'\(allowText ? ", 'text' or 'info'" : ""))")
        }
        try expect("]")
        return at
    }

    // MARK: - Enum NAME [: Uint8] { LABEL = N; }

    mutating func parseEnum(_ start: Token) throws(DissectorError) {
        let pi = try currentProtocol(start)
        let (name, nt) = try ident("an enum name")
        try countMessage(nt)
        var base = IntegerType(width: 1, signed: false, order: protocols[pi].schema.order)
        if accept(":") {
            let (b, bt) = try ident("an integer type")
            guard let it = IntegerType.parse(b, default: protocols[pi].schema.order) else {
                throw err(bt, "an enum's type must be an integer type such as Uint8 or Int32")
            }
            base = it
        }
        let open = tok
        try expect("{")
        var labels: [Int64: String] = [:]
        while !accept("}") {
            if let e = unclosed(open, "enum '\(name)'") { throw e }
            do throws(DissectorError) {
                let (label, _) = try ident("a label")
                try expect("=")
                let vt = tok
                let (v, negative) = try bits("the label's value")
                // A value the enum's type cannot hold never appears on the wire.
                if base.width < 8 {
                    let n = UInt64(base.width * 8)
                    let hi: UInt64 = base.signed ? (1 << (n - 1)) - 1 : (1 << n) - 1
                    let loMagnitude: UInt64 = base.signed ? 1 << (n - 1) : 0
                    if negative ? (0 &- v) > loMagnitude : v > hi {
                        throw err(vt, "\(negative ? "-\(0 &- v)" : "\(v)") does not fit in enum '\(name)' (\(base.signed ? "int" : "uint")\(n): \(base.signed ? "-\(loMagnitude)" : "0") to \(hi))")
                    }
                } else if negative && !base.signed {
                    throw err(vt, "enum '\(name)' is unsigned: a label's value cannot be negative")
                }
                labels[Int64(bitPattern: v)] = label
                if !accept(",") { endStatement("label '\(label)'") }
            } catch {
                diagnostics.add(error)
                skipStatement()
            }
        }
        if protocols[pi].enums.contains(where: { $0.name.lowercased() == name.lowercased() }) {
            throw err(nt, "enum '\(name)' is declared twice")
        }
        protocols[pi].enums.append(EnumDef(name: name, base: FieldTypeBase(width: base.width, signed: base.signed, order: base.order), labels: labels))
    }
}

/// `Cs_20001` → client-to-server id 20001; `Sc_N`/`SC_N` → server-to-client.
enum MessageNaming {
    /// A banner comment such as `============ Switch to a new scenario ==============`.
    static func isTitle(_ text: String) -> Bool {
        for mark in ["===", "---", "***", "###"] where text.hasPrefix(mark) && text.hasSuffix(mark) { return true }
        return false
    }

    static func parse(_ name: String) -> (direction: Direction, id: UInt64)? {
        let l = name.lowercased()
        guard l.count > 3 else { return nil }
        let prefix = l.prefix(3)
        let d: Direction
        if prefix == "cs_" { d = .c2s } else if prefix == "sc_" { d = .s2c } else { return nil }
        guard let id = UInt64(l.dropFirst(3)) else { return nil }
        return (d, id)
    }
}

struct IntegerType {
    var width: Int
    var signed: Bool
    var order: ByteOrder

    /// `uint8`, `Uint32`, `u16`, `int64le`, `uint24be`, ... (any case).
    static func parse(_ s: String, default order: ByteOrder) -> IntegerType? {
        var l = s.lowercased()
        var o = order
        if l.hasSuffix("le") { o = .little; l.removeLast(2) } else if l.hasSuffix("be") { o = .big; l.removeLast(2) }
        let signed: Bool
        if l.hasPrefix("uint") { signed = false; l.removeFirst(4) }
        else if l.hasPrefix("int") { signed = true; l.removeFirst(3) }
        else if l.hasPrefix("u") { signed = false; l.removeFirst(1) }
        else if l.hasPrefix("i") { signed = true; l.removeFirst(1) }
        else { return nil }
        switch l {
        case "8": return IntegerType(width: 1, signed: signed, order: o)
        case "16": return IntegerType(width: 2, signed: signed, order: o)
        case "24": return IntegerType(width: 3, signed: signed, order: o)
        case "32": return IntegerType(width: 4, signed: signed, order: o)
        case "64": return IntegerType(width: 8, signed: signed, order: o)
        default: return nil
        }
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}

extension Direction {
    /// `c2s` or `s2c` in a dissector file (any case).
    init?(keyword: String) {
        switch keyword.lowercased() {
        case "c2s": self = .c2s
        case "s2c": self = .s2c
        default: return nil
        }
    }
}
