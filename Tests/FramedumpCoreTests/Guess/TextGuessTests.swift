import Foundation
import XCTest
@testable import FramedumpCore

/// `guess` on text protocols: lines are taken before any length field (a text stream lets a
/// byte plus a constant walk from line to line), and lines that announce a counted block are
/// found with the word that counts. The samples it was built on (memcached's text protocol,
/// Redis, JSON lines) and NATS-style traffic written here in another shape: `PUB subject
/// [reply-to] N`, whose counting word moves, beside INFO/PING/+OK lines.
final class TextGuessTests: XCTestCase {
    func port(_ sample: String) throws -> PortGuess {
        let r = try Guesser.run(capture: TestSupport.sample(sample), port: nil)
        return try XCTUnwrap(r.ports.first)
    }

    func testTheTextSamplesAreLinesWithTheirCountedBlocks() throws {
        let mc = try port("memcached-text.pcap")
        guard case .delimiter(let d) = mc.framing else { return XCTFail("memcached-text: \(mc.framing)") }
        XCTAssertEqual(d.delimiter, .crlf)
        XCTAssertTrue(mc.textFirst)
        let rules = Dictionary(uniqueKeysWithValues: d.payloads.map { ($0.verb, $0) })
        XCTAssertEqual(rules["VALUE"]?.word, 4)
        XCTAssertEqual(rules["set"]?.word, 5)
        XCTAssertEqual(rules["cas"]?.word, 5)
        XCTAssertFalse(d.payloads.contains { $0.verb == "get" || $0.verb == "incr" }, "\(d.payloads)")
        let redis = try port("redis.pcap")
        guard case .delimiter(let r) = redis.framing else { return XCTFail("redis: \(redis.framing)") }
        XCTAssertEqual(r.payloads.map(\.setting), ["payload prefix \"$\";"])
        let lines = try port("lines.pcap")
        guard case .delimiter(let l) = lines.framing else { return XCTFail("lines: \(lines.framing)") }
        XCTAssertEqual(l.payloads, [])
        // The binary samples keep their length fields.
        for s in ["game.pcap", "svc.pcap", "im.pcap", "varint.pcap", "mqtt.pcap", "memcached.pcap", "zgame.pcap", "tls12.pcap"] {
            guard case .length = try port(s).framing else { return XCTFail("\(s): \(try port(s).framing)") }
        }
    }

    /// The dissectors it writes for the text samples cut them with nothing malformed.
    func testTheDissectorsItWritesCutTheSamples() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("textguess-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for s in ["memcached-text", "redis", "lines"] {
            let g = try TestSupport.framedump(["guess", "samples/\(s).pcap", "-o", "\(dir)/\(s).dissector"])
            XCTAssertEqual(g.status, 0, g.stderr)
            let run = try TestSupport.framedump(["-r", "samples/\(s).pcap", "-d", "\(dir)/\(s).dissector", "-q"])
            XCTAssertEqual(run.status, 0, run.stderr)
            XCTAssertTrue(run.stdout.contains(", 0 malformed (0 bytes)"), "\(s): \(run.stdout)")
        }
    }

    /// NATS-style streams (not a blind set: the `last` candidate was added with NATS's PUB in mind).
    func testNATSStyleTrafficGetsLastWordRules() {
        var c2s = "CONNECT {\"verbose\":false,\"name\":\"x\"}\r\nPING\r\n"
        var s2c = "INFO {\"server_id\":\"abc\",\"max_payload\":1048576}\r\nPONG\r\n"
        for i in 0..<40 {
            let payload = i % 7 == 0 ? "two\r\nlines" : String(repeating: "p", count: i * 3)
            c2s += i % 2 == 0 ? "PUB orders.\(i) \(payload.utf8.count)\r\n\(payload)\r\n"
                              : "PUB orders.\(i) _INBOX.\(i) \(payload.utf8.count)\r\n\(payload)\r\n"
            s2c += "MSG orders.\(i) 1 \(i % 3 == 0 ? "_INBOX.\(i) " : "")\(payload.utf8.count)\r\n\(payload)\r\n"
            if i % 10 == 0 { s2c += "+OK\r\nPING\r\n"; c2s += "PONG\r\n" }
        }
        let streams = [(Direction.c2s, c2s), (.s2c, s2c)].map { d, t in
            SampledStream(connection: "a-b", serverPort: 4222, direction: d,
                          pieces: [SampledPiece(bytes: Array(t.utf8), startsAtBoundary: true, endsCut: false)])
        }
        let g = Guesser.guess(port: 4222, streams: streams)
        guard case .delimiter(let d) = g.framing else { return XCTFail("\(g.framing)") }
        let rules = Dictionary(uniqueKeysWithValues: d.payloads.map { ($0.verb, $0.setting) })
        XCTAssertEqual(rules, ["PUB": "payload \"PUB\" last;", "MSG": "payload \"MSG\" last;"])
    }
}
