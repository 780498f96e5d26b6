import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// `Message R answers Q by key`: replies with no message id of their own, typed by the request
/// whose key (a header field or an integer field of the request) their header carries
/// (issue #40). Frames written here: requests, then replies out of order, a notice with an id
/// of its own among them, a reply whose request was never sent, a request never answered; the
/// same result however the streams are cut.
final class AnswersTests: XCTestCase {
    static let dissector = """
    protocol rq { port 8410; header { uint32 length; uint16 cmd; uint32 seq; } frame_length = length; message_id = cmd; body fields; }
    Message LoginReq = 1 c2s { Uint8 a; }
    Message LoginReply answers LoginReq by seq { Uint8 result; Uint32 playerId; }
    Message GetItem = 2 c2s { Uint32 item; Uint32 tag; }
    Message ItemReply answers GetItem by tag = seq { Uint16 count; }
    Message Notice = 50 s2c { Uint8 x; }
    """

    func frame(_ cmd: UInt16, _ seq: UInt32, _ body: [UInt8]) -> [UInt8] {
        let n = UInt32(10 + body.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), UInt8(cmd >> 8), UInt8(cmd & 0xff),
                UInt8(seq >> 24), UInt8(seq >> 16 & 0xff), UInt8(seq >> 8 & 0xff), UInt8(seq & 0xff)] + body
    }

    func testRepliesAreTypedByTheirRequests() throws {
        let requests = frame(1, 1, [7]) + frame(2, 2, [0, 0, 0, 42, 0, 0, 0, 77]) + frame(1, 3, [8])
        let replies = frame(50, 5, [1]) + frame(0, 77, [0, 3]) + frame(0, 1, [0, 0, 0, 0, 9]) + frame(0, 99, [1, 2])
        for piece in [1, 2, 3, 5, 7, 11, 64, 1000] {
            let schemas = try DissectorLoader.parse(text: Self.dissector, file: "rq.dissector")
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            FuzzStreams.feed(sessions, runs: [(true, requests), (false, replies)], piece: piece, port: 8410)
            let lines = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            let messages = lines.filter { $0["dir"] != nil && $0["type"] == nil }
            XCTAssertEqual(messages.map { $0["message"] as? String ?? "-" },
                           ["LoginReq", "GetItem", "LoginReq", "Notice", "ItemReply", "LoginReply", "-"], "piece \(piece)")
            XCTAssertEqual((messages[4]["fields"] as? [String: Any])?["count"] as? Int, 3)
            XCTAssertEqual((messages[5]["fields"] as? [String: Any])?["playerId"] as? Int, 9)
            XCTAssertEqual(messages[6]["warnings"] as? [String],
                           ["a reply whose request was not captured (no request waits for its key): body shown raw"])
            let p = sessions.protocols[0]
            XCTAssertEqual(p.repliesWaiting, 1, "the second LoginReq is never answered")
            XCTAssertEqual(p.repliesOrphaned, 1)
        }
    }

    /// With the table full (4,096 requests never answered), a request whose key already waits
    /// still takes its place: the reply to that key is typed by the newest request, not by the
    /// older one of another type; a request of a new key is not waited for (counted).
    func testAFullTableStillTypesARepliedKeyByItsNewestRequest() throws {
        var requests: [UInt8] = []
        for seq in 1...4096 { requests += frame(1, UInt32(seq), [7]) }            // LoginReq, seq 1...4096
        requests += frame(2, 1, [0, 0, 0, 42, 0, 0, 0, 5])                        // GetItem, tag 5
        requests += frame(1, 5000, [7])                                            // a new key: not waited for
        let replies = frame(0, 5, [0, 3]) + frame(0, 5000, [1, 2])
        let schemas = try DissectorLoader.parse(text: Self.dissector, file: "rq.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, requests), (false, replies)], piece: 4096, port: 8410)
        let lines = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let got = lines.filter { $0["dir"] as? String == "s2c" && $0["type"] == nil }
        XCTAssertEqual(got.map { $0["message"] as? String ?? "-" }, ["ItemReply", "-"])
        XCTAssertEqual((got[0]["fields"] as? [String: Any])?["count"] as? Int, 3)
        XCTAssertEqual(sessions.protocols[0].repliesDropped, 1)
    }

    func testAnswersAreCheckedWhereTheyAreWritten() {
        let head = "protocol rq { port 8410; header { uint32 length; uint16 cmd; uint32 seq; } frame_length = length; message_id = cmd; }\n"
        TestSupport.assertRefused([
            ("Message Q = 1 c2s { }\nMessage R answers Qq by seq { }", "rq.dissector:3:19: error: unknown message 'Qq' after answers"),
            ("Message Q = 1 { }\nMessage R answers Q by seq { }", "rq.dissector:3:19: error: 'Q' has no direction"),
            ("Message Q = 1 c2s { }\nMessage R = 2 answers Q by seq { }", "rq.dissector:3:9: error: 'R' answers 'Q': it is typed by that request"),
            ("Message Q = 1 c2s { String s; }\nMessage R answers Q by s = seq { }", "rq.dissector:3:24: error: 's' is neither a header field nor an integer field of 'Q'"),
            ("Message Q = 1 c2s { Uint8 k; }\nMessage R answers Q by k { }", "rq.dissector:3:24: error: 'k' is not a header field: a reply's key is read from its header"),
            ("Message Q = 1 c2s { }\nMessage R answers Q seq { }", "rq.dissector:3:21: error: expected 'by FIELD' after 'Q'"),
            ("Message Q = 1 c2s { }\nMessage R answers Q by seq { }\nMessage S answers Q by seq { }", "rq.dissector:4:19: error: 'Q' is already answered by 'R'"),
        ].map { (head + $0.0, $0.1) }, file: "rq.dissector")
    }
}
