import Foundation
import FramedumpCore

/// `framedump ui`'s web server: the page, its three files compiled in, and the API over one
/// capture's index. Nothing else is served: no paths, no other files. HTTP is `PageServer`'s
/// (bounded heads, deadlines, a cap on connections); this file is what it answers.
public final class UIServer: Sendable {
    let indexer: CaptureIndexer
    package let server: PageServer
    /// Required in every request's query (`token=`) when the server listens beyond loopback.
    public let token: String?
    public let host: String

    /// `listen` is an IPv4 or IPv6 address; port 0 takes a free one. The socket is bound here:
    /// a port in use is said before anything is served.
    public convenience init(indexer: CaptureIndexer, listen: String, port: UInt16) throws {
        try self.init(indexer: indexer, listen: listen, port: port, bounds: PageServer.Bounds())
    }

    /// With other bounds than a user's (tests: deadlines of a fraction of a second).
    package init(indexer: CaptureIndexer, listen: String, port: UInt16, bounds: PageServer.Bounds) throws {
        self.indexer = indexer
        let loopback = listen == "127.0.0.1" || listen == "::1" || listen == "localhost"
        token = loopback ? nil : Self.randomToken()
        host = listen == "localhost" ? "127.0.0.1" : listen
        server = try PageServer(host: host, port: port, bounds: bounds)
    }

