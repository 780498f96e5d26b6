/// `framedump check -r CAPTURE`: a capture validated against the loaded dissectors, for CI of
/// protocol changes. Each problem is one line (class, connection, direction, packet, message,
/// what is wrong); the summary counts them per class.
public struct ProblemClass: RawRepresentable, Hashable, Sendable {
    public let rawValue: String

    /// A class `check -r` knows: a shared one or a registered layer's.
    public init?(rawValue: String) {
        guard Self.allCases.contains(where: { $0.rawValue == rawValue }) else { return nil }
        self.rawValue = rawValue
    }

    private init(_ name: String) { rawValue = name }

    /// A layer's problems (its protocol violations, a handshake it finds wrong), under its name.
    init(layer: String) { rawValue = layer }

    /// A message id no message of the schema has.
    public static let unknownMessage = Self("unknown-message")
    /// A body that ends inside a field (or an array announcing more than the frame holds).
    public static let bodyShort = Self("body-short")
    /// A body with bytes after its last field.
    public static let bodyLong = Self("body-long")
    /// A field whose bytes hold no value of its type (a `Decimal` that is no number, a varint
    /// longer than its type allows).
    public static let badValue = Self("bad-value")
    /// A header field declared constant with another value.
    public static let constant = Self("constant")
    /// A frame the deframer could not take (length out of bounds, bytes skipped, cut at the end).
    public static let malformed = Self("malformed")
    /// Bytes missing from a stream (the frame it cut and the bytes skipped after it are part of it).
    public static let gap = Self("gap")
    /// A connection that carried bytes no dissector claimed (reported with `--unclaimed`).
    public static let unclaimed = Self("unclaimed")
    /// Protobuf bodies that are not valid wire data or do not fit their message.
    public static let protobuf = Self("protobuf")
    /// JSON bodies that are not JSON.
    public static let json = Self("json")
    /// Text fields that are not UTF-8.
    public static let utf8 = Self("utf8")
    /// Bodies a transform could not undo (wrong key, broken compressed data, a bomb).
    public static let transform = Self("transform")
    /// Messages nested too deep to decode.
    public static let nesting = Self("nesting")
    /// A bound of the run (`--max-array`…) stopped a message from being decoded whole.
    public static let limit = Self("limit")

    /// In the summary's order: the stream's classes, each layer's (`websocket`), the bodies'.
    public static var allCases: [ProblemClass] {
        [.unknownMessage, .bodyShort, .bodyLong, .badValue, .constant, .malformed, .gap, .unclaimed]
            + LayerRegistry.kinds.map { Self($0.name) }
            + [.protobuf, .json]
            + BodyRegistry.kinds.compactMap { $0.problemClass }.filter { $0 != "protobuf" && $0 != "json" }.map { Self($0) }
            + [.utf8, .transform, .nesting, .limit]
    }

    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

public struct Problem: Sendable {
    public var kind: ProblemClass
    public var conn: String
    public var dir: Direction?
    public var packet: UInt64
    public var message: String?
    public var detail: String
}

public final class CaptureCheck: MessageSink {
    let out: OutputBuffer
    let allowed: Set<ProblemClass>
    let reportUnclaimed: Bool
    public private(set) var counts: [ProblemClass: Int] = [:]
    /// Per connection number and direction: a gap or a malformed frame was reported and no
    /// message decoded since (the frame a gap cut, and the bytes skipped to the next header,
    /// belong to the problem before them).
    var afterGap: Set<UInt64> = []

    public init(output: OutputBuffer, allowed: Set<ProblemClass>, unclaimed: Bool) {
        out = output
        self.allowed = allowed
        reportUnclaimed = unclaimed
    }

    /// Problems that are not allowed.
    public var failures: Int { counts.filter { !allowed.contains($0.key) }.reduce(0) { $0 + $1.value } }

    func report(_ p: Problem) {
        counts[p.kind, default: 0] += 1
        var line = p.kind.rawValue + " " + p.conn
        if let d = p.dir { line += d == .c2s ? " c2s" : " s2c" }
        line += " pkt \(p.packet)"
        if let m = p.message { line += " " + m }
        line += ": " + p.detail
        if allowed.contains(p.kind) { line += " (allowed)" }
        out.write(line)
        out.newline()
    }

