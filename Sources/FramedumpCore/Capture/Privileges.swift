#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `-Z USER`: after the live handle is open, give up root as tcpdump does.
public enum Privileges {
    public static var isRoot: Bool { geteuid() == 0 }

    public static func drop(to user: String) throws(CaptureError) {
        guard let pw = getpwnam(user) else { throw .privilegeDrop("no such user '\(user)'") }
        let uid = pw.pointee.pw_uid, gid = pw.pointee.pw_gid
        if uid == geteuid() { return }
        guard initgroups(user, gid) == 0, setgid(gid) == 0, setuid(uid) == 0 else {
            throw .privilegeDrop(String(cString: strerror(errno)))
        }
    }
}