    static func randomToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(g.next() as UInt64, radix: 16) }.joined()
    }

    /// The page's URL: every address's names this machine, which another one can reach.
    public var url: String {
        let reachable = host == "0.0.0.0" || host == "::" ? ProcessInfo.processInfo.hostName : host
        let shown = reachable.contains(":") ? "[\(reachable)]" : reachable
        return "http://\(shown):\(server.port)/" + (token.map { "?token=" + $0 } ?? "")
    }

    /// Serves until the task is cancelled or `stop` is called; `ready` is called with the
    /// page's URL at once (the socket is bound by `init`, so nothing fails after it).
    public func run(ready: @escaping @Sendable (String) -> Void) async {
        let views = Views(indexer: indexer)
        let token = self.token, indexer = self.indexer
        server.start { head in Self.answer(head, views: views, indexer: indexer, token: token) }
        ready(url)
        let done = Latch()
        stopped.set(done)
        await withTaskCancellationHandler {
            await done.wait()
        } onCancel: {
            self.server.stop()
            done.open()
        }
    }

    private let stopped = LatchBox()

    public func stop() async {
        server.stop()
        stopped.value?.open()
    }

    /// A request's answer, from its head alone: who may ask first, then the route.
    static func answer(_ h: HTTPHead, views: Views, indexer: CaptureIndexer, token: String?) -> PageServer.Answer {
        // Every request: the token when one is needed; on loopback, a Host header naming
        // loopback (a page of another site cannot reach the API by rebinding its name); and,
        // whatever the address, nothing a page of another origin asks (any site the user visits
        // may send GETs and open WebSockets to a local server: three such requests once held
        // both cores for a minute re-decoding the capture).
        if let token {
            guard h.query["token"] == token else { return text(403, "a token is needed: use the URL framedump printed\n") }
        } else if let host = h.fields["host"], !isLoopbackHost(host) {
            return text(403, "this server answers only pages of 127.0.0.1 or localhost\n")
        }
        if let why = crossOrigin(h) { return text(403, why) }
        guard h.method == "GET" || h.method == "HEAD" else { return text(405, "this server answers GET only\n") }
        switch h.path {
        case "/": return asset(PackageResources.index_html, "text/html; charset=utf-8")
        case "/app.js": return asset(PackageResources.app_js, "text/javascript; charset=utf-8")
        case "/style.css": return asset(PackageResources.style_css, "text/css; charset=utf-8")
        case "/api/status": return json(views.status())
        case "/api/connections":
            guard let from = number(h, "from", 0), let count = number(h, "count", 200) else { return badNumber }
            return json(views.connections(from: from, count: count))
        case "/api/messages":
            guard let from = number(h, "from", 0), let count = number(h, "count", 100) else { return badNumber }
            var connection: Int?
            if let c = h.query["conn"], !c.isEmpty {
                guard let i = indexer.index.connectionIndex(c) else { return error(404, "no connection \(c)") }
                connection = i
            }
            var matches: [Int]?
            if let f = h.query["filter"]?.trimmingCharacters(in: .whitespaces), !f.isEmpty {
                do {
                    matches = try indexer.filter(f)
                } catch is FilterSuperseded {
                    // The page asked for another filter since: it reads this answer no more.
                    return error(409, "a newer filter was asked for")
                } catch let e as FilterError {
                    return json(JSONOut.object([
                        ("error", JSONOut.quoted("column \(e.column): \(e.message)")), ("column", String(e.column)),
                        ("filter", JSONOut.quoted(e.filter)),
                    ]), status: 400)
                } catch let e {
                    return error(500, "\(e)")
                }
            }
            let selection = views.selection(connection: connection, filter: matches)
            // Live, once the capture's first files are gone, a filter covers what is still held.
            let first = indexer.filterFromPacket
            let note = matches != nil && first > 1
                ? "the filter decoded the capture again from packet \(first) (older packets were dropped with their messages): a message of a connection begun before it is left out where it decoded otherwise"
                : nil
            return json(views.rows(selection, from: from, count: count, note: note))
        case "/api/message":
            guard let n = Int(h.query["n"] ?? ""), let text = views.message(n) else {
                return error(404, "no such message (or dropped from the live ring)")
            }
            return json(text)
        case "/api/sequence":
            guard let c = h.query["conn"], let i = indexer.index.connectionIndex(c) else { return error(404, "no such connection") }
            guard let from = number(h, "from", 0), let count = number(h, "count", 500) else { return badNumber }
            return json(views.sequence(connection: i, from: from, count: count))
        case "/api/plots":
            let connection = h.query["conn"].flatMap { $0.isEmpty ? nil : indexer.index.connectionIndex($0) }
            guard let buckets = number(h, "buckets", 100) else { return badNumber }
            return json(views.plots(views.selection(connection: connection, filter: nil), buckets: buckets))
        case "/api/diff":
            do { return json(try indexer.diff()) } catch let e { return error(404, "\(e)") }
        case "/api/live":
            guard LiveSocket.isUpgrade(h) else { return text(400, "a WebSocket is asked for here\n") }
            let index = indexer.index
            return .webSocket(headers: [], serve: { LiveFeed.serve($0, index: index) })
        default:
            return text(404, "not found\n")
        }
    }

    /// A whole number ≥ 0 the query gives for `name` (`fallback` when it gives none), or nil
    /// for anything else: the answer is then `badNumber`, not a guess. Each view bounds it.
    static func number(_ h: HTTPHead, _ name: String, _ fallback: Int) -> Int? {
        guard let text = h.query[name], !text.isEmpty else { return fallback }
        guard let n = Int(text), n >= 0 else { return nil }
        return n
    }

    static let badNumber = error(400, "from, count and buckets are whole numbers from 0")

    /// Why a request comes from a page of another origin, or nil: a browser says where a request
    /// comes from in `Sec-Fetch-Site` (every current browser; `none` is the user's own address
    /// bar), and a WebSocket's or a cross-origin fetch's `Origin` names the page, which must be
    /// this server's own (`http://` and the Host the request was sent to).
    static func crossOrigin(_ r: HTTPHead) -> String? {
        if let site = r.fields["sec-fetch-site"]?.lowercased(), site != "same-origin" && site != "none" {
            return "this server answers only its own page (Sec-Fetch-Site: \(site))\n"
        }
        if let origin = r.fields["origin"] {
            let own = r.fields["host"].map { "http://" + $0.lowercased() }
            guard origin.lowercased() == own else { return "this server answers only its own page (Origin: \(origin))\n" }
        }
        return nil
    }

    /// On every answer: no other site may frame the page, run scripts or styles from elsewhere
    /// in it, or have a JSON answer read as a script or a page.
    static let guarded: [(String, String)] = [
        ("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ]

    static func headers(_ contentType: String, _ more: [(String, String)] = []) -> [(String, String)] {
        [("Content-Type", contentType)] + guarded + more
    }

    static func isLoopbackHost(_ h: String) -> Bool {
        let name = h.hasPrefix("[") ? String(h.prefix { $0 != "]" }.dropFirst()) : String(h.split(separator: ":").first ?? "")
        return name == "127.0.0.1" || name == "localhost" || name == "::1"
    }

    static func asset(_ bytes: [UInt8], _ type: String) -> PageServer.Answer {
        .response(status: 200, headers: headers(type, [("Cache-Control", "no-store")]), body: bytes)
    }

    static func json(_ text: String, status: Int = 200) -> PageServer.Answer {
        .response(status: status, headers: headers("application/json"), body: Array(text.utf8))
    }

    static func error(_ status: Int, _ text: String) -> PageServer.Answer {
        json(JSONOut.object([("error", JSONOut.quoted(text))]), status: status)
    }

    static func text(_ status: Int, _ text: String) -> PageServer.Answer {
        .response(status: status, headers: headers("text/plain; charset=utf-8"), body: Array(text.utf8))
    }
}

/// The server's end, awaited by `run` and opened by `stop` or a cancellation.
final class Latch: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func open() {
        lock.lock()
        isOpen = true
        let w = waiting
        waiting = []
        lock.unlock()
        for k in w { k.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (k: CheckedContinuation<Void, Never>) in
            lock.lock()
            if isOpen { lock.unlock(); k.resume(); return }
            waiting.append(k)
            lock.unlock()
        }
    }
}

