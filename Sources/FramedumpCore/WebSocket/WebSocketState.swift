/// What the WebSocket layer keeps per protocol over it: how its text messages are decoded,
/// and its counts for the summary (messages decoded, handshakes, and the binary payloads a
/// tunnelling protocol joins into a stream).
final class WebSocketProtocolState {
    let counters = WebSocketCounters()
    /// Text messages: no header, the protocol's `text` rule.
    let textDecoder: MessageDecoder

    init(_ s: ProtocolSchema, limits: Limits) {
        textDecoder = MessageDecoder(schema: s.textSchema, limits: limits)
    }
}

/// The WebSocket layer's part of the session manager: the protocols a handshake chooses from,
/// the connections passed over, and the inflating buffers every connection shares.
final class WebSocketManagerState {
    /// WebSocket messages no dissector claims: shown by opcode, as text or hex.
    let defaultProtocol: ProtocolRuntime
    let protocols: [ProtocolRuntime]
    /// Connections that began as HTTP and were not upgraded to WebSocket (passed over).
    @exclusivity(unchecked) var httpPassedOver: UInt64 = 0
    /// permessage-deflate's overflow block, shared by every connection.
    let inflateScratch = Inflater.Scratch()

    init(_ all: [ProtocolRuntime]) {
        protocols = all.filter { $0.schema.overWebSocket && $0.schema.file != ProtocolSchema.webSocketDefault.file }
        defaultProtocol = all.last { $0.schema.overWebSocket && $0.schema.file == ProtocolSchema.webSocketDefault.file }!
    }
}

extension ProtocolRuntime {
    /// The WebSocket layer's state for this protocol (nil: the protocol is not over WebSocket).
    var webSocketState: WebSocketProtocolState? {
        WebSocketLayer.state(of: self)
    }

    /// The WebSocket layer's counts, for the summary.
    public var webSocket: WebSocketCounters {
        webSocketState?.counters ?? WebSocketCounters()
    }
}

extension SessionManager {
    var webSocketLayer: WebSocketManagerState {
        WebSocketLayer.state(of: self)!
    }

    /// WebSocket messages no dissector claims: the built-in `websocket` dissector.
    public var webSocketDefault: ProtocolRuntime { webSocketLayer.defaultProtocol }

    /// Connections that began as HTTP and were not upgraded to WebSocket (passed over).
    public var httpPassedOver: UInt64 { webSocketLayer.httpPassedOver }

    /// `--max-ws-message`, settable after the manager is made (read per connection).
    public var maxWebSocketMessage: Int {
        get { limits.maxWebSocketMessage }
        set { limits.maxWebSocketMessage = newValue }
    }

    /// The WebSocket protocol for a handshake: by path and subprotocol first, then by port.
    func webSocketProtocol(path: String, subprotocols: [String], port: UInt16) -> ProtocolRuntime? {
        let pathOnly = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        func score(_ p: ProtocolRuntime) -> Int {
            let s = p.schema
            // A path it names or a subprotocol it names (either is enough; a path counts more).
            var n = 0
            if s.webSocketPaths.contains(pathOnly) { n += 4 }
            if s.webSocketSubprotocols.contains(where: subprotocols.contains) { n += 2 }
            if n == 0 && !(s.webSocketPaths.isEmpty && s.webSocketSubprotocols.isEmpty) { return -1 }
            if s.ports.contains(port) { n += 1 } else if !s.ports.isEmpty && n == 0 { return -1 }
            return n
        }
        let w = webSocketLayer
        var best: (ProtocolRuntime, Int)?
        for p in w.protocols {
            let n = score(p)
            if n >= 0 && n > (best?.1 ?? -1) { best = (p, n) }
        }
        return best?.0 ?? byPort[port].flatMap { $0.schema.overWebSocket ? $0 : nil } ?? w.defaultProtocol
    }
}
