/// The KCP layer (ikcp.c's ARQ over UDP) as the shared parts see it (`LayerKind`): a
/// dissector says `udp port N; kcp;` (message mode: a KCP message holds whole protocol
/// frames) or `kcp stream;` (stream mode: the segments' data is a byte stream cut by the
/// protocol's length rule).
enum KCPLayer: LayerKind {
    static let name = "kcp"
    static let key: StaticString = "kcp"

    /// The layer's place in the registry, looked up once.
    static let layer = index

    @inline(__always)
    static func note(_ k: KCPInfo) -> LayerNote { LayerNote(layer: layer, k) }

    @inline(__always)
    static func info(_ n: LayerNote) -> KCPInfo { n.value(as: KCPInfo.self) }

    // MARK: - Dissector files

    static let keywords = ["kcp"]
    static let streamSetting = "kcp.stream"

    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError) {
        if !s.overLayers.contains(name) { s.overLayers.append(name) }
        if case .ident = p.tok.kind {
            let (mode, t) = try p.ident("'stream' or 'message'")
            switch mode.lowercased() {
            case "stream": s.layerSettings[streamSetting] = ["1"]
            case "message": s.layerSettings[streamSetting] = nil
            default: throw p.err(t, "KCP's mode is 'stream' or 'message' (ikcp's default), not '\(mode)'")
            }
        }
    }

    static func check(_ s: ProtocolSchema) -> String? {
        guard s.overLayers.contains(name) else { return nil }
        if !s.udp { return "kcp runs over UDP: give the protocol's port as 'udp port N;'" }
        if s.layerSettings[streamSetting] != nil && s.length == nil {
            return "'kcp stream;' carries a byte stream: the protocol needs 'frame_length = FIELD;' or 'body_length = FIELD;' to cut it"
        }
        return nil
    }

    static func describe(_ s: ProtocolSchema) -> [String] {
        guard s.overLayers.contains(name) else { return [] }
        if s.layerSettings[streamSetting] != nil { return ["  kcp: stream mode (segments joined into a stream, cut by the length rule)"] }
        return ["  kcp: message mode (fragments joined into KCP messages; " + (s.length == nil ? "each one protocol message)" : "each cut by the length rule)")]
    }

    static func mayShare(_ port: UInt16, _ a: ProtocolSchema, _ b: ProtocolSchema) -> Bool { false }

    // MARK: - Building a stack

    static var builtInProtocols: [ProtocolSchema] { [] }

    static func protocolState(_ s: ProtocolSchema, limits: Limits) -> KCPProtocolState? {
        s.overLayers.contains(name) ? KCPProtocolState(stream: s.layerSettings[streamSetting] != nil) : nil
    }

    static func managerState(_ protocols: [ProtocolRuntime]) -> KCPManagerState? { KCPManagerState() }

    static func attach(_ s: Session, _ p: ProtocolRuntime) {
        s.proto = p
        p.connections += 1
        // (Made for every protocol over KCP, so there for `p`.)
        guard let conversations = Self.state(of: p), let manager = Self.state(of: s.manager) else { return }
        let f = SessionFrames(manager: s.manager, runtime: p, connection: s.connection, layer: NoteDecoding.shared)
        let k = KCPConnection(frames: f, state: conversations, manager: manager, stream: conversations.stream)
        s.shared = k
        s.frames = f
        s.layers = k.streams
    }

    static func detect(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64) -> Bool { false }

    // MARK: - A message's annotation

    static func messageName(_ n: LayerNote) -> StaticString { "kcp" }

    /// `    kcp: conv 287454020, sn 17, 3 fragments, 1 copy retransmitted, delayed by a loss`
    static func writeTree(_ n: LayerNote, _ f: Frame, color: Bool, _ k: inout Cursor) {
        let i = info(n)
        k.write(color ? "    \u{1b}[2mkcp: conv " : "    kcp: conv "); k.decimal(UInt64(i.conv))
        k.write(", sn "); k.decimal(UInt64(i.sn))
        if i.fragments > 1 { k.write(", "); k.decimal(UInt64(i.fragments)); k.write(" fragments") }
        if i.retransmitted > 0 {
            k.write(", "); k.decimal(UInt64(i.retransmitted)); k.write(i.retransmitted == 1 ? " copy retransmitted" : " copies retransmitted")
        }
        if i.delayed { k.write(", delayed by a loss") }
        if color { k.write("\u{1b}[0m") }
        k.byte(0x0a)
    }

    static func visitFields<V: LayerFieldVisitor>(_ n: LayerNote, _ v: inout V) {
        let i = info(n)
        v.unsigned("conv", UInt64(i.conv))
        v.unsigned("sn", UInt64(i.sn))
        v.unsigned("ts", UInt64(i.ts))
        v.unsigned("fragments", UInt64(i.fragments))
        v.unsigned("retransmitted", UInt64(i.retransmitted))
        v.bool("delayed", i.delayed)
    }

    static let fieldKinds: [(name: String, kind: LayerFieldKind)] = [
        ("conv", .unsigned), ("sn", .unsigned), ("ts", .unsigned), ("fragments", .unsigned),
        ("retransmitted", .unsigned), ("delayed", .bool),
    ]

    // MARK: - The summary

    /// `  kcp: 3 conversations, 812 segments (402 data, 398 ACKs), 31 copies retransmitted, 2 lost; 120 messages from 150 fragments`
    static func summary(_ p: ProtocolRuntime) -> [String] {
        guard let k = state(of: p) else { return [] }
        var t = "  kcp (\(k.stream ? "stream" : "message") mode): \(k.conversations) conversations, \(k.segments) segments"
        t += " (\(k.segments - k.acks - k.windowSegments) data, \(k.acks) ACKs"
        if k.windowSegments > 0 { t += ", \(k.windowSegments) window probes/sizes" }
        t += "), \(k.retransmitted) copies seen again (retransmissions), \(k.lost) segments never arrived"
        if !k.stream { t += "; \(k.messages) KCP messages from \(k.fragments) fragments" }
        var lines = [t]
        var bounds: [String] = []
        if k.malformedDatagrams > 0 { bounds.append("\(k.malformedDatagrams) datagrams with bytes that are not KCP") }
        if k.heldLimit > 0 { bounds.append("\(k.heldLimit) times too many segments waited behind a missing one (\(KCPConversation.maxHeldSegments) or \(KCPConversation.maxHeldBytes >> 20) MiB): it was given up") }
        if k.conversationLimit > 0 { bounds.append("\(k.conversationLimit) segments of conversations past \(KCPConnection.maxConversations) per flow, ignored") }
        if !bounds.isEmpty { lines.append("  kcp: " + bounds.joined(separator: "; ")) }
        return lines
    }

    static func summary(_ m: SessionManager) -> [String] { [] }

    // MARK: - Statistics (`-z kcp`)

    static let hasStatistics = true

    static func statistics(_ m: SessionManager) -> (title: String, header: [String], rows: [[String]])? {
        guard let k = state(of: m) else { return nil }
        var rows: [[String]] = []
        func ms(_ n: Int64) -> String {
            let v = Double(n) / 1_000_000
            return v < 10 ? String(format: "%.3f", v) : String(format: "%.1f", v)
        }
        for r in k.rows + (k.overflowed > 0 ? [k.overflow] : []) {
            let pushes = r.pushes[0] + r.pushes[1], re = r.retransmitted[0] + r.retransmitted[1]
            let rate = pushes == 0 ? "-" : String(format: "%.1f%%", Double(re) * 100 / Double(pushes))
            rows.append([r.connection == 0 ? "" : "#\(r.connection)", r.endpoints, r.protocolName, "\(r.conv)",
                         "\(r.pushes[0])", "\(r.pushes[1])", "\(re)", rate, "\(r.lost[0] + r.lost[1])",
                         "\(r.messages[0] + r.messages[1])",
                         r.rttCount == 0 ? "-" : ms(r.rttMin), r.rttCount == 0 ? "-" : ms(r.rttSum / Int64(r.rttCount)),
                         r.rttCount == 0 ? "-" : ms(r.rttMax), "\(r.rttCount)"])
        }
        return ("KCP conversations", ["conn", "endpoints", "protocol", "conv", "data c2s", "data s2c", "retransmitted",
                                      "rate", "lost", "messages", "rtt min ms", "rtt avg ms", "rtt max ms", "rtt samples"], rows)
    }
}
