/*
 A KCP segment (ikcp.c), all fields little-endian, 24 bytes then `len` bytes of data; a
 datagram carries one or more of them back to back:
  0               4       5       6               8 (bytes)
 |      conv     |  cmd  |  frg  |      wnd      |
 |       ts      |       sn      |      una      |
 |      len      |  data ...
*/
/// One KCP segment's header, read from a datagram.
struct KCPSegment {
    enum Command: UInt8 {
        case push = 81, ack = 82, windowProbe = 83, windowSize = 84
    }

    var conv: UInt32
    var cmd: Command
    /// Message mode: fragments still to come after this one (0: the message's last).
    var frg: UInt8
    var wnd: UInt16
    var ts: UInt32
    var sn: UInt32
    /// The sender's next expected sequence number in the other direction.
    var una: UInt32
    var length: Int

    static let headerSize = 24

    /// Why the bytes at some offset are not a segment.
    enum Problem {
        case short(Int)
        case command(UInt8)
        case length(UInt32, room: Int)
    }

    enum Read {
        case segment(KCPSegment)
        case problem(Problem)
    }

    /// The segment at `at`, or why there is none; `b` is the datagram.
    @inline(__always)
    static func read(_ b: UnsafeRawBufferPointer, at: Int) -> Read {
        guard b.count - at >= headerSize else { return .problem(.short(b.count - at)) }
        let cmdByte = b.load(fromByteOffset: at + 4, as: UInt8.self)
        guard let cmd = Command(rawValue: cmdByte) else { return .problem(.command(cmdByte)) }
        let len = b.u32le(at + 20)!
        let room = b.count - at - headerSize
        guard len <= UInt32(room) else { return .problem(.length(len, room: room)) }
        return .segment(KCPSegment(conv: b.u32le(at)!, cmd: cmd, frg: b.load(fromByteOffset: at + 5, as: UInt8.self),
                                   wnd: b.u16le(at + 6)!, ts: b.u32le(at + 8)!, sn: b.u32le(at + 12)!,
                                   una: b.u32le(at + 16)!, length: Int(len)))
    }

    static func problemText(_ p: Problem) -> (kind: String, text: String) {
        switch p {
        case .short(let n): return ("short-segment", "\(n) bytes left in the datagram, shorter than a KCP segment header (24)")
        case .command(let c): return ("unknown-command", "KCP command \(c) is not push (81), ack (82), window probe (83) or window size (84)")
        case .length(let l, let room): return ("segment-length", "KCP segment length \(l) runs past the datagram (\(room) bytes left)")
        }
    }
}

/// Serial-number order of 32-bit sequence numbers (ikcp's `_itimediff`).
@inline(__always) func kcpBefore(_ a: UInt32, _ b: UInt32) -> Bool { Int32(bitPattern: a &- b) < 0 }
