import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// `frame_length = message;` (issue #39 item 2): no length field, no delimiter: a frame is its
/// header and what its message's fields take. Frames written here by hand in a card game's
/// layout; the same frames under every cut of the streams, a frame whose id names no message
/// reported and the stream resynchronised, a frame cut by the stream's end said to be.
final class ConsumedFramingTests: XCTestCase {
    static let cards = """
    protocol cards {
        port 7700;
        strings u8;
        header { uint8 cmd; }
        frame_length = message;
        message_id = cmd;
    }
    Message Card { Uint8 suit; Uint8 rank; }
    Message Hello = 1 c2s { Uint32 player; String name; }
    Message Deal = 2 s2c { Uint8 count; Card[count] cards; }
    Message Play = 3 c2s { Card card; Uint8 flags; Uint16 bid when flags & 1; }
    Message Chat = 4 { String(nul) text; }
    Message Ping = 5 { }
    """

    let c2s: [UInt8] = [1, 0, 0, 0, 42] + [3] + Array("ann".utf8)   // Hello 42 "ann"
        + [3, 2, 12, 1, 0, 100]                                       // Play, flags 1: a bid of 100
        + [3, 1, 5, 0]                                                // Play, flags 0: no bid
        + [4] + Array("gg\0".utf8)                                    // Chat "gg"
        + [5]                                                         // Ping
    let s2c: [UInt8] = [2, 3, 1, 1, 2, 13, 3, 7]                      // Deal 3 cards
        + [4] + Array("hi all\0".utf8) + [5]

    func decode(_ c2s: [UInt8], _ s2c: [UInt8], piece: Int) throws -> (messages: [[String: Any]], events: [[String: Any]]) {
        let schemas = try DissectorLoader.parse(text: Self.cards, file: "cards.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, c2s), (false, s2c)], piece: piece, port: 7700)
        let all = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        return (all.filter { $0["dir"] != nil && $0["type"] == nil }, all.filter { $0["type"] != nil })
    }

    func testFramesAreWhatTheirMessagesTakeUnderEveryCut() throws {
        for piece in 1...12 {
            let (ms, events) = try decode(c2s, s2c, piece: piece)
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Hello", "Play", "Play", "Chat", "Ping", "Deal", "Chat", "Ping"], "piece \(piece)")
            XCTAssertEqual(ms.map { $0["length"] as? Int ?? 0 }, [9, 6, 4, 4, 1, 8, 8, 1], "piece \(piece)")
            XCTAssertEqual(events.filter { ($0["type"] as? String) == "malformed" }.count, 0, "piece \(piece)")
            let f = ms.map { $0["fields"] as? [String: Any] ?? [:] }
            XCTAssertEqual(f[0]["name"] as? String, "ann")
            XCTAssertEqual(f[1]["bid"] as? Int, 100)
            XCTAssertNil(f[2]["bid"])
            XCTAssertEqual((f[5]["cards"] as? [[String: Any]])?.count, 3)
            XCTAssertEqual(f[6]["text"] as? String, "hi all")
        }
    }

    /// Every one- and two-cut split of the client's stream gives the same frames.
    func testEveryTwoCutSplit() throws {
        let want = try decode(c2s, [], piece: 1000).messages.map { "\($0["message"] ?? "-") \($0["offset"] ?? -1)" }
        XCTAssertEqual(want.count, 5)
        let schemas = try DissectorLoader.parse(text: Self.cards, file: "cards.dissector")
        for i in 0...c2s.count {
            for j in i...c2s.count {
                let out = OutputBuffer(fd: nil)
                let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
                FuzzStreams.feed(sessions, runs: [(true, Array(c2s[..<i])), (true, Array(c2s[i..<j])), (true, Array(c2s[j...]))], piece: 1000, port: 7700)
                let got = out.text.split(separator: "\n").compactMap { l -> String? in
                    guard let o = try? JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any], o["dir"] != nil, o["type"] == nil else { return nil }
                    return "\(o["message"] ?? "-") \(o["offset"] ?? -1)"
                }
                XCTAssertEqual(got, want, "cuts \(i) \(j)")
            }
        }
    }

