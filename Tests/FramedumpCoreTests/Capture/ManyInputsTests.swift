import Foundation
import XCTest
@testable import FramedumpCore

/// Several `-r` inputs merged into one run: the same output as framedump on what `mergecap`
/// makes of them, numbers included; `--each`, folders, globs, and the errors of a set.
final class ManyInputsTests: XCTestCase {
    /// Writes the packets of `file` whose 1-based number `keep` accepts into a new pcap file
    /// (libpcap's writer, the sample's link type): the pieces a test merges again.
    static func split(_ file: String, into path: String, keep: (UInt64) -> Bool) throws {
        let source = try PacketSource(.file(file))
        let dumper = try PacketDumper.create(path: path, linkType: source.linkType)
        try source.forEach(limit: nil) { p in
            if keep(p.ref.number) { dumper.write(p) }
            return true
        }
        dumper.flush()
    }

    /// samples/game.pcap dealt into two files, odd and even packets: every connection
    /// continues from one file into the other.
    static func dealt(_ dir: String) throws -> [String] {
        let a = dir + "/game-odd.pcap", b = dir + "/game-even.pcap"
        try split(TestSupport.sample("game.pcap"), into: a) { $0 % 2 == 1 }
        try split(TestSupport.sample("game.pcap"), into: b) { $0 % 2 == 0 }
        return [a, b]
    }

    static func mergecap(_ files: [String], into path: String) throws {
        let tool = try TestSupport.oracle("mergecap")
        let r = try TestSupport.run(tool, ["-w", path] + files)
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    /// framedump's output on the set against its output on mergecap's merge of it: tree,
    /// NDJSON, --diffable and per-segment lines, byte for byte.
    func assertSameAsMergecap(_ files: [String], extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let merged = dir + "/merged.pcapng"
        try Self.mergecap(files, into: merged)
        let set = files.flatMap { ["-r", $0] }
        for mode in [[], ["-T", "json"], ["--diffable"], ["--segments"], ["-q", "-z", "conv"]] {
            let ours = try TestSupport.framedump(set + mode + extra)
            let theirs = try TestSupport.framedump(["-r", merged] + mode + extra)
            XCTAssertEqual(ours.status, 0, ours.stderr, file: file, line: line)
            XCTAssertEqual(theirs.status, 0, theirs.stderr, file: file, line: line)
            XCTAssertFalse(ours.stdout.isEmpty, "\(mode): no output", file: file, line: line)
            XCTAssertEqual(ours.stdout, theirs.stdout, "\(mode): the set and mergecap's merge of it differ", file: file, line: line)
        }
    }

    func testDealtConnectionsMergeAsMergecapMergesThem() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = try Self.dealt(dir)
        try assertSameAsMergecap(files)
        // And as one run: the original capture's messages, its packet numbers too.
        let set = try TestSupport.framedump(["-r", files[0], "-r", files[1], "-T", "json"])
        let original = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-T", "json"])
        XCTAssertEqual(set.stdout, original.stdout)
    }

