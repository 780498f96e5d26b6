/// The WebSocket layer as the shared parts see it (`LayerKind`): its annotation line and
/// NDJSON object, what it calls the frames it shows itself, its summary lines.
enum WebSocketLayer: LayerKind {
    static let name = "websocket"
    static let key: StaticString = "ws"

    /// The layer's place in the registry, looked up once.
    static let layer = index

    @inline(__always)
    static func note(_ ws: WebSocketInfo) -> LayerNote { LayerNote(layer: layer, ws) }

    @inline(__always)
    static func info(_ n: LayerNote) -> WebSocketInfo { n.value(as: WebSocketInfo.self) }

    /// A message on its way to where it is decoded (see `WebSocketDecoding`).
    @inline(__always)
    static func note(_ ws: WebSocketInfo, _ body: WebSocketBody) -> LayerNote {
        LayerNote(layer: layer, WebSocketDelivery(info: ws, body: body))
    }

    // MARK: - Building a stack

    static var builtInProtocols: [ProtocolSchema] { [.webSocketDefault] }

    static func protocolState(_ s: ProtocolSchema, limits: Limits) -> WebSocketProtocolState? {
        s.overWebSocket ? WebSocketProtocolState(s, limits: limits) : nil
    }

    static func managerState(_ protocols: [ProtocolRuntime]) -> WebSocketManagerState? { WebSocketManagerState(protocols) }

    /// A WebSocket stack: the handshake and frames below, `p`'s messages above (the built-in
    /// `websocket` dissector until the handshake names a better one).
    static func attach(_ s: Session, _ p: ProtocolRuntime) {
        s.proto = p
        p.connections += 1
        let ws = WebSocketConnection(session: s, inner: p, maxMessage: s.manager.limits.maxWebSocketMessage)
        s.shared = ws
        s.frames = ws.frames
        s.layers = ws.streams
    }

    /// An HTTP request may be a WebSocket handshake, on any port: the handshake decides.
    static func detect(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64) -> Bool {
        guard d == .c2s && offset == 0 && HTTPHandshake.looksLikeHTTP(bytes, request: true) else { return false }
        attach(s, s.manager.webSocketDefault)
        // Not a request after all (a first segment of "G"...): no WebSocket to hunt for.
        (s.shared as? WebSocketConnection)?.detected = true
        return true
    }

    static func messageName(_ n: LayerNote) -> StaticString { info(n).opcode.name }

    /// `websocket: binary, FIN, masked, compressed 52 → 120 bytes, 3 frames`.
    static func writeTree(_ n: LayerNote, _ f: Frame, color: Bool, _ k: inout Cursor) {
        let ws = info(n)
        if color {
            k.write("    \u{1b}[2m")
            WebSocketLinePrefix.write(ws, from: 4, &k)
        } else {
            WebSocketLinePrefix.write(ws, from: 0, &k)
        }
        if ws.compressed {
            k.write(", compressed "); k.decimal(ws.wireLength)
            if ws.undecodable {
                k.write(" bytes (not inflated)")
            } else {
                k.write(" → "); k.decimal(UInt64(f.bytes.count)); k.write(" bytes")
            }
        }
        if ws.frames > 1 { k.write(", "); k.decimal(UInt64(ws.frames)); k.write(" frames") }
        if color { k.write("\u{1b}[0m") }
        k.byte(0x0a)
    }

    static func visitFields<V: LayerFieldVisitor>(_ n: LayerNote, _ v: inout V) {
        let ws = info(n)
        v.text("opcode", ws.opcode.name)
        v.bool("fin", ws.fin)
        v.bool("masked", ws.masked)
        v.bool("compressed", ws.compressed)
        v.unsigned("frames", UInt64(ws.frames))
        v.unsigned("wire_length", ws.wireLength)
    }

    static let fieldKinds: [(name: String, kind: LayerFieldKind)] = [
        ("opcode", .text(values: ([0, 1, 2, 8, 9, 10, 3, 11] as [UInt8]).map { "\(WebSocketOpcode(rawValue: $0).name)" })),
        ("fin", .bool), ("masked", .bool), ("compressed", .bool), ("frames", .unsigned), ("wire_length", .unsigned),
    ]

    /// `  websocket: 2 handshakes; 10 text, 8 binary, 1 ping, ...; 5 compressed (300 → 900 bytes)`
    static func summary(_ p: ProtocolRuntime) -> [String] {
        guard p.schema.overWebSocket else { return [] }
        let w = p.webSocket
        // Reserved opcodes share a name: one count per name.
        var names: [String] = [], counts: [String: UInt64] = [:]
        for (code, n) in w.opcodes.enumerated() where n > 0 {
            let name = "\(WebSocketOpcode(rawValue: UInt8(code)).name)"
            if counts[name] == nil { names.append(name) }
            counts[name, default: 0] += n
        }
        let parts = names.map { "\(counts[$0]!) \($0)" }
        var text = "  websocket: \(w.handshakes) handshakes; " + (parts.isEmpty ? "no frames" : parts.joined(separator: ", "))
        if w.compressed > 0 { text += "; \(w.compressed) compressed (\(w.compressedBytes) → \(w.inflatedBytes) bytes)" }
        if w.violations > 0 { text += "; \(w.violations) with protocol violations" }
        return [text]
    }

    static func summary(_ m: SessionManager) -> [String] {
        guard m.httpPassedOver > 0 else { return [] }
        return ["http: \(m.httpPassedOver) connections not upgraded to WebSocket (passed over)"]
    }
}

/// `    websocket: binary, FIN, masked` for each opcode, FIN and mask bit, made once: the part of
/// the WebSocket line that every message has, written with one copy.
enum WebSocketLinePrefix {
    static let stride = 64
    nonisolated(unsafe) static let table: (bytes: UnsafeMutablePointer<UInt8>, lengths: UnsafeMutablePointer<UInt8>) = {
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 64 * stride)
        let lengths = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
        for op in 0..<16 {
            for fin in 0..<2 {
                for masked in 0..<2 {
                    let o = WebSocketOpcode(rawValue: UInt8(op))
                    var t = "    websocket: " + o.name.description
                    if !o.isKnown { t += " (\(op))" }
                    t += fin == 1 ? ", FIN" : ", no FIN"
                    t += masked == 1 ? ", masked" : ", unmasked"
                    let i = op << 2 | fin << 1 | masked
                    let u = Array(t.utf8)
                    precondition(u.count <= stride)
                    for (j, c) in u.enumerated() { bytes[i * stride + j] = c }
                    lengths[i] = UInt8(u.count)
                }
            }
        }
        return (bytes, lengths)
    }()

    /// Writes the prefix from byte `from` on (4 skips the indentation).
    @inline(__always) static func write(_ ws: WebSocketInfo, from: Int, _ k: inout Cursor) {
        let i = Int(ws.opcode.rawValue & 15) << 2 | (ws.fin ? 2 : 0) | (ws.masked ? 1 : 0)
        let t = table
        k.write(UnsafeRawBufferPointer(start: t.bytes + i * stride + from, count: Int(t.lengths[i]) - from))
    }
}
