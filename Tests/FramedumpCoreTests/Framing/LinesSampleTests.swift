import Foundation
import XCTest
@testable import FramedumpCore

/// samples/lines.pcap (JSON lines between asyncio peers, `frame_end "\r\n"`): every line the
/// peers wrote is one message, at its offset, decoded to the object they wrote, in both
/// directions of every connection (the peers' log is samples/lines.messages.json).
final class LinesSampleTests: XCTestCase {
    func testEveryLineThePeersWroteIsOneMessage() throws {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("lines.messages.json")))) as! [String: Any]
        let decoded = try TestSupport.messagesByFlow("lines.pcap").flows
        let server = log["server_port"] as! Int
        var lines = 0
        for c in log["connections"] as! [[String: Any]] {
            for dir in ["c2s", "s2c"] {
                let sent = c[dir] as! [String]
                let client = c["client_port"] as! Int
                let got = decoded[dir == "c2s" ? "\(client)>\(server)" : "\(server)>\(client)"] ?? []
                XCTAssertEqual(got.count, sent.count, "client \(c["client"]!) \(dir)")
                var offset = 0
                for (text, m) in zip(sent, got) {
                    let bytes = Array(text.utf8).count + 2
                    XCTAssertEqual(m["length"] as? Int, bytes)
                    XCTAssertEqual(m["offset"] as? Int, offset)
                    offset += bytes
                    let want = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! NSDictionary
                    let have = (m["fields"] as? NSDictionary) ?? [:]
                    XCTAssertEqual(have, want, text)
                    XCTAssertNil(m["warnings"], text)
                    XCTAssertEqual(m["message"] as? String, "Line", "every line is the dissector's one message")
                    lines += 1
                }
            }
        }
        XCTAssertEqual(lines, 66)
    }
}
