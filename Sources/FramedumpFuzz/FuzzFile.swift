#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The fuzz input written to a file, for the targets that read captures through libpcap.
enum FuzzFile {
    /// False when the file cannot be made (the input is then skipped).
    static func save(_ data: UnsafeRawBufferPointer, to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return false }
        var done = 0
        while done < data.count {
            let n = write(fd, data.baseAddress! + done, data.count - done)
            if n <= 0 { break }
            done += n
        }
        close(fd)
        return true
    }
}
