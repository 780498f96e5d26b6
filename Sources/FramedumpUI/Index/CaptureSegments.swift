#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Live: the temporary capture's files (tcpdump -C's `live.pcap`, `live.pcap1`…), each with the
/// number of packets written before it. A file goes once the index holds no message that
/// began in it or before, so the capture on disk is a ring as the index is. Opened by the
/// decoding thread, read by the filters' threads.
final class CaptureSegments: @unchecked Sendable {
    private let lock = NSLock()
    private var files: [(path: String, packetsBefore: UInt64)] = []

    /// `packets`: the run's packet count when the file is opened. The first file is opened
    /// before any packet; each later one for the packet that was just counted.
    func opened(_ path: String, packetsBefore packets: UInt64) {
        lock.lock(); defer { lock.unlock() }
        files.append((path, files.isEmpty ? 0 : packets &- 1))
    }

    /// Removes the files whose packets all come before `packet` (1-based): no held message
    /// began in them. The file being written is kept.
    func drop(before packet: UInt64) {
        lock.lock(); defer { lock.unlock() }
        while files.count > 1, files[1].packetsBefore < packet {
            unlink(files.removeFirst().path)
        }
    }

    /// The files still on disk, oldest first (nil: none was opened).
    var held: [(path: String, packetsBefore: UInt64)]? {
        lock.lock(); defer { lock.unlock() }
        return files.isEmpty ? nil : files
    }

    func removeAll() {
        lock.lock(); defer { lock.unlock() }
        for f in files { unlink(f.path) }
        files = []
    }
}
