import Foundation
import XCTest
@testable import FramedumpCore

/// `-Y` on losses: `event`, `event.gap`, ... select the gap, malformed, cut, resync, conflict,
/// notice and layer-problem lines of the run, on the terminal and in NDJSON alike, and every
/// message field is absent from them (so `not game` is true of a gap).
final class FilterEventTests: XCTestCase {
    lazy var protocols: [ProtocolSchema] = try! DissectorLoader.load(paths: [TestSupport.dissectors])

    func lines(_ capture: String, _ args: [String]) throws -> [[String: Any]] {
        let r = try TestSupport.framedump(["-r", capture, "-T", "json"] + args)
        XCTAssertEqual(r.status, 0, r.stderr)
        return try r.stdout.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    func testEventsSelectTheLossLines() throws {
        let capture = TestSupport.fixture("check_problems.pcap")
        let all = try lines(capture, [])
        let losses = all.filter { ["gap", "malformed", "cut", "conflict", "late", "reset-ignored", "after-close"].contains($0["type"] as? String ?? "") }
        XCTAssertEqual(losses.count, 6, "the fixture's five malformed stretches and one gap")
        // Every loss, and only them, in the run's order.
        let events = try lines(capture, ["-Y", "event"])
        XCTAssertEqual(events.map { $0["type"] as? String }, losses.map { $0["type"] as? String })
        XCTAssertEqual(events.map { $0["offset"] as? Int }, losses.map { $0["offset"] as? Int })
        // One kind: gaps; resynchronisation's skipped bytes apart from other malformed stretches.
        XCTAssertEqual(try lines(capture, ["-Y", "event.gap"]).map { $0["type"] as? String }, ["gap"])
        let resyncs = try lines(capture, ["-Y", "event.resync"])
        XCTAssertEqual(resyncs.count, losses.filter { $0["reason"] as? String == "skipped" }.count)
        XCTAssertTrue(resyncs.allSatisfy { $0["reason"] as? String == "skipped" })
        let malformed = try lines(capture, ["-Y", "event.malformed"])
        XCTAssertEqual(malformed.count, losses.filter { $0["type"] as? String == "malformed" && $0["reason"] as? String != "skipped" }.count)
        XCTAssertGreaterThan(malformed.count, 0)
        // The event's length and its connection's ports.
        let long = try lines(capture, ["-Y", "event.len >= 9 and tcp.port == 8000"])
        XCTAssertEqual(long.map { $0["length"] as? Int }, [9, 9])
        // A message field is absent from a loss: `not` of it is true, a comparison false.
        XCTAssertEqual(try lines(capture, ["-Y", "game.Res == 1 or event.gap"]).filter { $0["type"] != nil }.count, 1)
        let notGame = try lines(capture, ["-Y", "not game"])
        XCTAssertEqual(notGame.filter { $0["type"] != nil }.count, losses.count)
        // The terminal prints the same lines it prints without a filter.
        let tree = try TestSupport.framedump(["-r", capture, "-Y", "event.gap"])
        XCTAssertEqual(tree.stdout, "1700000007.000000 10.0.0.2:41005 > 10.0.0.1:8000 game GAP 9 bytes missing at stream offset 18 (acked-unseen)\n")
    }

    /// A layer's problem (TLS with no key log) is a loss; a handshake that went well is not.
    func testLayerProblemsAreEvents() throws {
        let without = try lines(TestSupport.sample("tls13.pcap"), ["-Y", "event.layer"])
        XCTAssertFalse(without.isEmpty)
        XCTAssertTrue(without.allSatisfy { $0["type"] as? String == "tls-handshake" && $0["decrypted"] as? Bool == false })
        let with = try lines(TestSupport.sample("tls13.pcap"), ["--tls-keylog", TestSupport.sample("tls13.keys"), "-Y", "event"])
        XCTAssertEqual(with.count, 0)
    }

    func testEventNamesAreChecked() {
        func error(_ f: String) -> String? {
            do { _ = try FilterParser.parse(f, protocols: protocols); return nil } catch { return error.message }
        }
        XCTAssertNil(error("event"))
        XCTAssertNil(error("event.gap or event.len > 100"))
        XCTAssertTrue(error("event.gapp")?.contains("not an event field") ?? false)
        XCTAssertTrue(error("event.gap == 1")?.contains("write it alone") ?? false)
        XCTAssertTrue(error("event.len == \"x\"")?.contains("event.len") ?? false)
        XCTAssertTrue(error("evnt")?.contains("did you mean event") ?? false)
    }
}
