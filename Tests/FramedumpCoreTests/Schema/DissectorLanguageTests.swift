import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// What the dissector language says beyond the server team's syntax: the byte order of a
/// count or length prefix (`[u16le]`, `String(u16le)`), little-endian floats, and `[hex]`.
final class DissectorLanguageTests: XCTestCase {
    let text = """
        protocol t {
            port 7777;
            byte_order big;
            header { uint16 len; uint16 magic == 0xBEEF [hex]; uint8 id; }
            frame_length = len;
            message_id = id;
        }
        Message Cs_1 {
            Uint32 flags = 1 [hex];
            String(u16le) name = 2;
            Uint8[u16le] xs = 3;
            Floatle f = 4;
            Doublele d = 5;
            Int8 neg = 6 [hex];
        }
        """

    /// One message through the session and both printers. Bytes written out by hand from the
    /// schema above: a big-endian header, little-endian prefixes and floats.
    func render(json: Bool) throws -> String {
        let schema = try DissectorLoader.parse(text: text, file: "t.dissector")
        var frame: [UInt8] = [0, 31, 0xBE, 0xEF, 1]
        frame += [0x00, 0x00, 0x01, 0x02]                 // flags 0x102
        frame += [3, 0] + Array("abc".utf8)               // u16le length 3
        frame += [2, 0, 7, 9]                             // u16le count 2
        frame += [0, 0, 0xC0, 0x3F]                       // 1.5 as a little-endian float
        frame += [0, 0, 0, 0, 0, 0, 0x02, 0x40]           // 2.25 as a little-endian double
        frame += [0xFE]                                   // -2
        XCTAssertEqual(frame.count, 31)
        let out = OutputBuffer(fd: nil)
        let sink: MessageSink = json ? JSONPrinter(output: out, diffable: true)
            : TreePrinter(output: out, hexDump: false, verbose: false, color: false)
        let sessions = SessionManager(protocols: schema, sink: sink)
        FuzzStreams.feed(sessions, c2s: frame, s2c: [], piece: 7, syn: true, port: 7777)
        out.flush()
        return out.text
    }

    func testPrefixByteOrderFloatsAndHexInTheTree() throws {
        let tree = try render(json: false)
        for line in ["magic: 0xbeef", "flags: 0x00000102", "name: \"abc\"", "xs [2 elements]", "[0]: 7", "[1]: 9",
                     "f: 1.5", "d: 2.25", "neg: 0xfe"] {
            XCTAssertTrue(tree.contains(line), "\(line) missing in\n\(tree)")
        }
        XCTAssertFalse(tree.contains("warning"), tree)
    }

    func testHexInNDJSON() throws {
        let json = try render(json: true)
        let line = try XCTUnwrap(json.split(separator: "\n").first { $0.contains("\"message\":\"Cs_1\"") })
        let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let fields = try XCTUnwrap(o["fields"] as? [String: Any], String(line))
        XCTAssertEqual(fields["flags"] as? String, "0x00000102")
        XCTAssertEqual(fields["neg"] as? String, "0xfe")
        XCTAssertEqual(fields["name"] as? String, "abc")
        XCTAssertEqual(fields["xs"] as? [Int], [7, 9])
        XCTAssertTrue(line.contains("\"magic\":\"0xbeef\""), String(line))
    }

    func testDisplayAttributeErrors() throws {
        XCTAssertThrowsError(try DissectorLoader.parse(text: text.replacingOccurrences(of: "String(u16le) name = 2;", with: "String(u16le) name = 2 [hex];"), file: "t.dissector")) {
            XCTAssertTrue(($0 as! DissectorError).message.contains("'name' is not an integer field"), "\($0)")
        }
        XCTAssertThrowsError(try DissectorLoader.parse(text: text.replacingOccurrences(of: "Int8 neg = 6 [hex];", with: "Int8 neg = 6 [bold];"), file: "t.dissector")) {
            XCTAssertTrue(($0 as! DissectorError).message.contains("unknown display attribute 'bold'"), "\($0)")
        }
        XCTAssertThrowsError(try DissectorLoader.parse(text: text.replacingOccurrences(of: "Uint8[u16le] xs = 3;", with: "Uint8[u16le] xs = 3 [hex];"), file: "t.dissector")) {
            XCTAssertTrue(($0 as! DissectorError).message.contains("'xs' is an array"), "\($0)")
        }
        // A count prefix of the protocol's order is still the default.
        let s = try DissectorLoader.parse(text: text, file: "t.dissector")[0]
        let m = try XCTUnwrap(s.messages.first)
        XCTAssertEqual(m.fields[2].array, .prefixed(width: 2, order: .little))
        XCTAssertEqual(m.fields[1].type.stringRule, .prefixed(width: 2, order: .little))
    }
}

extension FieldType {
    var stringRule: StringRule? {
        if case .string(let r) = self { return r }
        return nil
    }
}

final class CommentLabelTests: XCTestCase {
    /// Value labels from the team's comments, in the ways people write them.
    func testCommentLabelForms() {
        let cases: [(String, [Int64: String])] = [
            ("1 success 0 exception 2 cannot enter", [1: "success", 0: "exception", 2: "cannot enter"]),
            ("0: ok, 1: bad token, 2: banned", [0: "ok", 1: "bad token", 2: "banned"]),
            ("0=ok 1=fail", [0: "ok", 1: "fail"]),
            ("0 - ok; 1 - fail", [0: "ok", 1: "fail"]),
            ("result: 0) ok 1) retry -1) error", [0: "ok", 1: "retry", -1: "error"]),
            ("the level, 1 to 99", [:]),
            ("timeout in ms: 30", [:]),
        ]
        for (text, labels) in cases {
            XCTAssertEqual(CommentLabels.parse(text), labels, text)
        }
    }
}

final class MessageDirectionTests: XCTestCase {
    /// `Message LoginReq = 1 c2s`: a request and its response share id 1 under their real names.
    func testDirectionWordsLetRealNamesShareAnID() throws {
        let text = """
            protocol d { port 7001; header { uint8 id; uint8 len; } body_length = len; message_id = id; }
            Message LoginReq = 1 c2s { Uint8 version; }
            Message LoginResp = 1 s2c { Uint16 result; }
            """
        let schema = try DissectorLoader.parse(text: text, file: "d.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schema, sink: JSONPrinter(output: out, diffable: false))
        FuzzStreams.feed(sessions, c2s: [1, 1, 7], s2c: [1, 2, 0, 5], piece: 64, syn: true, port: 7001)
        out.flush()
        XCTAssertTrue(out.text.contains("\"message\":\"LoginReq\",\"length\":3,\"header\":{\"len\":1},\"fields\":{\"version\":7}"), out.text)
        XCTAssertTrue(out.text.contains("\"message\":\"LoginResp\",\"length\":4,\"header\":{\"len\":2},\"fields\":{\"result\":5}"), out.text)
        for (bad, fragment) in [
            ("Message Cs_2 s2c { }", "contradicts it"),
            ("Message A = 1 c2s { } Message B = 1 c2s { }", "1"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text + "\n" + bad, file: "d.dissector"), bad) { e in
                XCTAssertTrue("\(e)".contains(fragment), "\(e)")
            }
        }
    }
}
