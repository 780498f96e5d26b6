import Foundation
import XCTest
@testable import FramedumpCore

/// `-Y` on a `Bytes` field as Wireshark users write it: byte literals (`contains 47:4d:5f`,
/// `== 47:4d`, with `:`, `.` or `-`), and `matches` over the raw bytes. (Both once found
/// nothing and exited 0.)
final class FilterBytesTests: XCTestCase {
    var capture = ""
    var dissector = ""

    override func setUpWithError() throws {
        let dir = TestSupport.tempDir()
        dissector = dir + "/blob.dissector"
        try """
            protocol blob { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id; }
            Message Cmd = 1 { Bytes(u8) body; }
            """.write(toFile: dissector, atomically: true, encoding: .utf8)
        capture = dir + "/blob.pcap"
        let b = try CaptureBuilder(capture)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        for body in [Array("GM_kick 7".utf8), [0x00, 0xde, 0xad, 0xbe, 0xef], Array("hello".utf8)] {
            c.send(.be32(UInt32(7 + body.count)) + .be16(1) + [UInt8(body.count)] + body)
        }
        b.finish()
    }

    func matched(_ filter: String) throws -> Int {
        let r = try TestSupport.framedump(["-r", capture, "-d", dissector, "-T", "json", "-Y", filter])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.split(separator: "\n").filter { $0.contains("\"message\":\"Cmd\"") }.count
    }

    func testByteLiterals() throws {
        XCTAssertEqual(try matched("blob.body contains 47:4d:5f"), 1)
        XCTAssertEqual(try matched("blob.body contains de.ad.be"), 1)
        XCTAssertEqual(try matched("blob.body contains DE-AD-BE-EF"), 1)
        XCTAssertEqual(try matched("blob.body == 00:de:ad:be:ef"), 1)
        XCTAssertEqual(try matched("blob.body != 00:de:ad:be:ef"), 2)
        XCTAssertEqual(try matched("blob.body contains ad:de"), 0)
        // Text still compares as text.
        XCTAssertEqual(try matched("blob.body contains \"GM_\""), 1)
        XCTAssertEqual(try matched("blob.body == \"hello\""), 1)
    }

    func testMatchesSeesTheBytes() throws {
        XCTAssertEqual(try matched("blob.body matches \"GM_\""), 1)
        XCTAssertEqual(try matched("blob.body matches \"^GM_[a-z]+ [0-9]$\""), 1)
        XCTAssertEqual(try matched("blob.body matches \"^\\\\x00\\\\xde\""), 1)
        XCTAssertEqual(try matched("blob.body matches \"l{2}o$\""), 1)
    }

    func testTheLiteralRule() {
        XCTAssertEqual(FilterEvaluator.byteLiteral("47:4d:5f"), [0x47, 0x4d, 0x5f])
        XCTAssertEqual(FilterEvaluator.byteLiteral("de.AD"), [0xde, 0xad])
        for notOne in ["47", "47:4", "47:4d:", "47:4d.5f", "127.0.0.1", "10.20.30.4x", "::1", "ab:cd:ef:gh"] {
            XCTAssertNil(FilterEvaluator.byteLiteral(notOne), notOne)
        }
    }
}
