/// Parsed but not yet resolved: names of types, fields and header fields still text.
struct PendingField {
    var typeName: String
    var token: Token
    var param: Token?
    var array: Token?
    var name = ""
    var tag: Int?
    var description: String?
    /// `[hex]` after the field: where it was written, for an error on a field that is no integer.
    var hex: Token?
    /// `[text]` after a bytes field.
    var text: Token?
    /// `[info]`: the field's value on the message's summary line.
    var info: Token?
    /// `when TEST`: the field is on the wire only when the test holds.
    var when: PendingCondition?
    /// `Item[until TEST] items`: the test on an element's field that ends the array.
    var until: PendingCondition?
}

struct PendingMessage {
    var name: String
    var line: Int
    var token: Token
    var title: String?
    var id: UInt64?
    var direction: Direction?
    var fields: [PendingField] = []
    /// `Message NAME = ID : pkg.Type;`: the protobuf type of its body.
    var protoType: (String, Token)?
    /// `= -1`: where the negative id was written (it needs a signed id field).
    var idNegative: Token?
    /// `= 3:7`: where the pair was written (it needs `message_id = cmd, sub;`).
    var idPair: Token?
    /// `= *`: the message of a frame whose id names no other (where the `*` was written).
    var otherwise: Token?
    /// `answers REQUEST by FIELD [= HEADER_FIELD]`, names still text.
    var answers: (request: (String, Token), field: (String, Token), reply: (String, Token))?
    /// `in auth, command`: the phases it is a message of, names still text.
    var phases: [(String, Token)]?
}

/// `phase NAME [midstream];` and `phase FROM -> TO after M, N;`, names still text.
struct PendingPhases {
    var names: [(name: String, token: Token, midstream: Token?)] = []
    var switches: [(from: (String, Token)?, to: (String, Token), after: [(String, Token)], count: (String, Token)?, when: PendingCondition?)] = []
}

struct PendingProtocol {
    var schema: ProtocolSchema
    var line = 0
    var token: Token?
    var lengthExpr: [(String?, Int64, Bool, Token)] = []
    var lengthToken: Token?
    var lengthWholeFrame = true
    var idName: (String, Token)?
    /// `message_id = cmd, sub;`: the second id field.
    var idName2: (String, Token)?
    /// `message_id c2s = type; message_id s2c = xid;`: a direction's own id field.
    var directionIDNames: [Direction: (String, Token)] = [:]
    /// A setting of the block had an error: what seems missing may be what was misspelt.
    var hadErrors = false
    var messages: [PendingMessage] = []
    var enums: [EnumDef] = []
    /// Protobuf bodies and encryption (see ProtoBinding.swift).
    var proto = PendingProto()
    /// `pair A -> B [by F [= G]];`, names still text.
    var pairs: [PendingPair] = []
    /// `pair_by F [= G];`: where F and G were written (nil: no pair_by, or pair_by id).
    var pairByTokens: (request: Token, response: Token)?
    /// Every `header` block and `first` block, in order.
    var headerBlocks: [PendingHeaderBlock] = []
    var phases = PendingPhases()
}

/// `header { }`, `header c2s { }` or `first s2c { ... }`, names still text.
struct PendingHeaderBlock {
    /// nil: every direction's header.
    var direction: Direction?
    var first: Bool
    var token: Token
    var fields: [HeaderField] = []
    /// Each field's index in the protocol's header (the union).
    var global: [Int] = []
    var lengthExpr: [(String?, Int64, Bool, Token)] = []
    var lengthToken: Token?
    var lengthWholeFrame = true
    var message: (String, Token)?
    /// A first frame's `message NAME when TEST;` lines, in order.
    var choices: [(String, Token, PendingCondition)] = []
    /// `again after NAME;` and `first s2c after NAME { }`.
    var again: [(String, Token)] = []
    var after: [(String, Token)]?
    /// `header text { }`: the header of a layer's text messages.
    var text = false

    init(direction: Direction?, first: Bool, token: Token) {
        self.direction = direction
        self.first = first
        self.token = token
    }
}

struct PendingPair {
    var request: (String, Token)
    var response: (String, Token)
    var by: (String, Token)?
    var answer: (String, Token)?
}

/// Turns names into indices and checks that everything refers to something real.
struct Resolver {
    let lexers: [Lexer]
    var options = LoadOptions()

    func err(_ t: Token, _ m: String) -> DissectorError { lexers[t.file].error(t.line, t.column, m) }

