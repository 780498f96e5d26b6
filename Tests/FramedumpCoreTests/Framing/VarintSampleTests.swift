import Foundation
import XCTest
@testable import FramedumpCore

/// samples/varint.pcap (protobuf messages behind a varint32 length, written and read by the
/// protobuf library's own varint code between asyncio peers; Dissectors/chat.dissector): every
/// message the peers sent is one frame, at its offset, its length field right (1, 2 and 3 bytes),
/// decoded to the Envelope they sent (the peers' log is samples/varint.messages.json).
final class VarintSampleTests: XCTestCase {
    /// MessageToDict writes 64-bit integers as strings: numbers are compared as text.
    func normal(_ v: Any) -> Any {
        switch v {
        case let d as [String: Any]: return d.mapValues(normal) as NSDictionary
        case let a as [Any]: return a.map(normal) as NSArray
        case let n as NSNumber: return n.stringValue  // (both sides parsed alike: true is "1" on each)
        default: return v
        }
    }

    func testEveryMessageThePeersSentIsOneFrame() throws {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("varint.messages.json")))) as! [String: Any]
        let decoded = try TestSupport.messagesByFlow("varint.pcap").flows
        let server = log["server_port"] as! Int
        var messages = 0
        var lengthSizes = Set<Int>()
        for c in log["connections"] as! [[String: Any]] {
            for dir in ["c2s", "s2c"] {
                let sent = c[dir] as! [[String: Any]]
                let client = c["client_port"] as! Int
                let got = decoded[dir == "c2s" ? "\(client)>\(server)" : "\(server)>\(client)"] ?? []
                XCTAssertEqual(got.count, sent.count, "client \(c["client"]!) \(dir)")
                var offset = 0
                for (want, m) in zip(sent, got) {
                    var want = want
                    let body = want.removeValue(forKey: "_length") as! Int
                    let prefix = body < 1 << 7 ? 1 : body < 1 << 14 ? 2 : 3
                    lengthSizes.insert(prefix)
                    XCTAssertEqual(m["length"] as? Int, prefix + body)
                    XCTAssertEqual(m["offset"] as? Int, offset)
                    XCTAssertEqual((m["header"] as? [String: Any])?["length"] as? Int, body)
                    offset += prefix + body
                    XCTAssertEqual(normal(m["fields"] ?? [:]) as? NSDictionary, normal(want) as? NSDictionary, "\(want)")
                    XCTAssertNil(m["warnings"], "\(want)")
                    XCTAssertEqual(m["message"] as? String, "Envelope")
                    messages += 1
                }
            }
        }
        XCTAssertEqual(messages, 69)
        XCTAssertEqual(lengthSizes, [1, 2, 3], "lengths of every varint size")
    }
}
