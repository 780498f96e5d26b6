/// One message's bytes cut from a stream, with where they came from.
public struct Frame {
    /// The whole frame, header included. Borrowed: valid only during the callback.
    public var bytes: UnsafeRawBufferPointer
    /// Stream offset of the frame's first byte.
    public var offset: UInt64
    public var firstPacket: PacketRef
    public var lastPacket: PacketRef
    /// How many whole frames the last packet carried (≥ 2: sticky packets, 粘包).
    public var coalesced: Int
    /// Bytes of the frame (as its header announces it) that the capture lacks: a frame cut by
    /// the snap length or a gap, shown as far as it was captured. 0 for a whole frame.
    public var missing = 0
    /// The direction's first frame, cut with the layout of its `first` block (a startup
    /// message): decoded with that layout.
    public var first = false

    package init(bytes: UnsafeRawBufferPointer, offset: UInt64, firstPacket: PacketRef, lastPacket: PacketRef, coalesced: Int) {
        self.bytes = bytes
        self.offset = offset
        self.firstPacket = firstPacket
        self.lastPacket = lastPacket
        self.coalesced = coalesced
    }
}

/// Why bytes of a stream did not become a frame.
public enum MalformedReason: Sendable, Equatable {
    case lengthTooShort(Int64, minimum: Int)
    case lengthTooLong(Int64, maximum: Int)
    /// Values as read (signed fields sign-extended); shown in hex for a `[hex]` field.
    case constantMismatch(field: String, value: UInt64, expected: UInt64, hex: Bool, signed: Bool)
    /// Bytes passed over while looking for the next plausible header.
    case skipped
    /// A frame whose bytes were cut by a gap in the stream.
    case cutByGap(have: Int, need: Int?)
    /// The stream ended inside a frame (the connection closed).
    case incompleteAtEnd(have: Int, need: Int?)
    /// The capture ended inside a frame (end of the file, `-c`): not malformed, only cut.
    case cutByCaptureEnd(have: Int, need: Int?)
    /// A frame ran past the end of the unit that carried it (a UDP datagram, a KCP message),
    /// which no frame crosses.
    case cutByUnitEnd(have: Int, need: Int?)
    /// A varint header field ran past the bytes its type allows (`varint(4)`: 4), or past 64 bits.
    case badVarint(field: String, maxBytes: Int)
    /// `frame_length = message;`: the frame's message id names no message, so its end is unknown.
    case unknownSize(id: UInt64?)
    /// `frame_length = message;`: a field of the frame holds no value of its type (the text says which).
    case badValue(String)
    /// A layer of the stack could not read its own framing here (it says why).
    case layer(LayerProblem)

    public var text: String {
        switch self {
        case .lengthTooShort(let l, let m): return "length \(l) is shorter than the \(m)-byte header"
        case .lengthTooLong(let l, let m):
            return l == Int64.max ? "length overflows" : "length \(l) exceeds max_frame \(m)"
        case .constantMismatch(let f, let v, let e, let hex, let signed):
            func shown(_ x: UInt64) -> String {
                hex ? "0x" + String(x, radix: 16) : signed ? String(Int64(bitPattern: x)) : String(x)
            }
            return "header field \(f) is \(shown(v)), expected \(shown(e))"
        case .skipped: return "bytes skipped while resynchronising"
        case .cutByGap(let h, let n):
            return "frame cut by a gap in the stream (had \(h)" + (n.map { " of \($0)" } ?? "") + " bytes)"
        case .incompleteAtEnd(let h, let n):
            return "stream ended inside a frame (had \(h)" + (n.map { " of \($0)" } ?? "") + " bytes)"
        case .cutByCaptureEnd(let h, let n):
            return "capture ended inside a frame (\(h)" + (n.map { " of \($0)" } ?? "") + " bytes)"
        case .cutByUnitEnd(let h, let n):
            return "frame runs past the end of the datagram or message carrying it (had \(h)" + (n.map { " of \($0)" } ?? "") + " bytes)"
        case .badVarint(let f, let n): return "header field \(f) is a varint longer than \(n) bytes"
        case .unknownSize(let id):
            return (id.map { "message id \($0) names no message" } ?? "no message is declared for a frame without an id")
                + ": where its frame ends is unknown (frame_length = message)"
        case .badValue(let t): return t + ": where its frame ends is unknown (frame_length = message)"
        case .layer(let l): return l.text
        }
    }

    /// Not a fault of the stream: the capture stopped inside a frame.
    public var isCaptureCut: Bool {
        if case .cutByCaptureEnd = self { return true }
        return false
    }

    public var kind: String {
        switch self {
        case .lengthTooShort: return "length-too-short"
        case .lengthTooLong: return "length-too-long"
        case .constantMismatch: return "constant-mismatch"
        case .skipped: return "skipped"
        case .cutByGap: return "cut-by-gap"
        case .incompleteAtEnd: return "incomplete"
        case .cutByCaptureEnd: return "capture-ended"
        case .cutByUnitEnd: return "cut-by-datagram-end"
        case .badVarint: return "bad-varint"
        case .unknownSize: return "unknown-size"
        case .badValue: return "bad-value"
        case .layer(let l): return l.kind
        }
    }
}

/// Receives what a deframer cuts.
public protocol FrameConsumer: AnyObject {
    func frame(_ f: Frame, _ dir: Direction)
    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef)
    /// The same with the reported bytes (their first `MalformedSample.limit` at most) for `-x`.
    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef,
                   bytes: UnsafeRawBufferPointer)
}

extension FrameConsumer {
    public func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef,
                          bytes: UnsafeRawBufferPointer) {
        malformed(dir, offset: offset, length: length, reason: reason, packet: packet)
    }
}

/// How many bytes of a malformed stretch are kept to be shown with `-x` (a run of garbage can
/// be as long as the stream: only its start is kept).
public enum MalformedSample {
    public static let limit = 256
}
