import Foundation
import XCTest
@testable import FramedumpCore

/// `payload "VERB" word N;` (a framing kind of the registry, beside `frame_end`): a line whose
/// verb announces a payload is one frame with the payload its word counts and the delimiter
/// after it, even when the payload holds the delimiter; other lines are frames of their own.
/// The same frames under every split of the stream; a count past max_frame refused unread; the
/// language's errors.
final class CountedPayloadFramingTests: XCTestCase {
    static let text = """
    protocol mc { port 11311; frame_end "\\r\\n"; payload "set", "cas" word 5; payload "VALUE" word 4;
                  payload "MSG" last; max_frame 128; body text; }
    """
    let schema = try! DissectorLoader.parse(text: CountedPayloadFramingTests.text, file: "mc.dissector")[0]
    lazy var layout = FrameLayout(schema)

    func deframe(_ stream: [UInt8], cuts: [Int], startsAtBoundary: Bool = true, gapAt: (Int, UInt64)? = nil) -> FrameCollector {
        FrameCollector.deframe(stream, layout: layout, cuts: cuts, startsAtBoundary: startsAtBoundary,
                               gapsAt: gapAt.map { [$0.0: $0.1] } ?? [:])
    }

    func frames(_ fs: [String]) -> [[UInt8]] { fs.map { Array($0.utf8) } }

    func testEverySplitOfTheStreamGivesTheSameFrames() {
        let want = frames([
            "set a 0 0 5\r\nhello\r\n",
            "STORED\r\n",
            "set crlf 0 0 5 noreply\r\n\r\nx\r\n\r\n",      // the payload holds the delimiter
            "VALUE crlf 0 5 17\r\n\r\nx\r\n\r\n",
            "set empty 0 0 0\r\n\r\n",
            "MSG subj 1 reply 3\r\nabc\r\n",                 // the last word counts
            "get a b\r\n",
            "SETX 1 2 3 4 5\r\n",                              // not a verb of a rule
            "set bad 0 0 x5\r\n",                             // not a count: a line of its own
            "END\r\n",
        ])
        let stream = want.flatMap { $0 }
        XCTAssertEqual(deframe(stream, cuts: []).frames, want)
        XCTAssertEqual(deframe(stream, cuts: Array(1..<stream.count)).frames, want)
        for i in 1..<stream.count {
            for j in i..<stream.count {
                let col = deframe(stream, cuts: i == j ? [i] : [i, j])
                XCTAssertEqual(col.frames, want, "cuts at \(i), \(j)")
                XCTAssertTrue(col.malformed.isEmpty, "cuts at \(i), \(j)")
            }
        }
    }

    /// `payload prefix "$";` (RESP's bulk strings): the count follows the prefix on its line;
    /// `$-1` (a null) and every other line are lines of their own.
    func testAPrefixedCountUnderEverySplit() throws {
        let s = try DissectorLoader.parse(text: "protocol r { port 6379; frame_end \"\\r\\n\"; payload prefix \"$\", \"=\"; max_frame 64; body text; }",
                                          file: "r.dissector")[0]
        let l = FrameLayout(s)
        let elements = frames(["*3\r\n", "$3\r\nSET\r\n", "$1\r\nk\r\n", "$6\r\na\r\nb\r\n\r\n", "+OK\r\n", "$-1\r\n",
                               "$0\r\n\r\n", ":12\r\n", "=7\r\ntxt:abc\r\n", "-ERR no\r\n"])
        let stream = elements.flatMap { $0 }
        for i in 1..<stream.count {
            for j in i..<stream.count {
                let col = FrameCollector.deframe(stream, layout: l, cuts: i == j ? [i] : [i, j], startsAtBoundary: true, gapsAt: [:])
                XCTAssertEqual(col.frames, elements, "cuts at \(i), \(j)")
            }
        }
        XCTAssertTrue(DissectorDescription.text(s).contains("payload prefix \"$\""), DissectorDescription.text(s))
    }