final class LatchBox: @unchecked Sendable {
    private let lock = NSLock()
    private var latch: Latch?
    func set(_ l: Latch) { lock.lock(); latch = l; lock.unlock() }
    var value: Latch? { lock.lock(); defer { lock.unlock() }; return latch }
}

/// `/api/live`: a WebSocket on which the server says how many messages there are, each time
/// that changes (looked at every 200 ms); the page then asks for the new rows. Runs on the
/// connection's thread until the page closes it or goes away.
enum LiveFeed {
    static func serve(_ c: LiveConnection, index: MessageIndex) {
        var last = (-1, -1, "")
        while true {
            let s = index.snapshot
            if (s.messages, s.dropped, s.state.rawValue) != last {
                last = (s.messages, s.dropped, s.state.rawValue)
                let text = JSONOut.object([
                    ("state", JSONOut.quoted(s.state.rawValue)), ("messages", String(s.messages)),
                    ("dropped", String(s.dropped)), ("connections", String(s.connections)),
                ])
                guard c.write(LiveSocket.frame(0x1, Array(text.utf8))) else { return }
            }
            // The page's frames: a close ends it, a ping is answered, the rest is passed over.
            switch c.waitReadable(until: LiveConnection.now() + 0.2) {
            case .failed: return
            case .timedOut: continue
            case .readable:
                guard c.readSome() else { return }
                while true {
                    let frame: (opcode: UInt8, payload: [UInt8], length: Int)?
                    do { frame = try LiveSocket.clientFrame(c.buffer) } catch {
                        _ = c.write(LiveSocket.frame(0x8, [0x03, 0xf1]))  // 1009: too big (or unmasked)
                        return
                    }
                    guard let frame else { break }
                    c.consume(frame.length)
                    switch frame.opcode {
                    case 0x8:
                        _ = c.write(LiveSocket.frame(0x8, Array(frame.payload.prefix(2))))
                        return
                    case 0x9: guard c.write(LiveSocket.frame(0xA, frame.payload)) else { return }
                    default: break
                    }
                }
            }
        }
    }
}
