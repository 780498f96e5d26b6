import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Dissector files that used to hang or exhaust the tool (found by fuzzing the language and
/// traffic together): each is now refused where it is written, or bounded while decoding.
final class HardeningTests: XCTestCase {
    func loadError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try DissectorLoader.parse(text: text, file: "t.dissector")
            XCTFail("loaded", file: file, line: line)
            return ""
        } catch {
            return "\(error)"
        }
    }

    /// `frame_length = 0` without a header made the deframer stand still forever; a constant
    /// longer than max_frame trapped while hunting.
    func testConstantFrameLengthsAreCheckedWhenLoaded() {
        XCTAssertTrue(loadError("protocol z { port 8000; frame_length = 0; }").contains("t.dissector:1:25: error: the frame length is always 0 bytes"))
        XCTAssertTrue(loadError("protocol z { port 8000; frame_length = 2000000; }").contains("at most max_frame 1048576"))
        XCTAssertTrue(loadError("protocol z { header { uint32 a; } frame_length = 3; }").contains("at least 4"))
        XCTAssertNoThrow(try DissectorLoader.parse(text: "protocol z { header { uint16 a; } body_length = 6; }", file: "t"))
    }

    /// Arrays of elements that take no bytes, with counts from the packet, made a 20-byte frame
    /// allocate gigabytes.
    func testArraysOfZeroWidthElementsAreRefused() {
        let head = "protocol z { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id; }\n"
        XCTAssertTrue(loadError(head + "Message Empty { }\nMessage Cs_1 { Empty[u32] e; }").contains(":3:16: error: array 'e' of elements that can take no bytes"))
        XCTAssertTrue(loadError(head + "Message Empty { }\nMessage G { Empty[65536] e; }\nMessage Cs_1 { G[u16] g; }").contains("array 'e'"))
        XCTAssertTrue(loadError(head + "Message Cs_1 { Uint8 n; Bytes(0)[n] z; }").contains("array 'z'"))
        XCTAssertTrue(loadError(head + "Message Cs_1 { Uint8 n; String(rest)[n] z; }").contains("array 'z'"))
        // Elements that always take a byte are fine, however they nest.
        XCTAssertNoThrow(try DissectorLoader.parse(text: head + "Message P { Uint8 x; }\nMessage G { P[u8] p; }\nMessage Cs_1 { G[u16] g; }", file: "t"))
    }

    /// A rejected count prefix stays visible: its bytes start the undecoded rest.
    func testRejectedCountIsShownInTheUndecodedRest() throws {
        let schema = try DissectorLoader.parse(text: """
            protocol z { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id; }
            Message Cs_1 { Uint8 a; Uint32[u32] big; }
            """, file: "t")[0]
        let decoder = MessageDecoder(schema: schema)
        let bytes: [UInt8] = [0, 0, 0, 15, 0, 1, 7, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]
        let m = DecodedMessage()
        bytes.withUnsafeBytes { b in
            decoder.decode(Frame(bytes: b, offset: 0, firstPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)),
                                 lastPacket: PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0)), coalesced: 1), .c2s, into: m)
        }
        XCTAssertEqual(m.warnings, [.arrayTooLong(field: "big", count: 0xffff_ffff)])
        let undecoded = try XCTUnwrap(m.fields.first { if case .builtin(.undecoded) = $0.name { return true } else { return false } })
        XCTAssertEqual(undecoded.offset, 7, "the count's own 4 bytes are part of the undecoded rest")
        XCTAssertEqual(undecoded.width, 8)
    }

    /// 2,000 one-line protocols took about 1 GB before a packet was read (a 64 Ki-entry id table
    /// per direction per protocol); the table is now as long as the largest id needs.
    func testManyProtocolsStaySmall() throws {
        let dir = TestSupport.tempDir()
        let text = (0..<2000).map { "protocol p\($0) { header { uint8 l; } frame_length = l; }" }.joined(separator: "\n")
        try text.write(toFile: dir + "/many.dissector", atomically: true, encoding: .utf8)
        let r = try Measured.framedump(["-r", TestSupport.sample("game.pcap"), "-d", dir, "-q", "--max-protocols", "2000"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertLessThan(r.peakMiB, 200)
    }

    func decodeJSON(_ body: String) throws -> DecodedMessage {
        let schema = try DissectorLoader.loadFile(TestSupport.dissectors + "/svc.dissector")[0]
        let decoder = MessageDecoder(schema: schema)
        let b = Array(body.utf8)
        let bytes: [UInt8] = [0, 0, 0, 1] + withUnsafeBytes(of: UInt32(b.count).bigEndian, Array.init) + b
        let m = DecodedMessage()
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
        bytes.withUnsafeBytes { decoder.decode(Frame(bytes: $0, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m) }
        return m
    }

    /// Valid JSON nested past the limit is called what it is, not "not valid JSON".
    func testDeepJSONIsSaidToBeTooDeep() throws {
        let m = try decodeJSON(String(repeating: "[", count: 70) + String(repeating: "]", count: 70))
        XCTAssertEqual(m.warnings, [.jsonTooDeep(limit: 64)])
        XCTAssertEqual(m.fields.count, 1, "shown as text")
        XCTAssertTrue(try decodeJSON(String(repeating: "[", count: 60) + String(repeating: "]", count: 60)).warnings.isEmpty)
    }

    /// A lone surrogate escape is not copied into NDJSON: the body is shown as (escaped) text.
    func testLoneSurrogateIsNotCopiedIntoNDJSON() throws {
        XCTAssertEqual(try decodeJSON(#"{"a":"\ud800"}"#).warnings, [.jsonLoneSurrogate(at: 14)])
        XCTAssertEqual(try decodeJSON(#"{"a":"x\udc00"}"#).warnings.count, 1)
        XCTAssertTrue(try decodeJSON(#"{"a":"\ud83d\ude00"}"#).warnings.isEmpty, "a pair is fine")
    }

    /// `include "./s.dissector"` from s.dissector is the same file: a cycle, said at once.
    func testIncludeCycleThroughADotPathIsSeen() throws {
        let dir = TestSupport.tempDir()
        try "protocol s { port 8000; header { uint32 length; } frame_length = length; }\ninclude \"./s.dissector\";\n"
            .write(toFile: dir + "/s.dissector", atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try DissectorLoader.loadFile(dir + "/s.dissector")) {
            XCTAssertTrue("\($0)".contains("s.dissector:2:9: error: include cycle: \(dir)/s.dissector → \(dir)/./s.dissector"), "\($0)")
        }
        XCTAssertEqual(Parser.normalized("a/./b/../c//d"), "a/c/d")
        XCTAssertEqual(Parser.normalized("/x/../y"), "/y")
    }

    /// Found by fuzzing a file together with traffic: a second header block restarted the
    /// offsets under the length field already named, and the deframer trapped.
    func testOneHeaderAndOneLengthPerProtocol() {
        XCTAssertTrue(loadError("protocol z { header { uint32 a; uint32 b; } body_length = b; header { uint32 c; } }")
            .contains("1:62: error: the header is already declared at line 1 (one header block per direction)"))
        XCTAssertTrue(loadError("protocol z { header { uint32 a; } frame_length = a; body_length = a; }")
            .contains("the frame length is already given at line 1"))
    }

    /// Every input a fuzz target once failed on (`Fixtures/fuzz/TARGET-what`) runs through its
    /// target again, in the normal test run.
    func testFuzzRegressionInputs() throws {
        let dir = TestSupport.fixture("fuzz")
        let targets = FuzzTargets.all
        FuzzDeframer.dissectorDirectory = TestSupport.dissectors
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        XCTAssertFalse(files.isEmpty)
        for f in files {
            let target = try XCTUnwrap(targets.keys.filter { f.hasPrefix($0 + "-") }.max { $0.count < $1.count }, f)
            let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + f))
            data.withUnsafeBytes { targets[target]!($0) }
        }
    }
}
