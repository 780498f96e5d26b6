/// The packets of Engine.IO v4 and Socket.IO v5 as the protocol's messages: `text socketio;`
/// gives the protocol one message per packet type (named as the specifications name them),
/// each with its own fields, and pairs an event with its ack and a ping with its pong.
enum SocketIOPackets {
    /// The messages, in the order they are added to the schema (their indices, when the
    /// protocol declares none of its own).
    enum Kind: Int, CaseIterable {
        // Engine.IO packets other than `message`.
        case open, close, ping, pong, message, upgrade, noop
        // Socket.IO packets, in an Engine.IO `message`.
        case connect, disconnect, event, ack, connectError, binaryEvent, binaryAck
        /// A binary message: an attachment of the binary_event or binary_ack before it.
        case attachment

        var name: String {
            switch self {
            case .connectError: return "connect_error"
            case .binaryEvent: return "binary_event"
            case .binaryAck: return "binary_ack"
            default: return String(describing: self)
            }
        }

        /// Its fields, in order (the JSON of an open, connect or connect_error packet adds its
        /// members, named by their keys).
        var fields: [Field] {
            switch self {
            case .ping, .pong, .message: return [.data]
            case .open, .close, .upgrade, .noop: return []
            case .connect, .disconnect: return [.namespace]
            case .connectError: return [.namespace, .data]
            case .event: return [.namespace, .ack, .event, .args]
            case .ack: return [.namespace, .ack, .args]
            case .binaryEvent: return [.attachments, .namespace, .ack, .event, .args]
            case .binaryAck: return [.attachments, .namespace, .ack, .args]
            case .attachment: return [.num, .payload]
            }
        }

        /// The Socket.IO packet type digit after Engine.IO's `4`.
        static func socketIO(_ digit: UInt8) -> Kind? {
            guard digit >= 0x30 && digit <= 0x36 else { return nil }
            return Kind(rawValue: Kind.connect.rawValue + Int(digit - 0x30))
        }

        /// The Engine.IO packet type digit.
        static func engineIO(_ digit: UInt8) -> Kind? {
            guard digit >= 0x30 && digit <= 0x36 else { return nil }
            return Kind(rawValue: Int(digit - 0x30))
        }
    }

    enum Field: Int, CaseIterable {
        case data, namespace, attachments, ack, event, args, num, payload

        var type: FieldType {
            switch self {
            case .attachments, .ack, .num: return .unsigned(width: 8, order: .big)
            case .payload: return .bytes(.rest)
            default: return .string(.rest)
            }
        }

        var description: String {
            switch self {
            case .data: return "the packet's data (a probe, a plain Engine.IO message, an error that is no JSON object)"
            case .namespace: return "the namespace (\"/\" when the packet names none)"
            case .attachments: return "the binary messages that follow with the packet's binary arguments"
            case .ack: return "the acknowledgement id: the ack that answers carries the same"
            case .event: return "the event's name"
            case .args: return "the event's or the ack's arguments (JSON)"
            case .num: return "the attachment's place: the `num` of its placeholder in the packet's arguments"
            case .payload: return "the attachment's bytes"
            }
        }
    }

    /// Field `f`'s index in kind `k`'s message (`k.fields`), for a field the kind has: the
    /// lists above as arithmetic, so the per-message path reads no table (SocketIOTests checks
    /// it against the lists).
    @inline(__always)
    static func slot(_ k: Kind, _ f: Field) -> Int32 {
        let binary: Int32 = k == .binaryEvent || k == .binaryAck ? 1 : 0
        switch f {
        case .attachments, .num: return 0
        case .namespace: return binary
        case .ack: return binary + 1
        case .event: return binary + 2
        case .args: return binary + (k == .event || k == .binaryEvent ? 3 : 2)
        case .data: return k == .connectError ? 1 : 0
        case .payload: return 1
        }
    }

    /// Adds the packet types as the protocol's messages, and the pairs; refuses a protocol that
    /// declares a header or messages of its own (a Socket.IO connection's binary messages are
    /// the attachments of its packets).
    static func define(_ s: inout ProtocolSchema) -> String? {
        if !s.header.isEmpty || !s.messages.isEmpty {
            return "'text socketio' gives the protocol its messages (Socket.IO's packets; its binary messages are their attachments): declare no header and no messages"
        }
        if !s.overWebSocket { return "'text socketio' reads the text messages of a WebSocket: say 'websocket \"/socket.io/\";'" }
        if !s.pairs.isEmpty || s.pairBy != nil { return "'text socketio' pairs its packets itself (an event with its ack, a ping with its pong): no 'pair' or 'pair_by'" }
        for k in Kind.allCases {
            let fields = k.fields.map { f in
                FieldDef(name: String(describing: f), type: f.type, array: nil, tag: nil, description: f.description,
                         labels: nil, nameBytes: Array(String(describing: f).utf8))
            }
            var m = MessageDef(name: k.name, title: nil, id: nil, direction: nil, fields: fields,
                               nameBytes: Array(k.name.utf8), line: 0)
            m.infoField = k.fields.firstIndex(of: .event)
            s.messages.append(m)
        }
        // An ack answers an event, a binary_ack too, and either may answer a binary_event (the
        // ack has binary arguments or not): the two pairs are one rule.
        s.pairs = [PairSpec(request: Kind.event.rawValue, response: Kind.ack.rawValue, requestField: "ack", responseField: "ack"),
                   PairSpec(request: Kind.binaryEvent.rawValue, response: Kind.binaryAck.rawValue, requestField: "ack", responseField: "ack",
                            rule: 0),
                   PairSpec(request: Kind.ping.rawValue, response: Kind.pong.rawValue)]
        // Binary messages are attachments: shown as their bytes.
        s.body = .raw
        return nil
    }
}

extension SocketIOPackets {
    /// The binary messages the binary_event or binary_ack just decoded announces (0: none).
    static func announced(_ m: DecodedMessage) -> UInt64 {
        guard let mi = m.message, mi == Kind.binaryEvent.rawValue || mi == Kind.binaryAck.rawValue else { return 0 }
        if let f = m.fields.first, case .unsigned(let n) = f.value { return n }
        return 0
    }

    /// Binary message `m` (decoded raw) as attachment `num` of the packet before it; `typed`:
    /// Engine.IO v3's, whose first byte is the Engine.IO packet type (4, a message).
    static func attachment(_ m: DecodedMessage, num: UInt64, typed: Bool) {
        let mi = Int32(Kind.attachment.rawValue)
        let b = m.frame.map { $0.bytes } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        let skip = typed && b.first == 0x04 ? 1 : 0
        m.message = Int(mi)
        m.fields.removeAll()
        m.fields.append(DecodedField(name: .field(mi, 0), value: .unsigned(num), offset: 0, width: 0, depth: 0))
        if b.count > skip {
            m.fields.append(DecodedField(name: .field(mi, 1), value: .bytes, offset: Int32(skip), width: Int32(b.count - skip), depth: 0))
        }
    }
}
