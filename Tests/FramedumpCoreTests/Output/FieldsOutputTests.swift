import XCTest
@testable import FramedumpCore

/// `-T fields -e … -E …`, as tshark's: one line per message, the named fields' values.
final class FieldsOutputTests: XCTestCase {
    func testFieldsAreTsharksExport() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "fields", "-e", "msg.name", "-e", "game.SceneId",
                                           "-e", "ip.src", "-e", "tcp.srcport", "-e", "msg.len", "-Y", "msg.dir == s2c && game.SceneId"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        XCTAssertEqual(lines.count, 9, r.stdout)
        XCTAssertEqual(lines.first, "SC_20001\t1\t127.0.0.1\t8000\t34")
        // The same values as the NDJSON of the same messages.
        let json = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "json", "-Y", "msg.dir == s2c && game.SceneId"])
        let scenes = json.stdout.split(separator: "\n").compactMap { l -> String? in
            guard let r = l.range(of: "\"SceneId\":") else { return nil }
            return String(l[r.upperBound...].prefix { $0.isNumber })
        }
        XCTAssertEqual(lines.map { String($0.split(separator: "\t")[1]) }, scenes)
    }

    func testSettingsAndAbsentFields() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "fields", "-e", "msg.name", "-e", "game.Hp",
                                           "-e", "msg.time", "-e", "frame.number",
                                           "-E", "header=y", "-E", "separator=,", "-E", "quote=d", "-c", "12"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "\"msg.name\",\"game.Hp\",\"msg.time\",\"frame.number\"")
        // A message without the field: the column is empty, not quoted.
        XCTAssertTrue(lines.contains { $0.hasPrefix("\"Cs_20001\",,\"1795291173.673545000\",\"4\"") }, r.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("\"Sc_30005\",\"949\",") }, r.stdout)
        // Several values of one field: the aggregator; occurrence=f keeps the first.
        let all = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "fields", "-e", "tcp.port", "-c", "5"])
        XCTAssertTrue(all.stdout.hasPrefix("54086,8000\n"), all.stdout)
        let first = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "fields", "-e", "tcp.port", "-E", "occurrence=f", "-E", "aggregator=/s", "-c", "5"])
        XCTAssertTrue(first.stdout.hasPrefix("54086\n"), first.stdout)
    }

    func testMistakesAreRefused() throws {
        for (args, says) in [(["-T", "fields"], "give -e FIELD"),
                             (["-e", "msg.name"], "add -T fields"),
                             (["-T", "fields", "-e", "msg.name", "-E", "quote=x"], "-E quote takes d, s or n"),
                             (["-T", "fields", "-e", "msg.name", "-E", "colour=y"], "unknown setting 'colour'"),
                             (["-T", "fields", "-e", "game.Lvel"], "did you mean game.Level?"),
                             (["-T", "fields", "-e", "msg.len > 3"], "-e takes a field name")] {
            let r = try TestSupport.framedump(["-r", "samples/game.pcap"] + args)
            XCTAssertEqual(r.status, 2, "\(args)")
            XCTAssertTrue(r.stderr.contains(says), "\(args): \(r.stderr)")
            XCTAssertEqual(r.stdout, "", "\(args)")
        }
    }
}
