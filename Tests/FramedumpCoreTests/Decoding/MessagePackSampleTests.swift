import Foundation
import XCTest
@testable import FramedumpCore

/// samples/msgpack.pcap (asyncio peers encoding and decoding with the msgpack library;
/// Dissectors/mpgame.dissector): every message the peers sent is one frame, its body decoded
/// to the value they sent (their log, samples/msgpack.messages.json, written from the bytes
/// that went out): maps by key, integer keys, every integer width, float32 and float64, nil,
/// binary, extension types, timestamps in their three encodings, objects written as arrays by
/// their declared names, a 5,000-character string over many segments.
final class MessagePackSampleTests: XCTestCase {
    /// The peers' log as framedump's NDJSON writes the same value: binary as hex, timestamps as
    /// their date, an array-encoded Move or MoveAck by its declared names, a body that is no map
    /// as `body`; numbers compared as text (both sides parsed alike).
    func expected(_ cmd: Int, _ body: Any) -> Any {
        func value(_ v: Any) -> Any {
            switch v {
            case let d as [String: Any]:
                if let hex = d["bin"] as? String, d.count == 1 { return hex }
                if let t = d["timestamp"] as? String { return t }
                return d.mapValues(value) as NSDictionary
            case let a as [Any]: return a.map(value) as NSArray
            case let n as NSNumber: return Self.number(n)
            default: return v
            }
        }
        if cmd == 3, let a = body as? [Any] { return value(Dictionary(uniqueKeysWithValues: zip(["x", "y", "speed", "facing"], a))) }
        if cmd == 4, let a = body as? [Any], let pos = a[2] as? [Any] {
            return value(["seq": a[0], "accepted": a[1], "pos": ["x": pos[0], "y": pos[1]]])
        }
        if body is [String: Any] { return value(body) }
        return value(["body": body])
    }

    /// A number as text: integers exactly; a float by its value (a whole float, written as an
    /// integer in NDJSON, as that integer; -0.0 equal to 0).
    static func number(_ n: NSNumber) -> String {
        let t = String(cString: n.objCType)
        guard t == "d" || t == "f" else { return n.stringValue }
        let d = n.doubleValue
        if d == d.rounded(.towardZero) && abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    func normal(_ v: Any) -> Any {
        switch v {
        case let d as [String: Any]: return d.mapValues(normal) as NSDictionary
        case let a as [Any]: return a.map(normal) as NSArray
        case let n as NSNumber: return Self.number(n)
        case is NSNull: return NSNull()
        default: return v
        }
    }

    func testEveryMessageThePeersSentDecodesToTheirValue() throws {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("msgpack.messages.json")))) as! [String: Any]
        let decoded = try TestSupport.messagesByFlow("msgpack.pcap").flows
        let server = log["server_port"] as! Int
        var messages = 0
        var names = Set<String>()
        for c in log["connections"] as! [[String: Any]] {
            for dir in ["c2s", "s2c"] {
                let sent = c[dir] as! [[String: Any]]
                let client = c["client_port"] as! Int
                let got = decoded[dir == "c2s" ? "\(client)>\(server)" : "\(server)>\(client)"] ?? []
                XCTAssertEqual(got.count, sent.count, "client \(c["client"]!) \(dir)")
                var offset = 0
                for (want, m) in zip(sent, got) {
                    let cmd = want["cmd"] as! Int
                    let length = want["_length"] as! Int
                    XCTAssertEqual(m["offset"] as? Int, offset)
                    XCTAssertEqual(m["length"] as? Int, 6 + length)
                    XCTAssertEqual(m["message"] as? String, want["name"] as? String)
                    offset += 6 + length
                    XCTAssertEqual(normal(m["fields"] ?? [:]) as? NSDictionary, expected(cmd, want["body"]!) as? NSDictionary,
                                   "\(want["name"]!): \(m["fields"] ?? [:])")
                    XCTAssertNil(m["warnings"], "\(want)")
                    names.insert(want["name"] as! String)
                    messages += 1
                }
            }
        }
        XCTAssertEqual(messages, 66)
        XCTAssertEqual(names.count, 9, "every message of the dissector")
    }

    /// `-Y` reaches map keys, nested maps, declared names, integer keys and timestamps.
    func testFiltersReachEveryKindOfName() throws {
        for (filter, count) in [("mpgame.device.os == \"android\"", 2), ("mpgame.x < -60000", 4), ("mpgame.pos.x == -5000000000", 2),
                                ("mpgame.server_time == \"2025-11-27T17:00:00.123456789Z\"", 1), ("mpgame.names.300 == \"potion\"", 0),
                                ("mpgame.300 == \"potion\"", 2), ("mpgame.motd == \"null\"", 2), ("mpgame.custom == 01:02:03", 2),
                                ("mpgame.text matches \"世界\"", 4), ("mpgame.body == 2", 4)] {
            let r = try TestSupport.framedump(["-r", TestSupport.sample("msgpack.pcap"), "-T", "json", "-Y", filter])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.stdout.split(separator: "\n").filter { $0.contains("\"message\"") }.count, count, filter)
        }
    }
}
