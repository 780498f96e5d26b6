import Foundation
import XCTest
@testable import FramedumpCore

/// Decoding on a second thread must not change a byte of the output or a count of the
/// summary: every sample and the awkward fixtures, in every output, on one thread and on two,
/// with batches so small that every boundary is crossed (and frames larger than a batch).
final class DecodeThreadTests: XCTestCase {
    /// The output and the summary (its memory line left out: it differs from run to run).
    func run(_ file: String, threaded: Bool, sizes: DecodeThread.Sizes = .init(),
             _ configure: (inout PipelineOptions) -> Void) throws -> String {
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        configure(&o)
        o.jobs = threaded ? 2 : 1
        o.decodeThreadSizes = sizes
        let out = OutputBuffer(fd: nil)
        let p = try Pipeline(options: o, output: out)
        // -z and --diffable (whole-run aggregates) get the second thread; the others are
        // sharded (`ShardPoolTests`).
        if o.statistics.isEmpty && !o.diffable {
            XCTAssertNil(p.decodeThread)
            XCTAssertEqual(p.shardPool != nil, threaded)
        } else {
            XCTAssertEqual(p.decodeThread != nil, threaded)
        }
        let src = try PacketSource(.file(file))
        try? p.run(src, limit: nil, dumper: nil, lineBuffered: false)
        p.finish()
        p.printSummary(live: nil)
        return out.text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("peak memory: ") }.joined(separator: "\n")
    }

    static let outputs: [(String, @Sendable (inout PipelineOptions) -> Void)] = [
        ("tree -x -v", { $0.hexDump = true; $0.verbose = 1 }),
        ("json", { $0.format = .json }),
        ("diffable", { $0.format = .json; $0.diffable = true }),
        ("-q", { $0.quiet = true }),
        ("-z", { $0.statistics = [.msgs, .conv, .rtt]; $0.verbose = 1 }),
        ("-Y", { $0.displayFilter = "msg.dir == \"s2c\""; $0.verbose = 1 }),
    ]

    static let tiny = DecodeThread.Sizes(events: 3, blockBytes: 64, batches: 2)

    func testSamplesPrintTheSameOnTwoThreads() throws {
        let samples = try FileManager.default.contentsOfDirectory(atPath: TestSupport.sample(""))
            .filter { $0.hasSuffix(".pcap") }.sorted()
        XCTAssertGreaterThanOrEqual(samples.count, 5)
        for s in samples {
            for (name, configure) in Self.outputs {
                let one = try run(TestSupport.sample(s), threaded: false, configure)
                XCTAssertFalse(one.isEmpty)
                for sizes in [DecodeThread.Sizes(), Self.tiny] {
                    let two = try run(TestSupport.sample(s), threaded: true, sizes: sizes, configure)
                    XCTAssertEqual(one, two, "\(s) \(name) \(sizes)")
                }
            }
        }
    }

    /// Gaps, conflicts, late data, resets, a capture cut mid-record: the manager's events keep
    /// their places among the frames.
    func testAwkwardCapturesPrintTheSameOnTwoThreads() throws {
        let fixtures = ["lost_segment.pcap", "conflict.pcap", "late_data.pcap", "rst_out_of_window.pcap",
                        "after_fin.pcap", "cut.pcap", "reorder_wrap.pcap", "http_on_game_port.pcap",
                        "check_problems.pcap", "snaplen.pcap"]
        for f in fixtures {
            for (name, configure) in Self.outputs.prefix(2) {
                let one = try run(TestSupport.fixture(f), threaded: false, configure)
                let two = try run(TestSupport.fixture(f), threaded: true, sizes: Self.tiny, configure)
                XCTAssertEqual(one, two, "\(f) \(name)")
            }
        }
    }

    /// A pipeline dropped before it read anything (its capture would not open) ends its
    /// decoding thread rather than leaving it waiting (the waiting thread would keep the
    /// handoff alive).
    func testAPipelineDroppedUnusedEndsItsThread() throws {
        weak var handoff: DecodeThread?
        do {
            var o = PipelineOptions()
            o.dissectorPaths = [TestSupport.dissectors]
            o.jobs = 2
            o.statistics = [.msgs]
            let p = try Pipeline(options: o, output: OutputBuffer(fd: nil))
            handoff = p.decodeThread
            XCTAssertNotNil(handoff)
        }
        XCTAssertNil(handoff, "the decoding thread outlived its pipeline")
    }

    /// A closed output stops the reader on both threads' behalf (`framedump -r big | head`).
    func testAClosedPipeStopsTheReader() throws {
        let r = try TestSupport.run("/bin/sh", ["-c", "\"$0\" -r samples/websocket-deflate.pcap | head -n 1", TestSupport.binary],
                                    cwd: TestSupport.root.path)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 1)
        XCTAssertEqual(r.stderr, "")
    }
}
