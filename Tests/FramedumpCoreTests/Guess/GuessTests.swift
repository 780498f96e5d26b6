import Foundation
import XCTest
@testable import FramedumpCore

/// `framedump guess` (docs/guess.md): the shipped samples' framing and id recovered as their
/// real dissectors say, random protocols from scripts/make_guess_protocols.py recovered at the
/// issue's thresholds, mid-stream starts and gaps, a protocol with no length field, and the
/// written dissector accepted by `check` and decoding its capture with no malformed frame.
final class GuessTests: XCTestCase {
    struct Framing: Equatable, CustomStringConvertible {
        var offset: Int, width: Int, order: ByteOrder, adjustment: Int
        var description: String { "(\(offset), \(width), \(order), \(adjustment))" }
    }

    /// What a real dissector says: the length field (offset, width, order) and the adjustment
    /// that makes `value + adjustment` the frame's length; the id field's offset and width.
    func expected(_ dissector: String) throws -> (Framing, (offset: Int, width: Int)) {
        let schema = try XCTUnwrap(try DissectorLoader.load(paths: [TestSupport.root.appendingPathComponent("Dissectors/\(dissector)").path]).first)
        let rule = try XCTUnwrap(schema.length)
        var adjustment = rule.countsWholeFrame ? 0 : schema.headerSize
        var lengthField: HeaderField?
        for t in rule.terms {
            if let f = t.field {
                let h = schema.header[f]
                if let c = h.constant { adjustment += Int(c) } else { lengthField = h }
            } else {
                adjustment += Int(t.constant) * (t.negative ? -1 : 1)
            }
        }
        let l = try XCTUnwrap(lengthField)
        let id = schema.header[try XCTUnwrap(schema.idField)]
        return (Framing(offset: l.offset, width: l.width, order: l.width == 1 ? .big : l.order, adjustment: adjustment),
                (id.offset, id.width))
    }

    func guessed(_ g: PortGuess) -> (Framing?, (offset: Int, width: Int)?) {
        guard case .length(let c) = g.framing else { return (nil, nil) }
        return (Framing(offset: c.offset, width: c.width, order: c.order, adjustment: c.adjustment),
                g.header?.id.map { ($0.offset, $0.width) })
    }

    func testShippedSamplesRecovered() throws {
        for (sample, dissector) in [("game", "game.dissector"), ("svc", "svc.dissector"), ("im", "im.dissector"), ("zgame", "zgame.dissector")] {
            let (framing, id) = try expected(dissector)
            let result = try Guesser.run(capture: TestSupport.sample("\(sample).pcap"), port: nil)
            XCTAssertEqual(result.ports.count, 1, sample)
            let port = try XCTUnwrap(result.ports.first)
            let (gf, gid) = guessed(port)
            XCTAssertEqual(gf, framing, "\(sample): framing")
            XCTAssertEqual(gid?.offset, id.offset, "\(sample): id offset")
            XCTAssertEqual(gid?.width, id.width, "\(sample): id width")
            XCTAssertEqual(port.search?.best?.share, 1.0, "\(sample): every sampled byte explained")
        }
    }

    func testWebSocketToldByItsHandshake() throws {
        let result = try Guesser.run(capture: TestSupport.sample("bridge.pcap"), port: 12345)
        guard case .webSocket = try XCTUnwrap(result.ports.first).framing else { return XCTFail("not taken for a WebSocket") }
    }

    /// Runs the generator into a temporary folder; returns it.
    func generate(first: Int, count: Int, _ flags: [String] = []) throws -> String {
        try Self.generate("make_guess_protocols.py", first: first, count: count, flags)
    }

    /// Runs one of scripts/make_guess_*.py (seeds first..., count of them) into a temporary
    /// folder; returns it.
    static func generate(_ script: String, first: Int, count: Int, _ flags: [String] = []) throws -> String {
        let python = try TestSupport.oracle("python3")
        let dir = TestSupport.tempDir()
        let r = try TestSupport.run(python, [TestSupport.root.appendingPathComponent("scripts/\(script)").path,
                                             dir, "\(first)", "\(count)"] + flags)
        XCTAssertEqual(r.status, 0, r.stderr)
        return dir
    }

