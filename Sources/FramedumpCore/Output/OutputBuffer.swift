#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte buffer in front of a file descriptor: output is built as bytes, not Strings,
/// and written in large blocks (or per line with `-l`).
public final class OutputBuffer {
    /// Every write makes room first, through `reserve` or a Cursor's `room`: LargeMessageTests
    /// writes through a buffer of one byte and, under AddressSanitizer (scripts/sanitize.sh),
    /// fails on any byte past `capacity`.
    /// Raw storage: appends are a bounds check and a store, nothing more.
    @exclusivity(unchecked) var base: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) var capacity: Int
    @exclusivity(unchecked) public internal(set) var count = 0
    let fd: Int32?
    @exclusivity(unchecked) public var lineBuffered = false
    /// The reader went away (EPIPE): the pipeline stops reading packets, nothing more is written.
    @exclusivity(unchecked) public private(set) var closed = false
    /// Bytes written to `fd` so far: with `count`, where the next byte will land in the file.
    @exclusivity(unchecked) public private(set) var flushed: UInt64 = 0
    /// Where the next byte written will land in the file.
    public var position: UInt64 { flushed &+ UInt64(count) }
    /// The digit tables, looked up once per buffer rather than through globals per number.
    let pairs = UnsafePointer(OutputBuffer.pairTable)
    let hexDigitsPointer = OutputBuffer.hexDigits.utf8Start
    let powers = UnsafePointer(Cursor.powersOfTen)
    private let limit = 1 << 18

    /// Writes to `fd` (1 for stdout); `nil` collects in memory (tests).
    public init(fd: Int32?) {
        self.fd = fd
        capacity = limit * 2
        base = .allocate(capacity: capacity)
    }

    /// In memory from `capacity` bytes on (it grows as needed): a shard's output.
    init(fd: Int32?, capacity: Int) {
        self.fd = fd
        self.capacity = max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }

    /// Empty. A buffer more than four times larger than what it held (and than `floor`) goes
    /// back to that size: a shard's buffers go round, and each would otherwise keep the largest
    /// line it ever held. One that held about what it can keeps its size, so a shard whose
    /// rounds write megabytes does not grow a buffer again (copies, fresh pages) every round.
    func empty(shrinkingTo floor: Int) {
        let held = max(count, floor, 1)
        count = 0
        guard capacity > 4 * held else { return }
        base.deallocate()
        capacity = held
        base = .allocate(capacity: capacity)
    }

    /// Trades the bytes held with `other`'s (a shard hands its output over and takes an
    /// empty buffer back).
    func exchangeBytes(with other: OutputBuffer) {
        swap(&base, &other.base)
        swap(&capacity, &other.capacity)
        swap(&count, &other.count)
    }

    deinit {
        base.deallocate()
        secondText.deallocate()
    }

    @inline(__always) func reserve(_ n: Int) {
        if count + n > capacity { grow(n) }
    }

    func grow(_ n: Int) {
        let newCap = max(capacity * 2, count + n)
        let nb = UnsafeMutablePointer<UInt8>.allocate(capacity: newCap)
        nb.update(from: base, count: count)
        base.deallocate()
        base = nb
        capacity = newCap
    }

    /// The bytes collected so far (tests and in-memory use).
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    @inline(__always) public func byte(_ b: UInt8) {
        reserve(1)
        base[count] = b
        count += 1
    }

    @inline(__always) public func write(_ b: UnsafeRawBufferPointer) {
        guard let src = b.baseAddress, b.count > 0 else { return }
        reserve(b.count)
        UnsafeMutableRawPointer(base + count).copyMemory(from: src, byteCount: b.count)
        count += b.count
    }

    @inline(__always) public func write(_ s: StaticString) {
        write(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    @inline(__always) public func write(_ s: String) {
        var s = s
        s.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always) public func write(_ b: [UInt8]) {
        b.withUnsafeBytes { write($0) }
    }

    public func spaces(_ n: Int) {
        guard n > 0 else { return }
        reserve(n)
        (base + count).initialize(repeating: 0x20, count: n)
        count += n
    }

    /// "00" "01" ... "99": two digits per division.
    static let pairs: [UInt8] = {
        var p: [UInt8] = []
        for i in 0..<100 {
            p.append(UInt8(0x30 + i / 10))
            p.append(UInt8(0x30 + i % 10))
        }
        return p
    }()

    /// The same pairs in memory that is never freed, for cursors.
    /// nonisolated(unsafe): filled once by its initializer (which Swift runs once, thread-safely)
    /// and only read after (ShardPoolTests under ThreadSanitizer, scripts/sanitize.sh).
    nonisolated(unsafe) static let pairTable: UnsafeMutablePointer<UInt8> = {
        let t = UnsafeMutablePointer<UInt8>.allocate(capacity: 200)
        for i in 0..<200 { t[i] = pairs[i] }
        return t
    }()

    /// Decimal without going through String.
    @inline(__always)
    public func decimal(_ v: UInt64) {
        var c = cursor(reserving: 20)
        c.decimal(v)
        commit(c)
    }

    public func decimal(_ v: Int64) {
        if v < 0 { byte(0x2d); decimal(UInt64(bitPattern: 0 &- v)) } else { decimal(UInt64(v)) }
    }

    @inline(__always) public func decimal(_ v: Int) { decimal(Int64(v)) }

    /// Zero-padded decimal of exactly `width` digits.
    public func padded(_ v: UInt64, width: Int) {
        reserve(width)
        var x = v
        var i = count + width - 1
        while i >= count {
            base[i] = 0x30 &+ UInt8(x % 10)
            x /= 10
            i -= 1
        }
        count += width
    }

    static let hexDigits: StaticString = "0123456789abcdef"

    @inline(__always) public func hex(_ b: UInt8) {
        reserve(2)
        let d = Self.hexDigits.utf8Start
        base[count] = d[Int(b >> 4)]
        base[count + 1] = d[Int(b & 15)]
        count += 2
    }

    public func hex(_ v: UInt64, width: Int) {
        reserve(width)
        let d = Self.hexDigits.utf8Start
        var i = width - 1
        while i >= 0 {
            base[count] = d[Int((v >> (UInt64(i) * 4)) & 15)]
            count += 1
            i -= 1
        }
    }

    /// The seconds of a timestamp as text; consecutive packets share their second, so it is
    /// formatted once per second of capture.
    @inline(__always)
    func secondsText(_ ts: Timestamp) -> UnsafeRawBufferPointer {
        if ts.seconds != lastSecond {
            var t = Cursor(scratch: secondText.baseAddress!, count: secondText.count)
            t.decimal(ts.seconds)
            secondLength = t.p - secondText.baseAddress!
            lastSecond = ts.seconds
        }
        return UnsafeRawBufferPointer(start: secondText.baseAddress, count: secondLength)
    }

    /// `seconds.micros` like tcpdump's -tt.
    public func timestamp(_ ts: Timestamp) {
        var c = cursor(reserving: 32)
        c.write(secondsText(ts))
        c.micros(ts.nanos)
        commit(c)
    }

    @exclusivity(unchecked) var lastSecond: Int64 = .min
    /// Written only through a scratch cursor, which checks its 24 bytes (a 64-bit decimal takes 21).
    @exclusivity(unchecked) var secondText = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 24)
    @exclusivity(unchecked) var secondLength = 0

    /// Ends a line; flushes when the buffer is full or in line-buffered mode.
    @inline(__always) public func newline() {
        byte(0x0a)
        if lineBuffered || count >= limit { flush() }
    }

    /// After a record written through a cursor: flush when full, or per record with `-l`.
    @inline(__always) public func endOfRecord() {
        if lineBuffered || count >= limit { flush() }
    }

    public func flush() {
        guard let fd else { return }
        var written = 0
        while written < count {
            let n = Platform.write(fd, base + written, count - written)
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                // A closed pipe (`| head`): nobody reads any more; the run stops quietly.
                if n < 0 && errno == EPIPE { closed = true }
                break
            }
            written += n
        }
        flushed += UInt64(written)
        count = 0
    }

    /// Writes `n` stretches of memory after what is buffered: straight to the file descriptor
    /// (the sharded merge's output goes out without being copied), or copied in memory.
    /// The stretches point into the shards' batch buffers, which the merge holds (and checked
    /// each against what its shard wrote) until this returns.
    func write(gathering v: UnsafeMutablePointer<iovec>, _ n: Int) {
        guard let fd, !lineBuffered else {
            for i in 0..<n { write(UnsafeRawBufferPointer(start: v[i].iov_base, count: v[i].iov_len)) }
            return
        }
        flush()
        var i = 0
        while i < n && !closed {
            let w = Platform.writev(fd, v + i, Int32(min(n - i, 1024)))
            if w < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { closed = true }
                return
            }
            flushed += UInt64(w)
            // A short write: on from the first byte not written.
            var left = w
            while i < n && left >= v[i].iov_len {
                left -= v[i].iov_len
                i += 1
            }
            if i < n && left > 0 {
                v[i].iov_base = v[i].iov_base.map { $0 + left }
                v[i].iov_len -= left
            }
        }
    }

    /// What has been collected (for tests and in-memory use).
    public var text: String {
        String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }
}
