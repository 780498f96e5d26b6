/// How a WebSocket message's payload is read.
enum WebSocketBody: UInt8 {
    /// The protocol's header and body (binary messages).
    case binary
    /// The protocol's `text` rule.
    case text
    /// The WebSocket layer's own: control frames, payloads that could not be inflated or were cut.
    case layer
    /// Compressed (permessage-deflate): inflated first, then read as one of the above.
    case deflated

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
/// (the `LayerNote` that crosses threads).
struct WebSocketDelivery: BitwiseCopyable {
    var info: WebSocketInfo
    var body: WebSocketBody
}

/// The WebSocket layer where messages are decoded (the decoding thread, reading a file), one
/// per connection and protocol: inflates what the reading side left compressed, picks the
/// binary or text decoder or shows the layer's own payload, and puts the layer's note and
/// violations on the decoded message.
final class WebSocketDecoding: MessageLayerDecoder {
    let protocolState: WebSocketProtocolState
    /// The protocol's header size (a binary message shorter than it is shown raw).
    let headerSize: Int
    /// Where compressed messages are inflated: blocks of the decoding side, shared by every
    /// connection, and `--max-ws-message`.
    let inflated: ByteBlock
    let inflateScratch: Inflater.Scratch
    let maxMessage: Int

    init(manager: SessionManager, runtime: ProtocolRuntime) {
        protocolState = runtime.webSocketState!
        headerSize = runtime.layout.headerSize
        let w = manager.webSocketLayer
        inflated = w.decodeInflated
        inflateScratch = w.decodeInflateScratch
        maxMessage = manager.limits.maxWebSocketMessage
    }

    func decode(_ f: Frame, _ dir: Direction, _ note: LayerNote, _ frames: SessionFrames) {
        let d = note.value(as: WebSocketDelivery.self)
        decode(f, dir, body: d.body, ws: d.info, frames)
    }

    func decode(_ f: Frame, _ dir: Direction, body: WebSocketBody, ws: WebSocketInfo, _ frames: SessionFrames) {
        let p = frames.runtime
        let counters = protocolState.decoded
        var ws = ws, f = f, body = body
        if body == .deflated {
            let input = f.bytes, out = inflated, cap = maxMessage
            f.bytes = inflater(dir)._withUnsafeGuaranteedRef { $0.message(&ws, input, into: out, cap: cap) }
            body = WebSocketBody(&ws, count: f.bytes.count, headerSize: headerSize)
        }
        counters.count(ws, inflated: f.bytes.count)
        // RFC 6455 §8.1: a text message must be UTF-8. Checked here, beside the decoding that
        // reads the text anyway, rather than on the thread that reads the capture.
        if body == .text && !UTF8Check.isValid(f.bytes) {
            if !ws.hasViolations { counters.invalidTextOnly += 1 }
            ws.add(.invalidUTF8)
        }
        p.bytes += UInt64(f.bytes.count)
        if ws.hasViolations && ws.exceededSize { p.limitHits.webSocketTooLarge += 1 }
        let isData = ws.opcode == .text || ws.opcode == .binary || ws.opcode == .continuation
        let decoded = frames.decoded
        switch body {
        case .binary: frames.decoder.decode(f, dir, into: decoded)
        case .text: protocolState.textDecoder.decode(f, dir, into: decoded)
        case .layer, .deflated: layerBody(f, dir, ws, decoded)
        }
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

    // MARK: permessage-deflate, where messages are decoded

    /// Each direction's compression context, made at its first compressed message (when this
    /// side inflates that direction: see `WebSocketStream.inflatesHere`) ...
    private var inflaters: [Inflater?] = [nil, nil] {
        didSet { inflaterRefs = inflaters.map { $0.map { Unmanaged.passUnretained($0) } } }
    }
    /// ... and the same, reached without touching their reference counts.
    @exclusivity(unchecked) private var inflaterRefs: [Unmanaged<Inflater>?] = [nil, nil]
    /// Whether each direction keeps its window between messages (from the handshake).
    @exclusivity(unchecked) private var contextTakeover = [true, true]

    @inline(__always)
    func inflater(_ dir: Direction) -> Unmanaged<Inflater> {
        if let i = inflaterRefs[dir.rawValue] { return i }
        let i = Inflater(scratch: inflateScratch, contextTakeover: contextTakeover[dir.rawValue])
        inflaters[dir.rawValue] = i
        return Unmanaged.passUnretained(i)
    }

    /// The handshake's permessage-deflate parameters.
    func negotiated(_ d: DeflateParameters?, _ frames: SessionFrames) {
        for dir in Direction.allCases {
            contextTakeover[dir.rawValue] = d?.contextTakeover(dir) ?? true
            inflaters[dir.rawValue]?.contextTakeover = contextTakeover[dir.rawValue]
        }
    }

    /// The compression contexts of the connection's previous protocol.
    func takeInflaters(from old: WebSocketDecoding, _ frames: SessionFrames) {
        inflaters = old.inflaters
        contextTakeover = old.contextTakeover
    }

    /// A gap in direction `dir`: its window lost what the gap held.
    func contextLost(_ dir: Direction, negotiated: Bool, _ frames: SessionFrames) {
        if negotiated || inflaters[dir.rawValue] != nil { inflater(dir).takeUnretainedValue().lost(negotiated: negotiated) }
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
