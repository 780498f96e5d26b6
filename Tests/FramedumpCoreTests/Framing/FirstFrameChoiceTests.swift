import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// A first frame that may be one of several messages (`message SSLRequest when version ==
/// 80877103;`), that may come again (`again after SSLRequest;`), and a first frame of the other
/// side that follows it (`first s2c after SSLRequest { }`): PostgreSQL as libpq speaks it by
/// default (sslmode=prefer), written here by hand with Dissectors/postgresql.dissector.
final class FirstFrameChoiceTests: XCTestCase {
    static func i32(_ v: Int32) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }
    static func typed(_ t: Character, _ body: [UInt8]) -> [UInt8] { [t.asciiValue!] + i32(Int32(body.count + 4)) + body }
    static let sslRequest = i32(8) + i32(80877103)
    static let startup: [UInt8] = {
        let params = Array("user\0ann\0database\0db\0\0".utf8)
        return i32(Int32(8 + params.count)) + i32(196608) + params
    }()
    static let query = typed("Q", Array("SELECT 1\0".utf8))
    static let authOK = typed("R", i32(0))
    static let ready = typed("Z", Array("I".utf8))

    func decode(_ runs: [(Bool, [UInt8])], piece: Int) throws -> (c2s: [String], s2c: [String], all: [[String: Any]]) {
        let schemas = try DissectorLoader.load(paths: [TestSupport.root.appendingPathComponent("Dissectors/postgresql.dissector").path])
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: runs, piece: piece, port: 5432)
        let all = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let ms = all.filter { $0["dir"] != nil && $0["type"] == nil }
        func names(_ d: String) -> [String] { ms.filter { $0["dir"] as? String == d }.map { $0["message"] as? String ?? "-" } }
        return (names("c2s"), names("s2c"), all)
    }

    func testAnSSLRequestAnsweredNoThenTheStartupMessageUnderEveryPieceSize() throws {
        for piece in [1, 2, 3, 5, 1000] {
            // The client asks, the server answers one byte, the client starts up in plaintext.
            let (c2s, s2c, all) = try decode([(true, Self.sslRequest), (false, Array("N".utf8)), (true, Self.startup + Self.query),
                                              (false, Self.authOK + Self.ready)], piece: piece)
            XCTAssertEqual(c2s, ["SSLRequest", "StartupMessage", "Query"], "piece \(piece)")
            XCTAssertEqual(s2c, ["EncryptionResponse", "Authentication", "ReadyForQuery"], "piece \(piece)")
            XCTAssertEqual(all.filter { $0["type"] as? String == "malformed" }.count, 0, "piece \(piece)")
            let answer = all.first { $0["message"] as? String == "EncryptionResponse" }
            XCTAssertEqual((answer?["header"] as? [String: Any])?["answer"] as? String, "0x4e")
            XCTAssertEqual(answer?["length"] as? Int, 1)
        }
        // Both client messages in one segment (a client that does not wait for the answer).
        let (c2s, s2c, _) = try decode([(true, Self.sslRequest + Self.startup), (false, Array("N".utf8) + Self.authOK)], piece: 1000)
        XCTAssertEqual(c2s, ["SSLRequest", "StartupMessage"])
        XCTAssertEqual(s2c, ["EncryptionResponse", "Authentication"])
    }

    /// Without an SSLRequest the server's first message is a typed one, as before; a
    /// CancelRequest is a first frame of its own with its fields.
    func testNoRequestNoAnswerAndACancelRequest() throws {
        var (c2s, s2c, _) = try decode([(true, Self.startup), (false, Self.authOK + Self.ready)], piece: 3)
        XCTAssertEqual(c2s, ["StartupMessage"])
        XCTAssertEqual(s2c, ["Authentication", "ReadyForQuery"])
        let cancel = Self.i32(16) + Self.i32(80877102) + Self.i32(4242) + Self.i32(-7)
        let all: [[String: Any]]
        (c2s, s2c, all) = try decode([(true, cancel)], piece: 1000)
        XCTAssertEqual(c2s, ["CancelRequest"])
        let f = all.first { $0["message"] as? String == "CancelRequest" }?["fields"] as? [String: Any]
        XCTAssertEqual(f?["processId"] as? Int, 4242)
        XCTAssertEqual(f?["secretKey"] as? Int, -7)
    }

    /// `framedump dissectors` says each first frame's messages, tests, `again` and `after`.
    func testTheDescriptionSaysIt() throws {
        let s = try DissectorLoader.load(paths: [TestSupport.root.appendingPathComponent("Dissectors/postgresql.dissector").path])
        let text = DissectorDescription.text(s[0])
        XCTAssertTrue(text.contains("frame_length = length; message SSLRequest when version == 80877103; message GSSENCRequest when version == 80877104; message CancelRequest when version == 80877102; message StartupMessage; again after SSLRequest, GSSENCRequest\n"), text)
        XCTAssertTrue(text.contains("  first s2c frame after SSLRequest, GSSENCRequest (1 bytes): uint8 answer; frame_length = 1; message EncryptionResponse\n"), text)
    }

    func testMisuseIsSaid() {
        let head = "protocol p { port 1; header { uint8 type; int32 length; } frame_length = length + 1; message_id = type;\n"
        let msgs = "\nMessage A { } Message B { } Message C { } Message Q = 0x51 c2s { }"
        TestSupport.assertRefused([
            (head + "first c2s { header { int32 length; int32 code; } frame_length = length; message A when cod == 1; message B; } }" + msgs,
             "t.dissector:2:88: error: 'cod' is not a header field (did you mean code?)"),
            (head + "first c2s { header { int32 length; int32 code; } frame_length = length; message A when length == 1; message B; again after C; } }" + msgs,
             "t.dissector:2:124: error: 'again after C': 'C' is not a message the first c2s frame can be (its 'message' lines)"),
            (head + "first c2s { header { int32 length; int32 code; } frame_length = length; message B; }\nfirst s2c after A { header { uint8 x; } frame_length = 1; message C; } }" + msgs,
             "t.dissector:3:17: error: 'A' is not a message the first c2s frame can be"),
            (head + "first s2c after A { header { uint8 x; } frame_length = 1; message C; } }" + msgs,
             "t.dissector:2:17: error: 'first s2c after ...' follows the c2s side's first frame, which the protocol does not describe"),
            (head + "first c2s { header { int32 length; int32 code; } frame_length = length; message A; message B; } }" + msgs,
             "t.dissector:2:84: error: 'first c2s' already names its message (give the others a 'when')"),
        ], file: "t.dissector")
    }
}
