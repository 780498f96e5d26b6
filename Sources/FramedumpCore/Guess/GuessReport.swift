/// The evidence behind each choice, short: what the framing explains per stream, the
/// runner-up when it comes close, the header fields, the body kinds.
public enum GuessReport {
    public static func text(_ r: GuessResult) -> String {
        var out = ""
        func line(_ s: String) { out += s + "\n" }
        let pct = DissectorWriter.format1
        line("\(r.capture): \(r.packets) packets, \(r.payloadBytes) bytes of TCP payload read"
             + (r.stoppedEarly ? " (stopped early: the sample is full)" : ""))
        if r.ports.isEmpty {
            if r.payloadBytes == 0 {
                line("no TCP payload in this capture: nothing to guess from")
            } else if let p = r.port {
                line("no TCP connection with data on port \(p)")
            } else {
                line("no TCP connection with data")
            }
            return out
        }
        for g in r.ports {
            let bytes = g.streams.reduce(0) { $0 + $1.bytes }
            let connections = Set(g.streams.map(\.connection)).count
            line("")
            line("port \(g.port): \(connections) connections, \(g.streams.count) directions, \(bytes) bytes sampled")
            switch g.framing {
            case .webSocket:
                line("  framing: WebSocket (the clients open with an HTTP Upgrade handshake)")
            case .delimiter(let d):
                let counts = "(\(d.records) records, \(d.textRecords) of them text; \(d.endingPieces) of \(d.endedPieces) finished streams end with it)"
                if g.textFirst {
                    line("  framing: text lines; records end with \(d.delimiter.rawValue) " + counts + ", so no length field was looked for")
                } else {
                    line("  framing: no length field explains the streams; records end with \(d.delimiter.rawValue) " + counts)
                    noLength(g, line)
                }
                for p in d.payloads {
                    line("    \(p.setting) the count held on \(p.held) of \(p.lines) lines: the line, that many bytes, then \(d.delimiter.rawValue)")
                }
            case .none:
                line("  framing: no length field found, and no delimiter: this protocol is not length-prefixed")
                noLength(g, line)
            case .length(let c):
                guard let s = g.search, let best = s.best else { break }
                line("  framing: \(c.description) — explains \(pct(100 * best.share))% of the bytes, \(best.frames) frames"
                     + " (sizes \(best.minFrame)-\(best.maxFrame); \(s.screened) of \(s.tried) candidates survived screening,"
                     + " \(s.scored) walked over every piece)")
                let conf = "    confidence: \(pct(100 * s.confidence))%"
                if s.ambiguous, let ru = s.runnerUp {
                    line(conf + " — ambiguous: another framing explains as much and its frames look as regular")
                    line("    or: \(ru.candidate.description) — explains \(pct(100 * ru.share))%, \(ru.frames) frames;"
                         + " check both with framedump -r -d")
                } else {
                    line(conf + (s.irregular ? " (the frames' first bytes look no more alike than random cuts)" : ""))
                    if let ru = s.runnerUp {
                        line("    runner-up: \(ru.candidate.description) — \(pct(100 * ru.share))%"
                             + (ru.closedCovered < best.closedCovered && best.closedCovered == best.closedTotal ? ", fails on whole streams" : "")
                             + (s.runnerUpRegularity.map { $0 + FramingSearch.clearlyMoreRegular <= s.regularity ? ", frames look cut at random" : "" } ?? ""))
                    } else {
                        line("    runner-up: none cutting other frames within \(pct(100 * FramingSearch().runnerUpMargin)) points")
                    }
                }
                for (i, st) in g.streams.enumerated() where i < best.perStream.count {
                    let e = best.perStream[i]
                    let share = e.total == 0 ? 100.0 : 100 * Double(e.covered) / Double(e.total)
                    line("    \(st.connection) \(st.direction.name): \(e.frames) frames, \(pct(share))% of \(e.total) bytes"
                         + (st.pieces > 1 ? " (\(st.pieces) pieces: gaps)" : ""))
                }
                if let h = g.header {
                    line("  header (\(h.size) bytes): " + h.fields.map { f in
                        "\(f.name) u\(f.width * 8)\(f.width > 1 ? (f.order == .big ? "be" : "le") : "") @\(f.offset)"
                    }.joined(separator: ", "))
                    if let id = h.id {
                        line("    message id: offset \(id.offset), \(id.width) bytes — tells \(pct(h.idGain)) bits of each frame's length"
                             + (h.idRunnerUp.map { ", runner-up: offset \($0.field.offset) (\($0.field.width) bytes, \(pct($0.gain)) bits)" } ?? ""))
                    } else {
                        line("    message id: none found (no low-cardinality field that tells the frames apart)")
                    }
                }
                if !g.bodies.isEmpty {
                    line("  bodies: " + g.bodies.prefix(16).map { b in
                        (b.id.map { "id \($0)" } ?? "all") + " \(b.kind.rawValue) (\(b.matching)/\(b.count))"
                    }.joined(separator: ", ") + (g.bodies.count > 16 ? ", … \(g.bodies.count - 16) more" : ""))
                }
            }
        }
        return out
    }

    static func noLength(_ g: PortGuess, _ line: (String) -> Void) {
        if let best = g.search?.best {
            line("    best length candidate: \(best.candidate.description) — explains only \(DissectorWriter.format1(100 * best.share))% of the bytes")
        }
    }
}
