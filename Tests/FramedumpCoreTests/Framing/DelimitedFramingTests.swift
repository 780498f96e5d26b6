import Foundation
import XCTest
@testable import FramedumpCore

/// `frame_end "...";`: frames that end with a byte string (issue #47's framing registry, its
/// first kind beside the length rule). The same frames under every split of the stream, the
/// delimiter left out of the body, resync after a gap or a mid-stream start, max_frame bounding
/// the search, and the language's errors.
final class DelimitedFramingTests: XCTestCase {
    static let text = """
    protocol lines { port 7400; frame_end "\\r\\n"; max_frame 64; body json; }
    """
    let schema = try! DissectorLoader.parse(text: DelimitedFramingTests.text, file: "lines.dissector")[0]
    lazy var layout = FrameLayout(schema)

    func deframe(_ stream: [UInt8], cuts: [Int], startsAtBoundary: Bool = true, gapAt: (Int, UInt64)? = nil) -> FrameCollector {
        FrameCollector.deframe(stream, layout: layout, cuts: cuts, startsAtBoundary: startsAtBoundary,
                               gapsAt: gapAt.map { [$0.0: $0.1] } ?? [:])
    }

    func lines(_ ls: [String]) -> [[UInt8]] { ls.map { Array(($0 + "\r\n").utf8) } }

    func testEverySplitOfTheStreamGivesTheSameFrames() {
        // A delimiter split between segments, an empty line, a lone \r inside a line.
        let frames = lines(["{\"a\":1}", "", "{\"b\":\"x\\ry\"}", "{\"c\":[1,2,3]}"])
        let stream = frames.flatMap { $0 }
        XCTAssertEqual(deframe(stream, cuts: []).frames, frames)
        XCTAssertEqual(deframe(stream, cuts: Array(1..<stream.count)).frames, frames)
        for i in 1..<stream.count {
            for j in i..<stream.count {
                let col = deframe(stream, cuts: i == j ? [i] : [i, j])
                XCTAssertEqual(col.frames, frames, "cuts at \(i), \(j)")
                XCTAssertTrue(col.malformed.isEmpty, "cuts at \(i), \(j)")
            }
        }
    }

    func testResyncAfterAGapAndAMidStreamStartAndAnOverlongLine() {
        let frames = lines(["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"])
        let stream = frames.flatMap { $0 }
        // Started mid-line: the rest of the first line is passed over (reported), then lines.
        let late = deframe(Array(stream.dropFirst(3)), cuts: [5], startsAtBoundary: false)
        XCTAssertEqual(late.frames, Array(frames.dropFirst()))
        XCTAssertEqual(late.malformedBytes, UInt64(frames[0].count - 3))
        // A gap inside the second line: it is cut (reported), the third is found again.
        let cut = frames[0].count + 4
        let gapped = deframe(Array(stream[..<cut]) + Array(stream[(cut + 3)...]), cuts: [cut], gapAt: (cut, 3))
        XCTAssertEqual(gapped.frames, [frames[0], frames[2]])
        XCTAssertFalse(gapped.malformed.isEmpty)
        // A line longer than max_frame (64) is never held whole: reported, and the next found.
        let long = Array(String(repeating: "x", count: 200).utf8) + Array("\r\n".utf8)
        let col = deframe(long + frames[1], cuts: [50, 120, 190])
        XCTAssertEqual(col.frames, [frames[1]])
        XCTAssertTrue(col.malformed.contains { if case .lengthTooLong = $0.2 { return true }; return false }, "\(col.malformed)")
    }

    /// The delimiter is the frame's, not its body's: the JSON decodes, and the field's bytes
    /// are inside the line.
    func testTheBodyIsTheLineWithoutItsDelimiter() {
        let d = MessageDecoder(schema: schema)
        let m = DecodedMessage()
        let line = Array("{\"player\":\"ann\"}\r\n".utf8)
        line.withUnsafeBytes { b in
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            d.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
        }
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
        XCTAssertGreaterThan(m.fields.count, 0)
        for i in 0..<m.fields.count { XCTAssertLessThanOrEqual(Int(m.fields[i].offset + m.fields[i].width), line.count - 2) }
    }

    func testTheLanguage() throws {
        let s = try DissectorLoader.parse(text: "protocol z { port 7401; header { uint8 kind; } message_id = kind; frame_end \"\\0\"; }",
                                          file: "z.dissector")[0]
        XCTAssertEqual(DelimitedFraming.delimiter(s), [0])
        XCTAssertTrue(DissectorDescription.text(s).contains("frame_end \"\\0\""), DissectorDescription.text(s))
        let errors: [(String, String)] = [
            ("frame_end \"\";", "frame_end takes 1 to 16 bytes"),
            ("frame_end \"\\n\"; frame_end \"\\r\";", "frame_end is given twice"),
            ("frame_end \"\\n\"; header { uint8 n; } body_length = n;", "frame_end and a frame_length or body_length exclude each other"),
            ("frame_end \"\\xff\";", "\\x takes two hex digits of an ASCII byte"),
            ("frame_end 10;", "expected the bytes that end a frame"),
        ]
        for (setting, message) in errors {
            XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol z { port 7401; \(setting) }", file: "z.dissector"), setting) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.hasPrefix("z.dissector:1:"), d)
                XCTAssertTrue(d.contains(message), d)
            }
        }
        // Without any way to end a frame, the protocol says what it needs, naming frame_end.
        XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol z { port 7401; }", file: "z.dissector")) { e in
            XCTAssertTrue((e as! DissectorError).description.contains("frame_end"), "\(e)")
        }
    }
}
