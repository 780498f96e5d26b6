/// What the WebSocket layer says about one message, shown above the inner message it carried.
public struct WebSocketInfo: Sendable, Equatable {
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
    /// Problems with the frames themselves: flagged on the message, decoding goes on.
    public var violations: [WebSocketViolation] = []
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
        case .inflatedTooLarge(let m): return "inflated message exceeds \(m) bytes (--ws-max-message): skipped"
        case .messageTooLarge(let n, let m): return "message of \(n) bytes exceeds \(m) (--ws-max-message): skipped"
        case .closePayloadOneByte: return "close payload of 1 byte (a status code takes 2)"
        case .compressionContextLost: return "compression context lost in an earlier gap"
        case .shorterThanHeader(let n, let h): return "binary message of \(n) bytes is shorter than the \(h)-byte header: shown raw"
        }
    }
}
