/// Connection phases (`phase auth; phase command midstream; phase auth -> command after OK;`):
/// the names, which messages each phase's ids name, and the switches between them. Every phase
/// must be one a connection can reach from the first; a message in a phase is one its ids can
/// then name (two messages may share an id in phases that do not overlap).
extension Resolver {
    /// The declared phases by lowercased name (empty: the protocol has none).
    func resolvePhaseNames(_ p: PendingProtocol, _ s: inout ProtocolSchema, _ errors: inout Diagnostics) -> [String: Int] {
        if let layer = s.overLayers.first, let first = p.phases.names.first {
            errors.add(err(first.token, "protocol '\(s.name)': connection phases are kept on TCP and UDP streams, not yet in \(layer) messages"))
            return [:]
        }
        var index: [String: Int] = [:]
        var midstream: Token?
        for (name, t, mid) in p.phases.names {
            guard index[name.lowercased()] == nil else {
                errors.add(err(t, "phase '\(name)' is declared twice"))
                continue
            }
            index[name.lowercased()] = s.phases.names.count
            if let mid {
                if midstream != nil {
                    errors.add(err(mid, "only one phase is where a capture that joined late is assumed to be ('midstream' is already said)"))
                } else {
                    midstream = mid
                    s.phases.midstream = s.phases.names.count
                }
            }
            s.phases.names.append(name)
        }
        // Without 'midstream', a connection joined late is assumed to be in the last phase
        // declared: the one it spends its life in, once set up (and the output says so).
        if midstream == nil, !s.phases.names.isEmpty { s.phases.midstream = s.phases.names.count - 1 }
        s.phases.byID = s.phases.names.map { _ in [.c2s: [:], .s2c: [:]] }
        s.phases.otherwise = s.phases.names.map { _ in [:] }
        return index
    }

    /// A message's `in PHASE, PHASE` as indices (nil: every phase).
    func messagePhases(_ m: PendingMessage, _ index: [String: Int], _ errors: inout Diagnostics) -> [Int]? {
        guard let names = m.phases else { return nil }
        var out: [Int] = []
        for (name, t) in names {
            guard !index.isEmpty else {
                errors.add(err(t, "'\(m.name)' is said to be in phase '\(name)', but the protocol declares no phases (phase \(name);)"))
                return nil
            }
            guard let i = index[name.lowercased()] else {
                errors.add(err(t, "unknown phase '\(name)'" + Self.suggestion(name, Array(index.keys))))
                continue
            }
            if !out.contains(i) { out.append(i) }
        }
        // (A misspelt phase alone is said once, not again as a message in no phase.)
        return out.isEmpty ? nil : out
    }

    /// Message `mi`'s id entered in the tables of each phase it is in; an id two messages share
    /// in one phase is refused. (The schema's own table keeps the first message of each id: what
    /// a frame may be in some phase, for telling frames from garbage.)
    func enterPhased(id: UInt64, _ mi: Int, _ m: PendingMessage, _ phases: [Int]?, _ s: inout ProtocolSchema,
                     _ errors: inout Diagnostics) {
        for d in m.direction.map({ [$0] }) ?? Direction.allCases {
            if s.byID[d]?[id] == nil { s.byID[d]?[id] = mi }
            for ph in phases ?? Array(s.phases.names.indices) {
                if let other = s.phases.byID[ph][d]?[id] {
                    errors.add(err(m.token, "message id \(id) (\(d.name)) is already used by '\(s.messages[other].name)' in phase '\(s.phases.names[ph])'"))
                    return
                }
                s.phases.byID[ph][d]?[id] = mi
            }
        }
    }

    func enterPhased(otherwiseOf mi: Int, _ m: PendingMessage, _ t: Token, _ phases: [Int]?, _ s: inout ProtocolSchema,
                     _ errors: inout Diagnostics) {
        for d in m.direction.map({ [$0] }) ?? Direction.allCases {
            if s.otherwise[d] == nil { s.otherwise[d] = mi }
            for ph in phases ?? Array(s.phases.names.indices) {
                if let other = s.phases.otherwise[ph][d] {
                    errors.add(err(t, "'\(s.messages[other].name)' is already the message of any other \(d.name) id in phase '\(s.phases.names[ph])'"))
                    return
                }
                s.phases.otherwise[ph][d] = mi
            }
        }
    }

