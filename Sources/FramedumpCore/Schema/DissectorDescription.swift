/// A readable account of a loaded protocol, for `framedump dissectors`.
public enum DissectorDescription {
    /// A delimiter as a dissector file writes it (`\r\n`, `|`).
    static func escaped(_ b: [UInt8]) -> String {
        b.map { c -> String in
            switch c {
            case 13: return "\\r"
            case 10: return "\\n"
            case 9: return "\\t"
            case 0: return "\\0"
            case 0x22, 0x5c: return "\\" + String(UnicodeScalar(c))
            case 0x20..<0x7f: return String(UnicodeScalar(c))
            default: return "\\x" + String(format: "%02x", c)
            }
        }.joined()
    }

    /// A `when` test as written: `version == 80877103`, `flags & 0x4`.
    static func test(_ t: TransformCondition, header: Bool, _ s: ProtocolSchema) -> String {
        let h = s.header[t.field]
        // (A named bit group: `fixed.qos == 2`.)
        if let m = t.mask, let b = h.bits.first(where: { $0.mask == m }), t.shift == b.shift {
            var u = t
            u.mask = nil
            return test(u, named: h.name + "." + b.name)
        }
        return test(t, named: h.name)
    }

    static func test(_ t: TransformCondition, named name: String) -> String {
        var out = name
        if let m = t.mask, t.shift == 0 { out += " & 0x" + String(m, radix: 16) }
        switch t.test {
        case .nonZero: break
        case .equal(let v): out += " == \(v)"
        case .notEqual(let v): out += " != \(v)"
        }
        return out
    }

