import Foundation
import XCTest
@testable import FramedumpCore
@testable import FramedumpUI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The page's HTTP server under what a neighbour in the browser or on the network can send:
/// a head never ended, a head too large, more connections than it serves, idle connections, a
/// body. Each once cost the server a thread or its CPU for as long as the client liked (the
/// library it used read header lines with no bound and no deadline).
final class PageServerTests: XCTestCase {
    func head(_ text: String) throws -> HTTPHead {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { b in try HTTPHead.parse(b).head }
    }

    func problem(_ text: String) -> HTTPHead.Problem? {
        Array(text.utf8).withUnsafeBytes { b -> HTTPHead.Problem? in
            do { _ = try HTTPHead.parse(b); return nil } catch { return error as? HTTPHead.Problem }
        }
    }

    func testTheHeadAsBrowsersSendIt() throws {
        let h = try head("GET /api/messages?from=0&count=200&filter=game.Res%20%3D%3D%201%20%2B%20x+y HTTP/1.1\r\nHost: 127.0.0.1:8800\r\nSec-Fetch-Site:  same-origin \r\nX-A: 1\r\nx-a: 2\r\n\r\n")
        XCTAssertEqual(h.method, "GET")
        XCTAssertEqual(h.path, "/api/messages")
        XCTAssertEqual(h.query["filter"], "game.Res == 1 + x+y")  // a plus stays a plus
        XCTAssertEqual(h.query["count"], "200")
        XCTAssertEqual(h.fields["host"], "127.0.0.1:8800")
        XCTAssertEqual(h.fields["sec-fetch-site"], "same-origin")
        XCTAssertEqual(h.fields["x-a"], "2")
        // Bare LF lines, HTTP/1.0, a path with %-escapes.
        let g = try head("GET /a%20b HTTP/1.0\nHost: x\n\n")
        XCTAssertEqual(g.path, "/a b")
        XCTAssertEqual(g.version, "HTTP/1.0")
    }

    func testWhatIsRefused() {
        XCTAssertEqual(problem("GET / HTTP/1.1\r\nHost: x\r\n"), .incomplete)
        XCTAssertEqual(problem("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: HTTPHead.maxBytes) + "\r\n\r\n"), .tooLarge)
        XCTAssertEqual(problem("GET / HTTP/1.1\r\n" + String(repeating: "X: 1\r\n", count: HTTPHead.maxFields + 1) + "\r\n"), .tooLarge)
        for bad in ["GET / HTTP/2\r\n\r\n", "get / HTTP/1.1\r\n\r\n", "GET  HTTP/1.1\r\n\r\n", "GET x HTTP/1.1\r\n\r\n",
                    "GET /%zz HTTP/1.1\r\n\r\n", "GET /?a=%c3 HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nno colon\r\n\r\n",
                    "GET / HTTP/1.1\r\n: empty\r\n\r\n", "\r\n\r\n"] {
            guard case .malformed = problem(bad) else { XCTFail("accepted: \(bad.debugDescription)"); continue }
        }
    }

    /// A server on loopback with deadlines of a fraction of a second and room for 4 connections.
    func server() throws -> (UIServer, UInt16) {
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        let i = try CaptureIndexer(UIConfiguration(input: .file(TestSupport.sample("game.pcap")), options: o))
        i.start()
        _ = i.waitForIndex()
        var b = PageServer.Bounds()
        b.headSeconds = 0.5
        b.idleSeconds = 0.5
        b.maxConnections = 4
        let s = try UIServer(indexer: i, listen: "127.0.0.1", port: 0, bounds: b)
        s.server.start { h in UIServer.answer(h, views: Views(indexer: i), indexer: i, token: nil) }
        return (s, s.server.port)
    }

    func dial(_ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, PageServer.stream, 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        XCTAssertEqual(r, 0)
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    func put(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, LiveConnection.noSignal) }
    }

    /// Everything the server sends until it closes (or 5 s pass).
    func readAll(_ fd: Int32) -> String { String(decoding: readBytes(fd), as: UTF8.self) }

    func readBytes(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += chunk[..<n]
        }
        return out
    }

