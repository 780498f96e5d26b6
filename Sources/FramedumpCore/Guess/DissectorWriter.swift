/// Writes what was guessed as a `.dissector` file, in the language's existing constructs only
/// (`protocol` block, `header` with a varint length, `frame_length`/`body_length`, `frame_end`,
/// `message_id`, `body`, `Message`).
public enum DissectorWriter {
    /// The file for every port whose framing the language can say; nil when there is none.
    public static func text(_ result: GuessResult, source: String) -> String? {
        let blocks = result.ports.filter { $0.writable }.map { block($0) }
        guard !blocks.isEmpty else { return nil }
        return "// Written by `framedump guess` from \(source): check the names, then rename the fields.\n\n"
            + blocks.joined(separator: "\n")
    }

    static func block(_ g: PortGuess) -> String {
        var out = ""
        func line(_ s: String) { out += s + "\n" }
        switch g.framing {
        case .webSocket:
            line("// A WebSocket (the clients' HTTP Upgrade handshake): each message is one frame.")
            line("protocol guessed_\(g.port) {")
            line("    websocket;")
            line("    port \(g.port);")
            line("    text text;")
            line("    body raw;")
            line("}")
            return out
        case .delimiter(let d):
            let text = d.textRecords * 2 >= d.records
            line("// Port \(g.port): records end with \(d.delimiter.rawValue) (\(d.records) records, \(d.textRecords) of them text).")
            line("protocol guessed_\(g.port) {")
            line("    port \(g.port);")
            line("    frame_end \"\(d.delimiter == .nul ? "\\0" : d.delimiter.rawValue)\";")
            for p in d.payloads { line("    \(p.setting)   // the count held on \(p.held) of \(p.lines) lines") }
            line("    max_frame \(min(max(1 << 16, g.maxFrameSeen * 4), 1 << 30));")
            line("    body \(text ? bodyLine(g.bodies) == "json" ? "json" : "text" : "raw");")
            line("}")
            line("Message record { }   // no id: every record is one")
            return out
        case .length(let c):
            let header = g.header ?? HeaderLayout(size: c.offset + c.width, fields: [])
            let share = g.search?.best.map { String(format1(100 * $0.share)) + "%" } ?? "?"
            let confidence = g.search.map { format1(100 * $0.confidence) + "%" + ($0.ambiguous ? ", ambiguous" : "") } ?? "?"
            line("// Port \(g.port): \(c.description); explains \(share) of the sampled bytes (confidence \(confidence)).")
            if let s = g.search, s.ambiguous, let ru = s.runnerUp {
                line("// As likely: \(ru.candidate.description).")
            }
            line("protocol guessed_\(g.port) {")
            line("    port \(g.port);")
            line("    byte_order \(c.order == .big ? "big" : "little");")
            line("    header {")
            var at = 0
            for f in header.fields where f.offset + f.width <= header.size {
                if f.offset > at { line("        pad \(f.offset - at);") }
                var decl = "        uint\(f.width * 8)\(f.width > 1 && f.order != c.order ? (f.order == .big ? "be" : "le") : "") \(f.name)"
                var comment = ""
                switch f.role {
                case .constant(let v) where v != 0:
                    decl += " == 0x" + String(v, radix: 16) + " [hex]"
                    comment = "constant in every frame sampled"
                case .constant: comment = "always 0 in the sample"
                case .seenOnce(let v): comment = "0x\(String(v, radix: 16)) in every frame sampled: a version? (not checked, so another still decodes)"
                case .length: comment = c.adjustment == 0 ? "counts the whole frame" : "frame = length \(c.adjustment >= 0 ? "+" : "-") \(abs(c.adjustment))"
                case .messageID: comment = "selects the message"
                case .sequence: comment = "+1 each frame of a direction"
                case .perConnection: comment = "constant within each connection"
                case .other: comment = ""
                }
                line(decl + ";" + (comment.isEmpty ? "" : "   // " + comment))
                at = f.offset + f.width
            }
            if header.size > at { line("        pad \(header.size - at);") }
            if c.isVarint {
                // The length is a varint right after the fields before it; it counts what follows it.
                line("        varint length;   // counts the bytes after it" + (c.adjustment == 0 ? "" : " \(c.adjustment > 0 ? "+" : "-") \(abs(c.adjustment))"))
            }
            line("    }")
            if c.isVarint {
                line("    body_length = length" + (c.adjustment == 0 ? "" : " \(c.adjustment > 0 ? "+" : "-") \(abs(c.adjustment))") + ";")
            } else if c.adjustment == 0 {
                line("    frame_length = length;")
            } else if c.adjustment == header.size {
                line("    body_length = length;")
            } else {
                line("    frame_length = length \(c.adjustment > 0 ? "+" : "-") \(abs(c.adjustment));")
            }
            if header.id != nil { line("    message_id = id;") }
            line("    max_frame \(maxFrame(g, c));")
            line("    body \(bodyLine(g.bodies));")
            line("}")
            if header.id == nil { line("Message frame { }   // no id found: every frame is one") }
            if let id = header.id {
                let limit = id.width >= 8 ? UInt64.max : (1 << UInt64(id.width * 8)) - 1
                for b in g.bodies.prefix(256) {
                    guard let v = b.id, v <= limit else { continue }
                    var note = "\(b.kind.rawValue), \(b.matching) of \(b.count) bodies"
                    if b.kind != .msgpack && b.messagePack && bodyLine(g.bodies) == "msgpack" { note += ", each one MessagePack value" }
                    if !b.strings.isEmpty {
                        note += "; strings at body offsets " + b.strings.map { "\($0.offset) (u\($0.prefix * 8) length)" }.joined(separator: ", ")
                    }
                    line("Message msg_\(v) = \(v) { }   // \(note)")
                }
            }
            return out
        case .none:
            return ""
        }
    }

    /// The body rule every id shares, or `raw` when they differ (each Message line says its kind).
    static func bodyLine(_ bodies: [BodyGuess]) -> String {
        let kinds = Set(bodies.map(\.kind)).subtracting([.empty])
        // MessagePack objects, and ids whose bodies are single MessagePack scalars (a counter, nil).
        if kinds.contains(.msgpack), bodies.allSatisfy({ $0.kind == .msgpack || $0.kind == .empty || $0.messagePack }) {
            return "msgpack"
        }
        guard kinds.count == 1, let k = kinds.first else { return "raw" }
        switch k {
        case .json: return "json"
        case .text: return "text"
        case .protobuf: return "protobuf"
        case .msgpack: return "msgpack"
        case .binary, .empty: return "raw"
        }
    }

    /// Room above the largest frame seen (the sample is only the streams' beginnings), within
    /// what the length field can hold.
    static func maxFrame(_ g: PortGuess, _ c: LengthCandidate) -> Int {
        if !c.isVarint && (c.width == 1 || c.width == 2) { return (1 << (c.width * 8)) - 1 + max(0, c.adjustment) }
        return min(max(1 << 20, g.maxFrameSeen * 4), 1 << 30)
    }

    static func format1(_ x: Double) -> String {
        let t = Int((x * 10).rounded())
        return "\(t / 10).\(t % 10)"
    }
}
