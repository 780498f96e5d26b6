import Foundation
import XCTest
@testable import FramedumpCore

/// samples/lines.pcap (JSON lines between asyncio peers, `frame_end "\r\n"`): every line the
/// peers wrote is one message, at its offset, decoded to the object they wrote, in both
/// directions of every connection (the peers' log is samples/lines.messages.json).
final class LinesSampleTests: XCTestCase {
    func testEveryLineThePeersWroteIsOneMessage() throws {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("lines.messages.json")))) as! [String: Any]
        let r = try TestSupport.framedump(["-r", TestSupport.sample("lines.pcap"), "-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var decoded: [String: [[String: Any]]] = [:]
        for l in r.stdout.split(separator: "\n") {
            let o = try JSONSerialization.jsonObject(with: Data(l.utf8)) as! [String: Any]
            guard o["type"] == nil, let conn = o["conn"] as? String, let dir = o["dir"] as? String else { continue }
            let port = conn.split(separator: "-")[0].split(separator: ":").last!
            decoded["\(port) \(dir)", default: []].append(o)
        }
        var lines = 0
        for c in log["connections"] as! [[String: Any]] {
            for dir in ["c2s", "s2c"] {
                let sent = c[dir] as! [String]
                let got = decoded["\(c["client_port"]!) \(dir)"] ?? []
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