    /// `phase FROM -> TO after M, N;`: names known, each message one that can be decoded in
    /// FROM, and every phase reachable from the first (a phase no switch can lead to would
    /// never apply: its messages would never be decoded).
    func resolvePhaseSwitches(_ p: PendingProtocol, _ s: inout ProtocolSchema, byName: [String: Int], _ index: [String: Int],
                              _ errors: inout Diagnostics) {
        let names = p.phases.names.map(\.name)
        guard !index.isEmpty else {
            if names.isEmpty, let sw = p.phases.switches.first {
                errors.add(err(sw.to.1, "phase '\(sw.to.0)' is not declared (phase \(sw.to.0);): declare the phases, the first where a connection starts"))
            }
            return
        }
        func phase(_ n: (String, Token)) -> Int? {
            if let i = index[n.0.lowercased()] { return i }
            errors.add(err(n.1, "unknown phase '\(n.0)'" + Self.suggestion(n.0, names)))
            return nil
        }
        // (A switch in error is not said again as a phase it would have led to.)
        var wrong = p.hadErrors
        for sw in p.phases.switches {
            let from = sw.from.map { phase($0) }
            guard let to = phase(sw.to), from != .some(nil) else { wrong = true; continue }
            for (name, t) in sw.after {
                guard let mi = byName[name.lowercased()], mi < s.messages.count else {
                    errors.add(err(t, "unknown message '\(name)' after 'after'" + Self.suggestion(name, p.messages.map(\.name))))
                    wrong = true
                    continue
                }
                if let f = from ?? nil, let ph = s.messages[mi].phases, !ph.contains(f) {
                    errors.add(err(t, "'\(s.messages[mi].name)' is never decoded in phase '\(names[f])' (it is a message of \(ph.map { "'\(names[$0])'" }.joined(separator: ", ")) only)"))
                    wrong = true
                    continue
                }
                // (Switches after one message in one phase are told apart by their tests.)
                let guarded = sw.when != nil || sw.count != nil
                if s.phases.switches.contains(where: { $0.message == mi && ($0.from == nil || from == nil || $0.from == from!) && !guarded && $0.isPlain }) {
                    errors.add(err(t, "'\(s.messages[mi].name)' already switches the phase" + (from.map { " in '\(names[$0!])'" } ?? "")
                                   + " (give one of them a 'when')"))
                    wrong = true
                    continue
                }
                var ps = PhaseSwitch(from: from ?? nil, message: mi, to: to)
                do throws(DissectorError) {
                    if let c = sw.when { ps.when = try switchCondition(c, message: mi, s) }
                    if let c = sw.count { ps.count = try switchCount(c, byName: byName, p, s) }
                } catch {
                    errors.add(error)
                    wrong = true
                    continue
                }
                s.phases.switches.append(ps)
            }
        }
        guard !s.phases.isEmpty, !wrong else { return }
        // Reachable: the first phase, then every phase a switch leads to
        // from a reachable phase, after a message that can be decoded there.
        var reached: Set<Int> = [0]
        var grew = true
        while grew {
            grew = false
            for sw in s.phases.switches where !reached.contains(sw.to) {
                let sources = sw.from.map { [$0] } ?? Array(reached)
                let decodable = sources.contains { reached.contains($0) && (s.messages[sw.message].phases?.contains($0) ?? true) }
                if decodable { reached.insert(sw.to); grew = true }
            }
        }
        for (i, n) in p.phases.names.enumerated() where !reached.contains(i) {
            errors.add(err(n.token, "phase '\(n.name)' can never be entered: no 'phase ... -> \(n.name) after MESSAGE;' leads to it from '\(names[0])'"))
        }
    }
}

extension Resolver {
    /// A switch's `when`: a header field (or bit group), or a top-level integer field of the
    /// message after which it switches.
    func switchCondition(_ c: PendingCondition, message mi: Int, _ s: ProtocolSchema) throws(DissectorError) -> FieldCondition {
        let fields = s.messages[mi].fields
        if let i = fields.firstIndex(where: { $0.name == c.field }) {
            guard fields[i].type.isInteger, fields[i].array == nil else {
                throw err(c.token, "'\(c.field)' is not a single integer field of '\(s.messages[mi].name)'")
            }
            return FieldCondition(inHeader: false, test: TransformCondition(field: i, mask: c.mask, test: c.test))
        }
        guard s.header.contains(where: { $0.name == c.field }) || c.field.contains(".") else {
            throw err(c.token, "'\(c.field)' is neither a header field nor a field of '\(s.messages[mi].name)'" + s.headerFieldHint(c.field))
        }
        return FieldCondition(inHeader: true, test: try condition(c, s))
    }

    /// `* ColumnCount.status`: a message and its header field or top-level integer field.
    func switchCount(_ c: (String, Token), byName: [String: Int], _ p: PendingProtocol, _ s: ProtocolSchema) throws(DissectorError) -> (source: Int, field: Int, inHeader: Bool) {
        guard let dot = c.0.firstIndex(of: ".") else {
            throw err(c.1, "expected MESSAGE.FIELD after '*' (the message whose field says how many), found '\(c.0)'")
        }
        let name = String(c.0[..<dot]), field = String(c.0[c.0.index(after: dot)...])
        guard let mi = byName[name.lowercased()], mi < s.messages.count else {
            throw err(c.1, "unknown message '\(name)'" + Self.suggestion(name, p.messages.map(\.name)))
        }
        if let i = s.messages[mi].fields.firstIndex(where: { $0.name == field }) {
            guard s.messages[mi].fields[i].type.isInteger, s.messages[mi].fields[i].array == nil else {
                throw err(c.1, "'\(field)' is not a single integer field of '\(name)'")
            }
            return (mi, i, false)
        }
        guard let h = s.header.firstIndex(where: { $0.name == field && !$0.isPadding }) else {
            throw err(c.1, "'\(field)' is neither a header field nor a field of '\(s.messages[mi].name)'")
        }
        return (mi, h, true)
    }
}
