/// What the WebSocket layer says about one message, shown above the inner message it carried.
/// A plain value (no reference inside on the common path): it is copied for every message.
public struct WebSocketInfo: Sendable, Equatable, BitwiseCopyable {
    /// The opcode of the message's first frame (text, binary, or a control opcode).
    public var opcode: WebSocketOpcode
    /// Whether the message ended with a FIN frame (false: cut by a gap or the capture's end).
    public var fin: Bool
    public var masked: Bool
    /// RSV1 on the first frame: compressed with permessage-deflate.
    public var compressed: Bool
    /// Frames the message came in (1 unless fragmented).
    public var frames: Int
    /// Payload bytes on the wire, before inflating (headers not counted).
    public var wireLength: UInt64

    /// Problems with the frames themselves, one bit per kind, with their details beside.
    var flags: UInt32 = 0
    var rsv: UInt8 = 0
    var badOpcode: UInt8 = 0
    var size: UInt64 = 0
    var limit = 0
    /// zlib's message, as an index into `zlibMessages` (keeps this struct free of references).
    var inflateError: UInt8 = 0

    public init(opcode: WebSocketOpcode, fin: Bool, masked: Bool, compressed: Bool, frames: Int, wireLength: UInt64) {
        self.opcode = opcode
        self.fin = fin
        self.masked = masked
        self.compressed = compressed
        self.frames = frames
        self.wireLength = wireLength
    }

    public var hasViolations: Bool { flags != 0 }

    /// The message was larger than `--max-ws-message` (on the wire or once inflated).
    public var exceededSize: Bool { flags & (1 << 11 | 1 << 12) != 0 }

    /// What zlib says when inflating fails (its own fixed texts).
    static let zlibMessages = [
        "data error", "invalid block type", "invalid stored block lengths", "too many length or distance symbols",
        "invalid code lengths set", "invalid bit length repeat", "invalid literal/lengths set", "invalid distances set",
        "invalid literal/length code", "invalid distance code", "invalid distance too far back",
        "zlib could not start", "no progress",
    ]

    /// The payload is shown raw rather than decoded: not inflated, or cut.
    public var undecodable: Bool { flags & Self.undecodableMask != 0 }

    static let undecodableMask: UInt32 = 1 << 10 | 1 << 11 | 1 << 12 | 1 << 5 | 1 << 4

    mutating func add(_ v: WebSocketViolation) {
        switch v {
        case .unmaskedClientFrame: flags |= 1 << 0
        case .maskedServerFrame: flags |= 1 << 1
        case .reservedBits(let r): flags |= 1 << 2; rsv = r
        case .reservedOpcode(let o): flags |= 1 << 3; badOpcode = o
        case .continuationWithoutStart: flags |= 1 << 4
        case .unfinishedMessage: flags |= 1 << 5
        case .fragmentedControlFrame: flags |= 1 << 6
        case .longControlFrame(let n): flags |= 1 << 7; size = n
        case .nonMinimalLength: flags |= 1 << 8
        case .invalidUTF8: flags |= 1 << 9
        case .inflateFailed(let why):
            flags |= 1 << 10
            inflateError = UInt8(Self.zlibMessages.firstIndex(of: why) ?? 0)
        case .inflatedTooLarge(let m): flags |= 1 << 11; limit = m
        case .messageTooLarge(let n, let m): flags |= 1 << 12; size = n; limit = m
        case .compressedControlOrContinuation: flags |= 1 << 13
        case .closePayloadOneByte: flags |= 1 << 14
        case .compressionContextLost: flags |= 1 << 15
        case .shorterThanHeader(let n, let h): flags |= 1 << 16; size = UInt64(n); limit = h
        }
    }

    /// Adds another info's violations (a frame's, to its message's).
    mutating func merge(_ o: WebSocketInfo) {
        guard o.flags != 0 else { return }
        for v in o.violations { add(v) }
    }

