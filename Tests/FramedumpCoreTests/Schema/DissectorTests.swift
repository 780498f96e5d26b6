import Foundation
import XCTest
@testable import FramedumpCore

final class DissectorTests: XCTestCase {
    func testGameDissectorReadsTheServerTeamsDocumentUnchanged() throws {
        let s = try DissectorLoader.loadFile(TestSupport.dissectors + "/game.dissector")
        XCTAssertEqual(s.count, 1)
        let g = s[0]
        XCTAssertEqual(g.ports, [8000])
        XCTAssertEqual(g.headerSize, 6)
        let cs = try XCTUnwrap(g.messages.first { $0.name == "Cs_20001" })
        XCTAssertEqual(cs.id, 20001)
        XCTAssertEqual(cs.direction, .c2s)
        XCTAssertEqual(cs.title, "Switch to a new scenario")
        XCTAssertEqual(cs.fields.map(\.name), ["SceneId", "Line", "message"])
        XCTAssertEqual(cs.fields[0].description, "enter the scenario ID")
        // "Message SC _20001" (with the space, as in the document) is server → client 20001.
        let sc = try XCTUnwrap(g.messages.first { $0.name == "SC_20001" })
        XCTAssertEqual(sc.direction, .s2c)
        XCTAssertEqual(sc.fields.count, 7)
        XCTAssertEqual(sc.fields[0].labels?[1], "success")
        XCTAssertEqual(sc.fields[0].labels?[0], "exception")
        XCTAssertEqual(sc.fields[0].labels?[15], "into the BOSS room insufficient conditions")
        XCTAssertEqual(sc.fields[3].labels, [0: "normal", 10: "captain Status"])
        XCTAssertNil(sc.fields[1].labels, "a comment without a number list gives no labels")
        XCTAssertEqual(g.message(.c2s, 20001), g.messages.firstIndex { $0.name == "Cs_20001" })
        XCTAssertEqual(g.message(.s2c, 20001), g.messages.firstIndex { $0.name == "SC_20001" })
    }

    func parse(_ text: String) throws -> [ProtocolSchema] { try DissectorLoader.parse(text: text, file: "t.dissector") }

