import Foundation
import XCTest
@testable import FramedumpCore

/// `matches` through PCRE2 with a bound on each match's backtracking. A pattern that takes
/// exponential time on a long text once ran a filter for minutes (421 s) and ignored SIGTERM;
/// now each such message gives up at the bound, the pattern is tried on no more than
/// `FilterRegex.maxGiveUps` of them, and the run says so and exits 1.
final class FilterRegexTests: XCTestCase {
    var capture = ""
    var dissector = ""
    /// Messages whose text makes `^(\w+\s?)*$` backtrack exponentially (words, then a `!`).
    let slow = 14

    override func setUpWithError() throws {
        let dir = TestSupport.tempDir()
        dissector = dir + "/note.dissector"
        try """
            protocol note { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id; }
            Message Note = 1 { String(u16) text; }
            """.write(toFile: dissector, atomically: true, encoding: .utf8)
        capture = dir + "/note.pcap"
        let b = try CaptureBuilder(capture)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        let long = String(repeating: "word ", count: 40) + "!"
        for text in ["你好", "ok then"] + Array(repeating: long, count: slow) + ["last words"] {
            let body = Array(text.utf8)
            c.send(.be32(UInt32(8 + body.count)) + .be16(1) + .be16(UInt16(body.count)) + body)
        }
        b.finish()
    }

    func run(_ filter: String, _ extra: [String] = []) throws -> (status: Int32, texts: [String], stderr: String) {
        let r = try TestSupport.framedump(["-r", capture, "-d", dissector, "-T", "json", "-Y", filter] + extra)
        let texts = r.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let body = o["fields"] as? [String: Any] else { return nil }
            return body["text"] as? String
        }
        return (r.status, texts, r.stderr)
    }

    /// Text is matched as UTF-8 characters: `.` is one character, not one byte.
    func testTextIsCharacters() throws {
        let r = try run(#"note.text matches "^.{2}$""#)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.texts, ["你好"])
        XCTAssertEqual(try run(#"note.text matches "(?i)^OK\\s""#).texts, ["ok then"])
    }

    /// The pathological pattern: the messages it can decide are answered, those it gives up on
    /// count as not matching, and the run says how many and exits 1. Its error is PCRE2's bound,
    /// not a time: the test ends in a second where the old engine ran for minutes. After the
    /// tenth give-up the pattern is not tried (the last message, which it would match, included).
    func testAPatternThatBacktracksGivesUpAndSaysSo() throws {
        let r = try run(#"note.text matches "^(\\w+\\s?)*$""#, ["-j", "1"])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.texts, ["ok then"])
        XCTAssertTrue(r.stderr.contains("reached its bound of 1000000 backtracking steps on \(FilterRegex.maxGiveUps) messages"), r.stderr)
        XCTAssertTrue(r.stderr.contains("was not tried on \(slow - FilterRegex.maxGiveUps + 1) more"), r.stderr)
        XCTAssertTrue(r.stderr.contains("they count as not matching"), r.stderr)
    }

    /// The bound and the count, on the evaluator itself.
    func testTheCountsOfOneEvaluator() throws {
        let re = try FilterRegex(#"^(\w+\s?)*$"#)
        let long = String(repeating: "word ", count: 40) + "!"
        XCTAssertTrue(re.matches(text: "two words"))
        for _ in 0..<12 { XCTAssertFalse(re.matches(text: long)) }
        XCTAssertEqual(re.gaveUp, FilterRegex.maxGiveUps)
        XCTAssertEqual(re.notTried, 2)
        // Once given up, the pattern is no longer tried, even where it would match.
        XCTAssertFalse(re.matches(text: "two words"))
    }

    /// A pattern PCRE2 refuses is an error at its column, with PCRE2's reason.
    func testABadPatternIsRefusedWhereItIs() throws {
        let r = try TestSupport.framedump(["-r", capture, "-d", dissector, "-Y", #"note.text matches "(ab""#])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("column 19: not a regular expression: missing closing parenthesis (at byte 3 of the pattern)"), r.stderr)
    }
}
