import Foundation
import XCTest
@testable import FramedumpCore

/// `-Y` display filters: the grammar, Wireshark's semantics, and the samples filtered against
/// message lists computed independently from their NDJSON.
final class FilterTests: XCTestCase {
    lazy var protocols: [ProtocolSchema] = try! DissectorLoader.load(paths: [TestSupport.dissectors])

    func parseError(_ f: String) -> FilterError? {
        do { _ = try FilterParser.parse(f, protocols: protocols); return nil } catch { return error }
    }

    func testPrecedenceNotAndOr() throws {
        // not > and > or: "not a or b and c" is "(not a) or (b and c)".
        let e = try FilterParser.parse("not game or msg.id == 1 and msg.dir == c2s", protocols: protocols)
        guard case .or(.not(.present(.proto("game"))), .and(.compare(.msgID, .eq, _), .compare(.msgDir, .eq, .text("c2s")))) = e else {
            return XCTFail("\(e)")
        }
        let w = try FilterParser.parse("msg.len ge 10 && !(msg.id eq 5 || msg.id in {1, 2 3})", protocols: protocols)
        guard case .and(.compare(.msgLen, .ge, .integer(false, 10)), .not(.or(_, .member(.msgID, let set)))) = w else {
            return XCTFail("\(w)")
        }
        XCTAssertEqual(set.count, 3)
    }

    func testErrorsPointAtTheirColumn() {
        XCTAssertEqual(parseError("game.Res == ")?.column, 13)
        XCTAssertEqual(parseError("(game.Res == 1")?.column, 15)
        XCTAssertEqual(parseError("game.Res == 1 1")?.column, 15)
        XCTAssertEqual(parseError("msg.name == \"x")?.column, 13)
        XCTAssertTrue(parseError("game.Rez == 1")?.message.contains("did you mean game.Res") ?? false)
        XCTAssertTrue(parseError("gmae.Res == 1")?.message.contains("did you mean game") ?? false)
        XCTAssertTrue(parseError("msg.name matches \"(\"")?.message.contains("not a regular expression") ?? false)
        XCTAssertNotNil(parseError("msg.id == -9223372036854775809"))
        XCTAssertNil(parseError("svc.anything.inside == 1"), "JSON bodies take any key")
        // Found by fuzzing (scripts/fuzz.sh display-filter): a lone dot trapped.
        for f in [".", "game.", ".game", "game..Res", "svc.a..b == 1"] {
            XCTAssertTrue(parseError(f)?.message.contains("not a field name") ?? false, f)
        }
    }

    func testIntegersCompareExactlyOverBothRanges() {
        XCTAssertTrue(FilterEvaluator.compare(.integer(negative: false, magnitude: UInt64.max, label: nil), .gt, .integer(negative: false, magnitude: UInt64(Int64.max))))
        XCTAssertTrue(FilterEvaluator.compare(.integer(negative: true, magnitude: 1 << 63, label: nil), .lt, .integer(negative: true, magnitude: (1 << 63) - 1)))
        XCTAssertFalse(FilterEvaluator.compare(.integer(negative: false, magnitude: 9_007_199_254_740_993, label: nil), .eq,
                                 .integer(negative: false, magnitude: 9_007_199_254_740_992)), "no rounding through doubles")
        XCTAssertTrue(FilterEvaluator.compare(.integer(negative: true, magnitude: 5, label: nil), .lt, .integer(negative: false, magnitude: 0)))
        XCTAssertTrue(FilterEvaluator.compare(.integer(negative: false, magnitude: 1, label: "success"), .eq, .text("success")))
    }

    /// The messages of a sample's NDJSON, each as (dir, message, fields).
    func ndjson(_ sample: String, _ extra: [String] = []) throws -> [[String: Any]] {
        let r = try TestSupport.framedump(["-r", "samples/\(sample).pcap", "-T", "json"] + extra)
        XCTAssertEqual(r.status, 0, r.stderr)
        return try r.stdout.split(separator: "\n").compactMap {
            let o = try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
            return o["type"] == nil ? o : nil
        }
    }

