#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import FramedumpCore

/// The decoded messages, on disk: each message's tree (text and table of lines) and bytes, written once by the
/// decoding thread and read back by offset when the page opens a message. The file is
/// unlinked as soon as it is made, so it goes when framedump does, however it ends.
package final class Spill: @unchecked Sendable {
    let fd: Int32
    /// Where the decoding thread writes (its own buffer; `flushed + count` is the next offset).
    let out: OutputBuffer

    init() throws {
        let dir = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((dir + "/framedump-ui-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw UIError("cannot create a temporary file in \(dir): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        self.fd = fd
        out = OutputBuffer(fd: fd)
    }

    deinit { close(fd) }

    /// Where the next byte written will land.
    var position: UInt64 { out.position }

    /// Bytes written earlier (and flushed), read back.
    package func read(offset: UInt64, count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var b = [UInt8](repeating: 0, count: count)
        var done = 0
        b.withUnsafeMutableBytes { p in
            while done < count {
                let n = pread(fd, p.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                done += n
            }
        }
        return done == count ? b : Array(b[..<done])
    }
}

/// A problem `framedump ui` reports (a file it cannot make, a bad argument).
struct UIError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
