import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// `message_id = cmd, sub;` with `Message Deal = 3:7` (issue #39 item 4): a main command and a
/// sub-command select the message together, as many card and board game servers do; the id is
/// written `3:7` in every output.
final class IDPairTests: XCTestCase {
    static let cards = """
    protocol cards {
        port 7900;
        header { uint16 length; uint8 cmd; uint16 sub; }
        frame_length = length;
        message_id = cmd, sub;
    }
    Message Login = 1:1 c2s { Uint32 player; }
    Message Deal = 3:7 s2c { Uint8[4] cards; }
    Message Play = 3:8 c2s { Uint8 card; }
    Message Chat = 9:0 { Uint8 len; }
    """

    func frame(_ cmd: UInt8, _ sub: UInt16, _ body: [UInt8]) -> [UInt8] {
        let n = UInt16(5 + body.count)
        return [UInt8(n >> 8), UInt8(n & 0xff), cmd, UInt8(sub >> 8), UInt8(sub & 0xff)] + body
    }

    func testAPairSelectsTheMessage() throws {
        let schemas = try DissectorLoader.parse(text: Self.cards, file: "cards.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        let c2s = frame(1, 1, [0, 0, 0, 42]) + frame(3, 8, [12]) + frame(3, 9, [1])
        let s2c = frame(3, 7, [1, 2, 3, 4]) + frame(9, 0, [5])
        FuzzStreams.feed(sessions, runs: [(true, c2s), (false, s2c)], piece: 3, port: 7900)
        let ms = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            .filter { $0["dir"] != nil && $0["type"] == nil }
        XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Login", "Play", "-", "Deal", "Chat"])
        XCTAssertEqual(ms.map { $0["id"] as? String }, ["1:1", "3:8", "3:9", "3:7", "9:0"], "ids written as declared")
        XCTAssertEqual(ms[2]["warnings"] as? [String], ["unknown message id 3:9: body shown raw"])
        XCTAssertNil((ms[0]["header"] as? [String: Any])?["sub"], "both id fields are the id")

        let tree = OutputBuffer(fd: nil)
        let t = SessionManager(protocols: schemas, sink: TreePrinter(output: tree, hexDump: false, verbose: false, color: false))
        FuzzStreams.feed(t, runs: [(true, c2s), (false, s2c)], piece: 1000, port: 7900)
        XCTAssertTrue(tree.text.contains("cards Deal (id 3:7), 9 bytes"), tree.text)
        XCTAssertTrue(DissectorDescription.text(schemas[0]).contains("message id: cmd, sub (ids written main:sub)"))
        XCTAssertTrue(DissectorDescription.text(schemas[0]).contains("    Deal id 3:7 s2c: 1 field"), DissectorDescription.text(schemas[0]))
    }

    func testFiltersTakeThePair() throws {
        let dir = TestSupport.tempDir()
        try Self.cards.write(toFile: dir + "/cards.dissector", atomically: true, encoding: .utf8)
        let schemas = try DissectorLoader.parse(text: Self.cards, file: "cards.dissector")
        let filter = try FilterParser.parse("msg.id == \"3:7\"", protocols: schemas)
        let out = OutputBuffer(fd: nil)
        let sink = FilteringSink(JSONPrinter(output: out, diffable: true), filter: filter)
        let sessions = SessionManager(protocols: schemas, sink: sink)
        FuzzStreams.feed(sessions, runs: [(true, frame(3, 8, [1])), (false, frame(3, 7, [1, 2, 3, 4]))], piece: 1000, port: 7900)
        XCTAssertEqual(sink.matched, 1)
        XCTAssertTrue(out.text.contains("\"message\":\"Deal\""))
    }

    /// `Message Other = * s2c { }`: a frame of that direction whose id names no other message
    /// (MySQL's result-set packets); the other direction still says its unknown ids.
    func testAMessageForAnyOtherID() throws {
        let text = """
        protocol any { port 7901; header { uint16 length; uint8 cmd; uint16 sub; } frame_length = length; message_id = cmd; }
        Message Known = 1 { Uint8 x; }
        Message Other = * s2c { Bytes(rest) data; }
        """
        let schemas = try DissectorLoader.parse(text: text, file: "any.dissector")
        XCTAssertTrue(DissectorDescription.text(schemas[0]).contains("    Other id * (any other) s2c: 1 field"), DissectorDescription.text(schemas[0]))
        for filter in [nil, "msg.name == \"Other\""] {
            let out = OutputBuffer(fd: nil)
            let printer = JSONPrinter(output: out, diffable: true)
            let sink: MessageSink = try filter.map { FilteringSink(printer, filter: try FilterParser.parse($0, protocols: schemas)) } ?? printer
            let sessions = SessionManager(protocols: schemas, sink: sink)
            FuzzStreams.feed(sessions, runs: [(true, frame(1, 0, [7]) + frame(9, 0, [1])), (false, frame(1, 0, [8]) + frame(42, 0, [1, 2]))], piece: 1000, port: 7901)
            let ms = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
                .filter { $0["dir"] != nil && $0["type"] == nil }
            if filter == nil {
                XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Known", "-", "Known", "Other"])
                XCTAssertEqual(ms[1]["warnings"] as? [String], ["unknown message id 9: body shown raw"], "c2s has no '= *' message")
                XCTAssertEqual(ms[3]["id"] as? Int, 42, "the frame's own id")
                XCTAssertNil(ms[3]["warnings"])
            } else {
                XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Other"], "the prefilter knows it too")
            }
        }
        for (t, want) in [
            ("Message A = * s2c { }\nMessage B = * { }", "'A' is already the message of any other s2c id"),
            ("Message A = * { }\nMessage B = * c2s { }", "'A' is already the message of any other c2s id"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol p { port 1; header { uint16 length; uint8 cmd; } frame_length = length; message_id = cmd; }\n" + t, file: "t.dissector")) { e in
                XCTAssertTrue((e as! DissectorError).description.contains(want), "\(t): \(e)")
            }
        }
        XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol p { port 1; header { uint16 length; } frame_length = length; }\nMessage A = * { }", file: "t.dissector")) { e in
            XCTAssertTrue((e as! DissectorError).description.contains("the protocol needs a message_id"), "\(e)")
        }
    }

    func testMisuseIsSaid() {
        let head = "protocol p { port 1; header { uint16 length; uint8 cmd; uint16 sub; } frame_length = length; "
        for (text, want) in [
            (head + "message_id = cmd, sub; }\nMessage A = 3 { }", "message id 3 is one number, but the protocol's ids are pairs"),
            (head + "message_id = cmd; }\nMessage A = 3:1 { }", "'A' has a pair id: the protocol needs 'message_id = cmd, sub;'"),
            (head + "message_id = cmd, sub; }\nMessage A = 300:1 { }", "message id 300:1 does not fit in 'cmd' (at most 255)"),
            (head + "message_id = cmd, nope; }\nMessage A = 3:1 { }", "'nope' is not a header field"),
            (head + "message_id = cmd, cmd; }\nMessage A = 3:1 { }", "'cmd' is the first id field too"),
            (head + "message_id c2s = cmd, sub; }\nMessage A = 3:1 { }", "a direction's own message id is one field"),
            (head + "message_id = cmd, sub; }\nMessage A = 3:-1 { }", "each part of a message id pair is 0 to 4294967295"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: "t.dissector"), text) { e in
                XCTAssertTrue((e as! DissectorError).description.contains(want), "\(text):\n got \((e as! DissectorError).description)\nwant \(want)")
            }
        }
    }
}
