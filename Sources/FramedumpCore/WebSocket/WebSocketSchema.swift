/// What a dissector file says about a protocol over WebSocket (`websocket "/path";`,
/// `subprotocol "x";`), kept in the schema's generic `stack` and `layerSettings`.
extension ProtocolSchema {
    /// Whether the protocol's frames are WebSocket messages.
    public var overWebSocket: Bool { overLayers.contains(WebSocketLayer.name) }

    /// The request paths and subprotocols that select this protocol at the handshake (empty: any).
    public var webSocketPaths: [String] {
        get { layerSettings["websocket.path"] ?? [] }
        set { layerSettings["websocket.path"] = newValue }
    }

    public var webSocketSubprotocols: [String] {
        get { layerSettings["websocket.subprotocol"] ?? [] }
        set { layerSettings["websocket.subprotocol"] = newValue }
    }

    /// Binary messages joined into a stream for the length deframer (the protocol has a length
    /// rule); otherwise each binary message is one frame (header + body).
    public var webSocketStream: Bool { overWebSocket && length != nil }

    /// The built-in dissector for WebSocket messages no file claims: binary shown as hex,
    /// text as text.
    public static var webSocketDefault: ProtocolSchema {
        var s = ProtocolSchema(name: "websocket", file: "(built in)")
        s.overLayers = [WebSocketLayer.name]
        s.body = .raw
        s.textBody = .text
        s.nameBytes = Array("websocket".utf8)
        return s
    }
}

extension WebSocketLayer {
    static let keywords = ["websocket", "subprotocol"]

    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError) {
        if keyword == "websocket" {
            // `websocket;` or `websocket "/path", "/other";`: messages of a WebSocket.
            if !s.overWebSocket { s.overLayers.append(name) }
            if case .string = p.tok.kind {
                repeat { s.webSocketPaths.append(try p.quoted("a request path")) } while p.accept(",")
            }
        } else {
            // `subprotocol "x";` alone says as much: messages of a WebSocket (that names it).
            if !s.overWebSocket { s.overLayers.append(name) }
            repeat { s.webSocketSubprotocols.append(try p.quoted("a subprotocol name")) } while p.accept(",")
        }
    }

    static func check(_ s: ProtocolSchema) -> String? {
        s.overWebSocket && s.udp ? "WebSocket runs over TCP: give the protocol's port as 'port N;', not 'udp port N;'" : nil
    }

    static func describe(_ s: ProtocolSchema) -> [String] {
        guard s.overWebSocket else { return [] }
        var w = "  websocket: "
        w += s.webSocketPaths.isEmpty ? "any path" : "path " + s.webSocketPaths.joined(separator: ", ")
        if !s.webSocketSubprotocols.isEmpty { w += "; subprotocol " + s.webSocketSubprotocols.joined(separator: ", ") }
        w += "; text messages: \(s.textBody.rawValue); binary messages: "
        w += s.webSocketStream ? "joined into a stream for the length rule below" : "one frame each"
        return [w]
    }

    /// Two WebSocket protocols told apart at the handshake: each names request paths or
    /// subprotocols, and they name none in common.
    static func mayShare(_ port: UInt16, _ a: ProtocolSchema, _ b: ProtocolSchema) -> Bool {
        guard a.overWebSocket, b.overWebSocket else { return false }
        let ka = Set(a.webSocketPaths.map { "p" + $0 } + a.webSocketSubprotocols.map { "s" + $0 })
        let kb = Set(b.webSocketPaths.map { "p" + $0 } + b.webSocketSubprotocols.map { "s" + $0 })
        return !ka.isEmpty && !kb.isEmpty && ka.isDisjoint(with: kb)
    }
}
