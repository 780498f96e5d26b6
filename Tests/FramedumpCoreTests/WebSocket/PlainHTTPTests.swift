import XCTest
@testable import FramedumpCore

/// Plain HTTP on a port no dissector names: not a WebSocket, with or without its SYN.
final class PlainHTTPTests: XCTestCase {
    func testPlainHTTPIsNoWebSocketEvenMidConnection() throws {
        for syn in [true, false] {
            let dir = TestSupport.tempDir()
            let pcap = dir + "/http.pcap"
            let b = try CaptureBuilder(pcap)
            let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8080, syn: syn)
            c.send(Array("GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n".utf8))
            c.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world".utf8), fromClient: false)
            c.send(Array("GET /next HTTP/1.1\r\nHost: example\r\n\r\n".utf8))
            c.send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8), fromClient: false)
            b.finish()
            for format in ["tree", "json"] {
                let r = try TestSupport.framedump(["-r", pcap, "-T", format])
                XCTAssertEqual(r.status, 0, r.stderr)
                XCTAssertFalse(r.stdout.contains("websocket"), "syn \(syn) \(format):\n\(r.stdout)")
            }
            let q = try TestSupport.framedump(["-r", pcap, "-q"])
            XCTAssertFalse(q.stdout.contains("websocket"), "syn \(syn):\n\(q.stdout)")
        }
    }
}
