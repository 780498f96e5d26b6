import Foundation

/// What the gRPC layer says about one message (its `LayerNote`): the HTTP/2 stream it came on,
/// its call's method, its place in the call, and how it was sent.
struct GRPCInfo: BitwiseCopyable {
    var stream: UInt32
    /// The call's method in `GRPCMethodNames` (`GRPCMethodNames.none`: the request headers were
    /// not seen, or named no path).
    var method: UInt32
    /// The message's number among its call's messages in its direction (from 1).
    var sequence: UInt32
    /// The length the 5-byte prefix announced (compressed, when it is).
    var wireLength: UInt32
    /// The schema message the call's method types it as (-1: none known).
    var typed: Int32
    var compressed: Bool
    /// Compressed with an encoding that could not be undone: the payload is shown as it came.
    var undecodable: Bool
}

/// The methods (`/pkg.Service/Method`) every connection has named, shared by the run's threads:
/// a message's note carries its method's number, and the printers read the name back. Grows
/// only with the distinct paths seen (bounded; past the bound a path is "(other)").
enum GRPCMethodNames {
    static let none: UInt32 = .max
    static let limit = 4096
    nonisolated(unsafe) private static var names: [String] = []
    /// Each name as the tree writes it (control characters escaped), made once.
    nonisolated(unsafe) private static var shown: [[UInt8]] = []
    nonisolated(unsafe) private static var numbers: [String: UInt32] = [:]
    private static let lock = NSLock()

    static func number(_ path: String) -> UInt32 {
        lock.lock(); defer { lock.unlock() }
        if let n = numbers[path] { return n }
        guard names.count < limit else { return none }
        let n = UInt32(names.count)
        names.append(path)
        var t: [UInt8] = []
        for c in path.utf8 {
            if c < 0x20 || c == 0x7f {
                t += Array("\\x".utf8) + [OutputBuffer.hexDigits.utf8Start[Int(c >> 4)], OutputBuffer.hexDigits.utf8Start[Int(c & 15)]]
            } else {
                t.append(c)
            }
        }
        shown.append(t)
        numbers[path] = n
        return n
    }

    /// Writes name `n` as the tree shows it (`(method unknown)` for none).
    static func writeShown(_ n: UInt32, _ k: inout Cursor) {
        guard n != none else { return k.write("(method unknown)") }
        lock.lock(); defer { lock.unlock() }
        guard Int(n) < shown.count else { return k.write("(method unknown)") }
        shown[Int(n)].withUnsafeBytes { k.write($0) }
    }

    static func name(_ n: UInt32) -> String {
        guard n != none else { return "" }
        lock.lock(); defer { lock.unlock() }
        return Int(n) < names.count ? names[Int(n)] : ""
    }
}
