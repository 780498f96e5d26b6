/// The HTTP request or response that opened a WebSocket, as a record of its own (tree lines,
/// an NDJSON event, a `check -r` problem when the accept value is wrong).
public struct WebSocketHandshakeEvent: LayerEvent {
    public let handshake: HTTPHandshake
    public let direction: Direction
    /// What the response negotiated (nil on the request, and for no compression).
    public let deflate: DeflateParameters?

    public func writeTree(_ w: TreeEventWriter) {
        let h = handshake
        w.write(" websocket handshake: ")
        w.text(h.startLine)
        w.write(", "); w.decimal(UInt64(h.length)); w.write(" bytes")
        w.newline()
        for x in h.headers {
            w.write("    "); w.text(x.name); w.write(": "); w.text(x.value)
            if HTTPHandshake.sameName(x.name, "Sec-WebSocket-Accept"), let ok = h.acceptValid {
                if ok { w.write(" (valid)") } else { w.alarm(" (does not match the key)") }
            }
            w.newline()
        }
        if direction == .s2c {
            w.write("    negotiated: "); w.out.write(deflate?.text ?? "no compression"); w.newline()
        }
    }

    /// `type` `handshake`, the start line, the header fields as an object (in `--diffable`,
    /// without the per-run key, accept and date), whether the accept value matches the key, and
    /// what permessage-deflate negotiated.
    public func writeJSON(_ out: OutputBuffer, diffable: Bool) {
        let h = handshake
        out.write(",\"type\":\"handshake\",\"start\":"); JSONText.string(h.startLine, to: out)
        out.write(",\"length\":"); out.decimal(UInt64(h.length))
        out.write(",\"headers\":{")
        var first = true
        for x in h.headers {
            let n = x.name.lowercased()
            if diffable && (n == "sec-websocket-key" || n == "sec-websocket-accept" || n == "date") { continue }
            if !first { out.byte(0x2c) }
            first = false
            JSONText.string(x.name, to: out); out.byte(0x3a); JSONText.string(x.value, to: out)
        }
        out.byte(0x7d)
        if let ok = h.acceptValid { out.write(",\"accept_valid\":"); out.write(ok ? "true" : "false") }
        if direction == .s2c {
            out.write(",\"deflate\":")
            if let x = deflate {
                out.write("{\"server_no_context_takeover\":"); out.write(x.serverNoContextTakeover ? "true" : "false")
                out.write(",\"client_no_context_takeover\":"); out.write(x.clientNoContextTakeover ? "true" : "false")
                out.write(",\"server_max_window_bits\":")
                if let b = x.serverMaxWindowBits { out.decimal(UInt64(max(0, b))) } else { out.write("null") }
                out.write(",\"client_max_window_bits\":")
                if let b = x.clientMaxWindowBits { out.decimal(UInt64(max(0, b))) } else { out.write("null") }
                out.byte(0x7d)
            } else {
                out.write("null")
            }
        }
    }

    public var problems: [LayerProblem] {
        guard handshake.acceptValid == false else { return [] }
        return [LayerProblem(layer: WebSocketLayer.name, kind: "accept",
                             text: "Sec-WebSocket-Accept does not match the request's key")]
    }
}
