import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The page's HTTP/1.1 server: GET requests and the live WebSocket, a thread per connection,
/// with the bounds a server that any page in the user's browser can reach needs. A head must
/// come whole within `headSeconds` of its first byte and fit `HTTPHead.maxBytes`; an idle
/// connection is closed after `idleSeconds`; at most `maxConnections` are served at once
/// (more are closed as they come); a request with a body is refused. The answer is decided
/// from the head alone, before anything is decoded.
package final class PageServer: @unchecked Sendable {
    package struct Bounds: Sendable {
        package var headSeconds = 10.0
        package var idleSeconds = 15.0
        package var maxConnections = 64
        package var maxRequests = 10_000
        package init() {}
    }

    /// What a request is answered with.
    enum Answer {
        case response(status: Int, headers: [(String, String)], body: [UInt8])
        /// A WebSocket: the 101 is sent, then `serve` runs on the connection's thread.
        case webSocket(headers: [(String, String)], serve: @Sendable (LiveConnection) -> Void)
    }

    typealias Handler = @Sendable (HTTPHead) -> Answer

    let bounds: Bounds
    private let listener: Int32
    /// The port listened on (the one asked for, or the one the system chose for 0).
    let port: UInt16
    private let lock = NSLock()
    private var open: Set<Int32> = []
    private var stopped = false

    /// Binds and listens at once, so a port in use or an address not here is said before the
    /// page's URL is printed.
    init(host: String, port: UInt16, bounds: Bounds = Bounds()) throws {
        self.bounds = bounds
        let v6 = host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Self.stream, 0)
        guard fd >= 0 else { throw UIError("socket: \(Self.errnoText())") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        if v6 {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &a.sin6_addr) == 1 else { close(fd); throw UIError("\(host): not an IPv6 address") }
            bound = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &a.sin_addr) == 1 else { close(fd); throw UIError("\(host): not an IPv4 address") }
            bound = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let e = errno
            close(fd)
            let hint = e == EADDRINUSE ? ": another server there? try --port 0"
                : e == EADDRNOTAVAIL ? ": not an address of this machine" : e == EACCES ? ": a port below 1024 needs root" : ""
            throw UIError("cannot listen on \(host) port \(port): \(String(cString: strerror(e)).lowercased())\(hint)")
        }
        var storage = sockaddr_storage()
        var size = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) } }
        let chosen: UInt16 = withUnsafePointer(to: &storage) { p in
            v6 ? p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
               : p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        listener = fd
        self.port = chosen
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }

    #if canImport(Glibc)
    static let stream = Int32(SOCK_STREAM.rawValue)
    #else
    static let stream = SOCK_STREAM
    #endif

    /// Accepts connections on a thread of its own until `stop`.
    func start(_ handler: @escaping Handler) {
        let t = Thread { [self] in
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return  // the listener was closed: stopped
                }
                lock.lock()
                let refuse = stopped || open.count >= bounds.maxConnections
                if !refuse { open.insert(fd) }
                lock.unlock()
                if refuse { close(fd); continue }
                let c = Unchecked(fd)
                Thread { [self] in
                    serve(c.value, handler)
                    lock.lock()
                    open.remove(c.value)
                    lock.unlock()
                    close(c.value)
                }.start()
            }
        }
        t.start()
    }

    /// Stops accepting, and ends every connection (their threads see their sockets shut down).
    func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        let fds = open
        lock.unlock()
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Connections being served now (tests).
    package var connections: Int { lock.lock(); defer { lock.unlock() }; return open.count }

    private func serve(_ fd: Int32, _ handler: Handler) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A reader that does not read its answer does not hold the thread forever.
        var sendLimit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendLimit, socklen_t(MemoryLayout<timeval>.size))
        let conn = LiveConnection(fd)
        var served = 0
        while served < bounds.maxRequests {
            let head: HTTPHead
            switch conn.readHead(idle: bounds.idleSeconds, whole: bounds.headSeconds) {
            case .head(let h): head = h
            case .closed: return
            case .refused(let status, let why):
                _ = conn.write(Self.encode(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                           body: Array((why + "\n").utf8), keepAlive: false))
                return
            }
            served += 1
            if head.fields["content-length"].map({ $0 != "0" }) ?? false || head.fields["transfer-encoding"] != nil {
                _ = conn.write(Self.encode(status: 413, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                           body: Array("this server takes no request bodies\n".utf8), keepAlive: false))
                return
            }
            let keepAlive = head.version == "HTTP/1.1" && head.fields["connection"]?.lowercased() != "close" && served < bounds.maxRequests
            switch handler(head) {
            case .response(let status, let headers, let body):
                guard conn.write(Self.encode(status: status, headers: headers, body: head.method == "HEAD" ? [] : body,
                                             keepAlive: keepAlive, length: body.count)) else { return }
                if !keepAlive { return }
            case .webSocket(let headers, let serveSocket):
                let accept = LiveSocket.accept(key: head.fields["sec-websocket-key"] ?? "")
                var lines = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n"
                for (k, v) in headers { lines += "\(k): \(v)\r\n" }
                guard conn.write(Array((lines + "\r\n").utf8)) else { return }
                serveSocket(conn)
                return
            }
        }
    }

    static func encode(status: Int, headers: [(String, String)], body: [UInt8], keepAlive: Bool, length: Int? = nil) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "Content-Length: \(length ?? body.count)\r\n"
        head += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        default: return "Status"
        }
    }
}

