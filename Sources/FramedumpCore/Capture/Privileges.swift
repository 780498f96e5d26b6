#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `-Z USER`: after the live handle is open, give up root as tcpdump does.
public enum Privileges {
    public static var isRoot: Bool { geteuid() == 0 }

    /// `handOver` are paths the run still writes after the drop (the `--streams` folder):
    /// they are given to the user first.
    public static func drop(to user: String, handOver: [String] = []) throws(CaptureError) {
        guard let pw = getpwnam(user) else { throw .privilegeDrop("no such user '\(user)'") }
        let uid = pw.pointee.pw_uid, gid = pw.pointee.pw_gid
        if uid == geteuid() { return }
        for path in handOver where RawPath.withCString(path, { chown($0, uid, gid) }) != 0 {
            throw .privilegeDrop("cannot hand \(RawPath.display(path)) to \(user): \(String(cString: strerror(errno)))")
        }
        guard initgroups(user, gid) == 0, setgid(gid) == 0, setuid(uid) == 0 else {
            throw .privilegeDrop(String(cString: strerror(errno)))
        }
    }
}