    /// A count past max_frame is refused as soon as the line is read (nothing of the payload is
    /// held); a line after a gap is found again.
    func testAnOverlongCountAndAGap() {
        let huge = Array("set big 0 0 99999999999\r\n".utf8), next = Array("STORED\r\n".utf8)
        let col = deframe(huge + next, cuts: [10])
        XCTAssertTrue(col.malformed.contains { if case .lengthTooLong = $0.2 { return true }; return false }, "\(col.malformed)")
        XCTAssertEqual(col.frames.last, next)
        let a = Array("set a 0 0 5\r\nhello\r\n".utf8), b = Array("get a\r\n".utf8), c = Array("END\r\n".utf8)
        let cut = a.count + 2
        let gapped = deframe(a + Array(b[..<2]) + Array(b[4...]) + c, cuts: [cut], gapAt: (cut, 2))
        XCTAssertEqual(gapped.frames, [a, c])
    }

    func testTheBodyIsTheLineThenThePayload() {
        let d = MessageDecoder(schema: schema)
        let m = DecodedMessage()
        let frame = Array("VALUE k 0 4\r\nab\r\n\r\n".utf8)
        frame.withUnsafeBytes { b in
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            d.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
        }
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
        // The line as `text`, the block (with the delimiter it holds) as `payload`; the last
        // delimiter is the frame's, not the body's.
        XCTAssertEqual(m.fields.count, 2)
        XCTAssertEqual(m.fields[0].name, .builtin(.text))
        XCTAssertEqual([m.fields[0].offset, m.fields[0].width], [0, 11])
        XCTAssertEqual(m.fields[1].name, .builtin(.payload))
        XCTAssertEqual([m.fields[1].offset, m.fields[1].width], [13, 4])
        XCTAssertEqual(m.fields[1].value, .validString)
        // A plain line is one `text`; a block that is not UTF-8 is bytes.
        for (text, fields, last) in [("STORED\r\n", 1, FieldValue.string), ("set k 0 0 2\r\n\u{ff}\u{fe}\r\n", 2, .bytes)] {
            var bytes = Array(text.utf8)
            if fields == 2 { bytes = Array("set k 0 0 2\r\n".utf8) + [0xff, 0xfe, 13, 10] }
            bytes.withUnsafeBytes { b in
                let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
                d.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
            }
            XCTAssertEqual(m.fields.count, fields, text)
            XCTAssertEqual(m.fields[fields - 1].value, last, text)
        }
    }

    func testTheLanguage() throws {
        XCTAssertEqual(CountedPayloadFraming.rules(schema), [
            .init(verb: Array("set".utf8), word: 5), .init(verb: Array("cas".utf8), word: 5),
            .init(verb: Array("VALUE".utf8), word: 4), .init(verb: Array("MSG".utf8), word: 0),
        ])
        let d = DissectorDescription.text(schema)
        XCTAssertTrue(d.contains("payload \"VALUE\" word 4"), d)
        XCTAssertTrue(d.contains("payload \"MSG\" last"), d)
        XCTAssertTrue(d.contains("frame_end \"\\r\\n\""), d)
        let errors: [(String, String)] = [
            ("payload \"set\" word 5;", "payload needs frame_end"),
            ("frame_end \"\\n\"; payload \"set\" word 1;", "word 2 to 64"),
            ("frame_end \"\\n\"; payload \"set\" word 5; payload \"set\" last;", "payload \"set\" is given twice"),
            ("frame_end \"\\n\"; payload \"a b\" last;", "one word of 1 to 32 printable ASCII characters"),
            ("frame_end \"\\n\"; payload \"set\" first;", "expected 'word N' (the verb is word 1) or 'last'"),
            ("frame_end \"\\n\"; payload set last;", "in double quotes"),
            ("frame_end \"\\n\"; payload prefix \"$1\";", "without spaces or digits"),
            ("frame_end \"\\n\"; payload prefix \"$\"; payload prefix \"$\";", "payload \"$\" is given twice"),
        ]
        for (setting, message) in errors {
            XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol z { port 7401; \(setting) }", file: "z.dissector"), setting) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.hasPrefix("z.dissector:1:"), d)
                XCTAssertTrue(d.contains(message), d)
            }
        }
    }
}
