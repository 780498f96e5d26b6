import XCTest
@testable import FramedumpCore

/// `framedump guess`'s confidence (docs/guess.md, "Confidence"): on the real servers' samples,
/// a framing that is not the protocol's is never reported above 90%, and where two framings
/// that cut other frames explain as much and look as regular the report says "ambiguous" and
/// names both; a right framing whose runner-up is a chance chain keeps its full share.
final class GuessConfidenceTests: XCTestCase {
    struct Framing: Equatable, CustomStringConvertible {
        var offset: Int, width: Int, order: ByteOrder, adjustment: Int
        var description: String { "(\(offset), \(width), \(order), \(adjustment))" }
    }

    func ports(_ sample: String) throws -> [PortGuess] {
        try Guesser.run(capture: TestSupport.sample("\(sample).pcap"), port: nil).ports
    }

    func framing(_ g: PortGuess) -> Framing? {
        guard case .length(let c) = g.framing else { return nil }
        return Framing(offset: c.offset, width: c.width, order: c.order, adjustment: c.adjustment)
    }

    /// The samples' true framings, as their dissectors in Dissectors/ cut them (nil: no length
    /// field frames every message, so any length claimed is wrong).
    let truth: [(sample: String, port: UInt16, framing: Framing?)] = [
        ("game", 8000, Framing(offset: 0, width: 4, order: .big, adjustment: 0)),
        ("svc", 7000, Framing(offset: 4, width: 4, order: .big, adjustment: 8)),
        ("im", 9000, Framing(offset: 10, width: 2, order: .big, adjustment: 12)),
        ("pairs", 8400, Framing(offset: 0, width: 4, order: .big, adjustment: 0)),
        ("mysql", 3306, Framing(offset: 0, width: 3, order: .little, adjustment: 4)),
        ("postgresql", 5432, Framing(offset: 1, width: 4, order: .big, adjustment: 1)),
        ("memcached", 11211, Framing(offset: 8, width: 4, order: .big, adjustment: 24)),
        ("zookeeper", 2181, Framing(offset: 0, width: 4, order: .big, adjustment: 4)),
        ("thrift", 9090, Framing(offset: 0, width: 4, order: .big, adjustment: 4)),
        ("thrift", 9091, nil),
        ("msgpack", 7600, Framing(offset: 0, width: 4, order: .big, adjustment: 6)),
        ("zgame", 7300, Framing(offset: 4, width: 4, order: .little, adjustment: 8)),
        ("mqtt", 1883, Framing(offset: 1, width: 0, order: .big, adjustment: 0)),
        ("varint", 7500, Framing(offset: 0, width: 0, order: .big, adjustment: 0)),
    ]

    func testNoWrongFramingAbove90PercentOnTheRealSamples() throws {
        var right = 0
        for t in truth {
            let g = try XCTUnwrap(try ports(t.sample).first { $0.port == t.port }, "\(t.sample) \(t.port)")
            let got = framing(g)
            guard let got, let s = g.search else { continue }
            if got == t.framing {
                right += 1
                XCTAssertGreaterThanOrEqual(s.confidence, 0.99, "\(t.sample) \(t.port): a right framing keeps its share")
                XCTAssertFalse(s.ambiguous, "\(t.sample) \(t.port)")
            } else {
                XCTAssertLessThanOrEqual(s.confidence, 0.9, "\(t.sample) \(t.port): \(got) is not \(String(describing: t.framing))")
            }
        }
        // The u24 length (MySQL) is among them: a width the language has.
        XCTAssertGreaterThanOrEqual(right, 12)
    }

    func testTwoFramingsAsGoodAreReportedAmbiguousWithBoth() throws {
        // PostgreSQL: the startup message has no type byte, so the true length breaks on every
        // client stream; two chance chains through ASCII type bytes explain 99.9% each.
        let g = try XCTUnwrap(try ports("postgresql").first)
        let s = try XCTUnwrap(g.search)
        XCTAssertTrue(s.ambiguous)
        XCTAssertLessThanOrEqual(s.confidence, 0.5)
        let ru = try XCTUnwrap(s.runnerUp)
        let report = GuessReport.text(GuessResult(capture: "postgresql.pcap", port: nil, packets: 0, payloadBytes: 1,
                                                  stoppedEarly: false, ports: [g]))
        XCTAssertTrue(report.contains("ambiguous"), report)
        XCTAssertTrue(report.contains("or: \(ru.candidate.description)"), report)
        let dissector = try XCTUnwrap(DissectorWriter.text(GuessResult(capture: "postgresql.pcap", port: nil, packets: 0, payloadBytes: 1,
                                                                       stoppedEarly: false, ports: [g]), source: "postgresql.pcap"))
        XCTAssertTrue(dissector.contains("ambiguous"), dissector)
        XCTAssertTrue(dissector.contains("As likely: \(ru.candidate.description)"), dissector)
    }

    func testAViewOfTheSameFramingIsNoRunnerUp() throws {
        // game: a u32 whose high bytes are zero and a varint on its low byte cut the same frames;
        // thrift: a u16 on the u32's high half cuts each frame in two. Neither is a rival.
        for (sample, port) in [("game", UInt16(8000)), ("thrift", 9090), ("zookeeper", 2181)] {
            let g = try XCTUnwrap(try ports(sample).first { $0.port == port })
            let s = try XCTUnwrap(g.search)
            let best = try XCTUnwrap(s.best)
            if let ru = s.runnerUp {
                XCTAssertFalse(ru.candidate.offset == best.candidate.offset && ru.share >= best.share,
                               "\(sample): \(ru.candidate) is a view of \(best.candidate)")
            }
        }
    }
}