    func check(_ sample: String, _ filter: String, file: StaticString = #filePath, line: UInt = #line,
               _ expected: ([String: Any]) -> Bool) throws {
        let all = try ndjson(sample)
        let want = all.filter(expected).map { "\($0["pkts"]!)\($0["offset"]!)\($0["dir"]!)" }
        let got = try ndjson(sample, ["-Y", filter]).map { "\($0["pkts"]!)\($0["offset"]!)\($0["dir"]!)" }
        XCTAssertEqual(got, want, filter, file: file, line: line)
        XCTAssertFalse(want.isEmpty || want.count == all.count, "\(filter) should select some, not all", file: file, line: line)
    }

    func testSamplesFilteredAsTheirNDJSONSays() throws {
        func f(_ o: [String: Any]) -> [String: Any] { o["fields"] as? [String: Any] ?? [:] }
        try check("game", "game.Res == 1") { (f($0)["Res"] as? Int) == 1 }
        try check("game", "game.Res != 1") { f($0)["Res"] != nil && (f($0)["Res"] as? Int) != 1 }
        try check("game", "game.Hp < 0 or msg.id == 10002") { (f($0)["Hp"] as? Int ?? 0) < 0 || ($0["id"] as? Int) == 10002 }
        try check("game", "msg.dir == \"s2c\" and not msg.name == \"Sc_30005\"") { ($0["dir"] as? String) == "s2c" && ($0["message"] as? String) != "Sc_30005" }
        try check("game", "game.message contains \"welcome\"") { (f($0)["message"] as? String)?.contains("welcome") ?? false }
        try check("svc", "svc.device.os == \"ios\"") { ((f($0)["device"] as? [String: Any])?["os"] as? String) == "ios" }
        try check("svc", "svc.bodyLength > 60") { (($0["header"] as? [String: Any])?["bodyLength"] as? Int ?? 0) > 60 }
        try check("bridge", "bridge.messageType matches \"^heart\"") { (f($0)["messageType"] as? String)?.hasPrefix("heart") ?? false }
        try check("bridge", "bridge.appId in {7 8 9}") { [7, 8, 9].contains((($0["header"] as? [String: Any])?["appId"] as? Int) ?? -1) }
        try check("game", "tcp.srcport == 8000") { ($0["dir"] as? String) == "s2c" }
        try check("socketio", "socketio.event == \"chat\"") { (f($0)["event"] as? String) == "chat" }
        try check("socketio", "socketio.ack > 1 and msg.name == \"ack\"") { (f($0)["ack"] as? Int ?? 0) > 1 && ($0["message"] as? String) == "ack" }
        func g(_ o: [String: Any]) -> [String: Any] { o["grpc"] as? [String: Any] ?? [:] }
        try check("grpc", "grpc.method == \"/grpcchat.Chat/Talk\"") { (g($0)["method"] as? String) == "/grpcchat.Chat/Talk" }
        try check("grpc", "grpc.message > 1 and msg.dir == \"s2c\"") { (g($0)["message"] as? Int ?? 0) > 1 && ($0["dir"] as? String) == "s2c" }
        try check("grpc", "grpc.compressed == true") { (g($0)["compressed"] as? Bool) == true }
        try check("grpc", "grpcchat.sender.name == \"bob\"") { ((f($0)["sender"] as? [String: Any])?["name"] as? String) == "bob" }
    }

    func testEnumLabelsCompareByName() throws {
        let a = try ndjson("game", ["-Y", "game.Res == \"success\""]).count
        let b = try ndjson("game", ["-Y", "game.Res == 1"]).count
        XCTAssertEqual(a, b)
        XCTAssertGreaterThan(a, 0)
    }

