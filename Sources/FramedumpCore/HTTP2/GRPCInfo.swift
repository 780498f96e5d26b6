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
    nonisolated(unsafe) private static var numbers: [String: UInt32] = [:]
    private static let lock = NSLock()

    static func number(_ path: String) -> UInt32 {
        lock.lock(); defer { lock.unlock() }
        if let n = numbers[path] { return n }
        guard names.count < limit else { return none }
        let n = UInt32(names.count)
        names.append(path)
        numbers[path] = n
        return n
    }

    static func name(_ n: UInt32) -> String {
        guard n != none else { return "" }
        lock.lock(); defer { lock.unlock() }
        return Int(n) < names.count ? names[Int(n)] : ""
    }
}