    /// An id that names no message: its frame's end is unknown, which is said; the deframer finds
    /// the next frame after it. A frame the stream's end cuts is said to be.
    func testAnUnknownIdIsReportedAndDecodingGoesOn() throws {
        let bad: [UInt8] = [1, 0, 0, 0, 7, 1, 0x78] + [99, 0xee, 0xee] + [3, 2, 12, 0] + [3, 2, 12, 0] + [3, 1, 9, 0] + [1, 0, 0]
        for piece in [1, 3, 1000] {
            let (ms, events) = try decode(bad, [], piece: piece)
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Hello", "Play", "Play", "Play"], "piece \(piece)")
            let kinds = events.compactMap { $0["detail"] as? String }
            XCTAssertTrue(kinds.contains { $0.hasPrefix("message id 99 names no message: where its frame ends is unknown") }, "\(events)")
            XCTAssertTrue(kinds.contains { $0.hasPrefix("capture ended inside a frame") }, "\(events)")
        }
    }

    /// A `Decimal` whose bytes are no number ends nothing: it is reported at once as a frame whose
    /// end is unknown, and the frames after it are found (it used to wait for bytes up to
    /// `max_frame`, taking every later frame of the stream into one `length-too-long` report).
    /// The same field in a frame of known length is a warning that says what is wrong with it.
    func testANumberThatIsNoNumberIsReportedAndDecodingGoesOn() throws {
        let text = """
        protocol t { port 7700; header { uint8 type; } frame_length = message; message_id = type; max_frame 65536; }
        Message Num = 0x3a { Decimal(crlf) value; }
        Message Simple = 0x2b { String(crlf) text; }
        """
        let schemas = try DissectorLoader.parse(text: text, file: "t.dissector")
        for bad in [":1x\r\n", ":12345678901234567890\r\n", ":99999999999999999999\r\n", ":-\r\n", ":5\rX"] {
            let stream = Array((":12\r\n" + bad + "+OK\r\n:7\r\n:8\r\n").utf8)
            for piece in [1, 3, 1000] {
                let out = OutputBuffer(fd: nil)
                let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
                FuzzStreams.feed(sessions, runs: [(true, stream)], piece: piece, port: 7700)
                let all = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
                let ms = all.filter { $0["dir"] != nil && $0["type"] == nil }
                XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Num", "Simple", "Num", "Num"], "\(bad) piece \(piece)")
                let reasons = all.compactMap { $0["reason"] as? String }
                XCTAssertEqual(reasons.first, "bad-value", "\(bad) piece \(piece): \(all.filter { $0["type"] != nil })")
                let detail = all.compactMap { $0["detail"] as? String }.first ?? ""
                XCTAssertTrue(detail.hasPrefix("field 'value' at byte 1 is no decimal number: where its frame ends is unknown"), detail)
            }
        }
        // Framed by a length instead: the message is decoded, with a warning that says why the field is not shown.
        let framed = try DissectorLoader.parse(text: "protocol u { port 7701; header { uint8 length; } frame_length = length + 1; }\nMessage N { Decimal(crlf) value; }", file: "u.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: framed, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, [4] + Array("1y\r\n".utf8))], piece: 1000, port: 7701)
        XCTAssertTrue(out.text.contains("field 'value' at byte 1 is no decimal number"), out.text)
    }

    func testMisuseIsSaid() {
        for (text, want) in [
            ("protocol p { port 1; header { uint8 id; } frame_length = message; message_id = id; }\nMessage A = 1 { Bytes(rest) b; }",
             "'A.b' takes the rest of the body"),
            ("protocol p { port 1; header { uint8 id; } frame_length = message; message_id = id; }\nMessage A = 1 { Uint8[rest] b; }",
             "'A.b' takes the rest of the body"),
            ("protocol p { port 1; header { uint8 id; } frame_length = message; message_id = id; body json; }\nMessage A = 1 { }",
             "the body must be 'fields', not json"),
            ("protocol p { port 1; header { uint8 id; } frame_length = message; frame_end \"\\n\"; message_id = id; }\nMessage A = 1 { }",
             "frame_end and a frame_length or body_length exclude each other"),
            ("protocol p { port 1; header { uint8 id; } frame_length = message; body_length = id; message_id = id; }\nMessage A = 1 { }",
             "the frame length is already given at line 1"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: "t.dissector"), text) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.contains(want), "\(text):\n got \(d)\nwant \(want)")
            }
        }
        // A header field named `message` is the length, as any field would be.
        XCTAssertNoThrow(try DissectorLoader.parse(text: "protocol p { port 1; header { uint8 message; } frame_length = message; }\nMessage A { }", file: "t.dissector"))
    }
}
