import Foundation
import FlyingFox
import FlyingSocks
import FramedumpCore

/// `framedump ui`'s web server: the page, its three files compiled in, and the API over one
/// capture's index. Nothing else is served: no paths, no other files.
public final class UIServer: Sendable {
    let indexer: CaptureIndexer
    let server: HTTPServer
    /// Required in every request's query (`token=`) when the server listens beyond loopback.
    public let token: String?
    public let host: String

    /// `listen` is an IPv4 or IPv6 address; port 0 takes a free one.
    public init(indexer: CaptureIndexer, listen: String, port: UInt16) throws {
        self.indexer = indexer
        let loopback = listen == "127.0.0.1" || listen == "::1" || listen == "localhost"
        token = loopback ? nil : Self.randomToken()
        host = listen == "localhost" ? "127.0.0.1" : listen
        let address: any SocketAddress = host.contains(":") ? try .inet6(ip6: host, port: port) : try .inet(ip4: host, port: port)
        server = HTTPServer(config: .init(address: address, logger: .disabled))
    }

    static func randomToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(g.next() as UInt64, radix: 16) }.joined()
    }

    /// Serves until the task is cancelled; `ready` is called with the page's URL once listening.
    public func run(ready: @escaping @Sendable (String) -> Void) async throws {
        await addRoutes()
        let server = self.server
        let host = self.host, token = self.token
        // Run the server beside this task, so a bind that fails (a port in use, an address
        // not here) is reported as such, not as a wait that timed out.
        let failure = ErrorBox()
        let running = Task {
            do { try await server.run() } catch {
                failure.set(Self.described(error))
                throw error
            }
        }
        try await withTaskCancellationHandler {
            while await !server.isListening {
                if let e = failure.value { throw e }
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            let port: UInt16
            switch await server.listeningAddress {
            case .ip4(_, let p)?, .ip6(_, let p)?: port = p
            default: port = 0
            }
            // Every address: the URL names this machine, which another one can reach.
            let reachable = host == "0.0.0.0" || host == "::" ? ProcessInfo.processInfo.hostName : host
            let shown = reachable.contains(":") ? "[\(reachable)]" : reachable
            ready("http://\(shown):\(port)/" + (token.map { "?token=" + $0 } ?? ""))
            try await running.value
        } onCancel: {
            running.cancel()
        }
    }

    public func stop() async { await server.stop(timeout: 1) }

    /// A socket error in words (`address already in use: another server there? try --port 0`).
    static func described(_ e: any Error) -> any Error {
        guard case SocketError.failed(let call, let errno, let message) = e else { return e }
        let hint = errno == EADDRINUSE ? ": another server there? try --port 0"
            : errno == EADDRNOTAVAIL ? ": not an address of this machine" : errno == EACCES ? ": a port below 1024 needs root" : ""
        return UIError("\(call.lowercased()): \(message.lowercased())\(hint)")
    }

    func addRoutes() async {
        let views = Views(indexer: indexer)
        let token = self.token
        let indexer = self.indexer
        // Every request: the token when one is needed; on loopback, a Host header naming
        // loopback (a page of another site cannot reach the API by rebinding its name); and,
        // whatever the address, nothing a page of another origin asks (any site the user visits
        // may send GETs and open WebSockets to a local server: three such requests once held
        // both cores for a minute re-decoding the capture).
        await server.appendRoute("*") { request in
            if let token {
                guard request.query["token"] == token else { return Self.text(.forbidden, "a token is needed: use the URL framedump printed\n") }
            } else if let h = request.headers[.host], !Self.isLoopbackHost(h) {
                return Self.text(.forbidden, "this server answers only pages of 127.0.0.1 or localhost\n")
            }
            if let why = Self.crossOrigin(request) { return Self.text(.forbidden, why) }
            throw HTTPUnhandledError()
        }
        await server.appendRoute("GET /") { _ in Self.asset(PackageResources.index_html, "text/html; charset=utf-8") }
        await server.appendRoute("GET /app.js") { _ in Self.asset(PackageResources.app_js, "text/javascript; charset=utf-8") }
        await server.appendRoute("GET /style.css") { _ in Self.asset(PackageResources.style_css, "text/css; charset=utf-8") }
        await server.appendRoute("GET /api/status") { _ in Self.json(views.status()) }
        await server.appendRoute("GET /api/connections") { _ in Self.json(views.connections()) }
        await server.appendRoute("GET /api/messages") { request in
            let from = Int(request.query["from"] ?? "") ?? 0
            let count = Int(request.query["count"] ?? "") ?? 100
            var connection: Int?
            if let c = request.query["conn"], !c.isEmpty {
                guard let i = indexer.index.connectionIndex(c) else { return Self.error(.notFound, "no connection \(c)") }
                connection = i
            }
            var matches: [Int]?
            if let f = request.query["filter"]?.trimmingCharacters(in: .whitespaces), !f.isEmpty {
                do {
                    matches = try await Self.offThread { try indexer.filter(f) }
                } catch is FilterSuperseded {
                    // The page asked for another filter since: it reads this answer no more.
                    return Self.error(.conflict, "a newer filter was asked for")
                } catch let e as FilterError {
                    return Self.json(JSONOut.object([
                        ("error", JSONOut.quoted("column \(e.column): \(e.message)")), ("column", String(e.column)),
                        ("filter", JSONOut.quoted(e.filter)),
                    ]), status: .badRequest)
                } catch {
                    return Self.error(.internalServerError, "\(error)")
                }
            }
            let selection = views.selection(connection: connection, filter: matches)
            return Self.json(views.rows(selection, from: from, count: count))
        }
        await server.appendRoute("GET /api/message") { request in
            guard let n = Int(request.query["n"] ?? ""), let text = views.message(n) else {
                return Self.error(.notFound, "no such message (or dropped from the live ring)")
            }
            return Self.json(text)
        }
        await server.appendRoute("GET /api/sequence") { request in
            guard let c = request.query["conn"], let i = indexer.index.connectionIndex(c) else {
                return Self.error(.notFound, "no such connection")
            }
            let from = Int(request.query["from"] ?? "") ?? 0
            let count = Int(request.query["count"] ?? "") ?? 500
            return Self.json(views.sequence(connection: i, from: from, count: count))
        }
        await server.appendRoute("GET /api/plots") { request in
            let connection = request.query["conn"].flatMap { $0.isEmpty ? nil : indexer.index.connectionIndex($0) }
            let buckets = Int(request.query["buckets"] ?? "") ?? 100
            let text = await Self.offThreadValue { views.plots(views.selection(connection: connection, filter: nil), buckets: buckets) }
            return Self.json(text)
        }
        await server.appendRoute("GET /api/diff") { _ in
            do {
                return Self.json(try await Self.offThread { try indexer.diff() })
            } catch {
                return Self.error(.notFound, "\(error)")
            }
        }
        await server.appendRoute("GET /api/live", to: .webSocket(LiveFeed(index: indexer.index)))
    }

    /// Why a request comes from a page of another origin, or nil: a browser says where a request
    /// comes from in `Sec-Fetch-Site` (every current browser; `none` is the user's own address
    /// bar), and a WebSocket's or a cross-origin fetch's `Origin` names the page, which must be
    /// this server's own (`http://` and the Host the request was sent to).
    static func crossOrigin(_ r: HTTPRequest) -> String? {
        if let site = r.headers[HTTPHeader("Sec-Fetch-Site")]?.lowercased(), site != "same-origin" && site != "none" {
            return "this server answers only its own page (Sec-Fetch-Site: \(site))\n"
        }
        if let origin = r.headers[HTTPHeader("Origin")] {
            let own = r.headers[.host].map { "http://" + $0.lowercased() }
            guard origin.lowercased() == own else { return "this server answers only its own page (Origin: \(origin))\n" }
        }
        return nil
    }

    /// On every answer: no other site may frame the page, run scripts or styles from elsewhere
    /// in it, or have a JSON answer read as a script or a page.
    static let guarded: [HTTPHeader: String] = [
        HTTPHeader("Content-Security-Policy"): "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        HTTPHeader("X-Frame-Options"): "DENY",
        HTTPHeader("X-Content-Type-Options"): "nosniff",
        HTTPHeader("Referrer-Policy"): "no-referrer",
        HTTPHeader("Cross-Origin-Resource-Policy"): "same-origin",
    ]

    static func headers(_ contentType: String, _ more: [HTTPHeader: String] = [:]) -> [HTTPHeader: String] {
        var h = guarded
        h[.contentType] = contentType
        for (k, v) in more { h[k] = v }
        return h
    }

    static func isLoopbackHost(_ h: String) -> Bool {
        let name = h.hasPrefix("[") ? String(h.prefix { $0 != "]" }.dropFirst()) : String(h.split(separator: ":").first ?? "")
        return name == "127.0.0.1" || name == "localhost" || name == "::1"
    }

    static func asset(_ bytes: [UInt8], _ type: String) -> HTTPResponse {
        HTTPResponse(statusCode: .ok, headers: headers(type, [HTTPHeader("Cache-Control"): "no-store"]), body: Data(bytes))
    }

    static func json(_ text: String, status: HTTPStatusCode = .ok) -> HTTPResponse {
        HTTPResponse(statusCode: status, headers: headers("application/json"), body: Data(text.utf8))
    }

    static func error(_ status: HTTPStatusCode, _ text: String) -> HTTPResponse {
        json(JSONOut.object([("error", JSONOut.quoted(text))]), status: status)
    }

    static func text(_ status: HTTPStatusCode, _ text: String) -> HTTPResponse {
        HTTPResponse(statusCode: status, headers: headers("text/plain; charset=utf-8"), body: Data(text.utf8))
    }

    /// Decoding the capture again blocks for a while: on a thread of its own, not the
    /// server's few.
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { k in
            Thread { k.resume(with: Result { try work() }) }.start()
        }
    }

    static func offThreadValue<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { k in Thread { k.resume(returning: work()) }.start() }
    }
}

/// An error one task leaves for another.
final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var error: (any Error)?
    func set(_ e: any Error) { lock.lock(); error = e; lock.unlock() }
    var value: (any Error)? { lock.lock(); defer { lock.unlock() }; return error }
}

/// `/api/live`: a WebSocket on which the server says how many messages there are, each time
/// that changes (at most every 200 ms); the page then asks for the new rows.
struct LiveFeed: WSMessageHandler {
    let index: MessageIndex

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let index = self.index
        return AsyncStream { continuation in
            let task = Task {
                var last = (-1, -1, "")
                while !Task.isCancelled {
                    let s = index.snapshot
                    if (s.messages, s.dropped, s.state.rawValue) != last {
                        last = (s.messages, s.dropped, s.state.rawValue)
                        continuation.yield(.text(JSONOut.object([
                            ("state", JSONOut.quoted(s.state.rawValue)), ("messages", String(s.messages)),
                            ("dropped", String(s.dropped)), ("connections", String(s.connections)),
                        ])))
                    }
                    try? await Task.sleep(nanoseconds: 200_000_000)
                }
                continuation.finish()
            }
            // The page went away: stop polling.
            Task {
                for await _ in client {}
                task.cancel()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
