/// `text socketio;`: a WebSocket text message read as an Engine.IO v4 packet (a type digit, then
/// its data) and, inside an Engine.IO `message`, as a Socket.IO v5 packet:
/// `TYPE[ATTACHMENTS-][/NAMESPACE,][ACK][JSON]` (`42["chat",{"text":"hi"}]`,
/// `431["ok"]`, `451-/admin,7["upload",{"_placeholder":true,"num":0}]`). The packet type is
/// the message (`SocketIOPackets`), an event's name its `event` field, its arguments `args`.
/// A text that is no such packet keeps its text, with a warning; nothing is copied.
enum SocketIOBody: BodyFormat {
    static let name = "socketio"
    static var readsText: Bool { true }
    static var readsFrames: Bool { false }
    /// The JSON arguments' keys name their fields.
    static var namesFromTraffic: Bool { true }
    static var problemClass: String? { "socketio" }

    static let kindIndex = BodyEncoding(SocketIOBody.self).index

    static func define(_ s: inout ProtocolSchema) -> String? { SocketIOPackets.define(&s) }

    /// (Attachments and ack ids past this many digits are no number a peer sends.)
    static let maxDigits = 18

    static func decode(_ d: MessageDecoder, _ b: UnsafeRawBufferPointer, from body: Int, into m: DecodedMessage) {
        var r = SocketIOReader(b: b, pos: body, m: m, maxDepth: d.maxDepth)
        if let problem = r.packet() {
            m.message = nil
            m.fields.removeAll()
            m.warnings.append(.body(kind: kindIndex, text: problem))
            m.fields.append(DecodedField(name: .builtin(.text), value: .string, offset: Int32(body),
                                         width: Int32(b.count - body), depth: 0))
        }
    }
}

/// One text message's reading: the fields go straight into the message.
struct SocketIOReader {
    typealias Kind = SocketIOPackets.Kind
    typealias Field = SocketIOPackets.Field
    let b: UnsafeRawBufferPointer
    var pos: Int
    let m: DecodedMessage
    let maxDepth: Int

    init(b: UnsafeRawBufferPointer, pos: Int, m: DecodedMessage, maxDepth: Int) {
        self.b = b
        self.pos = pos
        self.m = m
        self.maxDepth = maxDepth
    }

    /// Reads the packet; returns why the text is none (nil: read).
    mutating func packet() -> String? {
        guard pos < b.count else { return "an empty text message is no Engine.IO packet" }
        guard let engine = Kind.engineIO(b[pos]) else {
            return "no Engine.IO packet: a packet starts with its type, 0 to 6 (open, close, ping, pong, message, upgrade, noop)"
        }
        pos += 1
        switch engine {
        case .open:
            set(.open)
            return object(required: true, what: "an open packet's handshake")
        case .message:
            // A plain Engine.IO message (no Socket.IO on it) is its data.
            guard pos < b.count, let k = Kind.socketIO(b[pos]) else { return data(.message) }
            pos += 1
            return socketIO(k)
        case .ping, .pong:
            return data(engine)
        default:
            set(engine)
            return pos == b.count ? nil : "\(b.count - pos) bytes after a\(engine == .upgrade ? "n" : "") \(engine.name) packet"
        }
    }

    /// The packet's kind, once read.
    var kind = Kind.noop

    mutating func set(_ k: Kind) {
        kind = k
        m.message = k.rawValue
    }

    /// A field of the current message.
    func name(_ f: Field) -> FieldName {
        .field(Int32(kind.rawValue), SocketIOPackets.slot(kind, f))
    }

    mutating func data(_ k: Kind) -> String? {
        set(k)
        if pos < b.count {
            m.fields.append(DecodedField(name: name(.data), value: .string, offset: Int32(pos), width: Int32(b.count - pos), depth: 0))
        }
        return nil
    }

