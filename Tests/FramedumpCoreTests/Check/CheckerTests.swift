import Foundation
import XCTest
@testable import FramedumpCore

/// The dissector checker catches every mistake that would otherwise decode wrongly, and
/// reports all of a file's errors at once, each as `file:line:column` with a caret.
final class CheckerTests: XCTestCase {
    let head = "protocol p {\n  port 1;\n  header { uint16 len; uint8 id; }\n  frame_length = len;\n  message_id = id;\n}\n"

    func errors(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [DissectorError] {
        do {
            _ = try DissectorLoader.parse(text: text, file: "t.dissector")
            XCTFail("no error for:\n\(text)", file: file, line: line)
            return []
        } catch {
            return error.all
        }
    }

    /// The error as thrown: the first, with the others in `following`.
    func thrown(_ text: String) -> DissectorError? {
        do { _ = try DissectorLoader.parse(text: text, file: "t.dissector") } catch { return error }
        return nil
    }

    func located(_ e: DissectorError) -> String { "\(e.line):\(e.column)" }

    /// `Uint32le flags = 2 Uint8 extra = 9;` was two fields; a ';' is needed between statements
    /// (it may be left out only before the closing '}').
    func testMissingSemicolonIsAnError() throws {
        var e = errors(head + "Message Cs_1 {\n  Uint32le flags = 2 Uint8 extra = 9;\n}\n")
        XCTAssertEqual(e.map(located), ["8:22"])
        XCTAssertTrue(e[0].message.contains("expected ';' after field 'flags', found 'Uint8'"), e[0].message)
        XCTAssertTrue(e[0].description.contains("  Uint32le flags = 2 Uint8 extra = 9;\n                         ^"), e[0].description)
        // In the protocol block and between enum labels too.
        e = errors("protocol p {\n  port 1 max_frame 100;\n  header { uint8 n; }\n  frame_length = n;\n}\n")
        XCTAssertEqual(e.map(located), ["2:10"])
        e = errors(head + "Enum Color { RED = 1 GREEN = 2; }\n")
        XCTAssertEqual(e.map(located), ["7:22"])
        e = errors("protocol p { header { uint8 n uint8 m; } frame_length = n; }\n")
        XCTAssertEqual(e.map(located), ["1:31"])
        // Before '}' the last ';' may be left out, as before.
        XCTAssertNoThrow(try DissectorLoader.parse(text: head + "Message Cs_1 { Uint8 a = 1 }\n", file: "t.dissector"))
    }

    /// A message that contains itself on every path needs infinitely many bytes; through an
    /// array with a count (which can be empty) the recursion can end, and that is allowed.
    func testAMessageThatContainsItselfIsAnError() throws {
        var e = errors(head + "Message Node {\n  Uint8 v = 1;\n  Node next = 2;\n}\n")
        XCTAssertEqual(e.map(located), ["9:3"])
        XCTAssertTrue(e[0].message.contains("message 'Node' contains itself"), e[0].message)
        XCTAssertTrue(e[0].message.contains("Node.next → Node"), e[0].message)
        // Through other messages, and through a fixed array of at least one element.
        e = errors(head + "Message A { B b = 1; }\nMessage B { Uint8 x = 1; C[2] c = 2; }\nMessage C { A a = 1; }\n")
        XCTAssertEqual(e.count, 1)
        XCTAssertTrue(e[0].message.contains("A.b → B.c → C.a → A"), e[0].message)
        // What can end: a count prefix, a count field, a fixed array of none.
        let ok = try DissectorLoader.parse(text: head + """
            Message Tree { Uint8 v = 1; Tree[u8] kids = 2; }
            Message List { Uint8 n = 1; List[n] rest = 2; }
            Message Never { Never[0] none = 1; Uint8 v = 2; }
            Message Cs_1 { Tree t = 1; }
            """, file: "t.dissector")
        XCTAssertEqual(ok[0].messages.count, 4)
    }

    /// A recursive tree through a counted array decodes, element by element.
    func testRecursionThroughACountedArrayDecodes() throws {
        let s = try DissectorLoader.parse(text: head + "Message Tree { Uint8 v = 1; Tree[u8] kids = 2; }\nMessage Cs_1 { Tree t = 1; }\n",
                                          file: "t.dissector")[0]
        // Header (len 11, id 1), then t: v=1 with 2 kids: (v=2, no kids) and (v=3, 1 kid: (v=4, no kids)).
        let bytes: [UInt8] = [0, 11, 1, 1, 2, 2, 0, 3, 1, 4, 0]
        let m = DecodedMessage()
        bytes.withUnsafeBytes { b in
            MessageDecoder(schema: s).decode(Frame(bytes: b, offset: 0, firstPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)),
                                                   lastPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)), coalesced: 1), .c2s, into: m)
        }
        XCTAssertEqual(m.warnings, [])
        XCTAssertEqual(m.fields.map(\.value), [.object(count: 2), .unsigned(1), .array(count: 2),
            .object(count: 2), .unsigned(2), .array(count: 0),
            .object(count: 2), .unsigned(3), .array(count: 1), .object(count: 2), .unsigned(4), .array(count: 0)])
    }

    /// Every error of a file, in order, each with its caret; past 20 the checker stops and says so.
    func testAllErrorsOfAFileAreReported() throws {
        let text = head + """
            Message Cs_1 {
              Strin a = 1;
              Uint8 b = 2 Uint8 c = 3;
              Uint8[nosuch] d = 4;
            }
            Message Cs_2 { Uint9 x = 1; }
            """
        let e = errors(text)
        XCTAssertEqual(e.map(located), ["8:3", "9:15", "10:9", "12:16"])
        let all = try XCTUnwrap(DissectorError.combined(e)).description
        XCTAssertEqual(all.components(separatedBy: "^").count - 1, 4, all)
        XCTAssertTrue(all.hasSuffix("\n4 errors"), all)
        // Many errors: the first 20, then a line that says the rest was left out.
        let many = head + (1...30).map { "Message M\($0) { Strin x = 1; }" }.joined(separator: "\n")
        let m = try XCTUnwrap(thrown(many))
        XCTAssertEqual(m.all.count, Diagnostics.limit)
        XCTAssertTrue(m.truncated)
        XCTAssertTrue(m.description.contains("too many errors, stopped after 20"), m.description)
    }

    /// Errors that hide behind the first: a lexer error, then the parser's, then the resolver's.
    func testTheCheckerGoesOnAfterEachKindOfError() throws {
        let e = errors("protocol p {\n  port 8000 $;\n  colour red;\n  header { uint8 n; }\n  frame_length = n;\n}\nMessage Cs_1 { Uint8 a = 1; Uint8 a = 2; }\n")
        XCTAssertEqual(e.map(located), ["2:13", "3:3", "7:29"])
    }

    /// Two protocols on one port: which decodes it would depend on the order of -d. Refused,
    /// across files too; two WebSocket protocols told apart by path may share a port.
    func testTwoProtocolsClaimingOnePortIsAnError() throws {
        let dir = TestSupport.tempDir()
        try "protocol a {\n  port 7000, 8000;\n  header { uint16 n; }\n  frame_length = n;\n}\n".write(toFile: dir + "/a.dissector", atomically: true, encoding: .utf8)
        try "protocol b {\n  port 8000;\n  header { uint16 n; }\n  frame_length = n;\n}\n".write(toFile: dir + "/b.dissector", atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try DissectorLoader.load(paths: [dir])) {
            let e = $0 as! DissectorError
            XCTAssertEqual(e.file, dir + "/b.dissector")
            XCTAssertEqual(located(e), "2:8")
            XCTAssertTrue(e.message.contains("port 8000 is also claimed by protocol 'a'"), e.message)
        }
        // `check` sees the clash between files given together.
        let r = try TestSupport.framedump(["check", dir + "/a.dissector", dir + "/b.dissector"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("b.dissector:2:8: error: port 8000 is also claimed"), r.stderr)
        // A port listed twice in one protocol is a mistake too.
        XCTAssertEqual(errors("protocol p { port 1, 1; header { uint8 n; } frame_length = n; }").map(located), ["1:22"])
        let ws = try DissectorLoader.parse(text: """
            protocol chat { websocket "/chat"; port 9999; }
            protocol feed { websocket "/feed"; port 9999; }
            """, file: "t.dissector")
        XCTAssertEqual(ws.count, 2)
        XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol chat { websocket; port 9999; }\nprotocol feed { websocket \"/feed\"; port 9999; }\n", file: "t.dissector"))
    }

    /// An include cycle names every file on it, from the first to the one included again.
    func testIncludeCycleShowsItsChain() throws {
        let dir = TestSupport.tempDir()
        try "include \"b.txt\";\n".write(toFile: dir + "/a.dissector", atomically: true, encoding: .utf8)
        try "include \"sub/c.txt\";\n".write(toFile: dir + "/b.txt", atomically: true, encoding: .utf8)
        try? FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        try "\n include \"../a.dissector\";\n".write(toFile: dir + "/sub/c.txt", atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try DissectorLoader.loadFile(dir + "/a.dissector")) {
            let e = $0 as! DissectorError
            XCTAssertEqual(e.file, dir + "/sub/c.txt")
            XCTAssertEqual(located(e), "2:10")
            XCTAssertEqual(e.message, "include cycle: \(dir)/a.dissector → \(dir)/b.txt → \(dir)/sub/c.txt → \(dir)/sub/../a.dissector")
        }
        // Included twice without a cycle says where it was first.
        try "protocol p { header { uint8 n; } frame_length = n; }\ninclude \"m.txt\";\ninclude \"m.txt\";\n".write(toFile: dir + "/d.dissector", atomically: true, encoding: .utf8)
        try "Message X { Uint8 a = 1; }\n".write(toFile: dir + "/m.txt", atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try DissectorLoader.loadFile(dir + "/d.dissector")) {
            XCTAssertTrue(($0 as! DissectorError).message.contains("'m.txt' is included twice (first at \(dir)/d.dissector:2)"), "\($0)")
        }
    }

    /// `check` says what is wrong with what it was given: a missing file (no 0:0 position),
    /// nothing at all to check, a folder without dissector files.
    func testCheckSaysWhatIsMissing() throws {
        let dir = TestSupport.tempDir()
        var r = try TestSupport.framedump(["check", "nonexistent.dissector"], cwd: dir)
        XCTAssertEqual(r.status, 2)
        XCTAssertEqual(r.stderr, "nonexistent.dissector: error: dissector file: no such file\n")
        r = try TestSupport.framedump(["check"], cwd: dir)
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("nothing to check"), r.stderr)
        try FileManager.default.createDirectory(atPath: dir + "/none", withIntermediateDirectories: true)
        r = try TestSupport.framedump(["check", "none"], cwd: dir)
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("none: error: no .dissector files"), r.stderr)
    }

    /// A run that found no dissector says so once, and where it looked.
    func testARunWithoutDissectorsSaysSo() throws {
        let dir = TestSupport.tempDir()
        let r = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap")], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr.components(separatedBy: "no dissector loaded").count - 1, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("./Dissectors (not found)"), r.stderr)
        let empty = dir + "/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let d = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-d", empty], cwd: dir)
        XCTAssertTrue(d.stderr.contains("no dissector loaded (looked in \(empty))"), d.stderr)
        // With dissectors, not a word of it.
        let ok = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-q"])
        XCTAssertFalse(ok.stderr.contains("no dissector"), ok.stderr)
    }
}
