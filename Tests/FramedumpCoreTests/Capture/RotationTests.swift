import Foundation
import XCTest
@testable import FramedumpCore

/// `-w` with `-C`, `-G`, `-W`: tcpdump's file names and sizes, and files that read back as
/// one run give the original capture's output.
final class RotationTests: XCTestCase {
    /// `copies` copies of a sample one after another, each `shift` seconds after the one
    /// before (connections and all): a capture long and big enough to rotate.
    static func repeated(_ sample: String, copies: Int, shift: Int64, into path: String) throws {
        let dumper = try PacketDumper.create(path: path, linkType: try PacketSource(.file(sample)).linkType)
        for k in 0..<copies {
            let source = try PacketSource(.file(sample))
            try source.forEach(limit: nil) { p in
                var q = p
                q.ref.ts.seconds += Int64(k) * shift
                dumper.write(q)
                return true
            }
        }
        dumper.flush()
    }

    static func listing(_ dir: String) throws -> [String: Int] {
        var out: [String: Int] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            out[name] = (try FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.size] as? Int) ?? -1
        }
        return out
    }

    /// The same names, and the same size for each (the record headers are 16 bytes in both
    /// tools' files: only the timestamps' precision differs), as tcpdump makes.
    func testSizeRotationMatchesTcpdump() throws {
        let tcpdump = try TestSupport.oracle("tcpdump")
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = dir + "/big.pcap"
        try Self.repeated(TestSupport.sample("tls12.pcap"), copies: 8, shift: 100, into: big)
        for extra in [["-C", "1"], ["-C", "1", "-W", "2"], ["-C", "1", "-W", "11"], ["-C", "2", "-W", "1"]] {
            let theirs = dir + "/tcpdump", ours = dir + "/framedump"
            for d in [theirs, ours] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
            let t = try TestSupport.run(tcpdump, ["-Z", "root", "-r", big, "-w", theirs + "/x"] + extra)
            XCTAssertEqual(t.status, 0, t.stderr)
            let f = try TestSupport.framedump(["-r", big, "-w", ours + "/x", "-q"] + extra)
            XCTAssertEqual(f.status, 0, f.stderr)
            let expected = try Self.listing(theirs)
            XCTAssertGreaterThan(expected.count, extra.contains("-W") && extra.last == "1" ? 0 : 1, "\(extra): \(expected)")
            XCTAssertEqual(try Self.listing(ours), expected, "\(extra)")
            for d in [theirs, ours] { try FileManager.default.removeItem(atPath: d) }
        }
    }

    /// A capture rotated into many small files, read back as a set: the original's output,
    /// packet numbers and connections continuing from file to file included.
    func testRotatedFilesReadBackAsTheOriginal() throws {
        for (sample, extra) in [("game.pcap", [String]()), ("wss.pcap", ["--tls-keylog", TestSupport.sample("wss.keys")]),
                                ("kcp.pcap", ["-z", "kcp"])] {
            let dir = TestSupport.tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let w = try TestSupport.framedump(["-r", TestSupport.sample(sample), "-w", dir + "/part.pcap", "-C", "2k", "-q"])
            XCTAssertEqual(w.status, 0, w.stderr)
            XCTAssertGreaterThan(try Self.listing(dir).count, 2, sample)
            for mode in [[], ["-T", "json"], ["--diffable"]] {
                let original = try TestSupport.framedump(["-r", TestSupport.sample(sample)] + mode + extra)
                let parts = try TestSupport.framedump(["-r", dir + "/part.pcap*"] + mode + extra)
                XCTAssertEqual(parts.status, 0, parts.stderr)
                XCTAssertFalse(original.stdout.isEmpty)
                XCTAssertEqual(parts.stdout, original.stdout, "\(sample) \(mode)")
                // The folder: its .pcap file and the .pcap1, .pcap2… -C wrote after it.
                let folder = try TestSupport.framedump(["-r", dir] + mode + extra)
                XCTAssertEqual(folder.stdout, original.stdout, "\(sample) \(mode), the folder")
            }
        }
    }

    /// The files are written while the messages are printed as they would be without -w.
    func testDecodingGoesOnWhileWriting() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plain = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap")])
        let writing = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-w", dir + "/g", "-C", "1k", "-W", "3", "--print"])
        XCTAssertEqual(writing.status, 0, writing.stderr)
        XCTAssertEqual(writing.stdout, plain.stdout)
        XCTAssertEqual(Set(try Self.listing(dir).keys), ["g0", "g1", "g2"])
    }

    /// -G by packet time: one file per window, named by strftime at the packet that opened it.
    func testTimeRotationNamesFilesByPacketTime() throws {
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let long = dir + "/long.pcap"
        try Self.repeated(TestSupport.sample("game.pcap"), copies: 3, shift: 3600, into: long)
        let out = dir + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let r = try TestSupport.run(TestSupport.binary, ["-r", long, "-w", out + "/g-%Y%m%d-%H%M%S.pcap", "-G", "600", "-q"],
                                    cwd: TestSupport.root.path, environment: ["TZ": "UTC"])
        XCTAssertEqual(r.status, 0, r.stderr)
        // game.pcap begins at 1795291173 (2026-11-21 19:59:33 UTC).
        XCTAssertEqual(Set(try Self.listing(out).keys), ["g-20261121-195933.pcap", "g-20261121-205933.pcap", "g-20261121-215933.pcap"])
        let back = try TestSupport.framedump(["-r", out, "-T", "json"])
        let original = try TestSupport.framedump(["-r", long, "-T", "json"])
        XCTAssertEqual(back.stdout, original.stdout)

        // -W with -G alone: the run stops when one more file would begin.
        let two = dir + "/two"
        try FileManager.default.createDirectory(atPath: two, withIntermediateDirectories: true)
        let w = try TestSupport.run(TestSupport.binary, ["-r", long, "-w", two + "/g-%H%M%S.pcap", "-G", "600", "-W", "2", "-q"],
                                    cwd: TestSupport.root.path, environment: ["TZ": "UTC"])
        XCTAssertEqual(w.status, 0, w.stderr)
        XCTAssertTrue(w.stderr.contains("-W 2: the last of 2 files is written"), w.stderr)
        XCTAssertEqual(Set(try Self.listing(two).keys), ["g-195933.pcap", "g-205933.pcap"])
    }

    func testNamesAsTcpdumpMakesThem() throws {
        XCTAssertEqual(try Rotation(fileSize: 1).name("x", count: 0, time: 0), "x")
        XCTAssertEqual(try Rotation(fileSize: 1).name("x", count: 12, time: 0), "x12")
        XCTAssertEqual(try Rotation(fileSize: 1, files: 10).name("x", count: 0, time: 0), "x0")
        XCTAssertEqual(try Rotation(fileSize: 1, files: 11).name("x", count: 3, time: 0), "x03")
        XCTAssertEqual(try Rotation(fileSize: 1, files: 1).name("x", count: 0, time: 0), "x")
        XCTAssertEqual(try Rotation(seconds: 5, files: 3).name("x", count: 0, time: 0), "x")
    }

    func testRotationOptionsAreChecked() throws {
        let game = TestSupport.sample("game.pcap")
        for (args, text) in [(["-C", "1"], "give -w FILE"), (["-w", "/tmp/x", "-W", "2"], "-W counts the files"),
                             (["-w", "-", "-C", "1"], "standard output"), (["-w", "/tmp/x", "-C", "0"], "-C 0"),
                             (["-w", "/tmp/x", "-C", "1q"], "-C 1q"), (["-w", "/tmp/x", "-G", "0"], "-G must be")] {
            let r = try TestSupport.framedump(["-r", game] + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(text), "\(args): \(r.stderr)")
        }
    }
}
