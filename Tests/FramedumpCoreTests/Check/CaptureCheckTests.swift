import Foundation
import XCTest
@testable import FramedumpCore

/// `framedump check -r`: every sample is clean; the crafted capture (scripts/make_fixtures.py,
/// `check_fixtures`) holds one problem of each class, each reported once.
final class CaptureCheckTests: XCTestCase {
    static let samples = ["game.pcap", "game-latency.pcap", "svc.pcap", "bridge.pcap", "websocket-deflate.pcap",
                          "scenario-a.pcap", "scenario-b.pcap", "scenario-changed.pcap", "scenario-edited.pcap"]

    func testEverySamplePasses() throws {
        for s in Self.samples {
            let r = try TestSupport.framedump(["check", "-r", TestSupport.sample(s), "--unclaimed"])
            XCTAssertEqual(r.status, 0, s + ": " + r.stdout + r.stderr)
            XCTAssertEqual(r.stdout, "", s)
            XCTAssertTrue(r.stderr.contains(": no problems ("), r.stderr)
        }
        // im.pcap carries, on purpose, one id no dissector line binds (decoded schema-less):
        // that one problem and nothing else; allowed, the sample passes.
        var r = try TestSupport.framedump(["check", "-r", "samples/im.pcap", "--unclaimed"])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 1, r.stdout)
        XCTAssertTrue(r.stdout.hasPrefix("unknown-message 127.0.0.1:"), r.stdout)
        XCTAssertTrue(r.stdout.contains(" c2s pkt 16 id 8: unknown message id 8"), r.stdout)
        r = try TestSupport.framedump(["check", "-r", "samples/im.pcap", "--allow", "unknown-message"])
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    func testEachProblemClassOnce() throws {
        let r = try TestSupport.framedump(["check", "-r", TestSupport.fixture("check_problems.pcap"), "--unclaimed"])
        XCTAssertEqual(r.status, 1, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let crafted: [(ProblemClass, String)] = [
            (.unknownMessage, "41000-10.0.0.1:8000 c2s pkt 4 id 999: unknown message id 999"),
            (.bodyShort, "41001-10.0.0.1:8000 c2s pkt 11 Cs_20001: body ends inside field 'Line'"),
            (.bodyLong, "41002-10.0.0.1:8000 c2s pkt 18 Cs_10002: 3 trailing bytes"),
            (.constant, "41003-10.0.0.1:9000 c2s pkt 25: header field headLength is 13, expected 12"),
            (.malformed, "41004-10.0.0.1:8000 c2s pkt 33: length 3 is shorter than the 6-byte header"),
            (.gap, "41005-10.0.0.1:8000 c2s pkt 54: 9 bytes missing at stream offset 18"),
            (.unclaimed, "41006-10.0.0.1:5555 pkt 47: 27 bytes no dissector claimed"),
            (.protobuf, "41007-10.0.0.1:9000 c2s pkt 57 LoginRequest: malformed protobuf"),
            (.json, "41008-10.0.0.1:7000 c2s pkt 64 Login: body is not valid JSON"),
            (.utf8, "41009-10.0.0.1:9000 c2s pkt 71 LoginRequest: field 'im.LoginRequest.username' is not valid UTF-8"),
            (.transform, "41010-10.0.0.1:9000 c2s pkt 78 Heartbeat: 5-byte body is not a whole number of 16-byte AES blocks"),
            (ProblemClass(layer: "websocket"), "41011-10.0.0.1:12345 c2s pkt 86 text: websocket: client frame is not masked"),
        ]
        XCTAssertEqual(lines.count, crafted.count, r.stdout)
        for (k, text) in crafted {
            let hits = lines.filter { $0.hasPrefix(k.rawValue + " 10.0.0.2:") }
            XCTAssertEqual(hits.count, 1, k.rawValue + "\n" + r.stdout)
            XCTAssertTrue(hits.first?.contains(text) ?? false, hits.first ?? k.rawValue)
        }
        XCTAssertTrue(r.stderr.hasSuffix(": 12 problems in 12 messages: 1 unknown-message, 1 body-short, 1 body-long, 1 constant, 1 malformed, 1 gap, 1 unclaimed, 1 websocket, 1 protobuf, 1 json, 1 utf8, 1 transform\n"), r.stderr)
        // Without --unclaimed that class is not looked for; allowing every class found passes.
        let quiet = try TestSupport.framedump(["check", "-r", TestSupport.fixture("check_problems.pcap")])
        XCTAssertEqual(quiet.stdout.split(separator: "\n").count, crafted.count - 1)
        let allowed = crafted.filter { $0.0 != .unclaimed }.flatMap { ["--allow", $0.0.rawValue] }
        let ok = try TestSupport.framedump(["check", "-r", TestSupport.fixture("check_problems.pcap")] + allowed)
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(try TestSupport.framedump(["check", "-r", TestSupport.fixture("check_problems.pcap"), "--allow", "gap"]).status, 1)
    }

    func testErrorsExitWithTwoAndDissectorCheckStillWorks() throws {
        XCTAssertEqual(try TestSupport.framedump(["check", "-r", TestSupport.fixture("not_a_capture.pcap")]).status, 2)
        XCTAssertEqual(try TestSupport.framedump(["check", "-r", "samples/game.pcap", "--allow", "nonsense"]).status, 2)
        let r = try TestSupport.framedump(["check", "Dissectors/game.dissector"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("game: 4 messages"), r.stdout)
    }

    /// Every NDJSON line of every sample (plain and --diffable) parses with Python's json, made
    /// strict: no NaN or Infinity, no duplicate keys.
    func testEveryNDJSONLineIsStrictJSON() throws {
        let python = try TestSupport.oracle("python3")
        let checker = """
            import json, sys
            def pairs(ps):
                keys = [k for k, _ in ps]
                if len(keys) != len(set(keys)): raise ValueError("duplicate key")
                return dict(ps)
            def bad(c): raise ValueError("not JSON: " + c)
            n = 0
            for line in open(sys.argv[1], encoding="utf-8", errors="strict"):
                json.loads(line, object_pairs_hook=pairs, parse_constant=bad)
                n += 1
            print(n)
            """
        let dir = TestSupport.tempDir()
        try checker.write(toFile: dir + "/strict.py", atomically: true, encoding: .utf8)
        var inputs = (Self.samples + ["im.pcap"]).map(TestSupport.sample)
        // Every capture fixture too (the odd link layers, reassembly cases, crafted problems);
        // a fixture that is no capture, or is cut off, still prints strict lines before failing.
        let fixtures = try FileManager.default.contentsOfDirectory(atPath: TestSupport.fixture(""))
        inputs += fixtures.filter { $0.hasSuffix(".pcap") || $0.hasSuffix(".pcapng") }.sorted().map(TestSupport.fixture)
        XCTAssertGreaterThan(inputs.count, 40)
        for input in inputs {
            for mode in [["-T", "json"], ["--diffable"]] {
                let r = try TestSupport.framedump(["-r", input] + mode)
                try r.stdout.write(toFile: dir + "/out.ndjson", atomically: true, encoding: .utf8)
                let p = try TestSupport.run(python, [dir + "/strict.py", dir + "/out.ndjson"])
                XCTAssertEqual(p.status, 0, input + " " + mode.joined() + ": " + p.stderr)
                XCTAssertEqual(Int(p.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), r.stdout.split(separator: "\n").count)
            }
        }
    }
}