/// One client connection: its socket and the bytes read past the last head.
final class LiveConnection: @unchecked Sendable {
    let fd: Int32
    private(set) var buffer: [UInt8] = []

    init(_ fd: Int32) { self.fd = fd }

    enum HeadResult {
        case head(HTTPHead)
        case closed
        case refused(Int, String)
    }

    /// The next request's head: waits `idle` seconds for its first byte, then `whole` seconds
    /// for all of it.
    func readHead(idle: Double, whole: Double) -> HeadResult {
        var deadline: Double? = buffer.isEmpty ? nil : Self.now() + whole
        let idleEnd = Self.now() + idle
        while true {
            let parsed: Result<(head: HTTPHead, length: Int), HTTPHead.Problem> = buffer.withUnsafeBytes { b in
                Result { () throws(HTTPHead.Problem) in try HTTPHead.parse(b) }
            }
            switch parsed {
            case .success(let r):
                buffer.removeFirst(r.length)
                return .head(r.head)
            case .failure(.tooLarge): return .refused(431, "the request's head is past \(HTTPHead.maxBytes) bytes or \(HTTPHead.maxFields) fields")
            case .failure(.malformed(let why)): return .refused(400, why)
            case .failure(.incomplete): break
            }
            let end = deadline ?? idleEnd
            switch waitReadable(until: end) {
            case .timedOut:
                // An idle connection goes quietly; a head begun and not ended is answered.
                return deadline == nil ? .closed : .refused(408, "the request's head did not come whole within \(Int(whole)) s")
            case .failed: return .closed
            case .readable:
                guard readSome() else { return .closed }
                if deadline == nil { deadline = Self.now() + whole }
            }
        }
    }

    enum Wait { case readable, timedOut, failed }

    func waitReadable(until end: Double) -> Wait {
        while true {
            let left = end - Self.now()
            if left <= 0 { return .timedOut }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, Int32(min(left * 1000, 1_000_000)) + 1)
            if r < 0 { if errno == EINTR { continue }; return .failed }
            if r == 0 { continue }
            return .readable
        }
    }

    /// Reads what is there (at most 4 KiB); false at the end of the stream or on an error.
    func readSome() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[..<n]
        return true
    }

    /// Drops `n` bytes read (a WebSocket frame taken).
    func consume(_ n: Int) { buffer.removeFirst(n) }

    /// The whole of `bytes`, or false.
    func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { b in send(fd, b.baseAddress! + sent, b.count - sent, Self.noSignal) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// A reader gone away is an error to return, not SIGPIPE.
    #if os(Linux)
    static let noSignal = Int32(MSG_NOSIGNAL)
    #else
    static let noSignal: Int32 = 0
    #endif

    static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