    func testAHeadNeverEndedIsAnsweredAtItsDeadline() throws {
        let (s, port) = try server()
        defer { s.server.stop() }
        let fd = dial(port)
        defer { close(fd) }
        put(fd, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        let began = Date()
        let answer = readAll(fd)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 408 "), answer)
        XCTAssertLessThan(Date().timeIntervalSince(began), 3)
    }

    func testAHeadTooLargeIsRefusedAtOnce() throws {
        let (s, port) = try server()
        defer { s.server.stop() }
        let fd = dial(port)
        defer { close(fd) }
        put(fd, "GET /api/status HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 20_000))
        let answer = readAll(fd)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 431 "), answer)
    }

    func testABodyIsRefused() throws {
        let (s, port) = try server()
        defer { s.server.stop() }
        let fd = dial(port)
        defer { close(fd) }
        put(fd, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertTrue(readAll(fd).hasPrefix("HTTP/1.1 413 "))
    }

    /// Past `maxConnections` a connection is closed as it comes; once the idle ones are let go
    /// (their deadline), a new one is served; keep-alive serves several requests on one.
    func testConnectionsAreCappedAndIdleOnesLetGo() throws {
        let (s, port) = try server()
        defer { s.server.stop() }
        let held = (0..<4).map { _ in dial(port) }
        defer { held.forEach { close($0) } }
        let deadline = Date().addingTimeInterval(5)
        while s.server.connections < 4 && Date() < deadline { usleep(5_000) }
        XCTAssertEqual(s.server.connections, 4)
        let extra = dial(port)
        put(extra, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        XCTAssertEqual(readAll(extra), "", "a fifth connection was served")
        close(extra)
        // The held ones said nothing: closed after the idle deadline, without an answer.
        for fd in held { XCTAssertEqual(readAll(fd), "") }
        let until = Date().addingTimeInterval(5)
        while s.server.connections > 0 && Date() < until { usleep(5_000) }
        let fd = dial(port)
        defer { close(fd) }
        put(fd, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let two = readAll(fd)
        XCTAssertEqual(two.components(separatedBy: "HTTP/1.1 200 OK").count - 1, 2, two)
        XCTAssertTrue(two.contains("Connection: keep-alive") && two.contains("Connection: close"))
    }

    /// The live WebSocket: the handshake's accept value (RFC 6455's own example), the count as a
    /// text frame, a ping answered, a close answered and the connection ended.
    func testTheLiveSocket() throws {
        XCTAssertEqual(LiveSocket.accept(key: "dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let (s, port) = try server()
        defer { s.server.stop() }
        let fd = dial(port)
        defer { close(fd) }
        put(fd, "GET /api/live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        // A ping, masked, then a close with 1000.
        let mask: [UInt8] = [1, 2, 3, 4]
        var ping: [UInt8] = [0x89, 0x82] + mask
        ping += [UInt8(ascii: "h") ^ 1, UInt8(ascii: "i") ^ 2]
        var closing: [UInt8] = [0x88, 0x82] + mask
        closing += [0x03 ^ 1, 0xe8 ^ 2]
        usleep(300_000)
        _ = (ping + closing).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, LiveConnection.noSignal) }
        let bytes = readBytes(fd)
        let all = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(all.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"), all)
        XCTAssertTrue(all.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        XCTAssertTrue(all.contains("\"messages\":39"), all)
        let pong: [UInt8] = [0x8a, 0x02, UInt8(ascii: "h"), UInt8(ascii: "i")]
        XCTAssertTrue((0...(bytes.count - 4)).contains { Array(bytes[$0..<($0 + 4)]) == pong }, "the ping's pong")
        XCTAssertEqual(Array(bytes.suffix(4)), [0x88, 0x02, 0x03, 0xe8], "the close answered")
    }
}
