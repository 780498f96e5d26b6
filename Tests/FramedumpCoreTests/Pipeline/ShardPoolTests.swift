import Foundation
import XCTest
@testable import FramedumpCore

/// Sharding the connections among threads (`-j`) must not change a byte of the output or a
/// count of the summary: every sample and fixture, in every output the shards make, on one
/// thread and on 2, 3 and 5 shards, with rounds so small that every boundary is crossed (and
/// chunks larger than a batch's block).
final class ShardPoolTests: XCTestCase {
    /// The output and the summary (its memory line left out: it differs from run to run).
    static func run(_ file: String, jobs: Int, sizes: ShardPool.Sizes = .init(), keys: String? = nil,
             _ configure: (inout PipelineOptions) -> Void) throws -> String {
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        if let keys { o.tlsKeyLogs = [keys] }
        configure(&o)
        o.jobs = jobs
        o.shardSizes = sizes
        let out = OutputBuffer(fd: nil)
        let p = try Pipeline(options: o, output: out)
        XCTAssertEqual(p.shardPool?.shards.count, jobs > 1 ? jobs : nil)
        // A capture the reader refuses is refused the same on both: the comparison is of text.
        let src: PacketSource
        do { src = try PacketSource(.file(file)) } catch { return "refused: \(error)" }
        try? p.run(src, limit: nil, dumper: nil, lineBuffered: false)
        p.finish()
        p.printSummary(live: nil)
        return out.text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("peak memory: ") }.joined(separator: "\n")
    }

    static let outputs: [(String, @Sendable (inout PipelineOptions) -> Void)] = [
        ("tree -x -v", { $0.hexDump = true; $0.verbose = 1 }),
        ("json -v", { $0.format = .json; $0.verbose = 1 }),
        ("-q -v", { $0.quiet = true; $0.verbose = 1 }),
        ("-Y -v", { $0.displayFilter = "msg.dir == \"s2c\""; $0.verbose = 1 }),
        ("-q -Y", { $0.displayFilter = "msg.dir == \"c2s\""; $0.quiet = true }),
        // Whole-run aggregates: the shards' statistics records counted in the run's order,
        // their connections held for --diffable merged in the order they appeared.
        ("-z", { $0.statistics = ShardPoolTests.everyTable; $0.verbose = 1 }),
        ("--diffable -z", { $0.format = .json; $0.diffable = true; $0.statistics = ShardPoolTests.everyTable }),
        ("-T json -z -Y", { $0.format = .json; $0.statistics = ShardPoolTests.everyTable; $0.displayFilter = "msg.dir == \"s2c\"" }),
    ]

    static let everyTable: [StatisticsKind] = [.msgs, .conv, .rtt, .rate(nanos: 20_000_000), .rate(nanos: 1_000_000_000), .layer("kcp")]

    /// Rounds of three events, 64-byte blocks, output buffers of one byte (every line grows one).
    static let tiny = ShardPool.Sizes(events: 3, blockBytes: 64, rounds: 2, outBytes: 1)

    /// The key log each capture needs, if any.
    static func keys(_ path: String) -> String? {
        let base = (path as NSString).lastPathComponent
        for (capture, keys) in [("tls12.pcap", "tls12.keys"), ("tls13.pcap", "tls13.keys")] where base == capture {
            return TestSupport.sample(keys)
        }
        if base == "tls_split.pcap" { return TestSupport.fixture("tls_split.keys") }
        return nil
    }

    func testSamplesPrintTheSameOnEveryShardCount() throws {
        var samples = try FileManager.default.contentsOfDirectory(atPath: TestSupport.sample(""))
            .filter { $0.hasSuffix(".pcap") }.sorted()
        XCTAssertGreaterThanOrEqual(samples.count, 10)
        if TestSupport.sanitized {
            // One of each layer and of state: TCP, WebSocket with deflate, TLS, KCP, pairing, phases.
            let some = ["game.pcap", "websocket-deflate.pcap", "tls13.pcap", "kcp.pcap", "pairs.pcap", "mysql-prepared.pcap"]
            XCTAssertEqual(samples.filter(some.contains).count, some.count)
            samples = some
        }
        let paths = samples.map { TestSupport.sample($0) }
        var shardedRuns = 0
        for s in paths {
            for (name, configure) in Self.outputs {
                let one = try Self.run(s, jobs: 1, keys: Self.keys(s), configure)
                XCTAssertFalse(one.isEmpty)
                for (jobs, sizes) in [(2, ShardPool.Sizes()), (3, Self.tiny), (5, Self.tiny)] {
                    let many = try Self.run(s, jobs: jobs, sizes: sizes, keys: Self.keys(s), configure)
                    XCTAssertEqual(one, many, "\(s) \(name) -j \(jobs) \(sizes)")
                    if one != many, ProcessInfo.processInfo.environment["SHARD_DEBUG"] != nil {
                        try? one.write(toFile: "/tmp/shard-one.txt", atomically: true, encoding: .utf8)
                        try? many.write(toFile: "/tmp/shard-many.txt", atomically: true, encoding: .utf8)
                    }
                    shardedRuns += 1
                }
            }
        }
        XCTAssertEqual(shardedRuns, samples.count * Self.outputs.count * 3)
    }

    /// Gaps, conflicts, late data, resets, a capture cut mid-record, fragments, tunnels, TLS
    /// cut and realigned, WebSocket losses: every stream event keeps its place.
    func testFixturesPrintTheSameSharded() throws {
        let fixtures = try FileManager.default.contentsOfDirectory(atPath: TestSupport.fixture(""))
            .filter { $0.hasSuffix(".pcap") || $0.hasSuffix(".pcapng") }.sorted().map { TestSupport.fixture($0) }
        XCTAssertGreaterThanOrEqual(fixtures.count, 40)
        // Under a sanitizer: every other fixture, in NDJSON and --diffable.
        let outputs = TestSupport.sanitized ? [Self.outputs[1], Self.outputs[6]]
            : [Self.outputs[1], Self.outputs[2], Self.outputs[4], Self.outputs[6]]
        for (i, f) in fixtures.enumerated() where !TestSupport.sanitized || i % 2 == 0 {
            for (name, configure) in outputs {
                let one = try Self.run(f, jobs: 1, keys: Self.keys(f), configure)
                let many = try Self.run(f, jobs: 3, sizes: Self.tiny, keys: Self.keys(f), configure)
                XCTAssertEqual(one, many, "\(f) \(name)")
            }
        }
    }

    /// The same run many times over, in rounds of one to three events, two rounds in all: the
    /// threads meet at every point they can (a round handed back while the merge still held it
    /// once cut the last lines of a run, one time in two).
    func testRepeatedRunsInTinyRounds() throws {
        for name in ["game.pcap", "zgame.pcap", "svc.pcap"] {
            let f = TestSupport.sample(name)
            let one = try Self.run(f, jobs: 1) { $0.verbose = 1; $0.statistics = ShardPoolTests.everyTable }
            XCTAssertGreaterThan(one.split(separator: "\n").count, 200)
            for i in 0..<24 {
                let sizes = ShardPool.Sizes(events: 1 + i % 3, blockBytes: 16 << (i % 4), rounds: 2, outBytes: 1 << (i % 5))
                let many = try Self.run(f, jobs: 2 + i % 4, sizes: sizes) { $0.verbose = 1; $0.statistics = ShardPoolTests.everyTable }
                XCTAssertEqual(one, many, "\(name) run \(i) \(sizes)")
            }
        }
    }

    /// A pipeline dropped before it read anything (its capture would not open) ends its
    /// shards' threads rather than leaving them waiting.
    func testAPipelineDroppedUnusedEndsItsThreads() throws {
        weak var pool: ShardPool?
        do {
            var o = PipelineOptions()
            o.dissectorPaths = [TestSupport.dissectors]
            o.jobs = 3
            let p = try Pipeline(options: o, output: OutputBuffer(fd: nil))
            pool = p.shardPool
            XCTAssertNotNil(pool)
        }
        XCTAssertNil(pool, "the shards' threads outlived their pipeline")
    }

    /// `-j` on the command line: the same bytes as `-j 1`, in tree and NDJSON, on a set of
    /// files merged; and a bad count is refused.
    func testCommandLine() throws {
        for args in [["-r", "samples/game.pcap", "-r", "samples/svc.pcap"], ["-r", "samples/bridge.pcap", "-T", "json"]] {
            let one = try TestSupport.run(TestSupport.binary, args + ["-j", "1"], cwd: TestSupport.root.path)
            let four = try TestSupport.run(TestSupport.binary, args + ["-j", "4"], cwd: TestSupport.root.path)
            XCTAssertEqual(one.status, 0, one.stderr)
            XCTAssertFalse(one.stdout.isEmpty)
            XCTAssertEqual(one.stdout, four.stdout, "\(args)")
        }
        // The whole-run aggregates too, from the command line.
        for args in [["-r", "samples/kcp.pcap", "-z", "kcp", "-z", "conv", "-z", "msgs"],
                     ["-r", "samples/scenario-a.pcap", "-r", "samples/game-latency.pcap", "-T", "json", "--diffable", "-z", "rtt"],
                     ["-r", "samples/pairs.pcap", "-r", "samples/game-latency.pcap", "-q", "-z", "rtt"],
                     ["-r", "samples/grpc.pcap", "-z", "grpc", "-z", "rtt"]] {
            let one = try TestSupport.run(TestSupport.binary, args + ["-j", "1"], cwd: TestSupport.root.path)
            let four = try TestSupport.run(TestSupport.binary, args + ["-j", "4"], cwd: TestSupport.root.path)
            XCTAssertEqual(one.status, 0, one.stderr)
            XCTAssertTrue(one.stdout.contains("\"stat\":\"rtt\"") || one.stdout.contains("=== KCP conversations ===")
                          || one.stdout.contains("EnterRoomReq         6") || one.stdout.contains("=== gRPC calls by method ==="), one.stdout)
            XCTAssertEqual(one.stdout, four.stdout, "\(args)")
        }
        let bad = try TestSupport.run(TestSupport.binary, ["-r", "samples/game.pcap", "-j", "0"], cwd: TestSupport.root.path)
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("-j must be from 1 to 64"), bad.stderr)
    }

    /// A closed output stops the reader on the shards' behalf (`framedump -r big | head`).
    func testAClosedPipeStopsTheReader() throws {
        for jobs in ["1", "3"] {
            let r = try TestSupport.run("/bin/sh", ["-c", "\"$0\" -r samples/websocket-deflate.pcap -j \"$1\" | head -n 1", TestSupport.binary, jobs],
                                        cwd: TestSupport.root.path)
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.stdout.split(separator: "\n").count, 1)
            XCTAssertEqual(r.stderr, "")
        }
    }

    /// `-z kcp`'s rows from several shards: in the order of their first packets, and past
    /// the bound of rows, folded into the overflow row as one thread would have.
    func testKCPRowsMergeInPacketOrderUnderTheBound() {
        func state(_ packets: [UInt64]) -> KCPManagerState {
            let k = KCPManagerState()
            for p in packets {
                let r = KCPConversationStats(connection: p, endpoints: "e\(p)", protocolName: "kcpgame", conv: UInt32(p))
                r.firstPacket = p
                r.pushes = [1, 2]
                k.rows.append(r)
            }
            return k
        }
        let run = KCPManagerState()
        run.absorb(state([2, 5, 9]))
        run.absorb(state([1, 6]))
        XCTAssertEqual(run.rows.map(\.firstPacket), [1, 2, 5, 6, 9])
        XCTAssertEqual(run.overflowed, 0)
        let n = KCPManagerState.maxRows
        let big = KCPManagerState()
        big.absorb(state((0..<UInt64(n)).map { $0 * 2 + 1 }))
        big.absorb(state((0..<UInt64(n)).map { $0 * 2 }))
        XCTAssertEqual(big.rows.count, n)
        XCTAssertEqual(big.rows.map(\.firstPacket), (0..<UInt64(n)).map { $0 })
        XCTAssertEqual(big.overflowed, UInt64(n))
        XCTAssertEqual(big.overflow.pushes, [UInt64(n), UInt64(2 * n)])
    }
}
