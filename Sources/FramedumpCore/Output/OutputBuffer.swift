#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte buffer in front of a file descriptor: output is built as bytes, not Strings,
/// and written in large blocks (or per line with `-l`).
public final class OutputBuffer {
    public private(set) var bytes: [UInt8] = []
    let fd: Int32?
    public var lineBuffered = false
    private let limit = 1 << 16

    /// Writes to `fd` (1 for stdout); `nil` collects in memory (tests).
    public init(fd: Int32?) {
        self.fd = fd
        bytes.reserveCapacity(limit + 4096)
    }

    @inline(__always) public func byte(_ b: UInt8) { bytes.append(b) }

    @inline(__always) public func write(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    @inline(__always) public func write(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    @inline(__always) public func write(_ b: UnsafeRawBufferPointer) { bytes.append(contentsOf: b) }

    @inline(__always) public func write(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    public func spaces(_ n: Int) { for _ in 0..<max(0, n) { bytes.append(0x20) } }

    /// Decimal without going through String.
    public func decimal(_ v: UInt64) {
        if v < 10 { bytes.append(0x30 &+ UInt8(v)); return }
        var tmp: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                  UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        var x = v
        withUnsafeMutableBytes(of: &tmp) { t in
            while x > 0 { t[n] = 0x30 &+ UInt8(x % 10); x /= 10; n += 1 }
            var i = n - 1
            while i >= 0 { bytes.append(t[i]); i -= 1 }
        }
    }

    public func decimal(_ v: Int64) {
        if v < 0 { bytes.append(0x2d); decimal(UInt64(bitPattern: 0 &- v)) } else { decimal(UInt64(v)) }
    }

    @inline(__always) public func decimal(_ v: Int) { decimal(Int64(v)) }

    /// Zero-padded decimal of exactly `width` digits.
    public func padded(_ v: UInt64, width: Int) {
        var d = 1 as UInt64
        for _ in 1..<width { d &*= 10 }
        var x = v
        for _ in 0..<width {
            bytes.append(0x30 &+ UInt8((x / d) % 10))
            x %= d
            d /= 10
            if d == 0 { d = 1 }
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public func hex(_ b: UInt8) {
        bytes.append(Self.hexDigits[Int(b >> 4)])
        bytes.append(Self.hexDigits[Int(b & 15)])
    }

    public func hex(_ v: UInt64, width: Int) {
        var i = width - 1
        while i >= 0 {
            bytes.append(Self.hexDigits[Int((v >> (UInt64(i) * 4)) & 15)])
            i -= 1
        }
    }

    /// `seconds.micros` like tcpdump's -tt.
    public func timestamp(_ ts: Timestamp) {
        decimal(ts.seconds)
        byte(0x2e)
        padded(UInt64(ts.nanos / 1000), width: 6)
    }

    /// Ends a line; flushes when the buffer is full or in line-buffered mode.
    @inline(__always) public func newline() {
        bytes.append(0x0a)
        if lineBuffered || bytes.count >= limit { flush() }
    }

    public func flush() {
        guard let fd else { return }
        var written = 0
        bytes.withUnsafeBytes { b in
            while written < b.count {
                let n = Glibc.write(fd, b.baseAddress! + written, b.count - written)
                if n <= 0 {
                    if n < 0 && errno == EINTR { continue }
                    break  // closed pipe (e.g. `| head`): drop the output, keep going
                }
                written += n
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }

    /// What has been collected (for tests and in-memory use).
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
