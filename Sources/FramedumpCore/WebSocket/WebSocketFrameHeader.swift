/// One RFC 6455 frame header, read from borrowed bytes (§5.2):
///
///      0                   1                   2                   3
///      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
///     +-+-+-+-+-------+-+-------------+-------------------------------+
///     |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
///     |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
///     |N|V|V|V|       |S|             |   (if payload len==126/127)   |
///     | |1|2|3|       |K|             |                               |
///     +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
///     |     Extended payload length continued, if payload len == 127  |
///     + - - - - - - - - - - - - - - - +-------------------------------+
///     |                               |Masking-key, if MASK set to 1  |
///     +-------------------------------+-------------------------------+
public struct WebSocketFrameHeader: Equatable, Sendable {
    public var fin: Bool
    /// RSV1-3 as the top bits of the first byte (0x40 = RSV1: compressed, RFC 7692).
    public var rsv: UInt8
    public var opcode: WebSocketOpcode
    public var masked: Bool
    public var length: UInt64
    /// The masking key as the four bytes appear on the wire (first byte lowest).
    public var maskKey: UInt32
    public var headerSize: Int
    /// The length was not written in its shortest form (§5.2 requires it).
    public var nonMinimalLength: Bool

    public enum Parse: Equatable, Sendable {
        case header(WebSocketFrameHeader)
        case needMoreData
        /// A 64-bit length with its most significant bit set: no such frame can exist.
        case lengthTopBitSet
    }

    /// The longest header: 2 + 8 (64-bit length) + 4 (mask).
    public static let maxSize = 14

    public static func parse(_ b: UnsafeRawBufferPointer, at i: Int) -> Parse {
        guard let b0 = b.u8(i), let b1 = b.u8(i + 1) else { return .needMoreData }
        let masked = b1 & 0x80 != 0
        var length = UInt64(b1 & 0x7f)
        var size = 2
        var nonMinimal = false
        if length == 126 {
            guard let l = b.u16be(i + 2) else { return .needMoreData }
            length = UInt64(l)
            size = 4
            nonMinimal = length < 126
        } else if length == 127 {
            guard let l = b.u64be(i + 2) else { return .needMoreData }
            if l & (1 << 63) != 0 { return .lengthTopBitSet }
            length = l
            size = 10
            nonMinimal = length <= 0xffff
        }
        var key: UInt32 = 0
        if masked {
            guard let k = b.u32le(i + size) else { return .needMoreData }
            key = k
            size += 4
        }
        return .header(WebSocketFrameHeader(
            fin: b0 & 0x80 != 0, rsv: b0 & 0x70, opcode: WebSocketOpcode(rawValue: b0 & 0x0f), masked: masked,
            length: length, maskKey: key, headerSize: size, nonMinimalLength: nonMinimal))
    }
}

/// The frame's opcode (§5.2, §11.8).
public struct WebSocketOpcode: RawRepresentable, Equatable, Hashable, Sendable, BitwiseCopyable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let continuation = Self(rawValue: 0)
    public static let text = Self(rawValue: 1)
    public static let binary = Self(rawValue: 2)
    public static let close = Self(rawValue: 8)
    public static let ping = Self(rawValue: 9)
    public static let pong = Self(rawValue: 10)

    public var isControl: Bool { rawValue & 0x08 != 0 }
    public var isKnown: Bool { rawValue <= 2 || (rawValue >= 8 && rawValue <= 10) }

    public var name: StaticString {
        switch rawValue {
        case 0: return "continuation"
        case 1: return "text"
        case 2: return "binary"
        case 8: return "close"
        case 9: return "ping"
        case 10: return "pong"
        case 3...7: return "reserved-data"
        default: return "reserved-control"
        }
    }
}
