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
            // (A count past a page's bound is cut to it: `Views.maxConnections`.)
            guard let from = wholeNumber(h.query["from"], default: 0, max: Int.max),
                  let count = wholeNumber(h.query["count"], default: 200, max: Int.max) else {
                return error(400, "from= and count= take whole numbers from 0")
            }
            return json(views.connections(from: from, count: count))
        case "/api/messages":
            // (A number that is not one is refused: read as 0 it would answer rows not asked for.)
            guard let from = wholeNumber(h.query["from"], default: 0, max: Int.max) else { return error(400, "from= takes a number from 0") }
            guard let count = wholeNumber(h.query["count"], default: 100, max: Views.rowsAtOnce) else {
                return error(400, "count= takes a number from 0 to \(Views.rowsAtOnce)")
            }
            var connection: Int?
            if let c = h.query["conn"], !c.isEmpty {
                guard let i = indexer.index.connectionIndex(c) else { return error(404, "no connection \(c)") }
                connection = i
            }
            let column = SortColumn(rawValue: h.query["sort"].flatMap { $0.isEmpty ? nil : $0 } ?? "n")
            guard let column else {
                return error(400, "sort= takes one of " + SortColumn.allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard let descending = flag(h.query["desc"]) else { return error(400, "desc= takes 1 or 0") }
            var matches: [Int]?
            let filterText = h.query["filter"]?.trimmingCharacters(in: .whitespaces) ?? ""
            if !filterText.isEmpty {
                switch filtered(filterText, indexer: indexer) {
                case .ordinals(let m): matches = m
                case .refused(let answer): return answer
                }
            }
            let selection = views.sorted(views.selection(connection: connection, filter: matches), by: column,
                                         descending: descending, scope: "\(connection ?? -1)|\(filterText)")
            // Live, once the capture's first files are gone, a filter covers what is still held.
            let first = indexer.filterFromPacket
            let note = matches != nil && first > 1
                ? "the filter decoded the capture again from packet \(first) (older packets were dropped with their messages): a message of a connection begun before it is left out where it decoded otherwise"
                : nil
            return json(views.rows(selection, from: from, count: count, note: note))
        case "/api/matches":
            // Which of the listed messages a filter selects (the page's colouring rules).
            let f = h.query["filter"]?.trimmingCharacters(in: .whitespaces) ?? ""
            guard !f.isEmpty else { return error(400, "filter= is needed") }
            let listed = (h.query["n"] ?? "").split(separator: ",", omittingEmptySubsequences: false)
            guard listed.count <= 1000 else { return error(400, "n= lists at most 1000 messages") }
            let ordinals = listed.compactMap { Int($0) }
            guard ordinals.count == listed.count, !(h.query["n"] ?? "").isEmpty else {
                return error(400, "n= takes message numbers separated by commas")
            }
            switch filtered(f, indexer: indexer) {
            case .ordinals(let m): return json(views.matching(ordinals, in: m))
            case .refused(let answer): return answer
            }
        case "/api/follow":
            guard let c = h.query["conn"], !c.isEmpty else { return error(400, "conn= is needed") }
            guard let i = indexer.index.connectionIndex(c) else { return error(404, "no connection \(c)") }
            guard let from = wholeNumber(h.query["from"], default: 0, max: Int.max) else { return error(400, "from= takes a number from 0") }
            guard let n = wholeNumber(h.query["count"], default: Views.followMessages, max: Views.followMessages), n > 0 else {
                return error(400, "count= takes a number from 1 to \(Views.followMessages)")
            }
            return json(views.follow(connection: i, from: from, count: n))
        case "/api/message":
            guard let n = Int(h.query["n"] ?? ""), let text = views.message(n) else {
                return error(404, "no such message (or dropped from the live ring)")
            }
            return json(text)
        case "/api/sequence":
            guard let c = h.query["conn"], let i = indexer.index.connectionIndex(c) else { return error(404, "no such connection") }
            guard let from = wholeNumber(h.query["from"], default: 0, max: Int.max) else { return error(400, "from= takes a number from 0") }
            guard let count = wholeNumber(h.query["count"], default: 500, max: Views.arrowsAtOnce) else {
                return error(400, "count= takes a number from 0 to \(Views.arrowsAtOnce)")
            }
            return json(views.sequence(connection: i, from: from, count: count))
        case "/api/plots":
            var connection: Int?
            if let c = h.query["conn"], !c.isEmpty {
                // (An unknown one is not every connection's plots.)
                guard let i = indexer.index.connectionIndex(c) else { return error(404, "no connection \(c)") }
                connection = i
            }
            guard let buckets = wholeNumber(h.query["buckets"], default: 100, max: Views.bucketsAtMost), buckets > 0 else {
                return error(400, "buckets= takes a number from 1 to \(Views.bucketsAtMost)")
            }
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

    /// A filter's answer, or the answer that says why there is none (a bad filter: 400 with
    /// its column; one stopped by a newer: 409).
    static func filtered(_ text: String, indexer: CaptureIndexer) -> Filtered {
        do {
            return .ordinals(try indexer.filter(text))
        } catch is FilterSuperseded {
            // The page asked for another filter since: it reads this answer no more.
            return .refused(error(409, "a newer filter was asked for"))
        } catch let e as FilterError {
            return .refused(json(JSONOut.object([
                ("error", JSONOut.quoted("column \(e.column): \(e.message)")), ("column", String(e.column)),
                ("filter", JSONOut.quoted(e.filter)),
            ]), status: 400))
        } catch let e {
            return .refused(error(500, "\(e)"))
        }
    }

    enum Filtered { case ordinals([Int]), refused(PageServer.Answer) }

    /// A query's whole number in 0...max (nil when given and not one); absent: `default`.
    static func wholeNumber(_ text: String?, default d: Int, max: Int) -> Int? {
        guard let text, !text.isEmpty else { return d }
        guard let n = Int(text), n >= 0, n <= max else { return nil }
        return n
    }

    /// `1`/`true` or `0`/`false` (absent: false); anything else nil.
    static func flag(_ text: String?) -> Bool? {
        switch text ?? "" {
        case "", "0", "false": return false
        case "1", "true": return true
        default: return nil
        }
    }

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
