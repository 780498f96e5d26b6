/// Headers that differ by direction (`header c2s { }`, `header s2c { }`) or for a direction's
/// first frame (`first c2s { header { } frame_length = ...; message Startup; }`): each becomes
/// a `HeaderVariant`, checked against the protocol's length, id and messages.
extension Resolver {
    func resolveVariants(_ p: PendingProtocol, _ s: inout ProtocolSchema, byName: [String: Int],
                         directionIDs: [Direction: Int], _ errors: inout Diagnostics) {
        resolveTextHeader(p, &s, &errors)
        let blocks = p.headerBlocks.filter { !$0.text }
        guard blocks.contains(where: { $0.direction != nil }) || !p.directionIDNames.isEmpty else { return }
        let at = p.token ?? Token(kind: .end, line: p.line, column: 1)
        if let layer = s.overLayers.first {
            // (A direction's own message id alone brings it here too: no block has a direction.)
            let t = blocks.first { $0.direction != nil }?.token ?? Direction.allCases.compactMap { p.directionIDNames[$0]?.1 }.first ?? at
            errors.add(err(t, "protocol '\(s.name)': headers per direction, first frames and a direction's own message id are read on TCP and UDP streams, not yet in \(layer) messages (give one header and one message_id)"))
            return
        }
        let plain = blocks.first { $0.direction == nil }
        var mains: [Direction: PendingHeaderBlock] = [:]
        for d in Direction.allCases {
            guard let b = blocks.first(where: { $0.direction == d && !$0.first }) ?? plain else {
                let other = blocks.first { $0.direction == d.opposite && !$0.first }
                errors.add(err(other?.token ?? at, "protocol '\(s.name)' has no header for \(d.name): declare 'header \(d.name) { ... }', or 'header { ... }' for both directions"))
                continue
            }
            mains[d] = b
            var v = HeaderVariant(direction: d, first: false, fields: b.fields, global: b.global, length: nil, message: nil)
            if let i = directionIDs[d] {
                guard v.global.contains(i) else {
                    errors.add(err(p.directionIDNames[d]!.1, "'\(s.header[i].name)' is not a field of the \(d.name) header"))
                    continue
                }
                v.idField = i
            }
            s.variants.append(v)
        }
        guard mains.count == 2 else { return }
        for b in blocks where b.first {
            let d = b.direction!
            let main = mains[d]!
            var v = HeaderVariant(direction: d, first: true, fields: b.fields.isEmpty ? main.fields : b.fields,
                                  global: b.fields.isEmpty ? main.global : b.global, length: nil, message: nil)
            v.idField = directionIDs[d]
            if b.lengthToken != nil {
                var terms: [(field: Int?, constant: Int64, negative: Bool)] = []
                var ok = true
                for (name, c, neg, t) in b.lengthExpr {
                    guard let name else { terms.append((nil, c, neg)); continue }
                    guard let l = v.fields.firstIndex(where: { $0.name == name && !$0.isPadding }) else {
                        errors.add(err(t, "'\(name)' is not a field of the first \(d.name) frame's header" + Self.suggestion(name, v.fields.filter { !$0.isPadding }.map(\.name))))
                        ok = false
                        continue
                    }
                    terms.append((v.global[l], 0, neg))
                }
                if ok { v.length = LengthRule(terms: terms, countsWholeFrame: b.lengthWholeFrame) }
            }
            if let (name, t) = b.message {
                if let mi = byName[name.lowercased()] {
                    v.message = mi
                    if let md = s.messages[mi].direction, md != d {
                        errors.add(err(t, "'\(s.messages[mi].name)' is a \(md.name) message: it cannot be the first \(d.name) frame"))
                    }
                } else {
                    errors.add(err(t, "unknown message '\(name)'" + Self.suggestion(name, p.messages.map(\.name))))
                }
            } else if b.choices.isEmpty, (directionIDs[d] ?? s.idField).map({ v.global.contains($0) }) != true {
                errors.add(err(b.token, "the first \(d.name) frame's header has no message id: say which message it is ('message NAME;')"))
            }
            resolveFirstChoices(b, &v, p, s, byName: byName, &errors)
            s.variants.append(v)
        }
        resolveFirstAfter(blocks, p, &s, byName: byName, &errors)
        // Every header must hold the fields its length reads, and leave room for itself.
        for v in s.variants {
            let block = v.first ? blocks.first { $0.first && $0.direction == v.direction }! : mains[v.direction]!
            let own = v.first && block.lengthToken != nil
            guard let rule = v.length ?? s.length else { continue }
            let lt = (own ? block.lengthToken : p.lengthToken) ?? at
            let what = v.first ? "the first \(v.direction.name) frame's header" : "the \(v.direction.name) header"
            var missing = false
            for t in rule.terms {
                guard let g = t.field, !v.global.contains(g) else { continue }
                errors.add(err(lt, "the frame length reads '\(s.header[g].name)', which \(what) does not have" + (v.first && !own ? " (give the first frame its own 'frame_length' or 'body_length')" : "")))
                missing = true
            }
            if missing || rule.terms.contains(where: { $0.field != nil }) { continue }
            let sum = rule.terms.reduce(Int64(0)) { $0 &+ ($1.negative ? -$1.constant : $1.constant) }
            let total = rule.countsWholeFrame ? sum : sum &+ Int64(v.headerSize)
            let least = max(v.headerSize, 1)
            if total < Int64(least) || total > Int64(s.maxFrame) {
                errors.add(err(lt, "the frame length of \(what) is always \(total) bytes: it must be at least \(least) (the header, and one byte) and at most max_frame \(s.maxFrame)"))
            }
        }
    }
}

