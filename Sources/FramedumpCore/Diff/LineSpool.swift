#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the `--diffable` export keeps its lines until the end of the capture: an unlinked
/// temporary file (in `$TMPDIR`, else /tmp), written in blocks of a connection's lines and
/// read back block by block, so the export's memory does not grow with the capture. When no
/// such file can be made or written, the lines stay in memory.
final class LineSpool {
    let fd: Int32
    var size = 0
    var failed = false

    init() {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((dir + "/framedump-diffable-XXXXXX").utf8CString)
        fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd >= 0 { template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) } }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Appends a block; its offset, or nil (the caller keeps the block in memory).
    func append(_ bytes: [UInt8]) -> Int? {
        guard fd >= 0, !failed else { return nil }
        let at = size
        var done = 0
        let ok = bytes.withUnsafeBytes { b -> Bool in
            while done < b.count {
                let n = pwrite(fd, b.baseAddress! + done, b.count - done, off_t(at + done))
                if n <= 0 { return false }
                done += n
            }
            return true
        }
        guard ok else { failed = true; return nil }
        size += bytes.count
        return at
    }

    /// A block written before.
    func read(_ offset: Int, _ length: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        var done = 0
        out.withUnsafeMutableBytes { b in
            while done < length {
                let n = pread(fd, b.baseAddress! + done, length - done, off_t(offset + done))
                if n <= 0 { break }
                done += n
            }
        }
        return done == length ? out : Array(out[..<done])
    }
}
