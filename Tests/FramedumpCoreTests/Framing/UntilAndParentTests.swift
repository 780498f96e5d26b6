import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// `Item[until F == N]` (elements up to the one whose field passes the test) and `when parent.F`
/// (a field of the message this one is nested in), on Thrift's binary protocol written here by
/// hand: structs are fields up to a STOP field, a map's pairs are read by its key and value types.
/// The buffered transport has no length: a frame is what its message takes, up to the last STOP.
final class UntilAndParentTests: XCTestCase {
    static let dissector = TestSupport.root.appendingPathComponent("Dissectors/thrift-buffered.dissector").path

    static func i32(_ v: Int32) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }
    static func s(_ t: String) -> [UInt8] { i32(Int32(t.utf8.count)) + Array(t.utf8) }
    static func head(_ type: UInt8, _ method: String, _ seq: Int32) -> [UInt8] { [0x80, 1, 0, type] + s(method) + i32(seq) }

    /// `add(1: i32 -5, 2: list<string> ["a", "bc"], 3: map<string, i32> {"x": 1}, 4: struct {1: true})`.
    static let call: [UInt8] = head(1, "add", 7)
        + [8, 0, 1] + i32(-5)
        + [15, 0, 2, 11] + i32(2) + s("a") + s("bc")
        + [13, 0, 3, 11, 8] + i32(1) + s("x") + i32(1)
        + [12, 0, 4] + [2, 0, 1, 1] + [0]
        + [0]
    /// Its reply: field 0 an i32, 42; then a oneway call with a map of structs to lists of i64.
    static let reply: [UInt8] = head(2, "add", 7) + [8, 0, 0] + i32(42) + [0]
    static let oneway: [UInt8] = head(4, "note", 8)
        + [13, 0, 1, 12, 15] + i32(1) + [6, 0, 1, 0xff, 0xfe, 0] + [10] + i32(2) + Array(repeating: 0, count: 7) + [1] + Array(repeating: 0xff, count: 8)
        + [0]

    func decode(_ c2s: [UInt8], _ s2c: [UInt8], piece: Int) throws -> [[String: Any]] {
        let schemas = try DissectorLoader.load(paths: [Self.dissector])
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, c2s), (false, s2c)], piece: piece, port: 9091)
        return try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    func testStructsEndAtTheirStopAndMapsReadTheirTypesUnderEveryCut() throws {
        for piece in 1...16 {
            let all = try decode(Self.call + Self.oneway, Self.reply, piece: piece)
            let ms = all.filter { $0["dir"] != nil && $0["type"] == nil }
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Call", "Oneway", "Reply"], "piece \(piece)")
            XCTAssertEqual(ms.map { $0["length"] as? Int ?? 0 }, [Self.call.count, Self.oneway.count, Self.reply.count], "piece \(piece)")
            XCTAssertEqual(all.filter { $0["type"] as? String == "malformed" }.count, 0, "piece \(piece)")
            let args = try XCTUnwrap((ms[0]["fields"] as? [String: Any])?["args"] as? [[String: Any]])
            XCTAssertEqual(args.count, 5)                       // four fields and the STOP
            XCTAssertEqual(args[0]["i32"] as? Int, -5)
            XCTAssertEqual((args[1]["list"] as? [String: Any])?["strings"] as? [String], ["a", "bc"])
            let entries = (args[2]["map"] as? [String: Any])?["entries"] as? [[String: Any]]
            XCTAssertEqual(entries?.first?["key_string"] as? String, "x")
            XCTAssertEqual(entries?.first?["i32"] as? Int, 1)
            XCTAssertEqual(entries?.first?.count, 2)            // no field of another type is there
            XCTAssertEqual((args[3]["struct"] as? [[String: Any]])?.first?["bool"] as? Bool, true)
            XCTAssertEqual(args[4]["type"] as? Int, 0)
            let note = try XCTUnwrap((ms[1]["fields"] as? [String: Any])?["args"] as? [[String: Any]])
            let pair = try XCTUnwrap(((note[0]["map"] as? [String: Any])?["entries"] as? [[String: Any]])?.first)
            XCTAssertEqual((pair["key_struct"] as? [String: Any])?["fields"] as? [[String: Any]] == nil, false)
            XCTAssertEqual((pair["list"] as? [String: Any])?["i64s"] as? [Int], [1, -1])
            XCTAssertEqual(((ms[2]["fields"] as? [String: Any])?["result"] as? [[String: Any]])?.first?["i32"] as? Int, 42)
        }
    }

    /// A struct whose STOP never comes waits for more bytes; the stream's end cuts it, said so.
    /// A map whose types name no Thrift type has pairs of no bytes: said, and the next message found.
    func testAStructWithoutItsStopAndAMapOfNoTypeAreReported() throws {
        let cut = Array(Self.call.dropLast())
        var all = try decode(cut, [], piece: 3)
        XCTAssertEqual(all.filter { $0["dir"] != nil && $0["type"] == nil }.count, 0)
        XCTAssertTrue(all.contains { ($0["detail"] as? String)?.hasPrefix("capture ended inside a frame") == true }, "\(all)")

        let bad = Self.head(1, "bad", 1) + [13, 0, 1, 99, 99] + Self.i32(1000) + [0]
        for piece in [1, 5, 1000] {
            all = try decode(bad + Self.call, [], piece: piece)
            XCTAssertEqual(all.filter { $0["dir"] != nil && $0["type"] == nil }.map { $0["message"] as? String ?? "-" }, ["Call"], "piece \(piece)")
            let detail = all.compactMap { $0["detail"] as? String }.joined(separator: "\n")
            XCTAssertTrue(detail.contains("field 'entries' at byte 24 has an element that takes no bytes (none of its fields is there)"), detail)
        }
    }

    /// A field left out by its `when` is not taken from a message decoded before it at the same
    /// depth: `B.data` is sized by B's own `n`, which is not there (0), not by A's `n`.
    func testASizeFieldLeftOutIsNotTakenFromAnEarlierSibling() throws {
        let text = """
        protocol t { port 7700; header { uint8 cmd; uint8 flags; } frame_length = message; message_id = cmd; }
        Message A { Uint8 n; }
        Message B { Uint8 n when flags; Bytes(n) data; }
        Message M = 1 { A a; B b; Uint8 tail; }
        """
        let schemas = try DissectorLoader.parse(text: text, file: "t.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, [1, 0, 3, 9] + [1, 1, 3, 2, 0xaa, 0xbb, 8])], piece: 1000, port: 7700)
        let ms = try out.text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            .filter { $0["dir"] != nil && $0["type"] == nil }
        XCTAssertEqual(ms.map { $0["length"] as? Int ?? 0 }, [4, 7], out.text)
        XCTAssertEqual(ms.map { ($0["fields"] as? [String: Any])?["tail"] as? Int ?? -1 }, [9, 8], out.text)
    }

    func testMisuseIsSaid() {
        let p = "protocol p { port 1; header { uint8 id; } frame_length = message; message_id = id; }\n"
        for (text, want) in [
            (p + "Message A = 1 { Uint8[until x == 0] a; }", "t.dissector:2:23: error: 'until' tests a field of each element: the elements of 'a' must be messages"),
            (p + "Message F { Uint8 type; }\nMessage A = 1 { F[until typ == 0] a; }", "t.dissector:3:25: error: 'until' tests a single integer field of the element: 'F' has no such field 'typ' (did you mean type?)"),
            (p + "Message F { Uint8 type; F[u8] more; }\nMessage A = 1 { F[until more == 0] a; }", "'F' has no such field 'more'"),
            (p + "Message E { Uint8 v when parent.k == 1; }\nMessage A = 1 { Uint8 n; }", "t.dissector:2:26: error: 'parent.k': no message nests 'E'"),
            (p + "Message E { Uint8 v when parent.k == 1; }\nMessage A = 1 { Uint8 k; E[2] e; }\nMessage B = 2 { E e; Uint8 k; }",
             "'B' nests 'E' (field 'e') but has no single integer field 'k' before it"),
            (p + "Message E { Uint8 v when parent.k; }\nMessage A = 1 { String k; E e; }", "'A' nests 'E' (field 'e') but has no single integer field 'k' before it"),
            (p + "Message A = 1 { Uint8[2] a [info]; }", "t.dissector:2:29: error: [info] shows a value on the message's summary line: 'a' is an array or a message"),
            (p + "Message A = 1 { Uint8 a [info]; Uint8 b [info]; }", "t.dissector:2:42: error: 'A' already shows 'a' on its summary line"),
            (p + "Message A = 1 { Uint8 a [text]; }", "t.dissector:2:26: error: [text] shows bytes as a string when they are UTF-8 text: 'a' is not a Bytes field"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: "t.dissector"), text) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.contains(want), "\(text):\n got \(d)\nwant \(want)")
            }
        }
        // A message reached only through fields under a `when` may contain itself: it can end.
        XCTAssertNoThrow(try DissectorLoader.parse(text: p + "Message F { Uint8 t; F[until t == 0] s when t == 12; }\nMessage A = 1 { F f; }", file: "t.dissector"))
    }
}
