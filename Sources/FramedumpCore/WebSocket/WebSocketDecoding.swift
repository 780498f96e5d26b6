/// How a WebSocket message's payload is read.
enum WebSocketBody: UInt8 {
    /// The protocol's header and body (binary messages).
    case binary
    /// The protocol's `text` rule.
    case text
    /// The WebSocket layer's own: control frames, payloads that could not be inflated or were cut.
    case layer

    /// What kind of message decides the decoder: control frames and undecodable payloads are
    /// the WebSocket layer's own; text and binary go to the inner protocol (binary only when
    /// it holds the protocol's header).
    @inline(__always)
    init(_ info: inout WebSocketInfo, count: Int, headerSize: Int) {
        if info.undecodable {
            self = .layer
        } else if info.opcode == .text {
            self = .text
        } else if info.opcode == .binary || info.opcode == .continuation {
            if count < headerSize {
                info.add(.shorterThanHeader(count, header: headerSize))
                self = .layer
            } else {
                self = .binary
            }
        } else {
            self = .layer
        }
    }
}

/// A message on its way to where it is decoded: the layer's info and how to read the payload
/// (the `LayerNote` it carries).
struct WebSocketDelivery: BitwiseCopyable {
    var info: WebSocketInfo
    var body: WebSocketBody
}

/// The WebSocket layer where messages are decoded, one per connection and protocol: picks the
/// binary or text decoder or shows the layer's own payload (messages come inflated, by their
/// `WebSocketStream`), and puts the layer's note and violations on the decoded message.
final class WebSocketDecoding: MessageLayerDecoder {
    let protocolState: WebSocketProtocolState
    /// The protocol's header size (a binary message shorter than it is shown raw).
    let headerSize: Int
    /// Socket.IO (`text socketio`): a binary message is an attachment of the binary packet before it.
    let socketIO: Bool
    /// The handshake asked for Engine.IO v3: an attachment's first byte is its packet type (4).
    var engineIO3 = false
    /// Per direction: the attachments the last binary packet announced, and how many came.
    var attachments: [(announced: UInt64, came: UInt64)] = [(0, 0), (0, 0)]

    init(manager: SessionManager, runtime: ProtocolRuntime) {
        protocolState = runtime.webSocketState!
        headerSize = runtime.layout.headerSize
        socketIO = runtime.schema.textBody == BodyEncoding(SocketIOBody.self)
    }

    func decode(_ f: Frame, _ dir: Direction, _ note: LayerNote, _ frames: SessionFrames) {
        let d = note.value(as: WebSocketDelivery.self)
        decode(f, dir, body: d.body, ws: d.info, frames)
    }

    func decode(_ f: Frame, _ dir: Direction, body: WebSocketBody, ws: WebSocketInfo, _ frames: SessionFrames) {
        let p = frames.runtime
        let counters = protocolState.counters
        var ws = ws
        counters.count(ws, inflated: f.bytes.count)
        // RFC 6455 §8.1: a text message must be UTF-8. Checked here, beside the decoding that
        // reads the text anyway.
        if body == .text && !UTF8Check.isValid(f.bytes) {
            if !ws.hasViolations { counters.invalidTextOnly += 1 }
            ws.add(.invalidUTF8)
        }
        p.bytes += UInt64(f.bytes.count)
        if ws.hasViolations && ws.exceededSize { p.limitHits.webSocketTooLarge += 1 }
        let isData = ws.opcode == .text || ws.opcode == .binary || ws.opcode == .continuation
        let decoded = frames.decoded
        switch body {
        case .binary:
            frames.decoder.decode(f, dir, into: decoded)
            if socketIO { attachment(decoded, dir) }
        case .text:
            protocolState.textDecoder.decode(f, dir, into: decoded)
            if socketIO, ws.opcode == .text { attachments[dir.rawValue] = (SocketIOPackets.announced(decoded), 0) }
        case .layer: layerBody(f, dir, ws, decoded)
        }
        // Numbered and paired as a plain connection's frames are (Socket.IO's events and acks).
        frames.messages += 1
        decoded.number = frames.messages
        if let t = frames.pairs { t.pair(decoded, number: frames.messages) }
        decoded.layerNotes.setOnly(WebSocketLayer.note(ws))
        if ws.hasViolations || (ws.opcode == .close && f.bytes.count == 1) { warnings(ws, f, decoded) }
        // The protocol's line counts data messages, and those of them with warnings; control
        // and reserved frames are counted per opcode on the websocket line (with their violations).
        if isData {
            p.count(decoded.message, id: decoded.id)
            if !decoded.warnings.isEmpty { p.warnings += 1 }
        }
        if !decoded.warnings.isEmpty { p.limitHits.count(decoded.warnings) }
        frames.sink.message(decoded, frames.connection, p)
    }

    /// A Socket.IO binary message: the next attachment the last binary packet announced (one no
    /// packet announced stays a binary message).
    func attachment(_ m: DecodedMessage, _ dir: Direction) {
        let a = attachments[dir.rawValue]
        guard a.came < a.announced else { return }
        SocketIOPackets.attachment(m, num: a.came, typed: engineIO3)
        attachments[dir.rawValue].came += 1
    }

    /// Control frames and undecodable payloads: the close code and reason, or the bytes.
    func layerBody(_ f: Frame, _ dir: Direction, _ ws: WebSocketInfo, _ m: DecodedMessage) {
        m.reset()
        m.frame = f
        m.direction = dir
        m.bodyOffset = 0
        let b = f.bytes
        if ws.opcode == .close && b.count >= 2 && !ws.undecodable {
            m.fields.append(DecodedField(name: .builtin(.code), value: .unsigned(UInt64(b.u16be(0)!)),
                                         offset: 0, width: 2, depth: 0))
            m.fields.append(DecodedField(name: .builtin(.reason), value: .string, offset: 2,
                                         width: Int32(b.count - 2), depth: 0))
        } else if !b.isEmpty {
            m.fields.append(DecodedField(name: .builtin(.payload), value: ws.opcode == .text ? .string : .bytes,
                                         offset: 0, width: Int32(b.count), depth: 0))
        }
    }

    /// The rare path: the layer's violations as warnings on the message.
    func warnings(_ ws: WebSocketInfo, _ f: Frame, _ m: DecodedMessage) {
        var ws = ws
        if ws.opcode == .close && f.bytes.count == 1 { ws.add(.closePayloadOneByte) }
        m.layerNotes.setOnly(WebSocketLayer.note(ws))
        for v in ws.violations { m.warnings.append(.layer(v.problem)) }
    }
}