    func expectError(_ text: String, _ location: String, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try parse(text)
            XCTFail("no error for:\n\(text)", file: file, line: line)
        } catch let e as DissectorError {
            XCTAssertTrue(e.description.hasPrefix("t.dissector:\(location): error: "), e.description, file: file, line: line)
            XCTAssertTrue(e.description.contains(message), e.description, file: file, line: line)
            XCTAssertTrue(e.description.contains("^"), "caret under the column", file: file, line: line)
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    let header = "protocol p {\n  port 1;\n  header { uint16 len; uint8 id; }\n  frame_length = len;\n  message_id = id;\n}\n"

    func testErrorsHaveFileLineColumn() {
        expectError(header + "Message Cs_1 {\n  Uint7 a = 1;\n}\n", "8:3", "unknown type 'Uint7'")
        expectError(header + "Message Cs_1 {\n  Uint8 a = 1;\n  Uint8 a = 2;\n}\n", "9:3", "declared twice")
        expectError("protocol p {\n  port 70000;\n}\n", "2:3", "out of range")
        expectError("protocol p {\n  colour red;\n}\n", "2:3", "unknown protocol setting 'colour'")
        expectError("protocol p {\n  header { uint16 len; }\n  frame_length = nosuch;\n}\n", "3:18", "'nosuch' is not a header field")
        expectError("Message Cs_1 { }\n", "1:1", "a message needs a protocol")
        expectError(header + "Message Cs_1 {\n  Uint8[count] a = 1;\n}\n", "8:9", "array count 'count'")
        expectError(header + "include \"missing.txt\";\n", "7:9", "cannot read included file")
        expectError(header + "Message Cs_1 { Uint8 a = 1; }\nMessage Cs_1 { Uint8 b = 1; }\n", "8:9", "declared twice")
        expectError("protocol p { body xml; }", "1:19", "body must be one of")
        expectError("protocol p {\n  header { uint16 len; }\n}\n", "1:1", "needs 'frame_length")
        expectError("protocol p { port 1 $ header { uint8 n; } frame_length = n; }", "1:21", "unexpected character")
    }

    /// A file saved with CRLF line ends (a Windows editor) reads as the same file with LF, and
    /// its errors point at the same line and column (it was once refused at each CR).
    func testCRLFFilesReadAsLFFiles() throws {
        let text = header + "Message Cs_1 = 1 { Uint8 a; String(u8) 名前; }\n"
        let crlf = text.replacingOccurrences(of: "\n", with: "\r\n")
        let a = try parse(text), b = try parse("\u{FEFF}" + crlf)
        XCTAssertEqual(b.map(\.name), a.map(\.name))
        XCTAssertEqual(b[0].messages.map { $0.fields.map(\.name) }, [["a", "名前"]])
        expectError((header + "Message Cs_1 {\n  Uint7 a = 1;\n}\n").replacingOccurrences(of: "\n", with: "\r\n"), "8:3", "unknown type 'Uint7'")
    }

    func testAllFieldKindsParse() throws {
        let s = try parse(header + """
        Enum Color : Uint16 { RED = 1; GREEN = 2; }
        Message Item {
          Uint32le id = 1;
          Int64 delta = 2;
          Float ratio = 3;
          Double exact = 4;
          Bool on = 5;
          String(u8) short = 6;
          String(nul) c = 7;
          String(16) fixed = 8;
          Bytes(4) raw = 9;
          Color color = 10;
        }
        Message Cs_1 {
          Uint8 count = 1;
          Item[count] items = 2;
          Uint16[u16] ids = 3;
          String(rest) tail = 4;
        }
        """)
        let item = s[0].messages.first { $0.name == "Item" }!
        XCTAssertEqual(item.fields.count, 10)
        XCTAssertEqual(item.fields[9].labels?[2], "GREEN")
        let cs = s[0].messages.first { $0.name == "Cs_1" }!
        XCTAssertEqual(cs.fields[1].array, .field(0))
        XCTAssertEqual(cs.fields[2].array, .prefixed(width: 2))
    }

    func testNestedArraysAndEnumsDecode() throws {
        let s = try parse(header + """
        Enum Color : Uint8 { RED = 1; GREEN = 2; }
        Message Item { Uint16 id = 1; Color color = 2; }
        Message Cs_1 { Uint8 count = 1; Item[count] items = 2; String(u8) note = 3; }
        """)[0]
        let d = MessageDecoder(schema: s)
        let bytes: [UInt8] = [0, 15, 1, 2, 0, 7, 1, 0, 9, 2, 3, 0x61, 0x62, 0x63, 0xff]
        let m = DecodedMessage()
        bytes.withUnsafeBytes { b in
            d.decode(Frame(bytes: b, offset: 0, firstPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)),
                           lastPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)), coalesced: 1), .c2s, into: m)
        }
        let values = m.fields.map(\.value)
        XCTAssertEqual(values, [.unsigned(2), .array(count: 2), .object(count: 2), .unsigned(7), .unsigned(1),
                                .object(count: 2), .unsigned(9), .unsigned(2), .validString, .bytes])
        XCTAssertEqual(m.warnings, [.trailingBytes(1, at: 14)])
    }

    /// A string that is not UTF-8 is decoded and flagged, as a protobuf string is; one that is
    /// is marked checked, so the printers do not check it again.
    func testAStringThatIsNotUTF8IsFlagged() throws {
        let s = try parse(header + "Message Cs_1 { String(u8) name = 1; String(u8) ok = 2; }")[0]
        let d = MessageDecoder(schema: s)
        let m = DecodedMessage()
        let bytes: [UInt8] = [0, 10, 1, 2, 0x61, 0xff, 3, 0xe6, 0xb8, 0xb8]
        bytes.withUnsafeBytes { b in
            d.decode(Frame(bytes: b, offset: 0, firstPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)),
                           lastPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)), coalesced: 1), .c2s, into: m)
        }
        XCTAssertEqual(m.fields.map(\.value), [.string, .validString])
        XCTAssertEqual(m.warnings, [.invalidUTF8(field: "name")])
    }

    func testHostileCountsAndLengthsDoNotAllocate() throws {
        let s = try parse(header + "Message Cs_1 { Uint32[u32] many = 1; String(u32) s = 2; }")[0]
        let d = MessageDecoder(schema: s)
        let m = DecodedMessage()
        let bytes: [UInt8] = [0, 9, 1, 0xff, 0xff, 0xff, 0xff, 0, 0]
        bytes.withUnsafeBytes { b in
            d.decode(Frame(bytes: b, offset: 0, firstPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)),
                           lastPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)), coalesced: 1), .c2s, into: m)
        }
        XCTAssertEqual(m.warnings, [.arrayTooLong(field: "many", count: 0xffff_ffff)])
    }

    func testBodyShorterThanTheSchemaIsShownRawWithAWarning() throws {
        let s = try parse(header + "Message Cs_1 { Uint16 a = 1; Uint32 b = 2; }")[0]
        let d = MessageDecoder(schema: s)
        let m = DecodedMessage()
        let bytes: [UInt8] = [0, 8, 1, 0, 7, 0xaa, 0xbb, 0xcc]  // b needs 4 bytes, 3 are left
        bytes.withUnsafeBytes { b in
            d.decode(Frame(bytes: b, offset: 0, firstPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)),
                           lastPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)), coalesced: 1), .c2s, into: m)
        }
        XCTAssertEqual(m.warnings, [.bodyTooShort(field: "b", at: 5)])
        XCTAssertEqual(m.fields.map(\.value), [.unsigned(7), .bytes])
        XCTAssertEqual(m.fields.last?.name, .builtin(.undecoded))
        XCTAssertEqual(m.fields.last?.offset, 5)
        XCTAssertEqual(m.fields.last?.width, 3)
    }

    func testCheckCommandReportsErrorsWithExitCode2() throws {
        let dir = TestSupport.tempDir()
        let bad = dir + "/bad.dissector"
        try (header + "Message Cs_1 {\n  Strin x = 1;\n}\n").write(toFile: bad, atomically: true, encoding: .utf8)
        let r = try TestSupport.framedump(["check", bad])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.hasPrefix("\(bad):8:3: error: unknown type 'Strin'"), r.stderr)
        XCTAssertTrue(r.stderr.contains("    Strin x = 1;\n      ^"), r.stderr)
        // The main command refuses to run with a broken dissector too.
        let r2 = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-d", bad])
        XCTAssertEqual(r2.status, 2)
        let ok = try TestSupport.framedump(["check", TestSupport.dissectors])
        XCTAssertEqual(ok.status, 0, ok.stderr)
    }

    func testDissectorsCommandListsWhatWasLoaded() throws {
        let r = try TestSupport.framedump(["dissectors"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for s in ["game", "svc", "im", "ports: 8000", "Cs_20001 id 20001 c2s", "frame_length = headLength + bodyLength",
                  // A map names its own fields; an object written as an array takes the declared ones.
                  "Login id 1 c2s: fields named by the traffic", "Move id 3 c2s: 4 fields",
                  "pair EnterRoomReq -> EnterRoomResp by seq = ackSeq (-z rtt: the response's ackSeq carries its request's seq)"] {
            XCTAssertTrue(r.stdout.contains(s), "missing \(s) in\n\(r.stdout)")
        }
    }
}
