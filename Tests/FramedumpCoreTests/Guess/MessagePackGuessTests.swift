import Foundation
import XCTest
@testable import FramedumpCore

/// `guess` on MessagePack bodies: samples/msgpack.pcap (the msgpack library's peers) gets
/// `body msgpack` (its heartbeat counters and nil bodies, single scalars, do not stand against
/// it), and the dissector it writes decodes every body without a warning; the binary bodies of
/// the other samples, and random bytes, are not taken for MessagePack.
final class MessagePackGuessTests: XCTestCase {
    func testTheMessagePackSampleGetsBodyMsgpack() throws {
        let dir = TestSupport.tempDir()
        let g = try TestSupport.framedump(["guess", "samples/msgpack.pcap", "-o", "\(dir)/mp.dissector"])
        XCTAssertEqual(g.status, 0, g.stderr)
        let text = try String(contentsOfFile: "\(dir)/mp.dissector", encoding: .utf8)
        XCTAssertTrue(text.contains("    body msgpack;"), text)
        XCTAssertTrue(text.contains("Message msg_8 = 8 { }   // binary, 12 of 12 bodies, each one MessagePack value"), text)
        let run = try TestSupport.framedump(["-r", "samples/msgpack.pcap", "-d", "\(dir)/mp.dissector", "-T", "json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let lines = run.stdout.split(separator: "\n").filter { $0.contains("\"message\"") }
        XCTAssertEqual(lines.count, 66)
        XCTAssertFalse(run.stdout.contains("\"warnings\""), run.stdout)
        XCTAssertTrue(run.stdout.contains("\"device\":{\"os\":\"android\""), "maps decoded by key")
    }

    func testOtherBodiesAreNotMessagePack() throws {
        for s in ["game.pcap", "svc.pcap", "im.pcap", "varint.pcap", "mqtt.pcap", "memcached.pcap", "zgame.pcap", "pairs.pcap"] {
            let r = try Guesser.run(capture: TestSupport.sample(s), port: nil)
            for p in r.ports {
                XCTAssertFalse(p.bodies.contains { $0.kind == .msgpack }, "\(s): \(p.bodies.map(\.kind))")
            }
        }
        // Random bodies of 4 to 200 bytes: a map or array that is the whole body by chance is rare.
        var rng = SeededRandom(seed: 7600)
        var hits = 0
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 197) + 4
            let body = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if BodyClassifier.kind(body[...]) == .msgpack { hits += 1 }
        }
        XCTAssertLessThan(hits, 100, "random bodies taken for MessagePack: \(hits) of 20000")
    }
}