    /// One protocol, every error found in it reported (thrown together).
    func resolve(_ p: PendingProtocol) throws(DissectorError) -> ProtocolSchema {
        var errors = Diagnostics()
        var s = p.schema
        // `--max-frame` is a ceiling over every file's max_frame.
        s.maxFrame = min(s.maxFrame, options.limits.maxFrame)
        do throws(DissectorError) { try resolveLength(p, &s) } catch { errors.add(error) }
        resolveRest(p, &s, &errors)
        let at = p.token ?? Token(kind: .end, line: p.line, column: 1)
        // A body kind that brings its messages (the text body's, for a layer's text messages).
        for kind in [s.body.kind, s.textBody.kind] {
            if let m = kind.define(&s) { errors.add(err(at, "protocol '\(s.name)': " + m)) }
        }
        // What the transport and the layers need of the protocol.
        if s.udp && s.anyPort { errors.add(err(at, "protocol '\(s.name)': UDP flows are chosen by port ('udp port N;'), not by any_port")) }
        for k in LayerRegistry.kinds { if let m = k.check(s) { errors.add(err(at, "protocol '\(s.name)': " + m)) } }
        if let k = FramingRegistry.kind(of: s), let m = k.check(s) { errors.add(err(at, "protocol '\(s.name)': " + m)) }
        try errors.check()
        return s
    }

