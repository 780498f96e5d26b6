import Foundation
import XCTest
@testable import FramedumpCore

/// `-z` tables checked against counts made independently from the same run's NDJSON lines.
final class StatisticsTests: XCTestCase {
    func run(_ sample: String, _ extra: [String]) throws -> (messages: [[String: Any]], stats: [String: [String: Any]]) {
        let r = try TestSupport.framedump(["-r", "samples/\(sample).pcap", "-T", "json"] + extra)
        XCTAssertEqual(r.status, 0, r.stderr)
        var messages: [[String: Any]] = [], stats: [String: [String: Any]] = [:]
        for line in r.stdout.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if (o["type"] as? String) == "stats" { stats[o["stat"] as! String] = o } else if o["type"] == nil { messages.append(o) }
        }
        return (messages, stats)
    }

    func testMessagesPerProtocolMessageAndDirection() throws {
        for sample in ["game", "svc", "im", "bridge"] {
            let (messages, stats) = try run(sample, ["-z", "msgs"])
            var expected: [String: (Int, Int)] = [:]
            for m in messages {
                // Named as the table names them: the schema message, else the WebSocket opcode.
                let name = (m["message"] as? String) ?? ((m["ws"] as? [String: Any])?["opcode"] as? String) ?? "id \(m["id"]!)"
                let key = "\(m["protocol"]!)|\(name)|\(m["dir"]!)"
                let v = expected[key] ?? (0, 0)
                expected[key] = (v.0 + 1, v.1 + (m["length"] as! Int))
            }
            let rows = try XCTUnwrap(stats["msgs"]?["rows"] as? [[String: Any]])
            var got: [String: (Int, Int)] = [:]
            for r in rows { got["\(r["protocol"]!)|\(r["message"]!)|\(r["dir"]!)"] = (r["messages"] as! Int, r["bytes"] as! Int) }
            for (k, v) in expected { XCTAssertTrue(got[k].map { $0 == v } ?? false, "\(sample) \(k): \(String(describing: got[k])) vs \(v)") }
            XCTAssertFalse(expected.isEmpty, sample)
        }
    }

    func testConversationsAndRate() throws {
        let (messages, stats) = try run("game", ["-z", "conv", "-z", "rate,1"])
        let rows = try XCTUnwrap(stats["conv"]?["rows"] as? [[String: Any]])
        XCTAssertEqual(rows.count, 3, "one row per connection, none merged")
        for r in rows {
            let conn = r["conn"] as! String
            for dir in ["c2s", "s2c"] {
                let n = messages.filter { ($0["conn"] as! String) == conn && ($0["dir"] as! String) == dir }.count
                XCTAssertEqual((r["messages"] as! [String: Int])[dir], n, "\(conn) \(dir)")
            }
        }
        let rate = try XCTUnwrap(stats["rate"]?["rows"] as? [[String: Any]])
        XCTAssertEqual(rate.map { $0["messages"] as! Int }.reduce(0, +), messages.count)
    }

    func testStatisticsCountWhatTheFilterSelects() throws {
        let (_, stats) = try run("game", ["-z", "msgs", "-Y", "msg.dir == s2c"])
        let rows = try XCTUnwrap(stats["msgs"]?["rows"] as? [[String: Any]])
        XCTAssertTrue(rows.allSatisfy { ($0["dir"] as! String) == "s2c" })
        XCTAssertEqual(try TestSupport.framedump(["-r", "samples/game.pcap", "-z", "bogus"]).status, 2)
    }

    /// samples/game-latency.pcap was recorded with a server that waits 20 ms (scenes below
    /// 100) or 50 ms (from 100) before answering a Cs_20001, and never answers heartbeats.
    func testLatencyFromKnownServerDelays() throws {
        let (_, stats) = try run("game-latency", ["-z", "rtt"])
        let rows = try XCTUnwrap(stats["rtt"]?["rows"] as? [[String: Any]])
        let scene = try XCTUnwrap(rows.first { ($0["request"] as? String) == "Cs_20001" })
        XCTAssertEqual(scene["answered"] as? Int, 5)
        let min = scene["min_ms"] as! Double, median = scene["median_ms"] as! Double, max = scene["max_ms"] as! Double
        XCTAssertTrue(min >= 20 && min < 30, "\(min)")
        XCTAssertTrue(median >= 20 && median < 30, "3 of 5 waited 20 ms: \(median)")
        XCTAssertTrue(max >= 50 && max < 80, "\(max)")
        let beat = try XCTUnwrap(rows.first { ($0["request"] as? String) == "Cs_10002" })
        XCTAssertEqual(beat["unanswered"] as? Int, 5)
        XCTAssertEqual(beat["answered"] as? Int, 0)
    }
}
