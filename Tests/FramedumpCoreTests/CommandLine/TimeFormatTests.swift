import Foundation
import XCTest
@testable import FramedumpCore

/// tcpdump's time formats on the tree's lines, each line's time checked against tcpdump's own
/// reading of the same capture: `-t` none, `-tt` the epoch, `-ttt` since the line before,
/// `-tttt` date and time, `-ttttt` since the first line. (They were once accepted and ignored.)
final class TimeFormatTests: XCTestCase {
    let utc = ["TZ": "UTC"]

    func dump(_ args: [String]) throws -> [String] {
        let r = try TestSupport.run(TestSupport.binary, ["-r", TestSupport.sample("game.pcap")] + args,
                                    cwd: TestSupport.root.path, environment: utc)
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("    ") }
    }

    /// tcpdump's time of each packet in a format (`-tttt`, `-ttttt`).
    func tcpdumpTimes(_ flag: String, width: Int) throws -> Set<String> {
        let r = try TestSupport.run(try TestSupport.oracle("tcpdump"), ["-n", flag, "-r", TestSupport.sample("game.pcap")],
                                    environment: utc)
        return Set(r.stdout.split(separator: "\n").map { String($0.prefix(width)) })
    }

    func testEveryLinesTimeIsTcpdumps() throws {
        let date = try dump(["-tttt"])
        let dates = try tcpdumpTimes("-tttt", width: 26)
        XCTAssertGreaterThan(date.count, 40)
        for l in date { XCTAssertTrue(dates.contains(String(l.prefix(26))), l) }
        let sinceFirst = try dump(["-ttttt"])
        let offsets = try tcpdumpTimes("-ttttt", width: 16)
        for l in sinceFirst { XCTAssertTrue(offsets.contains(String(l.prefix(16))), l) }
        XCTAssertTrue(sinceFirst[0].hasPrefix(" 00:00:00.000000 "))
        // The deltas add up to the time since the first line, line by line.
        let delta = try dump(["-ttt"])
        XCTAssertEqual(delta.count, sinceFirst.count)
        var total = 0
        for (d, s) in zip(delta, sinceFirst) {
            total += Self.micros(d)
            XCTAssertEqual(total, Self.micros(s), d)
        }
        // The rest of each line is the default's.
        let epoch = try dump([])
        XCTAssertEqual(try dump(["-tt"]), epoch)
        XCTAssertEqual(try dump(["-t"]), epoch.map { String($0[$0.index(after: $0.firstIndex(of: " ")!)...]) })
        XCTAssertEqual(delta.map { $0.dropFirst(17) }, epoch.map { $0.drop { $0 != " " }.dropFirst() })
    }

    static func micros(_ line: String) -> Int {
        let p = line.prefix(16).dropFirst().split(whereSeparator: { ":.".contains($0) }).map { Int($0)! }
        return ((p[0] * 60 + p[1]) * 60 + p[2]) * 1_000_000 + p[3]
    }

    /// A time since the line before needs every line on one printer: the same with -j 4.
    func testTimesSinceEarlierLinesAreTheSameWithShards() throws {
        for t in ["-ttt", "-ttttt", "-t", "-tttt"] {
            XCTAssertEqual(try dump([t, "-j", "1"]), try dump([t, "-j", "4"]), t)
        }
    }

    /// NDJSON's ts is always the epoch's: asking it for another format is refused.
    func testNDJSONRefusesOtherTimeFormats() throws {
        for t in ["-t", "-ttt", "-tttt", "-ttttt"] {
            let r = try TestSupport.framedump(["-r", "samples/game.pcap", t, "-T", "json"])
            XCTAssertEqual(r.status, 2, t)
            XCTAssertTrue(r.stderr.contains("NDJSON's ts is always seconds since the epoch"), r.stderr)
        }
        XCTAssertEqual(try TestSupport.framedump(["-r", "samples/game.pcap", "-tt", "-T", "json"]).status, 0)
    }
}