    func testThreeCapturesOverlappingInTime() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = try Self.dealt(dir) + [TestSupport.sample("kcp.pcap")]
        // kcp.pcap is later than game.pcap: shifted back so the three overlap.
        let shifted = dir + "/kcp-early.pcap"
        let source = try PacketSource(.file(files[2]))
        let dumper = try PacketDumper.create(path: shifted, linkType: source.linkType)
        try source.forEach(limit: nil) { p in
            var q = p
            q.ref.ts.seconds -= 1795443388 - 1795291173
            dumper.write(q)
            return true
        }
        dumper.flush()
        try assertSameAsMergecap([files[0], shifted, files[1]])
        // A BPF filter runs after the merge: numbers as mergecap's file filtered.
        try assertSameAsMergecap([files[0], shifted, files[1]], extra: ["tcp"])
    }

    /// Files of different link types (Linux cooked, BSD loopback, Ethernet) at the same
    /// instants: each packet keeps its own link type, ties go in file order.
    func testDifferentLinkTypesAndTies() throws {
        let files = [TestSupport.fixture("sll.pcap"), TestSupport.fixture("null.pcap"), TestSupport.fixture("vlan.pcap")]
        try assertSameAsMergecap(files)
    }

    /// `-Y … -w` reads a set twice, numbering both passes alike: the packets written are
    /// those the original capture gives.
    func testFilteredWriteFromASet() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = try Self.dealt(dir)
        let filter = "msg.name == \"Cs_20001\""
        let a = try TestSupport.framedump(["-r", files[0], "-r", files[1], "-Y", filter, "-w", dir + "/set.out", "-q"])
        let b = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-Y", filter, "-w", dir + "/one.out", "-q"])
        XCTAssertEqual(a.status, 0, a.stderr)
        XCTAssertEqual(b.status, 0, b.stderr)
        let fromSet = try TestSupport.framedump(["-r", dir + "/set.out", "-T", "json"])
        let fromOne = try TestSupport.framedump(["-r", dir + "/one.out", "-T", "json"])
        XCTAssertTrue(fromOne.stdout.contains("Cs_20001"), fromOne.stdout)
        XCTAssertEqual(fromSet.stdout, fromOne.stdout)
    }

    func testFolderAndGlobNameTheSameSet() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = try Self.dealt(dir)
        try "not a capture".write(toFile: dir + "/notes.txt", atomically: true, encoding: .utf8)
        let listed = try TestSupport.framedump(["-r", files[1], "-r", files[0], "-T", "json"])
        let folder = try TestSupport.framedump(["-r", dir, "-T", "json"])
        let glob = try TestSupport.framedump(["-r", dir + "/game-*.pcap", "-T", "json"])
        XCTAssertEqual(folder.status, 0, folder.stderr)
        XCTAssertEqual(glob.status, 0, glob.stderr)
        XCTAssertEqual(folder.stdout, listed.stdout)
        XCTAssertEqual(glob.stdout, listed.stdout)
    }

    func testNaturalOrderOfRotatedNames() {
        let names = ["x10", "x", "x2", "x1", "x09", "y"]
        XCTAssertEqual(names.sorted(by: CaptureFiles.naturalOrder), ["x", "x1", "x2", "x09", "x10", "y"])
        XCTAssertTrue(CaptureFiles.isCaptureName("a.pcap12"))
        XCTAssertTrue(CaptureFiles.isCaptureName("a.PCAPNG"))
        XCTAssertFalse(CaptureFiles.isCaptureName("a.txt"))
        XCTAssertFalse(CaptureFiles.isCaptureName("a.12"))
        XCTAssertFalse(CaptureFiles.isCaptureName(".pcap"))
    }

    /// --each: each file's lines are those of a run on it alone, under a header.
    func testEachGivesOneRunPerFile() throws {
        let a = TestSupport.sample("game.pcap"), b = TestSupport.sample("svc.pcap")
        let tree = try TestSupport.framedump(["-r", a, "-r", b, "--each"])
        let ta = try TestSupport.framedump(["-r", a]), tb = try TestSupport.framedump(["-r", b])
        XCTAssertEqual(tree.status, 0, tree.stderr)
        XCTAssertEqual(tree.stdout, "==> \(a) <==\n" + ta.stdout + "\n==> \(b) <==\n" + tb.stdout)
        let json = try TestSupport.framedump(["-r", a, "-r", b, "--each", "--diffable"])
        let ja = try TestSupport.framedump(["-r", a, "--diffable"]), jb = try TestSupport.framedump(["-r", b, "--diffable"])
        XCTAssertEqual(json.stdout, "{\"type\":\"file\",\"file\":\"\(a)\"}\n" + ja.stdout + "{\"type\":\"file\",\"file\":\"\(b)\"}\n" + jb.stdout)
    }

    // MARK: - A set's errors: one line naming the culprit, non-zero, no output

    func expectFailure(_ args: [String], status: Int32, contains text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try TestSupport.framedump(args)
        XCTAssertEqual(r.status, status, "\(args): \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(text), "\(args): stderr was \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line: \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stdout, "", file: file, line: line)
    }

    func testBadFileAmongManyIsNamed() throws {
        let bad = TestSupport.fixture("not_a_capture.pcap")
        try expectFailure(["-r", TestSupport.sample("game.pcap"), "-r", bad], status: 4, contains: bad)
        try expectFailure(["-r", TestSupport.sample("game.pcap"), "-r", bad, "--each"], status: 4, contains: bad)
        try expectFailure(["-r", TestSupport.sample("game.pcap"), "-r", "/nonexistent/x.pcap"], status: 3, contains: "/nonexistent/x.pcap: no such file")
    }

    func testNothingMatchedIsAnError() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try expectFailure(["-r", dir + "/*.pcap"], status: 3, contains: "no file matches this pattern")
        try expectFailure(["-r", dir], status: 3, contains: "no capture file in this folder")
        try expectFailure(["check", "-r", dir + "/*.pcap"], status: 2, contains: "no file matches this pattern")
        try expectFailure(["diff", dir + "/*.pcap", TestSupport.sample("game.pcap")], status: 2, contains: "no file matches this pattern")
    }

    func testOneFileTwiceAndStdinInASetAreRefused() throws {
        let game = TestSupport.sample("game.pcap")
        try expectFailure(["-r", game, "-r", game], status: 2, contains: "named twice")
        try expectFailure(["-r", game, "-r", "-"], status: 2, contains: "standard input")
    }

    func testCheckAndDiffTakeSets() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = try Self.dealt(dir)
        let check = try TestSupport.framedump(["check", "-r", files[0], "-r", files[1]])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(check.stderr.contains("2 files merged"), check.stderr)
        let same = try TestSupport.framedump(["diff", "--old", files[0], "--old", files[1], "--new", TestSupport.sample("game.pcap")])
        XCTAssertEqual(same.status, 0, same.stdout + same.stderr)
        let folder = try TestSupport.framedump(["diff", dir, TestSupport.sample("game.pcap")])
        XCTAssertEqual(folder.status, 0, folder.stdout + folder.stderr)
        // One side alone is not the set: the other half's messages are missing.
        let half = try TestSupport.framedump(["diff", files[0], TestSupport.sample("game.pcap")])
        XCTAssertEqual(half.status, 1, half.stdout + half.stderr)
        let mixed = try TestSupport.framedump(["diff", "--old", files[0], "--new", TestSupport.sample("game.pcap"), files[1]])
        XCTAssertEqual(mixed.status, 2, mixed.stderr)
    }
}