    func testBadFilterExitsTwoWithACaret() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-Y", "game.Rez == 1"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("column 1: 'Rez' is not a field of game (did you mean game.Res?)"), r.stderr)
        XCTAssertTrue(r.stderr.contains("\n    ^"), r.stderr)
    }

    /// A layer's field compared with a value it can never hold is refused, as a decoded field's
    /// is (it once matched nothing and exited 0); a value it can hold still filters.
    func testLayerFieldsAreTypeChecked() throws {
        let tls = ["-r", "samples/tls13.pcap", "--tls-keylog", "samples/tls13.keys", "-q"]
        for (args, filter, says) in [
            (tls, "tls.sni == 3", "tls.sni is a string"),
            (tls, "tls.version == \"TLS 1.4\"", "\"TLS 1.4\" is not a value of tls.version (its values: TLS 1.3, TLS 1.2"),
            (tls, "tls.record == \"x\"", "tls.record is a number"),
            (["-r", "samples/bridge.pcap", "-q"], "ws.opcode == 1", "ws.opcode is a string"),
            (["-r", "samples/bridge.pcap", "-q"], "ws.opcode == \"txt\"", "\"txt\" is not a value of ws.opcode"),
            (["-r", "samples/bridge.pcap", "-q"], "ws.fin == \"yes\"", "ws.fin is a Bool"),
            (["-r", "samples/kcp.pcap", "-q"], "kcp.conv == \"x\"", "kcp.conv is a number"),
        ] {
            let r = try TestSupport.framedump(args + ["-Y", filter])
            XCTAssertEqual(r.status, 2, filter)
            XCTAssertTrue(r.stderr.contains(says), filter + ": " + r.stderr)
        }
        for (args, filter) in [(tls, "tls.version == \"TLS 1.3\" and tls.record > 3"),
                               (["-r", "samples/bridge.pcap", "-q"], "ws.opcode == \"text\" and ws.fin == 1"),
                               (["-r", "samples/kcp.pcap", "-q"], "kcp.conv > 0 and kcp.delayed == false")] {
            let r = try TestSupport.framedump(args + ["-Y", filter])
            XCTAssertEqual(r.status, 0, filter + ": " + r.stderr)
            let matched = r.stdout.split(separator: "\n").first { $0.contains("messages matched") }
            XCTAssertNotNil(matched, filter + ": " + r.stdout)
            XCTAssertFalse(matched?.contains(": 0 messages matched") ?? true, filter + ": " + r.stdout)
        }
    }

    /// What the filter decides before decoding: only a sure "no" skips the body.
    func testDecidedBeforeDecodingOnlyWhenSure() throws {
        let game = ProtocolRuntime(protocols.first { $0.name == "game" }!)
        func early(_ f: String, _ dir: Direction, _ id: UInt64) throws -> Bool? {
            let e = FilterEvaluator(try FilterParser.parse(f, protocols: protocols))
            return e.early(e.expr, game, dir, id, game.decoder.program.message(dir, id))
        }
        XCTAssertEqual(try early("msg.id == 30005", .s2c, 20001), false)
        XCTAssertEqual(try early("msg.id == 30005", .s2c, 30005), true)
        XCTAssertEqual(try early("svc.user == \"x\"", .c2s, 20001), false, "another protocol's field")
        XCTAssertNil(try early("game.Res == 1", .s2c, 20001), "decoding decides")
        XCTAssertNil(try early("msg.id == 10002 or game.Res == 1", .s2c, 20001))
        XCTAssertEqual(try early("msg.dir == c2s and game.Res == 1", .s2c, 20001), false)
        XCTAssertEqual(try early("not msg.name == \"Sc_30005\"", .s2c, 30005), false)
    }

    /// `-q` with a filter counts the matches per message, as the NDJSON of the same filter has them.
    func testSummaryCountsTheMatches() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-q", "-Y", "msg.dir == s2c"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = try ndjson("game", ["-Y", "msg.dir == s2c"])
        XCTAssertTrue(r.stdout.contains("filter msg.dir == s2c: \(lines.count) messages matched"), r.stdout)
        for name in Set(lines.map { $0["message"] as! String }) {
            let n = lines.filter { ($0["message"] as! String) == name }.count
            XCTAssertNotNil(r.stdout.range(of: "  game \(name) \\(id [0-9]+\\) +\(n)\n", options: .regularExpression), "\(name) \(n)")
        }
    }
}
