#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A capture file another process is still writing (`tcpdump -w live.pcap` in another
/// terminal): it ends wherever the writer's last flush left it, often inside a record. Such a
/// file is read up to its last whole record, without an error, as tcpdump reads what is there.
/// Whether someone still writes it is asked of the kernel: a read lease (Linux `F_SETLEASE`)
/// is refused while any process has the file open for writing.
public enum GrowingFile {
    /// true: open for writing by some process; false: no writer; nil: cannot tell (no lease
    /// support, or neither the file's owner nor CAP_LEASE).
    public static func hasWriter(_ path: String) -> Bool? {
        #if os(Linux)
        let setLease: Int32 = 1024  // F_SETLEASE (F_LINUX_SPECIFIC_BASE), behind _GNU_SOURCE in the headers
        let fd = RawPath.withCString(path) { open($0, O_RDONLY | O_NONBLOCK) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if fcntl(fd, setLease, F_RDLCK) == 0 {
            _ = fcntl(fd, setLease, F_UNLCK)
            return false
        }
        return errno == EAGAIN ? true : nil
        #else
        return nil
        #endif
    }
}
