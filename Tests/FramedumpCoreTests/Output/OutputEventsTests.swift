import Foundation
import XCTest
@testable import FramedumpCore

/// Reports about the stream (malformed stretches, frames the capture cut) read as what they
/// are: in time order with the messages, with their bytes under -x, and a cut frame not
/// called malformed.
final class OutputEventsTests: XCTestCase {
    /// The seconds of each event line (the lines that start with a timestamp).
    func times(_ text: String) -> [Double] {
        text.split(separator: "\n").compactMap { l in l.first?.isNumber == true ? Double(l.prefix { $0 != " " }) : nil }
    }

    /// HTTP sent to the game port: the skipped run is reported when the stream tells where it
    /// ends (here its FIN), after the server's messages that came before that, not dated back.
    func testEventsAreInTimeOrder() throws {
        let fixture = TestSupport.fixture("http_on_game_port.pcap")
        let tree = try TestSupport.framedump(["-r", fixture, "--color", "never"])
        XCTAssertEqual(tree.status, 0, tree.stderr)
        let t = times(tree.stdout)
        XCTAssertGreaterThan(t.count, 5)
        XCTAssertEqual(t, t.sorted(), tree.stdout)
        XCTAssertTrue(tree.stdout.contains("MALFORMED 86 bytes at stream offset 1: bytes skipped"), tree.stdout)
        let json = try TestSupport.framedump(["-r", fixture, "-T", "json"])
        // Every line but the closing `limit` lines (bounds the run met) has a time.
        let ts = try json.stdout.split(separator: "\n").compactMap { line -> Double? in
            let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if o["type"] as? String == "limit" { return nil }
            return try XCTUnwrap((o["ts"] as? String).flatMap(Double.init), String(line))
        }
        XCTAssertEqual(ts, ts.sorted(), json.stdout)
    }

    /// -x shows the bytes of a malformed report: the bad header, and the start of a skipped run.
    func testHexDumpShowsMalformedBytes() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture("http_on_game_port.pcap"), "-x", "--color", "never"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("exceeds max_frame 1048576\n    00000000  47 45 54 20 2f 69  "), r.stdout)
        XCTAssertTrue(r.stdout.contains("bytes skipped while resynchronising\n    00000000  45 54 20 2f 69 6e 64 65  78 2e 68 74 6d 6c 20 48  |ET /index.html H|"), r.stdout)
    }

    /// A frame cut by -c (or by the end of a capture file) is a CUT, not MALFORMED; the summary
    /// counts it apart, and NDJSON gives it a type of its own.
    func testAFrameCutByTheCaptureIsNotMalformed() throws {
        let tree = try TestSupport.framedump(["-r", "samples/game.pcap", "-c", "50", "--color", "never"])
        XCTAssertEqual(tree.status, 0, tree.stderr)
        XCTAssertFalse(tree.stdout.contains("MALFORMED"), tree.stdout)
        XCTAssertTrue(tree.stdout.contains(" game CUT 3 bytes at stream offset 72: capture ended inside a frame (3 bytes)"), tree.stdout)
        let q = try TestSupport.framedump(["-r", "samples/game.pcap", "-c", "50", "-q"])
        XCTAssertTrue(q.stdout.contains("0 malformed (0 bytes)"), q.stdout)
        XCTAssertTrue(q.stdout.contains("1 frames cut by the end of the capture (3 bytes)"), q.stdout)
        let json = try TestSupport.framedump(["-r", "samples/game.pcap", "-c", "50", "-T", "json"])
        XCTAssertTrue(json.stdout.contains("\"type\":\"cut\""), json.stdout)
        XCTAssertTrue(json.stdout.contains("\"reason\":\"capture-ended\""), json.stdout)
        XCTAssertFalse(json.stdout.contains("\"type\":\"malformed\""), json.stdout)
    }
}
