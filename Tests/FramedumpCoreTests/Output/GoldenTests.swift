import Foundation
import XCTest
@testable import FramedumpCore

/// The samples' tree and NDJSON outputs, pinned. `UPDATE_GOLDEN=1 swift test` rewrites them
/// after a deliberate change (then read the diff).
final class GoldenTests: XCTestCase {
    func check(_ name: String, _ actual: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = TestSupport.testsDir.appendingPathComponent("Golden/\(name)").path
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] != nil {
            try actual.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOfFile: path, encoding: .utf8)
        if expected != actual {
            let a = expected.split(separator: "\n", omittingEmptySubsequences: false)
            let b = actual.split(separator: "\n", omittingEmptySubsequences: false)
            let i = Array(zip(a, b)).firstIndex { $0.0 != $0.1 } ?? min(a.count, b.count)
            XCTFail("\(name) differs at line \(i + 1):\n- \(i < a.count ? a[i] : "")\n+ \(i < b.count ? b[i] : "")", file: file, line: line)
        }
    }

    func testSamplesTree() throws {
        for s in ["game", "svc", "im", "bridge", "websocket-deflate", "zgame", "kcp", "udp", "lines", "varint", "mqtt", "memcached", "memcached-text", "redis", "msgpack", "pairs", "zookeeper", "postgresql", "mysql", "socketio", "socketio-eio3", "grpc", "wsgame", "thrift", "postgresql-prefer", "mysql-deprecate-eof"] {
            let r = try TestSupport.framedump(["-r", "samples/\(s).pcap", "--color", "never", "-v"])
            XCTAssertEqual(r.status, 0, r.stderr)
            // -v adds the summary, whose peak memory line differs from run to run.
            let stable = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("peak memory: ") }.joined(separator: "\n")
            try check("\(s).tree.txt", stable)
        }
    }

    func testSamplesHexDump() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-x", "-c", "12"])
        XCTAssertEqual(r.status, 0, r.stderr)
        try check("game.hex.txt", r.stdout)
    }

    func testSamplesJSON() throws {
        for s in ["game", "svc", "im", "bridge", "websocket-deflate", "zgame", "kcp", "udp", "lines", "varint", "mqtt", "memcached", "memcached-text", "redis", "msgpack", "pairs", "zookeeper", "postgresql", "mysql", "socketio", "socketio-eio3", "grpc", "wsgame", "thrift", "postgresql-prefer", "mysql-deprecate-eof"] {
            let r = try TestSupport.framedump(["-r", "samples/\(s).pcap", "-T", "json"])
            XCTAssertEqual(r.status, 0, r.stderr)
            try check("\(s).ndjson", r.stdout)
            // Every line is one complete JSON object.
            for line in r.stdout.split(separator: "\n") {
                let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                XCTAssertNotNil(obj, String(line))
            }
        }
    }

    func testDiffableOutputHasNoRunSpecificValues() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "--json", "--diffable"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse(r.stdout.contains("\"ts\""))
        XCTAssertFalse(r.stdout.contains("\"pkts\""))
        XCTAssertNil(r.stdout.range(of: "127\\.0\\.0\\.1:[0-9]+-", options: .regularExpression), "no ephemeral client ports")
        XCTAssertTrue(r.stdout.contains("\"conn\":\"game@127.0.0.1:8000#3\""))
    }

    func testFollowShowsBytesAndGaps() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture("lost_segment.pcap"), "--follow"])
        XCTAssertEqual(r.status, 0, r.stderr)
        // lost_segment.pcap: bytes 41..<90 of the client's stream were never sent.
        XCTAssertTrue(r.stdout.contains("c2s gap: 49 bytes missing at offset 41 (acked-unseen)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("  00000000  00 00 00 12 4e 21 07 00  00 00 02 00 05           |....N!.......|"), r.stdout)
        XCTAssertTrue(r.stdout.contains("c2s offset 90, 60 bytes, pkt 6"), r.stdout)
    }

    func testColourOnlyWhenAsked() throws {
        let plain = try TestSupport.framedump(["-r", "samples/game.pcap", "-c", "6"])
        XCTAssertFalse(plain.stdout.contains("\u{1b}["), "piped output has no colour by default")
        let coloured = try TestSupport.framedump(["-r", "samples/game.pcap", "-c", "6", "--color", "always"])
        XCTAssertTrue(coloured.stdout.contains("\u{1b}[1;36mCs_20001\u{1b}[0m"), coloured.stdout)
    }

    func testDissectorsFromTheEnvironment() throws {
        let elsewhere = TestSupport.tempDir()
        let r = try TestSupport.run(TestSupport.binary, ["dissectors"], cwd: elsewhere,
                                    environment: ["FRAMEDUMP_DISSECTORS": TestSupport.dissectors + "/svc.dissector:" + TestSupport.dissectors + "/im.dissector"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("svc  (") && r.stdout.contains("im  ("), r.stdout)
        XCTAssertFalse(r.stdout.contains("game  ("), "no ./Dissectors there")
    }

    func testSummaryCountsEveryMessage() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        try check("game.summary.txt", r.stdout)
    }

    func testFixtureResyncOutput() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture("lost_segment.pcap"), "-T", "json", "--diffable"])
        XCTAssertEqual(r.status, 0, r.stderr)
        try check("lost_segment.ndjson", r.stdout)
    }
}