    /// `frame_length` / `body_length`.
    func resolveLength(_ p: PendingProtocol, _ s: inout ProtocolSchema) throws(DissectorError) {
        // Over a layer that cuts messages a message is a frame already: a length rule
        // is only for a stream tunnelled inside them.
        if p.lengthToken == nil && !s.overLayers.isEmpty { return }
        // Another framing kind says where a frame ends (checked with the protocol).
        if p.lengthToken == nil && FramingRegistry.kind(of: s) != nil { return }
        // `frame_length = message;`: no expression (the kind checks the rest).
        if p.lengthExpr.isEmpty && ConsumedFraming.chosen(by: s) { return }
        guard let lt = p.lengthToken else {
            if p.hadErrors { return }
            throw err(p.token ?? Token(kind: .end, line: p.line, column: 1),
                      "protocol '\(s.name)' needs 'frame_length = FIELD;', 'body_length = FIELD;' or another way to end a frame (" + FramingRegistry.kinds.flatMap { $0.keywords }.joined(separator: ", ") + ")")
        }
        var terms: [(field: Int?, constant: Int64, negative: Bool)] = []
        for (name, c, neg, t) in p.lengthExpr {
            if let name {
                guard let i = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) else {
                    throw err(t, "'\(name)' is not a header field" + s.headerFieldHint(name))
                }
                terms.append((i, 0, neg))
            } else {
                terms.append((nil, c, neg))
            }
        }
        s.length = LengthRule(terms: terms, countsWholeFrame: p.lengthWholeFrame)
        // A length made of constants only is the same for every frame: it must leave room for
        // the header, take at least one byte (or the deframer would never move), and fit max_frame.
        // (Headers that differ are each checked by `resolveVariants`.)
        if !terms.contains(where: { $0.field != nil }) && !p.headerBlocks.contains(where: { $0.direction != nil }) {
            let sum = terms.reduce(Int64(0)) { $0 &+ ($1.negative ? -$1.constant : $1.constant) }
            let total = p.lengthWholeFrame ? sum : sum &+ Int64(s.headerSize)
            let least = max(s.headerSize, 1)
            guard total >= Int64(least) && total <= Int64(s.maxFrame) else {
                throw err(lt, "the frame length is always \(total) bytes: it must be at least \(least) (the header, and one byte) and at most max_frame \(s.maxFrame)")
            }
        }
    }

    /// The message id, enums and messages; each error is recorded and the next thing checked.
    func resolveRest(_ p: PendingProtocol, _ s: inout ProtocolSchema, _ errors: inout Diagnostics) {
        if let (whole, t) = p.idName {
            // `message_id = flags.type;`: a named bit group of a header field.
            let parts = whole.split(separator: ".", maxSplits: 1).map(String.init)
            let name = parts[0]
            if let i = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) {
                s.idField = i
                if parts.count == 2 {
                    if let b = s.header[i].bits.first(where: { $0.name == parts[1] }) {
                        s.idBits = b
                    } else {
                        let named = s.header[i].bits.map { "'\($0.name)'" }.joined(separator: ", ")
                        errors.add(err(t, "header field '\(name)' has no bit field '\(parts[1])'" + (named.isEmpty ? " (it declares none: 'uint8 \(name) { \(parts[1]) = 0xf0; }')" : " (it has \(named))")))
                    }
                }
            } else {
                errors.add(err(t, "'\(name)' is not a header field" + s.headerFieldHint(name)))
            }
        }
        s.enums = p.enums
        resolveIDPair(p, &s, &errors)
        // `message_id s2c = xid;`: a direction's own id field.
        var directionIDs: [Direction: Int] = [:]
        for d in Direction.allCases {
            guard let (name, t) = p.directionIDNames[d] else { continue }
            if let i = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) {
                directionIDs[d] = i
            } else {
                errors.add(err(t, "'\(name)' is not a header field" + s.headerFieldHint(name)))
            }
        }
        // An id the id field cannot hold is never on the wire: a message that never matches.
        var signedIDs: Set<Direction> = []
        for d in Direction.allCases where s.idField2 == nil || directionIDs[d] != nil {
            guard let i = directionIDs[d] ?? s.idField else { continue }
            let h = s.header[i]
            let idBits = directionIDs[d] == nil ? s.idBits : nil
            if h.signed && idBits == nil { signedIDs.insert(d) }
            let bits = UInt64(min(64, h.isVarint ? h.varintMax * 7 : h.width * 8))
            var top: UInt64 = bits >= 64 ? (h.signed ? UInt64(Int64.max) : .max) : h.signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1
            var what = "the \(bits)-bit id field '\(h.name)'"
            if let b = idBits {
                top = b.mask >> b.shift
                what = "the id bits '\(h.name).\(b.name)' (mask 0x\(String(b.mask, radix: 16)))"
            }
            let signed = h.signed && idBits == nil
            let least: Int64 = !signed ? 0 : bits >= 64 ? .min : -(1 << Int64(bits - 1))
            for m in p.messages where m.direction == nil || m.direction == d {
                guard let id = m.id, m.idPair == nil else { continue }
                if let nt = m.idNegative {
                    if !signed {
                        errors.add(err(nt, "message id \(Int64(bitPattern: id)) is negative, but \(what) is unsigned (a negative id needs a signed field: int8..int64, svarint)"))
                    } else if Int64(bitPattern: id) < least {
                        errors.add(err(nt, "message id \(Int64(bitPattern: id)) does not fit in \(what) (at least \(least))"))
                    }
                } else if id > top {
                    errors.add(err(m.token, "message id \(id) does not fit in \(what) (at most \(top))"))
                }
            }
        }
        // Messages first by name, so fields can refer to messages declared later.
        var byName: [String: Int] = [:]
        for (i, m) in p.messages.enumerated() {
            if byName[m.name.lowercased()] != nil { errors.add(err(m.token, "message '\(m.name)' is declared twice")); continue }
            byName[m.name.lowercased()] = i
        }
        var enumsByName: [String: Int] = [:]
        for (i, e) in p.enums.enumerated() { enumsByName[e.name.lowercased()] = i }

        let phaseIndex = resolvePhaseNames(p, &s, &errors)
        var fieldTokens: [[Token]] = []
        // `Item[until TEST]` and `when parent.F`: name fields of other messages, read once all are.
        var untils: [(message: Int, field: Int, test: PendingCondition)] = []
        var parents: [(message: Int, field: Int, test: PendingCondition)] = []
        for (mi, m) in p.messages.enumerated() {
            var fields: [FieldDef] = []
            var tokens: [Token] = []
            var infoField: Int?
            for pf in m.fields {
                do throws(DissectorError) {
                    // (Kept for the resolving after all messages only once the field is: a field
                    // refused below must leave no index behind, or it names another field or none.)
                    var until: PendingCondition?, parent: PendingCondition?, info = false
                    var fd = FieldDef(name: pf.name, type: .bool, array: nil, tag: pf.tag, description: pf.description,
                                      labels: nil, nameBytes: Array(pf.name.utf8))
                    fd.type = try fieldType(pf, schema: s, messages: byName, enums: enumsByName, earlier: fields,
                                            names: { p.messages.map(\.name) + p.enums.map(\.name) })
                    if case .enumeration(let ei, _) = fd.type { fd.labels = s.enums[ei].labels }
                    if let h = pf.hex {
                        guard fd.type.isInteger else { throw err(h, "[hex] shows an integer in hex: '\(pf.name)' is not an integer field") }
                        // The printers show an array's elements in decimal: say so rather than ignore it.
                        guard pf.array == nil else { throw err(h, "[hex] is for a single integer field; '\(pf.name)' is an array (its elements are shown in decimal)") }
                        fd.hex = true
                    }
                    if let t = pf.info {
                        guard pf.array == nil, !{ if case .message = fd.type { return true }; return false }() else {
                            throw err(t, "[info] shows a value on the message's summary line: '\(pf.name)' is an array or a message")
                        }
                        if let other = infoField { throw err(t, "'\(m.name)' already shows '\(fields[other].name)' on its summary line") }
                        info = true
                    }
                    if let t = pf.text {
                        guard case .bytes = fd.type else { throw err(t, "[text] shows bytes as a string when they are UTF-8 text: '\(pf.name)' is not a Bytes field") }
                        fd.text = true
                    }
                    if let u = pf.until {
                        guard case .message = fd.type else {
                            throw err(pf.array!, "'until' tests a field of each element: the elements of '\(pf.name)' must be messages")
                        }
                        // (The element's fields may be declared further down: resolved after all.)
                        fd.array = .until(TransformCondition(field: -1))
                        until = u
                    } else if let a = pf.array {
                        fd.array = try arrayCount(a, earlier: fields, schema: s)
                    }
                    if let w = pf.when {
                        guard s.body.kind.readsConditions else {
                            throw err(w.token, "'when' is not read under body \(s.body.rawValue): its fields are not read in their declared layout, so '\(pf.name)' cannot be left out (declare it without 'when')")
                        }
                        fd.condition = try fieldCondition(w, s, earlier: fields)
                        if fd.condition?.parent != nil { parent = w }
                    }
                    if s.labelsFromComments, fd.labels == nil, let d = pf.description, fd.type.isInteger {
                        let l = CommentLabels.parse(d)
                        if !l.isEmpty { fd.labels = l }
                    }
                    if fields.contains(where: { $0.name == pf.name }) {
                        throw err(pf.token, "field '\(pf.name)' is declared twice in '\(m.name)'")
                    }
                    if let u = until { untils.append((mi, fields.count, u)) }
                    if let w = parent { parents.append((mi, fields.count, w)) }
                    if info { infoField = fields.count }
                    fields.append(fd)
                    tokens.append(pf.token)
                } catch {
                    errors.add(error)
                }
            }
            s.messages.append(MessageDef(name: m.name, title: m.title, id: m.id, direction: m.direction,
                                         fields: fields, nameBytes: Array(m.name.utf8), line: m.line))
            s.messages[s.messages.count - 1].idSigned = m.id != nil && m.idPair == nil && !signedIDs.isDisjoint(with: m.direction.map { [$0] } ?? Direction.allCases)
            s.messages[s.messages.count - 1].idPair = m.idPair != nil
            s.messages[s.messages.count - 1].infoField = infoField
            let inPhases = messagePhases(m, phaseIndex, &errors)
            s.messages[s.messages.count - 1].phases = inPhases
            if let st = m.otherwise {
                s.messages[s.messages.count - 1].otherwise = true
                if s.idField == nil && p.directionIDNames.isEmpty {
                    errors.add(err(st, "'\(m.name) = *' is the message of an id no other names: the protocol needs a message_id"))
                }
                if !s.phases.isEmpty {
                    enterPhased(otherwiseOf: mi, m, st, inPhases, &s, &errors)
                } else {
                    for d in m.direction.map({ [$0] }) ?? Direction.allCases {
                        if let other = s.otherwise[d] {
                            errors.add(err(st, "'\(s.messages[other].name)' is already the message of any other \(d.name) id"))
                            break
                        }
                        s.otherwise[d] = mi
                    }
                }
            }
            fieldTokens.append(tokens)
            if let id = m.id {
                if !s.phases.isEmpty {
                    enterPhased(id: id, mi, m, inPhases, &s, &errors)
                } else {
                    for d in m.direction.map({ [$0] }) ?? Direction.allCases {
                        if let other = s.byID[d]?[id] {
                            errors.add(err(m.token, "message id \(id) (\(d.name)) is already used by '\(s.messages[other].name)'"))
                            break
                        }
                        s.byID[d]?[id] = mi
                    }
                }
            }
        }
        resolvePhaseSwitches(p, &s, byName: byName, phaseIndex, &errors)
        resolveUntils(untils, &s, &errors)
        resolveParents(parents, &s, &errors)
        // An array whose elements can take no bytes would let a count from the packet make the
        // decoder produce that many fields from nothing: refused here, so it cannot happen.
        var widths = MinimumWidths(s)
        for (mi, m) in s.messages.enumerated() {
            for (fi, f) in m.fields.enumerated() where f.array != nil && widths.of(f.type) == 0 && !widths.mayTakeBytes(f.type) {
                errors.add(err(fieldTokens[mi][fi], "array '\(f.name)' of elements that can take no bytes (an empty message, Bytes(0), rest): its count could make fields out of nothing"))
            }
        }
        for e in MessageCycles.find(in: s, fieldTokens: fieldTokens, error: err) { errors.add(e) }
        resolvePairs(p, &s, byName: byName, &errors)
        resolveAnswers(p, &s, byName: byName, &errors)
        do throws(DissectorError) { try attachProto(p, to: &s) } catch { errors.add(error) }
        resolveVariants(p, &s, byName: byName, directionIDs: directionIDs, &errors)
        resolveDefaultMessage(p, &s, &errors)
    }

    /// `pair A -> B [by F [= G]];`: both messages declared, each in one pair at most, the fields
    /// named in the header or among the message's own (top-level) fields.
    func resolvePairs(_ p: PendingProtocol, _ s: inout ProtocolSchema, byName: [String: Int], _ errors: inout Diagnostics) {
        var taken: [Int: Token] = [:]
        for pp in p.pairs {
            var ok = true
            var ends: [Int] = []
            for (name, t) in [pp.request, pp.response] {
                guard let mi = byName[name.lowercased()] else {
                    errors.add(err(t, "unknown message '\(name)' in pair" + Self.suggestion(name, p.messages.map(\.name))))
                    ok = false
                    continue
                }
                if taken[mi] != nil {
                    errors.add(err(t, "message '\(s.messages[mi].name)' is already in a pair (a message is the request or the response of one pair)"))
                    ok = false
                }
                ends.append(mi)
            }
            guard ok, ends.count == 2 else { continue }
            if ends[0] == ends[1] && pp.by == nil {
                errors.add(err(pp.response.1, "'\(pp.request.0)' cannot answer itself in order (pair it by a field: 'by seq = ackSeq')"))
                continue
            }
            var spec = PairSpec(request: ends[0], response: ends[1])
            if let (f, ft) = pp.by {
                let g = pp.answer ?? (f, ft)
                for (mi, (name, t)) in [(ends[0], (f, ft)), (ends[1], g)] {
                    let m = s.messages[mi]
                    if !s.header.contains(where: { $0.name == name && !$0.isPadding }) && !m.fields.contains(where: { $0.name == name }) {
                        let names = s.header.filter { !$0.isPadding }.map(\.name) + m.fields.map(\.name)
                        errors.add(err(t, "'\(name)' is neither a header field nor a field of '\(m.name)'" + Self.suggestion(name, names)))
                        ok = false
                    }
                }
                spec.requestField = f
                spec.responseField = g.0
            }
            guard ok else { continue }
            taken[ends[0]] = pp.request.1
            taken[ends[1]] = pp.response.1
            s.pairs.append(spec)
        }
        // `pair_by F [= G];`: each name a header field or a top-level field of some message
        // (a message without it takes no part; a name nothing has would pair nothing, silently).
        if case .field(let q, let r)? = s.pairBy, let (qt, rt) = p.pairByTokens {
            let schema = s
            func has(_ name: String) -> Bool {
                schema.header.contains { $0.name == name && !$0.isPadding } || schema.messages.contains { $0.fields.contains { $0.name == name } }
            }
            for (name, t) in q == r ? [(q, qt)] : [(q, qt), (r, rt)] where !has(name) {
                let names = s.header.filter { !$0.isPadding }.map(\.name) + s.messages.flatMap { $0.fields.map(\.name) }
                errors.add(err(t, "pair_by '\(name)': no header field and no message's field has that name (pairing reads a header field or a top-level field a message declares)"
                    + Self.suggestion(name, names)))
            }
        }
    }

    /// `answers REQUEST by FIELD [= HEADER_FIELD]`: the request declared, with a direction (the
    /// reply comes the other way); the reply with no id of its own (it is typed by its request,
    /// not by an id); the key an integer: a header field or field of the request, and a header
    /// field of the reply (read before the body it types); one reply type per request.
    func resolveAnswers(_ p: PendingProtocol, _ s: inout ProtocolSchema, byName: [String: Int], _ errors: inout Diagnostics) {
        var answered: [Int: String] = [:]
        for (mi, pm) in p.messages.enumerated() {
            guard let a = pm.answers, mi < s.messages.count else { continue }
            guard s.idField != nil || !p.directionIDNames.isEmpty else {
                errors.add(err(a.request.1, "'\(pm.name)' answers a request, which needs a message_id for the other messages (a reply is what no id names)"))
                continue
            }
            let (name, t) = a.request
            guard let ri = byName[name.lowercased()] else {
                errors.add(err(t, "unknown message '\(name)' after answers" + Self.suggestion(name, p.messages.map(\.name))))
                continue
            }
            let request = s.messages[ri]
            if pm.id != nil {
                errors.add(err(pm.token, "'\(pm.name)' answers '\(request.name)': it is typed by that request, so it takes no id of its own"))
                continue
            }
            guard let dir = request.direction else {
                errors.add(err(t, "'\(request.name)' has no direction, so its replies have none: declare it c2s or s2c (Message \(request.name) = ID c2s)"))
                continue
            }
            if let other = answered[ri] {
                errors.add(err(t, "'\(request.name)' is already answered by '\(other)' (one reply type per request)"))
                continue
            }
            let integers = s.header.enumerated().filter { !$0.element.isPadding }
            let (f, ft) = a.field
            let inHeader = integers.contains { $0.element.name == f }
            let inRequest = request.fields.contains { $0.name == f && $0.type.isInteger && $0.array == nil && $0.condition == nil }
            if !inHeader && !inRequest {
                errors.add(err(ft, "'\(f)' is neither a header field nor an integer field of '\(request.name)' (the key its reply carries)"
                               + Self.suggestion(f, integers.map(\.element.name) + request.fields.map(\.name))))
                continue
            }
            let (g, gt) = a.reply
            guard let hi = integers.first(where: { $0.element.name == g })?.offset else {
                errors.add(err(gt, "'\(g)' is not a header field: a reply's key is read from its header, before the body it types"
                               + Self.suggestion(g, integers.map(\.element.name))))
                continue
            }
            answered[ri] = pm.name
            s.messages[mi].answers = AnswersRule(request: ri, replyDirection: dir == .c2s ? .s2c : .c2s, requestField: f, replyHeader: hi)
            s.messages[mi].direction = dir == .c2s ? .s2c : .c2s
            s.replies.append(mi)
        }
    }

    /// `: did you mean 'X'?` for a close name, else nothing.
    static func suggestion(_ name: String, _ names: [String]) -> String {
        let lower = name.lowercased()
        let close = names.filter { n in
            let l = n.lowercased()
            return l.hasPrefix(lower.prefix(3)) || lower.hasPrefix(l.prefix(3)) && abs(l.count - lower.count) <= 2
        }
        return close.isEmpty ? "" : " (did you mean '\(close[0])'?)"
    }

    /// Frames without an id are all one message: with no `message_id`, the message declared
    /// without an id that no field nests (`Message Envelope : pkg.Envelope;`, `Message Line { }`).
    /// With ids, a protobuf binding without one would never apply: an error, not a quiet no-op.
    func resolveDefaultMessage(_ p: PendingProtocol, _ s: inout ProtocolSchema, _ errors: inout Diagnostics) {
        var nested = Set<Int>()
        for m in s.messages { for f in m.fields { if case .message(let i) = f.type { nested.insert(i) } } }
        // (A first frame's message is named by its block.)
        for v in s.variants { if let m = v.message { nested.insert(m) } }
        let candidates = p.messages.indices.filter { p.messages[$0].id == nil && p.messages[$0].direction == nil && !nested.contains($0) }
        if s.idField != nil || s.hasMessageIDs {
            for i in candidates {
                guard let (_, t) = p.messages[i].protoType else { continue }
                errors.add(err(t, "'\(p.messages[i].name)' has no id, so no frame would be decoded with it: give it one (Message \(p.messages[i].name) = ID : ...), or leave out message_id so that every frame is one"))
            }
            return
        }
        guard !candidates.isEmpty else { return }
        guard candidates.count == 1 else {
            let names = candidates.map { "'\(p.messages[$0].name)'" }.joined(separator: ", ")
            errors.add(err(p.messages[candidates[1]].token, "protocol '\(s.name)' has no message_id, so one message is every frame; \(names) are each declared without an id and nested in no other (nest the others in it, or give ids with a message_id)"))
            return
        }
        s.defaultMessage = candidates[0]
    }

    func fieldType(_ pf: PendingField, schema s: ProtocolSchema, messages: [String: Int],
                   enums: [String: Int], earlier: [FieldDef] = [], names: () -> [String] = { [] }) throws(DissectorError) -> FieldType {
        let l = pf.typeName.lowercased()
        // A size on a type whose size is its own (`Uint8(3)`) would be ignored: refused.
        func sized(_ t: FieldType) throws(DissectorError) -> FieldType {
            if let p = pf.param {
                throw err(p, "\(pf.typeName) has a size of its own: it takes no (...) (String(N), Bytes(N) and Varint(N) do)")
            }
            return t
        }
        if let it = IntegerType.parse(pf.typeName, default: s.order) {
            return try sized(it.signed ? .signed(width: it.width, order: it.order) : .unsigned(width: it.width, order: it.order))
        }
        switch l {
        // The order suffix is matched whole: "double" itself ends in "le".
        case "float", "float32": return try sized(.float32(s.order))
        case "floatle", "float32le": return try sized(.float32(.little))
        case "floatbe", "float32be": return try sized(.float32(.big))
        case "double", "float64": return try sized(.float64(s.order))
        case "doublele", "float64le": return try sized(.float64(.little))
        case "doublebe", "float64be": return try sized(.float64(.big))
        case "bool", "boolean": return try sized(.bool)
        case _ where VarintName(l) != nil:
            // `Varint(4)`: at most 4 bytes, as in a header (the one list of names: VarintName).
            var v = VarintName(l)!
            if let t = pf.param {
                guard case .number(let n) = t.kind, VarintName.sizes.contains(Int(clamping: n)), v.takesSize else {
                    throw err(t, "\(pf.typeName)(N) takes the most bytes the varint may have, 1 to 10")
                }
                v.maxBytes = Int(n)
            }
            return .varint(signed: v.signed, maxBytes: v.maxBytes)
        case "decimal", "ascii":
            // `Decimal(crlf)`: digits up to a delimiter, which must be said.
            guard let t = pf.param, let d = Self.delimiter(t) else {
                throw err(pf.param ?? pf.token, "\(pf.typeName) needs the bytes that end it: Decimal(crlf), Decimal(lf) or Decimal(\"BYTES\")")
            }
            return .decimal(delimiter: d)
        case "string": return .string(try rule(pf, default: s.strings, earlier: earlier, schema: s))
        case "bytes", "binary": return .bytes(try rule(pf, default: .rest, earlier: earlier, schema: s))
        default: break
        }
        if let e = enums[l] { return try sized(.enumeration(e, base: s.enums[e].base)) }
        if let m = messages[l] { return try sized(.message(m)) }
        let known = ProtocolSchema.builtinTypeNames + names()
        let hint = DidYouMean.hint(pf.typeName, known)
        throw err(pf.token, "unknown type '\(pf.typeName)'" + (hint.isEmpty ? " (not a built-in type, message or enum)" : hint))
    }

    /// `when TEST` after a field: a header field or bit group (as a transform's `when`), or an
    /// earlier integer field of the same message (`String(u16) user when flags & 0x80;`).
    func fieldCondition(_ c: PendingCondition, _ s: ProtocolSchema, earlier: [FieldDef]) throws(DissectorError) -> FieldCondition {
        // `parent.etype`: a field of the message this one is nested in (resolveParents names it),
        // unless the header has a field named `parent` whose bit field this is.
        if c.field.lowercased().hasPrefix("parent."), !s.header.contains(where: { $0.name == "parent" }) {
            return FieldCondition(inHeader: false, test: TransformCondition(field: -1, mask: c.mask, test: c.test), parent: [:])
        }
        if let i = earlier.firstIndex(where: { $0.name == c.field }) {
            guard earlier[i].type.isInteger, earlier[i].array == nil else {
                throw err(c.token, "'\(c.field)' is not a single integer field: a field's 'when' tests a header field or an earlier integer field")
            }
            return FieldCondition(inHeader: false, test: TransformCondition(field: i, mask: c.mask, test: c.test))
        }
        let known = s.header.contains { $0.name == c.field } || c.field.contains(".")
        guard known else {
            throw err(c.token, "'\(c.field)' is neither a header field nor an earlier field of this message" + s.headerFieldHint(c.field))
        }
        return FieldCondition(inHeader: true, test: try condition(c, s))
    }

    func rule(_ pf: PendingField, default d: StringRule, earlier: [FieldDef], schema s: ProtocolSchema) throws(DissectorError) -> StringRule {
        guard let t = pf.param else { return d }
        if let d = Self.delimiter(t) { return .delimited(d) }
        if case .string = t.kind { throw err(t, "a delimiter is 1 to 16 bytes (\\r, \\n, \\t, \\0 and \\xHH write control bytes)") }
        switch t.kind {
        case .number(let n):
            guard n <= 1 << 20 else { throw err(t, "size out of range") }
            return .fixed(Int(n))
        case .ident(let r):
            if let (w, o) = Self.prefix(r) { return .prefixed(width: w, order: o) }
            switch r.lowercased() {
            case "varint": return .varint
            case "nul", "null", "cstring": return .nulTerminated
            case "rest": return .rest
            default: break
            }
            // `String(key_length)`: sized by an earlier field of the message or a header field.
            if let i = earlier.firstIndex(where: { $0.name == r }) {
                guard earlier[i].type.isInteger, earlier[i].array == nil else {
                    throw err(t, "size field '\(r)' must be a single integer")
                }
                return .sizedBy(field: i, inHeader: false)
            }
            if let i = s.header.firstIndex(where: { $0.name == r && !$0.isPadding }) { return .sizedBy(field: i, inHeader: true) }
            throw err(t, "'\(r)' is not u8, u16, u32, varint, nul, rest, an earlier field of this message or a header field" + s.headerFieldHint(r))
        default: break
        }
        throw err(t, "expected u8, u16, u32, varint, nul, rest, a size or a field that holds it")
    }

    /// A value's delimiter: `crlf`, `lf`, or the bytes of a quoted string (1 to 16).
    static func delimiter(_ t: Token) -> [UInt8]? {
        switch t.kind {
        case .ident(let w) where w.lowercased() == "crlf": return [13, 10]
        case .ident(let w) where w.lowercased() == "lf": return [10]
        case .string(let text):
            let b = Array(text.utf8)
            return b.isEmpty || b.count > 16 ? nil : b
        default: return nil
        }
    }

    /// `u8`/`u16`/`u32` (or `uint8`...) as a length or count prefix width, with `le`/`be`
    /// for a byte order other than the protocol's (`u16le`).
    static func prefix(_ name: String) -> (width: Int, order: ByteOrder?)? {
        var l = name.lowercased()
        var order: ByteOrder?
        if l.hasSuffix("le") { order = .little; l.removeLast(2) } else if l.hasSuffix("be") { order = .big; l.removeLast(2) }
        switch l {
        case "u8", "uint8": return (1, order)
        case "u16", "uint16": return (2, order)
        case "u32", "uint32": return (4, order)
        default: return nil
        }
    }

    func arrayCount(_ t: Token, earlier: [FieldDef], schema s: ProtocolSchema) throws(DissectorError) -> ArrayCount {
        switch t.kind {
        case .number(let n):
            guard n <= 1 << 16 else { throw err(t, "array size out of range 0-65536") }
            return .fixed(Int(n))
        case .ident(let r):
            if let (w, o) = Self.prefix(r) { return .prefixed(width: w, order: o) }
            if r.lowercased() == "varint" { return .varint }
            if r.lowercased() == "rest" { return .rest }
            guard let i = earlier.firstIndex(where: { $0.name == r }) else {
                if let h = s.header.firstIndex(where: { $0.name == r && !$0.isPadding }) { return .headerField(h) }
                throw err(t, "array count '\(r)' is not u8/u16/u32/varint, rest, an earlier field of this message or a header field")
            }
            guard earlier[i].type.isInteger, earlier[i].array == nil else {
                throw err(t, "array count field '\(r)' must be a single integer")
            }
            return .field(i)
        default:
            throw err(t, "expected an array count: a number, u8/u16/u32, varint, rest, an earlier field or a header field")
        }
    }
}