    struct Truth: Decodable {
        struct Length: Decodable { var offset: Int; var width: Int; var order: String; var adjustment: Int }
        struct ID: Decodable { var offset: Int; var width: Int }
        var length: Length?
        var id: ID?
        var port: Int
    }

    func truth(_ dir: String, _ seed: Int) throws -> Truth {
        try JSONDecoder().decode(Truth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/proto-\(seed).json")))
    }

    /// Seeds 1-40 of the generator: the framing right for ≥ 95%, the id for ≥ 85% (the issue's
    /// thresholds; scripts/guess_accuracy.py runs 200 and more).
    func testRandomProtocolsAccuracy() throws {
        let count = 40
        let dir = try generate(first: 1, count: count)
        var framingRight = 0, idRight = 0
        var wrong: [String] = []
        for seed in 1...count {
            let t = try truth(dir, seed)
            let result = try Guesser.run(capture: "\(dir)/proto-\(seed).pcap", port: nil)
            let (gf, gid) = guessed(try XCTUnwrap(result.ports.first))
            let l = try XCTUnwrap(t.length)
            let want = Framing(offset: l.offset, width: l.width, order: l.order == "little" ? .little : .big, adjustment: l.adjustment)
            if gf == want { framingRight += 1 } else { wrong.append("seed \(seed): framing \(gf.map(\.description) ?? "none"), want \(want)") }
            if gid?.offset == t.id?.offset && gid?.width == t.id?.width { idRight += 1 } else { wrong.append("seed \(seed): id \(String(describing: gid))") }
        }
        XCTAssertGreaterThanOrEqual(Double(framingRight) / Double(count), 0.95, wrong.joined(separator: "\n"))
        XCTAssertGreaterThanOrEqual(Double(idRight) / Double(count), 0.85, wrong.joined(separator: "\n"))
    }

    /// The first connection starts in the middle of a message (no SYN), the second loses a
    /// segment: the framing is still found, and every other stream fully explained. (A length
    /// inside the body, a protobuf string's prefix, once won here by a chance resync in the
    /// cut-off first message: seeds 1001-1003.)
    func testMidStreamAndGapDoNotMislead() throws {
        let dir = try generate(first: 1000, count: 11, ["--midstream"])
        for seed in 1000...1010 {
            let t = try truth(dir, seed)
            let result = try Guesser.run(capture: "\(dir)/proto-\(seed).pcap", port: nil)
            let port = try XCTUnwrap(result.ports.first)
            let (gf, gid) = guessed(port)
            let l = try XCTUnwrap(t.length)
            XCTAssertEqual(gf, Framing(offset: l.offset, width: l.width, order: l.order == "little" ? .little : .big, adjustment: l.adjustment),
                           "seed \(seed)")
            XCTAssertEqual(gid?.offset, t.id?.offset, "seed \(seed): id")
            XCTAssertTrue(port.streams.contains { $0.pieces > 1 }, "seed \(seed): the lost segment makes a gap")
            XCTAssertGreaterThan(port.search?.best?.share ?? 0, 0.9, "seed \(seed)")
        }
    }

    /// Connections longer than the 64 KiB sampled each way: every piece ends cut, where a byte
    /// plus a constant chains as far as the true length; the frames' regular first bytes decide.
    func testLongStreamsCutBySample() throws {
        let dir = try generate(first: 1, count: 6, ["--long"])
        for seed in 1...6 {
            let t = try truth(dir, seed)
            let result = try Guesser.run(capture: "\(dir)/proto-\(seed).pcap", port: nil)
            let port = try XCTUnwrap(result.ports.first)
            let l = try XCTUnwrap(t.length)
            XCTAssertEqual(guessed(port).0, Framing(offset: l.offset, width: l.width, order: l.order == "little" ? .little : .big,
                                                    adjustment: l.adjustment), "seed \(seed)")
        }
    }

    /// No connection seen from its SYN (`--nosyn`): every stream starts inside a message. Seeds
    /// 7-16 hold each way this once failed: a u64/u32 whose cut-off first message was longer
    /// than screening looked (7, 12), a u8 taken for the varint that reads the same (15), a
    /// varint the chance frames through a cut-off text body outscored (16); a byte plus a
    /// constant won all of them. The framing and the id of every one (the id of seed 15 was
    /// wrong until the header frames came from the likeliest chain).
    func testNoSYNCaptures() throws {
        try TestSupport.long()
        let dir = try generate(first: 7, count: 10, ["--nosyn"])
        var idRight = 0
        var wrong: [String] = []
        for seed in 7...16 {
            let t = try truth(dir, seed)
            let result = try Guesser.run(capture: "\(dir)/proto-\(seed).pcap", port: nil)
            let (gf, gid) = guessed(try XCTUnwrap(result.ports.first))
            let l = try XCTUnwrap(t.length)
            XCTAssertEqual(gf, Framing(offset: l.offset, width: l.width, order: l.order == "little" ? .little : .big, adjustment: l.adjustment),
                           "seed \(seed)")
            if gid?.offset == t.id?.offset && gid?.width == t.id?.width { idRight += 1 } else { wrong.append("seed \(seed): id \(String(describing: gid))") }
        }
        XCTAssertEqual(idRight, 10, wrong.joined(separator: "\n"))
    }

    /// `--nosyn` protocols that were wrong before the header frames came from the likeliest
    /// chain and a mid-stream piece's slack from its cut-off message: the framing of seeds 72,
    /// 88, 93 and 179 (a u32 or u16 lost to its low byte plus a constant, or dropped by
    /// screening within 512 bytes), and the id of seeds 42, 70, 84, 113 and 195 (chance frames
    /// in the header sample made a magic or a version look varying; too few frames for the id's
    /// values). Each one failed on the code before.
    func testNoSYNFormerMisses() throws {
        try TestSupport.long()
        let framing = [72, 88, 93, 179], id = [42, 70, 84, 113, 195]
        var wrong: [String] = []
        for seed in framing + id {
            let dir = try generate(first: seed, count: 1, ["--nosyn"])
            let t = try truth(dir, seed)
            let result = try Guesser.run(capture: "\(dir)/proto-\(seed).pcap", port: nil)
            let (gf, gid) = guessed(try XCTUnwrap(result.ports.first))
            let l = try XCTUnwrap(t.length)
            if gf != Framing(offset: l.offset, width: l.width, order: l.order == "little" ? .little : .big, adjustment: l.adjustment) {
                wrong.append("seed \(seed): framing \(String(describing: gf))")
            } else if id.contains(seed), gid?.offset != t.id?.offset || gid?.width != t.id?.width {
                wrong.append("seed \(seed): id \(String(describing: gid))")
            }
        }
        XCTAssertEqual(wrong, [])
    }

    /// Text lines: no length field is claimed; the delimiter is said, and the dissector written
    /// cuts the lines with `frame_end` (every record one message, none malformed).
    func testNoLengthFieldReportedAsSuch() throws {
        let dir = try generate(first: 2000, count: 1, ["--lines"])
        let result = try Guesser.run(capture: "\(dir)/proto-2000.pcap", port: nil)
        let port = try XCTUnwrap(result.ports.first)
        guard case .delimiter(let d) = port.framing else { return XCTFail("framing: \(port.framing)") }
        XCTAssertEqual(d.delimiter, .crlf)
        XCTAssertTrue(result.producedDissector)
        let r = try TestSupport.framedump(["guess", "\(dir)/proto-2000.pcap", "-o", "\(dir)/out.dissector"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("framing: text lines; records end with \\r\\n"), r.stdout)
        let text = try String(contentsOfFile: "\(dir)/out.dissector", encoding: .utf8)
        XCTAssertTrue(text.contains("frame_end \"\\r\\n\";"), text)
        let run = try TestSupport.framedump(["-r", "\(dir)/proto-2000.pcap", "-d", "\(dir)/out.dissector", "-q"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains(", 0 malformed (0 bytes)"), run.stdout)
        XCTAssertTrue(run.stdout.contains("  record  "), run.stdout)
    }

    /// A varint length (protobuf behind its size, MQTT's Remaining Length after its first byte):
    /// the dissector written says `varint length;` and cuts the real captures with no malformed frame.
    func testVarintFramingsAreWritten() throws {
        let dir = TestSupport.tempDir()
        for (sample, before) in [("varint.pcap", 0), ("mqtt.pcap", 1)] {
            let file = "\(dir)/\(sample).dissector"
            let g = try TestSupport.framedump(["guess", TestSupport.sample(sample), "-o", file])
            XCTAssertEqual(g.status, 0, sample + g.stderr)
            let text = try String(contentsOfFile: file, encoding: .utf8)
            XCTAssertTrue(text.contains("varint length;"), text)
            XCTAssertTrue(text.contains("body_length = length;"), text)
            XCTAssertEqual(text.components(separatedBy: "        uint").count - 1, before, text)
            // `-o -` is standard output (the report on standard error), as without -o.
            let dash = try TestSupport.framedump(["guess", TestSupport.sample(sample), "-o", "-"])
            XCTAssertEqual(dash.status, 0, dash.stderr)
            XCTAssertEqual(dash.stdout, text)
            XCTAssertTrue(dash.stderr.contains("framing: varint"), dash.stderr)
            let run = try TestSupport.framedump(["-r", TestSupport.sample(sample), "-d", file, "-q"])
            XCTAssertEqual(run.status, 0, run.stderr)
            XCTAssertTrue(run.stdout.contains(", 0 malformed (0 bytes)"), sample + "\n" + run.stdout)
            XCTAssertTrue(run.stdout.contains(sample == "varint.pcap" ? "69 messages" : "47 messages"), run.stdout)
        }
    }

    /// Nothing to guess from: a capture without TCP payload, or a port without traffic.
    func testNothingToGuessFrom() throws {
        let udp = try TestSupport.framedump(["guess", TestSupport.sample("udp.pcap")])
        XCTAssertEqual(udp.status, 1)
        XCTAssertTrue(udp.stderr.contains("no TCP payload in this capture"), udp.stderr)
        let port = try TestSupport.framedump(["guess", TestSupport.sample("game.pcap"), "-p", "9999"])
        XCTAssertEqual(port.status, 1)
        XCTAssertTrue(port.stderr.contains("no TCP connection with data on port 9999"), port.stderr)
        let missing = try TestSupport.framedump(["guess", "no-such.pcap"])
        XCTAssertEqual(missing.status, 3)
    }

    /// The written dissector is accepted by `check` and cuts its capture with no malformed frame.
    func testWrittenDissectorChecksAndDecodesClean() throws {
        let dir = try generate(first: 1, count: 12)
        var captures = [TestSupport.sample("game.pcap"), TestSupport.sample("svc.pcap"), TestSupport.sample("im.pcap"),
                        TestSupport.sample("zgame.pcap")]
        for seed in 1...12 where try truth(dir, seed).length?.width != 0 { captures.append("\(dir)/proto-\(seed).pcap") }
        for (i, capture) in captures.enumerated() {
            let file = "\(dir)/guessed-\(i).dissector"
            let g = try TestSupport.framedump(["guess", capture, "-o", file])
            XCTAssertEqual(g.status, 0, capture + g.stderr)
            let check = try TestSupport.framedump(["check", file])
            XCTAssertEqual(check.status, 0, capture + check.stderr)
            let run = try TestSupport.framedump(["-r", capture, "-d", file, "-q"])
            XCTAssertEqual(run.status, 0, capture + run.stderr)
            XCTAssertTrue(run.stdout.contains(", 0 malformed (0 bytes)"), capture + "\n" + run.stdout)
            XCTAssertFalse(run.stdout.contains("guessed_") == false, capture + ": the guessed protocol decoded nothing")
        }
    }
}
