#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A window onto a capture file read sequentially, for the readers of the files libpcap refuses
/// (`PcapReader`, `PcapngReader`): the bytes from the reader's position on, read from the file
/// as a record needs them, in a buffer that grows only up to the largest record allowed.
final class FileWindow {
    let name: String
    private let fd: Int32
    private let ownsFD: Bool
    /// The largest record a reader accepts: the buffer never grows past it (and 16 bytes).
    private let maxRecord: Int
    @exclusivity(unchecked) private(set) var buf: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    /// Valid bytes are buf[lo..<hi]; `base` is the file offset of buf[0].
    @exclusivity(unchecked) private(set) var lo = 0
    @exclusivity(unchecked) private(set) var hi = 0
    @exclusivity(unchecked) private var base: UInt64 = 0
    @exclusivity(unchecked) private var eof = false

    /// The file at `path`, opened here.
    init(path: String, maxRecord: Int) throws(CaptureError) {
        name = path
        self.maxRecord = maxRecord
        let fd = RawPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else {
            throw .cannotReadFile(path, errno == EACCES ? "permission denied" : String(cString: strerror(errno)))
        }
        self.fd = fd
        ownsFD = true
        capacity = 1 << 16
        buf = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
    }

    /// Bytes held in memory (the fuzz targets), copied.
    init(bytes: UnsafeRawBufferPointer, name: String, maxRecord: Int) {
        self.name = name
        self.maxRecord = maxRecord
        fd = -1
        ownsFD = false
        capacity = max(bytes.count, 16)
        buf = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        if let b = bytes.baseAddress { buf.copyMemory(from: b, byteCount: bytes.count) }
        hi = bytes.count
        eof = true
    }

    deinit {
        buf.deallocate()
        if ownsFD { close(fd) }
    }

    /// The file offset of the next unread byte.
    var offset: UInt64 { base + UInt64(lo) }
    /// Bytes read and not yet consumed.
    var available: Int { hi - lo }
    /// The next unread byte.
    @inline(__always) var next: UnsafeMutableRawPointer { buf + lo }

    /// Moves past `n` bytes (at most `available`).
    @inline(__always) func consume(_ n: Int) { lo += n }

    /// Makes `need` bytes available from the position; false at the end of the file before that.
    /// The buffer grows (doubling) only when it is full of bytes read: never on a length's word.
    func fill(_ need: Int) throws(CaptureError) -> Bool {
        while hi - lo < need {
            if eof { return false }
            if lo > 0 && (hi == capacity || lo >= capacity / 2) {
                buf.copyMemory(from: buf + lo, byteCount: hi - lo)  // overlapping: memmove semantics
                base += UInt64(lo)
                hi -= lo
                lo = 0
            }
            if hi == capacity {
                let bigger = min(capacity * 2, maxRecord + 16)
                let b = UnsafeMutableRawPointer.allocate(byteCount: bigger, alignment: 8)
                b.copyMemory(from: buf, byteCount: hi)
                buf.deallocate()
                buf = b
                capacity = bigger
            }
            let n = read(fd, buf + hi, capacity - hi)
            if n < 0 {
                if errno == EINTR { continue }
                throw .readFailedIn(name, String(cString: strerror(errno)))
            }
            if n == 0 { eof = true } else { hi += n }
        }
        return true
    }

    /// Goes on reading from file offset `at` (a record's start), dropping what was read.
    func seek(to at: UInt64) throws(CaptureError) {
        guard lseek(fd, off_t(at), SEEK_SET) >= 0 else { throw .readFailedIn(name, String(cString: strerror(errno))) }
        lo = 0; hi = 0; eof = false
        base = at
    }

    /// The 16- and 32-bit words `at` bytes past the position, in the file's byte order.
    @inline(__always) func u16(_ at: Int, swapped: Bool) -> UInt16 {
        let v = (buf + lo + at).loadUnaligned(as: UInt16.self)
        return swapped ? v.byteSwapped : v
    }

    @inline(__always) func u32(_ at: Int, swapped: Bool) -> UInt32 {
        let v = (buf + lo + at).loadUnaligned(as: UInt32.self)
        return swapped ? v.byteSwapped : v
    }
}