extension FieldType {
    var isInteger: Bool {
        switch self {
        case .unsigned, .signed, .enumeration, .varint, .decimal: return true
        default: return false
        }
    }
}

/// Value labels from a comment like `// 1 success 0 exception 2 cannot enter this level`:
/// each number followed by words starts a label. Text before the first number is ignored.
enum CommentLabels {
    static func parse(_ text: String) -> [Int64: String] {
        var labels: [Int64: String] = [:]
        var current: Int64?
        var words: [Substring] = []
        func close() {
            if let c = current, !words.isEmpty, labels[c] == nil {
                labels[c] = words.joined(separator: " ").trimmingCharacters(in: ".,;:")
            }
        }
        for w in tokens(text) {
            // A number starts a new label unless it was used already (then it is part of the text).
            if let n = Int64(w), labels[n] == nil, n != current {
                close()
                current = n
                words = []
            } else if current != nil {
                words.append(w)
            }
        }
        close()
        // One number in a sentence is not a list of labels.
        return labels.count >= 2 ? labels : [:]
    }

    /// The comment's words, with a number's separator cut off it: `0: ok, 1=fail, 2) busy`
    /// reads as `0 ok, 1 fail, 2 busy`; a separator standing alone (`0 - ok`) is dropped.
    static func tokens(_ text: String) -> [Substring] {
        var out: [Substring] = []
        for w in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            if w == ":" || w == "=" || w == "-" || w == "–" || w == "→" || w == "->" { continue }
            var i = w.startIndex
            if w[i] == "-" { i = w.index(after: i) }
            let digits = i
            while i < w.endIndex, w[i].isASCII, w[i].isNumber { i = w.index(after: i) }
            if i > digits, i < w.endIndex, ":=)".contains(w[i]) {
                out.append(w[..<i])
                let rest = w[w.index(after: i)...]
                if !rest.isEmpty { out.append(rest) }
            } else {
                out.append(w)
            }
        }
        return out
    }
}