    public static func text(_ s: ProtocolSchema) -> String {
        var lines: [String] = []
        let ports = s.ports.map(String.init).joined(separator: ", ")
        lines.append("\(s.name)  (\(s.file))")
        lines.append((s.udp ? "  UDP ports: " : "  ports: ") + (ports.isEmpty ? "none" : ports) + (s.anyPort ? "; also tried on any port" : ""))
        for k in LayerRegistry.kinds { lines += k.describe(s) }
        func fields(_ fs: [HeaderField]) -> String {
            fs.map { f -> String in
                let type = f.isDecimal ? "decimal(" + (f.decimalEnd.isEmpty ? String(f.decimalDigits) : "\"" + Self.escaped(f.decimalEnd) + "\"") + ")"
                    : f.isVarint ? "\(f.zigzag ? "s" : "")varint(\(f.varintMax))"
                    : "\(f.signed ? "int" : "uint")\(f.width * 8)\(f.order == .little ? "le" : "")"
                let t = f.isPadding ? "pad \(f.width)" : "\(type) \(f.name)"
                let bits = f.bits.isEmpty ? "" : " { " + f.bits.map { "\($0.name) = 0x\(String($0.mask, radix: 16))" }.joined(separator: ", ") + " }"
                return t + (f.constant.map { " == \($0)" } ?? "") + bits
            }.joined(separator: "; ")
        }
        func size(_ least: Int, _ most: Int) -> String { least == most ? "\(least)" : "\(least)-\(most)" }
        func length(_ l: LengthRule) -> String {
            let expr = l.terms.enumerated().map { i, t -> String in
                let v = t.field.map { s.header[$0].name } ?? String(t.constant)
                return (i == 0 ? (t.negative ? "-" : "") : (t.negative ? " - " : " + ")) + v
            }.joined()
            return "\(l.countsWholeFrame ? "frame_length" : "body_length") = \(expr)"
        }
        if let t = s.textHeader, let p = s.plainHeader {
            lines.append(p.fields.isEmpty ? "  header: none" : "  header (\(size(p.headerSize, p.maxHeaderSize)) bytes): " + fields(p.fields))
            lines.append("  header text (\(size(t.headerSize, t.maxHeaderSize)) bytes): " + fields(t.fields))
        } else if s.variants.isEmpty {
            lines.append(s.header.isEmpty ? "  header: none" : "  header (\(size(s.headerSize, s.maxHeaderSize)) bytes): " + fields(s.header))
        }
        for v in s.variants {
            var what = v.first ? "first \(v.direction.name) frame" : "header \(v.direction.name)"
            if let a = v.after { what += " after " + a.map { s.messages[$0].name }.joined(separator: ", ") }
            var line = "  \(what) (\(size(v.headerSize, v.maxHeaderSize)) bytes): " + fields(v.fields)
            if let l = v.length { line += "; " + length(l) }
            for c in v.choices { line += "; message \(s.messages[c.message].name) when \(test(c.test, header: true, s))" }
            if let m = v.message { line += "; message \(s.messages[m].name)" } else if let i = v.idField { line += "; message id: \(s.header[i].name)" }
            if !v.again.isEmpty { line += "; again after " + v.again.map { s.messages[$0].name }.joined(separator: ", ") }
            lines.append(line)
        }
        if let l = s.length { lines.append("  \(length(l)); max_frame \(s.maxFrame)") }
        if let k = FramingRegistry.kind(of: s) { lines += k.describe(s) }
        if let id = s.idField { lines.append("  message id: \(s.header[id].name)" + (s.idField2.map { ", " + s.header[$0].name + " (ids written main:sub)" } ?? "") + (s.idBits.map { ".\($0.name) (bits 0x\(String($0.mask, radix: 16)))" } ?? "")) }
        if let d = s.defaultMessage { lines.append("  every frame is message \(s.messages[d].name) (no message id)") }
        switch s.pairBy {
        case .messageID?: lines.append("  pair_by id (-z rtt: a response carries its request's id)")
        case .field(let q, let r)? where q == r: lines.append("  pair_by \(q) (-z rtt: a response carries its request's \(q))")
        case .field(let q, let r)?: lines.append("  pair_by \(q) = \(r) (-z rtt: a response's \(r) carries its request's \(q))")
        case nil: break
        }
        for pr in s.pairs {
            let (q, r) = (s.messages[pr.request].name, s.messages[pr.response].name)
            switch (pr.requestField, pr.responseField) {
            case (let f?, let g?) where f == g: lines.append("  pair \(q) -> \(r) by \(f) (-z rtt: the response carries its request's \(f))")
            case (let f?, let g?): lines.append("  pair \(q) -> \(r) by \(f) = \(g) (-z rtt: the response's \(g) carries its request's \(f))")
            default: lines.append("  pair \(q) -> \(r) (-z rtt: the response answers the oldest request not yet answered)")
            }
        }
        if !s.phases.isEmpty {
            let ph = s.phases
            lines.append("  phases: " + ph.names.enumerated().map { i, n in
                n + (i == 0 ? " (start)" : "") + (i == ph.midstream ? " (assumed when joined late)" : "")
            }.joined(separator: ", "))
            for sw in ph.switches {
                var line = "    \(sw.from.map { ph.names[$0] } ?? "*") -> \(ph.names[sw.to]) after \(s.messages[sw.message].name)"
                if let c = sw.count {
                    line += " * \(s.messages[c.source].name).\(c.inHeader ? s.header[c.field].name : s.messages[c.source].fields[c.field].name)"
                }
                if let w = sw.when {
                    line += " when " + (w.inHeader ? test(w.test, header: true, s) : test(w.test, named: s.messages[sw.message].fields[w.test.field].name))
                }
                lines.append(line)
            }
        }
        lines.append("  body: \(s.body.rawValue)")
        let protoBase = s.proto?.base ?? s.messages.count
        for m in s.messages.prefix(protoBase) {
            var d = "    \(m.name)"
            if let id = m.idText { d += " id \(id)" } else if m.otherwise { d += " id * (any other)" }
            if let dir = m.direction { d += " \(dir.name)" }
            if let ph = m.phases { d += " in " + ph.map { s.phases.names[$0] }.joined(separator: ", ") }
            if let a = m.answers { d += " answers \(s.messages[a.request].name) by \(a.requestField) = \(s.header[a.replyHeader].name)" }
            if let pt = m.protoType {
                d += ": protobuf \(s.messages[pt].name)"
            } else if m.fields.isEmpty && s.body.kind.namesFromTraffic {
                // (A JSON or MessagePack map names its own fields.)
                d += ": fields named by the traffic"
            } else {
                d += ": \(m.fields.count) field" + (m.fields.count == 1 ? "" : "s")
            }
            if let t = m.title { d += "  \"\(t)\"" }
            lines.append(d)
        }
        if protoBase < s.messages.count {
            lines.append("  protobuf messages loaded: \(s.messages.count - protoBase)")
        }
        for t in s.transforms { lines.append("  transform: " + t.text(in: s)) }
        if !s.enums.isEmpty { lines.append("  enums: " + s.enums.map(\.name).joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }
}