extension Resolver {
    /// `header text { decimal("|") cmd; }`: WebSocket text messages read this header, then
    /// the `text` body; the binary messages keep `header { }`'s (or none).
    func resolveTextHeader(_ p: PendingProtocol, _ s: inout ProtocolSchema, _ errors: inout Diagnostics) {
        guard let t = p.headerBlocks.first(where: { $0.text }) else { return }
        guard s.overWebSocket else {
            errors.add(err(t.token, "a text header is read in WebSocket text messages: the protocol needs 'websocket;' (or 'websocket \"/path\";')"))
            return
        }
        if s.textBody == BodyEncoding(SocketIOBody.self) {
            errors.add(err(t.token, "'text socketio' reads Engine.IO and Socket.IO packets itself: it takes no text header"))
            return
        }
        s.textHeader = HeaderVariant(direction: .c2s, first: false, fields: t.fields, global: t.global, length: nil, message: nil)
        let plain = p.headerBlocks.first { !$0.text && !$0.first && $0.direction == nil }
        s.plainHeader = HeaderVariant(direction: .c2s, first: false, fields: plain?.fields ?? [], global: plain?.global ?? [],
                                      length: nil, message: nil)
    }
}

/// `message_id = cmd, sub;` with `Message Deal = 3:7`: a main command and a sub-command (many
/// card and board game servers): each message's id is the pair, each part checked against its
/// field.
extension Resolver {
    func resolveIDPair(_ p: PendingProtocol, _ s: inout ProtocolSchema, _ errors: inout Diagnostics) {
        guard let (name, t) = p.idName2 else {
            for m in p.messages { if let pt = m.idPair { errors.add(err(pt, "'\(m.name)' has a pair id: the protocol needs 'message_id = cmd, sub;' for it")) } }
            return
        }
        guard let i = s.header.firstIndex(where: { $0.name == name && !$0.isPadding }) else {
            errors.add(err(t, "'\(name)' is not a header field" + s.headerFieldHint(name)))
            return
        }
        guard let main = s.idField else { return }
        if s.idBits != nil { errors.add(err(t, "a pair id takes two whole fields: the first cannot be a bit group")); return }
        if i == main { errors.add(err(t, "'\(name)' is the first id field too")); return }
        s.idField2 = i
        func top(_ h: HeaderField) -> UInt64 {
            let bits = UInt64(min(32, h.isVarint ? h.varintMax * 7 : h.width * 8))
            return h.signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1
        }
        let (hi, lo) = (top(s.header[main]), top(s.header[i]))
        for m in p.messages {
            guard let id = m.id else { continue }
            guard m.idPair != nil else {
                errors.add(err(m.token, "message id \(id) is one number, but the protocol's ids are pairs ('message_id = \(s.header[main].name), \(name);'): write it \(s.header[main].name):\(name), e.g. \(id):0"))
                continue
            }
            if id >> 32 > hi || id & 0xffff_ffff > lo {
                errors.add(err(m.idPair!, "message id \(id >> 32):\(id & 0xffff_ffff) does not fit in '\(s.header[main].name)' (at most \(hi)) and '\(name)' (at most \(lo))"))
            }
        }
    }
}

extension Resolver {
    /// A first frame's `message NAME when TEST;` lines and `again after NAME;`.
    func resolveFirstChoices(_ b: PendingHeaderBlock, _ v: inout HeaderVariant, _ p: PendingProtocol, _ s: ProtocolSchema,
                             byName: [String: Int], _ errors: inout Diagnostics) {
        let d = b.direction!
        for (name, t, c) in b.choices {
            guard let mi = byName[name.lowercased()] else {
                errors.add(err(t, "unknown message '\(name)'" + Self.suggestion(name, p.messages.map(\.name))))
                continue
            }
            if let md = s.messages[mi].direction, md != d {
                errors.add(err(t, "'\(s.messages[mi].name)' is a \(md.name) message: it cannot be the first \(d.name) frame"))
                continue
            }
            do throws(DissectorError) {
                let test = try condition(c, s)
                guard v.global.contains(test.field) else {
                    throw err(c.token, "'\(c.field)' is not a field of the first \(d.name) frame's header")
                }
                v.choices.append((test, mi))
            } catch {
                errors.add(error)
            }
        }
        for (name, t) in b.again {
            guard let mi = byName[name.lowercased()], v.firstMessages.contains(mi) else {
                errors.add(err(t, "'again after \(name)': '\(name)' is not a message the first \(d.name) frame can be (its 'message' lines)"))
                continue
            }
            v.again.append(mi)
        }
    }

    /// `first s2c after NAME { }`: NAME is a message the other direction's first frame can be.
    func resolveFirstAfter(_ blocks: [PendingHeaderBlock], _ p: PendingProtocol, _ s: inout ProtocolSchema,
                           byName: [String: Int], _ errors: inout Diagnostics) {
        for b in blocks where b.first {
            guard let after = b.after, let d = b.direction,
                  let vi = s.variants.firstIndex(where: { $0.first && $0.direction == d }) else { continue }
            guard let other = s.variants.first(where: { $0.first && $0.direction == d.opposite }) else {
                errors.add(err(after[0].1, "'first \(d.name) after ...' follows the \(d.opposite.name) side's first frame, which the protocol does not describe ('first \(d.opposite.name) { }')"))
                continue
            }
            let theirs = other.firstMessages
            var ids: [Int] = []
            for (name, t) in after {
                guard let mi = byName[name.lowercased()], theirs.contains(mi) else {
                    errors.add(err(t, "'\(name)' is not a message the first \(d.opposite.name) frame can be (its 'message' lines)"))
                    continue
                }
                ids.append(mi)
            }
            s.variants[vi].after = ids
        }
    }
}
