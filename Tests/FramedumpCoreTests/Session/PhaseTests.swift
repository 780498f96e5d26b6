import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Connection phases (`phase login; phase login -> play after LoginOK;`, issue #40): which
/// message an id names depends on the phase the connection is in, a message moves it to the
/// next, and a connection the capture joined late is assumed to be in the `midstream` phase,
/// and says so. The same however the streams are cut.
final class PhaseTests: XCTestCase {
    static let dissector = """
    protocol ph {
        port 8411; header { uint32 length; uint16 cmd; } frame_length = length; message_id = cmd; body fields;
        phase login; phase play midstream; phase trade;
        phase login -> play after LoginOK;
        phase play -> trade after TradeOpen;
        phase trade -> play after TradeClose;
    }
    Message Login = 1 c2s in login { Uint8 who; }
    Message LoginOK = 2 s2c in login { }
    Message Move = 5 c2s in play { Uint16 x; }
    Message Offer = 5 c2s in trade { Uint32 gold; }    // Move's id, in another phase
    Message TradeOpen = 6 s2c in play { }
    Message TradeClose = 7 s2c { }
    Message Chat = 9 { Uint8 n; }                     // every phase
    Message Item = * s2c in trade { Uint8 kind; }     // any other id, while trading
    """

    func frame(_ cmd: UInt16, _ body: [UInt8]) -> [UInt8] {
        let n = UInt32(6 + body.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), UInt8(cmd >> 8), UInt8(cmd & 0xff)] + body
    }

    func messages(_ out: OutputBuffer) throws -> [[String: Any]] {
        try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            .filter { $0["dir"] != nil && $0["type"] == nil }
    }

    func testEachPhaseNamesItsOwnMessages() throws {
        let runs: [(client: Bool, bytes: [UInt8])] = [
            (true, frame(1, [7])), (false, frame(2, [])),
            (true, frame(5, [0, 3]) + frame(9, [1])), (false, frame(6, [])),
            (true, frame(5, [0, 0, 1, 0])), (false, frame(40, [2]) + frame(7, [])),
            (true, frame(5, [0, 4])), (false, frame(40, [2])),
        ]
        for piece in [1, 2, 3, 5, 7, 11, 64, 1000] {
            let schemas = try DissectorLoader.parse(text: Self.dissector, file: "ph.dissector")
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            FuzzStreams.feed(sessions, runs: runs, piece: piece, port: 8411)
            let ms = try messages(out)
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" },
                           ["Login", "LoginOK", "Move", "Chat", "TradeOpen", "Offer", "Item", "TradeClose", "Move", "-"], "piece \(piece)")
            XCTAssertEqual(ms.map { $0["phase"] as? String ?? "-" },
                           ["login", "login", "play", "play", "play", "trade", "trade", "trade", "play", "play"], "piece \(piece)")
            XCTAssertEqual(ms.compactMap { $0["enters"] as? String }, ["play", "trade", "play"])
            XCTAssertNil(ms[0]["phase_assumed"], "the connection's start was captured")
            XCTAssertEqual((ms[5]["fields"] as? [String: Any])?["gold"] as? Int, 256, "id 5 while trading is an Offer")
            XCTAssertEqual(ms[9]["warnings"] as? [String], ["unknown message id 40: body shown raw"], "no Item outside a trade")
        }
    }

    func testAConnectionJoinedLateIsAssumedInItsMidstreamPhaseAndSaysSo() throws {
        let c2s = frame(5, [0, 3]) + frame(1, [7])
        let s2c: [UInt8] = []
        for piece in [1, 4, 1000] {
            let schemas = try DissectorLoader.parse(text: Self.dissector, file: "ph.dissector")
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            FuzzStreams.feed(sessions, c2s: c2s, s2c: s2c, piece: piece, syn: false, port: 8411)
            let ms = try messages(out)
            XCTAssertEqual(ms.first?["message"] as? String, "Move", "piece \(piece)")
            XCTAssertEqual(ms.first?["phase"] as? String, "play")
            XCTAssertEqual(ms.first?["phase_assumed"] as? Bool, true)
            XCTAssertEqual(ms.filter { $0["phase_assumed"] != nil }.count, 1, "said once")
            XCTAssertFalse(ms.contains { $0["message"] as? String == "Login" }, "no Login while playing")
        }
        // The tree says it in words.
        let schemas = try DissectorLoader.parse(text: Self.dissector, file: "ph.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: TreePrinter(output: out, hexDump: false, verbose: false, color: false))
        FuzzStreams.feed(sessions, c2s: c2s, s2c: s2c, piece: 1000, syn: false, port: 8411)
        out.flush()
        XCTAssertTrue(out.text.contains("    phase: play (assumed: the capture began after the connection's start)\n"), out.text)
    }

    /// Bodies wrapped only once logged in (`transform xor key "5a" in play;`).
    func testATransformAppliesOnlyInItsPhases() throws {
        let text = """
        protocol ex { port 8412; header { uint32 length; uint16 cmd; } frame_length = length; message_id = cmd; body fields;
            phase login; phase play; phase login -> play after LoginOK;
            transform xor key "5a" in play; }
        Message Login = 1 c2s { Uint8 who; }
        Message LoginOK = 2 s2c { }
        Message Move = 5 c2s { Uint16 x; }
        """
        let runs: [(client: Bool, bytes: [UInt8])] = [(true, frame(5, [0, 3]) + frame(1, [7])), (false, frame(2, [])),
                                                     (true, frame(5, [0x5a, 0x59]))]
        for piece in [1, 5, 1000] {
            let schemas = try DissectorLoader.parse(text: text, file: "ex.dissector")
            XCTAssertEqual(schemas[0].transforms[0].text(in: schemas[0]), "xor key of 1 bytes in play")
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            FuzzStreams.feed(sessions, runs: runs, piece: piece, port: 8412)
            let ms = try messages(out)
            XCTAssertEqual(ms.map { ($0["fields"] as? [String: Any])?["x"] as? Int }, [3, nil, nil, 3], "piece \(piece)")
            XCTAssertNil(ms[0]["transforms"], "not wrapped before login")
            XCTAssertNotNil(ms[3]["transforms"])
        }
        let head = "protocol ex { port 8412; header { uint32 length; uint16 cmd; } frame_length = length; message_id = cmd;\n"
        TestSupport.assertRefused([
            ("phase a; phase b; phase a -> b after M; transform xor key \"5a\" in bb; }", "ex.dissector:2:67: error: unknown phase 'bb' (did you mean 'b'?)"),
            ("transform xor key \"5a\" in b; }", "ex.dissector:2:27: error: 'in b': the protocol declares no phases"),
        ].map { (head + $0.0 + "\nMessage M = 1 { }", $0.1) }, file: "ex.dissector")
    }

    func testTheTreeSaysWhereThePhaseChanges() throws {
        let schemas = try DissectorLoader.parse(text: Self.dissector, file: "ph.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: TreePrinter(output: out, hexDump: false, verbose: false, color: false))
        FuzzStreams.feed(sessions, runs: [(true, frame(1, [7])), (false, frame(2, [])), (true, frame(5, [0, 3]))], piece: 1000, port: 8411)
        out.flush()
        XCTAssertTrue(out.text.contains("ph LoginOK (id 2), 6 bytes\n    phase: login → play\n"), out.text)
        XCTAssertFalse(out.text.contains("assumed"), out.text)
        XCTAssertEqual(out.text.components(separatedBy: "phase:").count, 2, "one line, where it changes")
    }

    func testPhasesAreCheckedWhereTheyAreWritten() {
        let head = "protocol ph { port 8411; header { uint32 length; uint16 cmd; } frame_length = length; message_id = cmd;\n"
        TestSupport.assertRefused([
            ("phase a; phase b; phase a -> b after X; }\nMessage Y = 1 { }", "ph.dissector:2:38: error: unknown message 'X' after 'after'"),
            ("phase a; phase b; phase a -> c after Y; }\nMessage Y = 1 { }", "ph.dissector:2:30: error: unknown phase 'c'"),
            ("phase a; phase b; }\nMessage Y = 1 { }", "ph.dissector:2:16: error: phase 'b' can never be entered"),
            ("phase a; phase b; phase c; phase a -> b after Y; phase c -> b after Z; }\nMessage Y = 1 { }\nMessage Z = 2 in c { }",
             "ph.dissector:2:25: error: phase 'c' can never be entered"),
            ("phase a; phase b; phase b -> a after Y; phase a -> b after Y; }\nMessage Y = 1 in b { }",
             "ph.dissector:2:60: error: 'Y' is never decoded in phase 'a'"),
            ("phase a; phase a; }\nMessage Y = 1 { }", "ph.dissector:2:16: error: phase 'a' is declared twice"),
            ("phase a midstream; phase b midstream; phase a -> b after Y; }\nMessage Y = 1 { }", "ph.dissector:2:28: error: only one phase"),
            ("phase a; phase b; phase a -> b after Y; }\nMessage Y = 1 { }\nMessage Z = 1 in b { }",
             "ph.dissector:4:9: error: message id 1 (c2s) is already used by 'Y' in phase 'b'"),
            ("}\nMessage Y = 1 in a { }", "ph.dissector:3:18: error: 'Y' is said to be in phase 'a', but the protocol declares no phases"),
            ("phase a; phase b; phase a -> b after Y; }\nMessage Y = 1 in bb { }", "ph.dissector:3:18: error: unknown phase 'bb'"),
            ("phase a; phase b; phase a -> b Y; }\nMessage Y = 1 { }", "ph.dissector:2:32: error: expected 'after MESSAGE'"),
        ].map { (head + $0.0, $0.1) }, file: "ph.dissector")
        // Frames measured by their message are cut before the phase that picks the message is known.
        let measured = "protocol ph { port 8411; header { uint16 cmd; } frame_length = message; message_id = cmd;\n"
            + "phase a; phase b; phase a -> b after Y; }\nMessage Y = 1 { Uint8 x; }"
        XCTAssertThrowsError(try DissectorLoader.parse(text: measured, file: "ph.dissector")) { e in
            XCTAssertTrue((e as! DissectorError).description.contains("frame_length = message measures a frame before the connection's phase is known"), "\(e)")
        }
    }
}