/// The fewest bytes each type takes on the wire (a cycle of messages counts as zero).
struct MinimumWidths {
    let schema: ProtocolSchema
    var known: [Int: Int] = [:]
    var visiting: Set<Int> = []

    init(_ s: ProtocolSchema) { schema = s }

    mutating func of(_ t: FieldType) -> Int {
        switch t {
        case .unsigned(let w, _), .signed(let w, _): return w
        case .varint: return 1
        case .float32: return 4
        case .float64: return 8
        case .bool: return 1
        case .enumeration(_, let b): return b.width
        case .string(let r), .bytes(let r):
            switch r {
            case .prefixed(let w, _): return w
            case .nulTerminated, .varint: return 1
            case .delimited(let d): return d.count
            case .sizedBy: return 0
            case .rest: return 0
            case .fixed(let n): return n
            }
        case .message(let mi): return message(mi)
        case .decimal(let d): return 1 + d.count
        }
    }

    /// An element whose fields are all under a `when` may take bytes or none: allowed in an
    /// array, whose decoder stops at the first element that takes none.
    func mayTakeBytes(_ t: FieldType) -> Bool {
        guard case .message(let mi) = t else { return false }
        return schema.messages[mi].fields.contains { $0.condition != nil }
    }

    mutating func message(_ mi: Int) -> Int {
        if let w = known[mi] { return w }
        guard !visiting.contains(mi) else { return 0 }
        visiting.insert(mi)
        var total = 0
        // (A field under a `when` may be absent: it adds nothing to the least size.)
        for f in schema.messages[mi].fields where f.condition == nil {
            let w = of(f.type)
            switch f.array {
            case nil: total += w
            case .fixed(let n): total += n * w
            case .prefixed(let pw, _): total += pw
            case .varint: total += 1
            case .until: total += w  // (one element at least: the one that ends it)
            case .field, .rest, .headerField: break
            }
        }
        visiting.remove(mi)
        known[mi] = total
        return total
    }
}
