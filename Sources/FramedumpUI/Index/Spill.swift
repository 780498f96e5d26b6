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
///
/// Live, it is a ring of segments (files) too: once a segment holds `segmentBytes`, the next
/// message starts a new one, and `drop(before:)` closes those wholly before the oldest message
/// the index still holds. Offsets run on over segments (each knows where it starts).
package final class Spill: @unchecked Sendable {
    /// The descriptor the decoding thread writes through (live: made to point at each new segment).
    let fd: Int32
    /// Where the decoding thread writes (its own buffer; `flushed + count` is the next offset).
    let out: OutputBuffer
    /// Bytes a segment holds before the next message starts another; nil: one file.
    let segmentBytes: UInt64?
    private let lock = NSLock()
    /// The segments still held, oldest first: where each starts and a descriptor to read it by.
    private var segments: [(start: UInt64, fd: Int32)] = []

    init(segmentBytes: UInt64? = nil) throws {
        fd = try Self.makeFile()
        let reader = dup(fd)
        guard reader >= 0 else {
            close(fd)
            throw UIError("cannot open the spill file twice: \(String(cString: strerror(errno)))")
        }
        out = OutputBuffer(fd: fd)
        self.segmentBytes = segmentBytes
        segments = [(0, reader)]
    }

    /// A file in `$TMPDIR`, unlinked at once.
    static func makeFile() throws -> Int32 {
        let dir = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((dir + "/framedump-ui-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw UIError("cannot create a temporary file in \(dir): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return fd
    }

    deinit {
        close(fd)
        for s in segments { close(s.fd) }
    }

    /// Where the next byte written will land.
    var position: UInt64 { out.position }

    /// Live, before a message is written: a new segment when the current one is full. The
    /// writing descriptor is pointed at the new file (dup2), so the buffer writes on unchanged.
    func startSegmentIfFull() {
        guard let size = segmentBytes else { return }
        lock.lock(); defer { lock.unlock() }
        guard let last = segments.last, position - last.start >= size else { return }
        out.flush()
        guard let next = try? Self.makeFile() else { return }  // (no room: the segment grows on)
        guard dup2(next, fd) >= 0 else { close(next); return }
        segments.append((position, next))
    }

    /// Closes the segments that end at or before `offset` (their messages are dropped from
    /// the index); the file goes with its last descriptor. The current one is kept.
    func drop(before offset: UInt64) {
        lock.lock(); defer { lock.unlock() }
        while segments.count > 1, segments[1].start <= offset {
            close(segments.removeFirst().fd)
        }
    }

    /// Bytes the segments still held take on disk (tests).
    package var bytesHeld: UInt64 {
        lock.lock(); defer { lock.unlock() }
        return segments.reduce(0) { total, s in
            var st = stat()
            return total + (fstat(s.fd, &st) == 0 ? UInt64(st.st_size) : 0)
        }
    }

    /// Bytes written earlier (and flushed), read back; none when their segment was dropped.
    package func read(offset: UInt64, count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        lock.lock(); defer { lock.unlock() }
        guard let s = segments.last(where: { $0.start <= offset }) else { return [] }
        var b = [UInt8](repeating: 0, count: count)
        var done = 0
        b.withUnsafeMutableBytes { p in
            while done < count {
                let n = pread(s.fd, p.baseAddress! + done, count - done, off_t(offset - s.start) + off_t(done))
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
