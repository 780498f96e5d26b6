import Foundation
import XCTest
@testable import FramedumpCore

/// `framedump guess` on protocols drawn by generators written in other styles than the one its
/// rules were made on (docs/guess.md, "Accuracy"): game and IM headers
/// (scripts/make_guess_games.py: magic, version, flags, seq, command, session, timestamp,
/// checksum and pad fields in varied orders, widths and byte orders, lengths that count part of
/// the header or leave a trailer out) and TLV/IoT frames (scripts/make_guess_tlv.py). A few
/// seeds of each here; scripts/guess_accuracy.py runs hundreds, and the held-back seeds.
final class GuessOtherStylesTests: XCTestCase {
    struct Truth: Decodable {
        struct Length: Decodable { var offset: Int; var width: Int; var order: String; var adjustment: Int }
        struct ID: Decodable { var offset: Int; var width: Int }
        var length: Length
        var id: ID
    }

    /// Runs guess on each seed: the framing right (or cutting exactly the truth's frames, a
    /// wider view over always-zero bytes), else never above 90% confidence; returns how many
    /// framings and ids were right.
    func check(_ dir: String, seeds: ClosedRange<Int>, set: String) throws -> (framing: Int, id: Int) {
        var framing = 0, id = 0
        for seed in seeds {
            let t = try JSONDecoder().decode(Truth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/proto-\(seed).json")))
            let want = LengthCandidate(offset: t.length.offset, width: t.length.width, order: t.length.order == "little" ? .little : .big,
                                       adjustment: t.length.adjustment)
            let result = try Guesser.run(capture: "\(dir)/proto-\(seed).pcap", port: nil)
            let port = try XCTUnwrap(result.ports.first, "\(set) seed \(seed)")
            guard case .length(let got) = port.framing, let s = port.search else { continue }
            let streams = try StreamSampling.read(capture: "\(dir)/proto-\(seed).pcap", port: nil, limits: GuessLimits())
                .streams.filter { $0.serverPort == port.port }
            if got == want || FramingSearch().relation(got, want, streams) == .same {
                framing += 1
                if let f = port.header?.id, f.offset == t.id.offset, f.width == t.id.width { id += 1 }
            } else {
                XCTAssertLessThanOrEqual(s.confidence, 0.9, "\(set) seed \(seed): \(got) is not \(want)")
            }
        }
        return (framing, id)
    }

    func testGameHeaders() throws {
        let dir = try GuessTests.generate("make_guess_games.py", first: 1, count: 10)
        let r = try check(dir, seeds: 1...10, set: "games")
        XCTAssertGreaterThanOrEqual(r.framing, 10)
        XCTAssertGreaterThanOrEqual(r.id, 8)
    }

    /// The heartbeat pair is 95% of the messages: a command's other byte tells next to nothing
    /// about the length, yet it is the command's.
    func testOneMessageFillsTheCapture() throws {
        let dir = try GuessTests.generate("make_guess_games.py", first: 1, count: 10, ["--dominant"])
        let r = try check(dir, seeds: 1...10, set: "games --dominant")
        XCTAssertGreaterThanOrEqual(r.framing, 9)
        XCTAssertGreaterThanOrEqual(r.id, 7)
    }

    func testTLVFrames() throws {
        let dir = try GuessTests.generate("make_guess_tlv.py", first: 1, count: 10)
        let r = try check(dir, seeds: 1...10, set: "tlv")
        XCTAssertGreaterThanOrEqual(r.framing, 10)
        XCTAssertGreaterThanOrEqual(r.id, 8)
    }

    /// The header is read from the first frames of each stream; a later heartbeat shorter than
    /// the id's offset once read past its frame when the bodies were sorted by id (a crash).
    func testAFrameShorterThanTheHeaderSeen() throws {
        let dir = try GuessTests.generate("make_guess_games.py", first: 27, count: 1, ["--dominant"])
        let port = try XCTUnwrap(try Guesser.run(capture: "\(dir)/proto-27.pcap", port: nil).ports.first)
        guard case .length(let c) = port.framing else { return XCTFail("no framing") }
        XCTAssertEqual(c, LengthCandidate(offset: 15, width: 4, order: .big, adjustment: 4))
    }

    /// A byte with one small value in every frame is written as a version field with the value
    /// in a comment, not as `== 0x1`: a client of the next version must still decode.
    func testAVersionSeenOnceIsNotAConstant() throws {
        let dir = try GuessTests.generate("make_guess_games.py", first: 3, count: 1)
        let result = try Guesser.run(capture: "\(dir)/proto-3.pcap", port: nil)
        let port = try XCTUnwrap(result.ports.first)
        let version = try XCTUnwrap(port.header?.fields.first { $0.offset == 8 })
        XCTAssertEqual(version.role, .seenOnce(1))
        let text = try XCTUnwrap(DissectorWriter.text(result, source: "proto-3.pcap"))
        XCTAssertTrue(text.contains("        uint8 version;   // 0x1 in every frame sampled"), text)
        XCTAssertFalse(text.contains("== 0x1 "), text)
    }
}