    mutating func socketIO(_ k: Kind) -> String? {
        set(k)
        if k == .binaryEvent || k == .binaryAck {
            let s = pos
            guard let n = digits(), pos < b.count, b[pos] == 0x2d else {
                return "a \(k.name) packet gives its number of attachments, then '-', at byte \(s)"
            }
            m.fields.append(DecodedField(name: name(.attachments), value: .unsigned(n), offset: Int32(s), width: Int32(pos - s), depth: 0))
            pos += 1
        }
        // The namespace: from a '/' to the ',' (the main namespace "/" is not written).
        if pos < b.count && b[pos] == 0x2f {
            let s = pos
            while pos < b.count && b[pos] != 0x2c { pos += 1 }
            m.fields.append(DecodedField(name: name(.namespace), value: .string, offset: Int32(s), width: Int32(pos - s), depth: 0))
            if pos < b.count { pos += 1 }
        }
        switch k {
        case .connect:
            return object(required: false, what: "a connect packet's data")
        case .disconnect:
            return pos == b.count ? nil : "\(b.count - pos) bytes after a disconnect packet"
        case .connectError:
            // v5 sends an object ({"message": ...}); Socket.IO v4 (2.x clients) any JSON value.
            if pos < b.count && b[pos] != 0x7b {
                var j = JSONFlattener(bytes: b, start: pos, into: m, maxDepth: maxDepth)
                guard j.value(name: name(.data), depth: 1) else { return failed(j, "a connect_error packet's data") }
                j.skipSpace()
                return j.pos == b.count ? nil : "\(b.count - j.pos) bytes after a connect_error packet's data at byte \(j.pos)"
            }
            return object(required: false, what: "a connect_error packet's data")
        default:
            let s = pos
            if let id = digits() {
                m.fields.append(DecodedField(name: name(.ack), value: .unsigned(id), offset: Int32(s), width: Int32(pos - s), depth: 0))
            } else if pos - s > 0 {
                return "an ack id of more than \(SocketIOBody.maxDigits) digits at byte \(s)"
            }
            return arguments(event: k == .event || k == .binaryEvent)
        }
    }

    /// Decimal digits (nil: none, or too many).
    mutating func digits() -> UInt64? {
        let s = pos
        var n: UInt64 = 0
        while pos < b.count, b[pos] >= 0x30 && b[pos] <= 0x39 {
            n = n &* 10 &+ UInt64(b[pos] - 0x30)
            pos += 1
        }
        return pos > s && pos - s <= SocketIOBody.maxDigits ? n : nil
    }

    /// The JSON object of an open, connect or connect_error packet: its members as fields.
    mutating func object(required: Bool, what: String) -> String? {
        if pos == b.count { return required ? "\(what) is missing (a JSON object)" : nil }
        guard b[pos] == 0x7b else { return "\(what) at byte \(pos) is no JSON object" }
        var j = JSONFlattener(bytes: b, start: pos, into: m, maxDepth: maxDepth)
        guard j.run() else { return failed(j, what) }
        return nil
    }

    /// An event's `["name", args...]` or an ack's `[args...]`.
    mutating func arguments(event: Bool) -> String? {
        guard pos < b.count, b[pos] == 0x5b else {
            return "the arguments at byte \(pos) are no JSON array" + (pos == b.count ? " (the packet ends there)" : "")
        }
        var j = JSONFlattener(bytes: b, start: pos + 1, into: m, maxDepth: maxDepth)
        let open = pos
        j.skipSpace()
        if event {
            guard j.pos < b.count, b[j.pos] == 0x22, let (s, e) = j.string() else {
                return "an event's first argument, at byte \(j.pos), is its name: a JSON string"
            }
            m.fields.append(DecodedField(name: name(.event), value: .jsonString, offset: Int32(s), width: Int32(e - s), depth: 0))
            j.skipSpace()
            if j.pos < b.count && b[j.pos] == 0x2c { j.pos += 1 }
            if j.pos == b.count { return "the arguments' array is not closed" }
        }
        let group = m.fields.count
        m.fields.append(DecodedField(name: name(.args), value: .array(count: 0), offset: Int32(open), width: 0, depth: 0))
        var count: Int32 = 0
        j.skipSpace()
        if j.pos < b.count && b[j.pos] == 0x5d {
            j.pos += 1
        } else {
            while true {
                j.skipSpace()
                guard j.pos < b.count else { return "the arguments' array is not closed" }
                guard j.value(name: .element(count), depth: 2) else { return failed(j, "the arguments") }
                count += 1
                j.skipSpace()
                guard j.pos < b.count else { return "the arguments' array is not closed" }
                if b[j.pos] == 0x2c { j.pos += 1; continue }
                if b[j.pos] == 0x5d { j.pos += 1; break }
                return "the arguments at byte \(j.pos): ',' or ']' expected"
            }
        }
        m.fields[group].value = .array(count: count)
        m.fields[group].width = Int32(j.pos - open)
        j.skipSpace()
        return j.pos == b.count ? nil : "\(b.count - j.pos) bytes after the arguments at byte \(j.pos)"
    }

    func failed(_ j: JSONFlattener, _ what: String) -> String {
        if j.tooDeep { return "\(what): JSON nested deeper than \(maxDepth) levels" }
        return "\(what): invalid JSON at byte \(max(j.errorAt, j.pos))"
    }
}
