#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library calls that a name in scope would shadow (a type's own `write`, `exit`), spelled
/// once for Linux (Glibc) and macOS (Darwin). `scripts/check_portability.sh` keeps every other
/// file from naming either module.
public enum Platform {
    /// write(2).
    @inline(__always)
    public static func write(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        return Glibc.write(fd, bytes, count)
        #else
        return Darwin.write(fd, bytes, count)
        #endif
    }

    /// writev(2).
    @inline(__always)
    static func writev(_ fd: Int32, _ v: UnsafePointer<iovec>, _ count: Int32) -> Int {
        #if canImport(Glibc)
        return Glibc.writev(fd, v, count)
        #else
        return Darwin.writev(fd, v, count)
        #endif
    }

    /// exit(3).
    public static func exit(_ code: Int32) -> Never {
        #if canImport(Glibc)
        Glibc.exit(code)
        #else
        Darwin.exit(code)
        #endif
    }
}