    func key(_ c: Connection, _ d: Direction) -> UInt64 { c.number << 1 | UInt64(d.rawValue) }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        afterGap.remove(key(c, m.direction))
        guard !m.warnings.isEmpty else { return }
        let name = m.name(in: p) ?? m.id.map { "id \($0)" }
        for w in m.warnings {
            let kind: ProblemClass
            switch w {
            case .unknownMessage, .replyWithoutRequest: kind = .unknownMessage
            case .bodyTooShort, .arrayTooLong: kind = .bodyShort
            // The gap that cut it is reported as a gap.
            case .frameCut: continue
            case .trailingBytes: kind = .bodyLong
            case .badValue: kind = .badValue
            case .nestingTooDeep, .protobufTooDeep: kind = .nesting
            case .arrayOverLimit: kind = .limit
            case .invalidJSON, .jsonTooDeep, .jsonLoneSurrogate: kind = .json
            case .invalidUTF8: kind = .utf8
            case .layer(let l): kind = ProblemClass(layer: l.layer)
            // A protobuf protocol decodes an id no line binds without a schema: still an unknown id.
            case .protobuf where m.message == nil && m.id != nil && m.layerNotes.isEmpty: kind = .unknownMessage
            case .protobuf: kind = .protobuf
            case .body(let k, _): kind = ProblemClass(layer: BodyRegistry.kinds[Int(k)].problemClass ?? BodyRegistry.kinds[Int(k)].name)
            case .transform: kind = .transform
            case .transformTooLarge: kind = .limit
            }
            report(Problem(kind: kind, conn: c.name, dir: m.direction, packet: m.frame.firstPacket.number,
                           message: name, detail: w.text))
        }
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        let kind: ProblemClass
        switch reason {
        case .cutByGap: return
        case .skipped where afterGap.contains(key(c, d)): return
        case .constantMismatch: kind = .constant
        case .layer(let l): kind = ProblemClass(layer: l.layer)
        default: kind = .malformed
        }
        afterGap.insert(key(c, d))
        report(Problem(kind: kind, conn: c.name, dir: d, packet: packet.number, message: nil,
                       detail: reason.text + " (\(length) bytes at stream offset \(offset))"))
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        afterGap.insert(key(c, d))
        report(Problem(kind: .gap, conn: c.name, dir: d, packet: packet.number, message: nil,
                       detail: "\(length) bytes missing at stream offset \(offset) (\(reason.rawValue))"))
    }

    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                           packet: PacketRef) {
        for x in e.problems {
            report(Problem(kind: ProblemClass(layer: x.layer), conn: c.name, dir: d, packet: packet.number, message: nil,
                           detail: x.text))
        }
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        afterGap.remove(key(c, .c2s))
        afterGap.remove(key(c, .s2c))
        let bytes = c.bytesDelivered(.c2s) + c.bytesDelivered(.s2c)
        if reportUnclaimed && p == nil && bytes > 0 {
            report(Problem(kind: .unclaimed, conn: c.name, dir: nil, packet: c.firstPacket.number, message: nil,
                           detail: "\(bytes) bytes no dissector claimed"))
        }
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    public func finish() { out.flush() }

    /// `N problems: 2 unknown-message, 1 gap (allowed)` or `no problems`.
    public func summary(_ capture: String, messages: UInt64) -> String {
        let total = counts.values.reduce(0, +)
        guard total > 0 else {
            if messages == 0 { return "\(capture): nothing checked: no message was decoded (no connection on a dissector's port or found by any_port; --decode-as PORT=PROTOCOL names a port)" }
            return "\(capture): no problems (\(messages) messages)"
        }
        let parts = ProblemClass.allCases.compactMap { k in
            counts[k].map { "\($0) \(k.rawValue)" + (allowed.contains(k) ? " (allowed)" : "") }
        }
        return "\(capture): \(total) problem\(total == 1 ? "" : "s") in \(messages) messages: " + parts.joined(separator: ", ")
    }
}