    /// Every violation, in a fixed order (the rare path: output and tests).
    public var violations: [WebSocketViolation] {
        guard flags != 0 else { return [] }
        var out: [WebSocketViolation] = []
        func has(_ bit: Int) -> Bool { flags & (1 << UInt32(bit)) != 0 }
        if has(0) { out.append(.unmaskedClientFrame) }
        if has(1) { out.append(.maskedServerFrame) }
        if has(2) { out.append(.reservedBits(rsv)) }
        if has(3) { out.append(.reservedOpcode(badOpcode)) }
        if has(4) { out.append(.continuationWithoutStart) }
        if has(5) { out.append(.unfinishedMessage) }
        if has(6) { out.append(.fragmentedControlFrame) }
        if has(7) { out.append(.longControlFrame(size)) }
        if has(8) { out.append(.nonMinimalLength) }
        if has(9) { out.append(.invalidUTF8) }
        if has(13) { out.append(.compressedControlOrContinuation) }
        if has(15) { out.append(.compressionContextLost) }
        if has(10) { out.append(.inflateFailed(Self.zlibMessages[Int(inflateError)])) }
        if has(11) { out.append(.inflatedTooLarge(max: limit)) }
        if has(12) { out.append(.messageTooLarge(size, max: limit)) }
        if has(14) { out.append(.closePayloadOneByte) }
        if has(16) { out.append(.shorterThanHeader(Int(size), header: limit)) }
        return out
    }
}

extension WebSocketViolation {
    /// As a warning on its message.
    var problem: LayerProblem { LayerProblem(layer: WebSocketLayer.name, kind: "violation", text: text) }

    /// A frame header whose 64-bit length has its top bit set (RFC 6455 §5.2): a malformed
    /// stretch of the stream, not a message.
    static let lengthTopBit = LayerProblem(layer: WebSocketLayer.name, kind: "websocket-length",
                                           text: "WebSocket frame length has its most significant bit set")
}

/// An RFC 6455 / 7692 rule a frame broke. Each is flagged on its message; nothing stops.
public enum WebSocketViolation: Sendable, Equatable {
    case unmaskedClientFrame
    case maskedServerFrame
    case reservedBits(UInt8)
    case reservedOpcode(UInt8)
    case continuationWithoutStart
    /// A data frame began while a fragmented message was still open: that message was cut.
    case unfinishedMessage
    case fragmentedControlFrame
    case longControlFrame(UInt64)
    case nonMinimalLength
    case invalidUTF8
    case compressedControlOrContinuation
    case inflateFailed(String)
    case inflatedTooLarge(max: Int)
    case messageTooLarge(UInt64, max: Int)
    case closePayloadOneByte
    case compressionContextLost
    case shorterThanHeader(Int, header: Int)

    public var text: String {
        switch self {
        case .unmaskedClientFrame: return "client frame is not masked (RFC 6455 5.1)"
        case .maskedServerFrame: return "server frame is masked (RFC 6455 5.1)"
        case .reservedBits(let r): return "reserved bits \(String(r >> 4, radix: 2)) set without a negotiated extension"
        case .reservedOpcode(let o): return "reserved opcode \(o)"
        case .continuationWithoutStart: return "continuation frame without a message to continue"
        case .unfinishedMessage: return "a new message began before the previous one's FIN: that one was cut"
        case .fragmentedControlFrame: return "control frame is fragmented (FIN not set)"
        case .longControlFrame(let n): return "control frame payload of \(n) bytes (at most 125)"
        case .nonMinimalLength: return "payload length not in its shortest encoding"
        case .invalidUTF8: return "text message is not valid UTF-8"
        case .compressedControlOrContinuation: return "RSV1 set on a control or continuation frame"
        case .inflateFailed(let why): return "cannot inflate (permessage-deflate): \(why): compressed bytes shown"
        case .inflatedTooLarge(let m): return "inflated message exceeds \(m) bytes (--max-ws-message): skipped"
        case .messageTooLarge(let n, let m): return "message of \(n) bytes exceeds \(m) (--max-ws-message): skipped"
        case .closePayloadOneByte: return "close payload of 1 byte (a status code takes 2)"
        case .compressionContextLost: return "compression context lost in an earlier gap"
        case .shorterThanHeader(let n, let h): return "binary message of \(n) bytes is shorter than the \(h)-byte header: shown raw"
        }
    }
}