/// The merge against a model of mergecap's rule (the earliest of the files' next packets, a
/// tie to the file named first), on random sets: files out of order inside, files without a
/// packet, many ties, more files than are open at once.
final class MergeOrderPropertyTests: XCTestCase {
    func testRandomSetsMergeAsTheModelSays() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for seed in UInt64(1)...60 {
            var rng = SeededRandom(seed: seed)
            let fileCount = Int.random(in: 1...12, using: &rng)
            var files: [[(ts: Timestamp, id: UInt32)]] = []
            var id: UInt32 = 0
            for _ in 0..<fileCount {
                var t = Int64.random(in: 0...20, using: &rng)
                var packets: [(ts: Timestamp, id: UInt32)] = []
                for _ in 0..<Int.random(in: 0...30, using: &rng) {
                    // Mostly forward, sometimes the same instant, now and then back in time.
                    t += [0, 1, 1, 2, 3, -4].randomElement(using: &rng)!
                    packets.append((Timestamp(seconds: 1_700_000_000 + t, nanos: UInt32.random(in: 0...1, using: &rng)), id))
                    id += 1
                }
                files.append(packets)
            }
            var paths: [String] = []
            for (i, packets) in files.enumerated() {
                let path = dir + "/s\(seed)-\(i).pcap"
                let dumper = try PacketDumper.create(path: path, linkType: 1)
                for p in packets {
                    var bytes = withUnsafeBytes(of: p.id.bigEndian) { Array($0) }
                    bytes.withUnsafeMutableBytes { b in
                        dumper.write(Packet(ref: PacketRef(number: 0, ts: p.ts), data: UnsafeRawBufferPointer(b), wireLength: 4))
                    }
                }
                dumper.flush()
                paths.append(path)
            }
            // The model: heads compared, the earliest (then the first file) taken.
            var heads = Array(repeating: 0, count: files.count)
            var expected: [UInt32] = []
            while true {
                var best: Int?
                for f in files.indices where heads[f] < files[f].count {
                    if let b = best, !(files[f][heads[f]].ts < files[b][heads[b]].ts) { continue }
                    best = f
                }
                guard let b = best else { break }
                expected.append(files[b][heads[b]].id)
                heads[b] += 1
            }
            var got: [UInt32] = []
            var numbers: [UInt64] = []
            let merged = try MergedSource(files: paths)
            try merged.forEach(limit: nil) { p in
                got.append(p.data.u32be(0) ?? .max)
                numbers.append(p.ref.number)
                return true
            }
            XCTAssertEqual(got, expected, "seed \(seed)")
            XCTAssertEqual(numbers, Array(1...UInt64(max(1, expected.count))).prefix(expected.count).map { $0 }, "seed \(seed)")
        }
    }
}
