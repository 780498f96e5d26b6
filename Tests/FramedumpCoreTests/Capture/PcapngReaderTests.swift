import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// The pcapng files libpcap 1.10 refuses or cuts short, read by `PcapngReader` (fixtures by
/// `scripts/make_pcapng_fixtures.py`): reassembled and compared byte for byte with tshark's
/// TCP follow, filtered per link type, written with -w, and garbage refused in one line.
final class PcapngReaderTests: XCTestCase {
    /// Each fixture, with what libpcap says when it stops reading it.
    static let refused = [
        ("multi_link.pcapng", "an interface has a type 276 different from the type of the first interface"),
        ("sections.pcapng", "pcapng block size 1006632960 > maximum 16777216"),
        ("snaplens.pcapng", "an interface has a snapshot length 262144 different from the snapshot length of the first interface"),
        ("pcapng2.pcapng", "unsupported pcapng savefile version 2.0"),
        ("over_snaplen.pcapng", "invalid packet capture length 82, bigger than snaplen of 64"),
    ]

    func testLibpcapRefusesAndOurReaderReadsOn() throws {
        for (name, why) in Self.refused {
            let source = try PacketSource(.file(TestSupport.fixture(name)))
            var n = 0
            try source.forEach { _ in n += 1; return true }
            XCTAssertEqual(source.handedOver, why, name)
            XCTAssertGreaterThan(n, 0, name)
        }
        // A pcapng file libpcap reads stays libpcap's from start to end.
        let plain = try PacketSource(.file(TestSupport.fixture("mixed.pcapng")))
        try plain.forEach { _ in true }
        XCTAssertNil(plain.handedOver)
    }

    /// tshark 4.0 refuses section headers other than 1.0 and 1.2 too: its oracle for
    /// pcapng2.pcapng is the same file with a 1.0 header.
    func oracleFile(_ name: String) throws -> String {
        guard name == "pcapng2.pcapng" else { return TestSupport.fixture(name) }
        var d = try Data(contentsOf: URL(fileURLWithPath: TestSupport.fixture(name)))
        d[12] = 1; d[13] = 0; d[14] = 0; d[15] = 0
        let copy = TestSupport.tempDir() + "/pcapng1.pcapng"
        try d.write(to: URL(fileURLWithPath: copy))
        return copy
    }

    func testStreamsMatchTsharkFollow() throws {
        let tshark = try TestSupport.oracle("tshark")
        for (name, _) in Self.refused {
            let cap = TestSupport.fixture(name)
            let dir = TestSupport.tempDir()
            let r = try TestSupport.framedump(["-r", cap, "-q", "-d", TestSupport.dissectors, "--streams", dir])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stdout.contains("gaps: 0 (0 bytes)"), "\(name): \(r.stdout)")
            let index = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as! [[String: Any]]
            let oracle = try oracleFile(name)
            let conv = try TestSupport.run(tshark, ["-r", oracle, "-q", "-z", "conv,tcp"])
            XCTAssertEqual(index.count, conv.stdout.split(separator: "\n").filter { $0.contains("<->") }.count, "\(name): connections")
            for (n, entry) in index.enumerated() {
                let follow = try TestSupport.run(tshark, ["-r", oracle, "-q", "-z", "follow,tcp,raw,\(n)"])
                XCTAssertEqual(follow.status, 0, follow.stderr)
                let (nodes, bytes) = ReassemblyTests.parseFollow(follow.stdout)
                let files = entry["files"] as! [String: String]
                let client = String((entry["conn"] as! String).split(separator: "-").first!)
                let clientNode = nodes.firstIndex(of: client) ?? 0
                XCTAssertFalse(bytes[0].isEmpty || bytes[1].isEmpty, "\(name) stream \(n): tshark followed nothing")
                for d in ["c2s", "s2c"] {
                    let ours = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: dir + "/" + files[d]!))) ?? Data())
                    XCTAssertEqual(ours, bytes[d == "c2s" ? clientNode : 1 - clientNode], "\(name) stream \(n) \(d)")
                }
            }
        }
        // Every game message decoded: four connections on four link types, one over the snaplen.
        let ml = try TestSupport.framedump(["-r", TestSupport.fixture("multi_link.pcapng"), "-q", "-d", TestSupport.dissectors])
        XCTAssertTrue(ml.stdout.contains("game: 4 connections, 16 messages"), ml.stdout)
        XCTAssertTrue(ml.stdout.contains("skipped packets: 1 not TCP"), ml.stdout)
        let big = try TestSupport.framedump(["-r", TestSupport.fixture("over_snaplen.pcapng"), "-q", "-d", TestSupport.dissectors])
        XCTAssertTrue(big.stdout.contains("game: 1 connections, 5 messages, 486 bytes in frames"), big.stdout)
    }

    func testLinkTypeAndTimestampPerInterface() throws {
        var seen: [(Int32, Timestamp, Int)] = []
        let source = try PacketSource(.file(TestSupport.fixture("multi_link.pcapng")))
        try source.forEach { p in seen.append((p.linkType, p.ref.ts, p.data.count)); return true }
        XCTAssertEqual(source.linkType, 1)
        XCTAssertEqual(source.linkTypesSeen, [1, 276, 12, 0])  // LINKTYPE_RAW 101 is libpcap's DLT_RAW 12
        XCTAssertEqual(seen.count, 37)
        XCTAssertEqual(seen.map(\.0).prefix(8), [1, 1, 1, 1, 276, 12, 0, 1])
        // SLL2 in nanoseconds; raw IP in 2^-20 s units with if_tsoffset -100 s; an Obsolete
        // Packet Block (packet 8); a Simple Packet Block last (no timestamp: 0).
        XCTAssertEqual(seen[4].1, Timestamp(seconds: 1_700_000_000, nanos: 4_000_007))
        XCTAssertEqual(seen[5].1.seconds, 1_700_000_000)
        XCTAssertEqual(seen[5].1.nanos / 1000, 4999)
        XCTAssertEqual(seen[7].1, Timestamp(seconds: 1_700_000_000, nanos: 7_000_000))
        XCTAssertEqual(seen[36].1, Timestamp(seconds: 0, nanos: 0))
        XCTAssertEqual(seen[36].0, 1)

        let sections = try PacketSource(.file(TestSupport.fixture("sections.pcapng")))
        try sections.forEach { _ in true }
        XCTAssertEqual(sections.linkTypesSeen, [1, 258, 113])
    }

    func testBPFFilterPerLinkType() throws {
        func packets(_ name: String, _ filter: String) throws -> String {
            let r = try TestSupport.framedump(["-r", TestSupport.fixture(name), "-q", "-d", TestSupport.dissectors, filter])
            XCTAssertEqual(r.status, 0, r.stderr)
            return String(r.stdout.split(separator: "\n").first ?? "")
        }
        // One connection per interface: Ethernet, SLL2, raw IP, NULL.
        XCTAssertEqual(try packets("multi_link.pcapng", "tcp port 40001"), "packets: 9 (558 bytes), TCP segments: 9")
        XCTAssertEqual(try packets("multi_link.pcapng", "tcp port 40002"), "packets: 9 (612 bytes), TCP segments: 9")
        XCTAssertEqual(try packets("multi_link.pcapng", "tcp port 40003"), "packets: 9 (432 bytes), TCP segments: 9")
        XCTAssertEqual(try packets("multi_link.pcapng", "tcp port 40004"), "packets: 9 (468 bytes), TCP segments: 9")
        XCTAssertEqual(try packets("multi_link.pcapng", "udp"), "packets: 1 (62 bytes), TCP segments: 0")
        // PKTAP (no libpcap filter outside macOS): the packet inside, by its own link type.
        XCTAssertEqual(try packets("sections.pcapng", "tcp port 40012"), "packets: 9 (1530 bytes), TCP segments: 9")
        XCTAssertEqual(try packets("sections.pcapng", "tcp port 40013"), "packets: 9 (576 bytes), TCP segments: 9")
        let bad = try TestSupport.framedump(["-r", TestSupport.fixture("pcapng2.pcapng"), "-q", "tcp["])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.hasPrefix("framedump: bad filter expression 'tcp['"), bad.stderr)
    }

    /// -w: libpcap's pcap writer holds one link type. Interfaces that differ only in snaplen
    /// are written; a packet of a second link type stops the run with exit 9.
    func testWriteOneLinkType() throws {
        let dir = TestSupport.tempDir()
        let ok = try TestSupport.framedump(["-r", TestSupport.fixture("snaplens.pcapng"), "-q", "-w", dir + "/a.pcap"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        var n = 0
        try PacketSource(.file(dir + "/a.pcap")).forEach { _ in n += 1; return true }
        XCTAssertEqual(n, 18)
        let mixed = try TestSupport.framedump(["-r", TestSupport.fixture("multi_link.pcapng"), "-q", "-w", dir + "/b.pcap"])
        XCTAssertEqual(mixed.status, 9)
        XCTAssertEqual(mixed.stderr, "framedump: \(dir)/b.pcap: cannot write capture: packet 5 has link type 276 (LINUX_SLL2), the file being written has 1 (EN10MB): a pcap file holds one link type (the packets before it are written)\n")
        n = 0
        try PacketSource(.file(dir + "/b.pcap")).forEach { _ in n += 1; return true }
        XCTAssertEqual(n, 4)
        // A whole file of one link type read by our reader from the start (a 2.0 header).
        let v2 = try TestSupport.framedump(["-r", TestSupport.fixture("pcapng2.pcapng"), "-q", "-w", dir + "/c.pcap"])
        XCTAssertEqual(v2.status, 0, v2.stderr)
        n = 0
        try PacketSource(.file(dir + "/c.pcap")).forEach { _ in n += 1; return true }
        XCTAssertEqual(n, 9)
    }

    func testGarbageIsOneLineAndNonZero() throws {
        func run(_ path: String) throws -> TestSupport.Result {
            let r = try TestSupport.framedump(["-r", path, "-q", "-d", TestSupport.dissectors])
            XCTAssertNotEqual(r.status, 0, path)
            XCTAssertEqual(r.stderr.filter { $0 == "\n" }.count, 1, r.stderr)
            return r
        }
        var r = try run(TestSupport.fixture("pcapng_garbage.pcapng"))
        XCTAssertEqual(r.status, 4)
        XCTAssertTrue(r.stderr.hasSuffix("pcapng_garbage.pcapng: not a pcap or pcapng capture (pcapng block at offset 92: block length 4294967280 > maximum 67108864)\n"), r.stderr)
        r = try run(TestSupport.fixture("pcapng_cut.pcapng"))
        XCTAssertEqual(r.status, 5)
        XCTAssertTrue(r.stderr.hasSuffix("pcapng_cut.pcapng: capture is cut off mid-record (pcapng block at offset 4288 is 100 bytes, 30 remain)\n"), r.stderr)
        // What came before the cut is still reported.
        XCTAssertTrue(r.stdout.contains("packets: 35"), r.stdout)

        // Hand-made damage to the 2.0 file (read by our reader from its first block).
        let good = try Data(contentsOf: URL(fileURLWithPath: TestSupport.fixture("pcapng2.pcapng")))
        let dir = TestSupport.tempDir()
        func damaged(_ name: String, _ change: (inout Data) -> Void) -> String {
            var d = good
            change(&d)
            let p = dir + "/" + name
            _ = FileManager.default.createFile(atPath: p, contents: d)
            return p
        }
        func put(_ d: inout Data, _ at: Int, _ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.replaceSubrange(at..<at + 4, with: $0) } }
        let shbLength = Int(good[4]) | Int(good[5]) << 8
        let idbLength = Int(good[shbLength + 4]) | Int(good[shbLength + 5]) << 8
        let epb = shbLength + idbLength
        r = try run(damaged("trailer", { put(&$0, epb + 4, 0x200) }))
        XCTAssertTrue(r.stderr.contains("its trailing length"), r.stderr)
        r = try run(damaged("iface", { put(&$0, epb + 8, 7) }))
        XCTAssertTrue(r.stderr.contains("a packet on interface 7, but the section describes 1"), r.stderr)
        r = try run(damaged("caplen", { put(&$0, epb + 20, 0xFFFF_FF00) }))
        XCTAssertTrue(r.stderr.contains("captured length 4294967040 > the block's"), r.stderr)
        r = try run(damaged("odd", { put(&$0, epb + 4, 0x3d) }))
        XCTAssertTrue(r.stderr.contains("block length 61 (at least 12, a multiple of 4)"), r.stderr)
        r = try run(damaged("version", { $0[12] = 3 }))
        XCTAssertTrue(r.stderr.hasSuffix("not a pcap or pcapng capture (pcapng version 3.0)\n"), r.stderr)
        r = try run(damaged("resolution", { d in
            // if_name's 4-byte value is followed by if_tsresol at its option header: 10^-99.
            let opt = shbLength + 16
            d.replaceSubrange(opt..<opt + 8, with: [9, 0, 1, 0, 99, 0, 0, 0])
        }))
        XCTAssertTrue(r.stderr.contains("timestamp resolution 10^-99"), r.stderr)
        r = try run(damaged("cut-header", { $0 = $0.prefix(shbLength + 6) }))
        XCTAssertEqual(r.status, 5)

        // Every 4-byte field of the first blocks set to extremes, in memory: an error or
        // packets, never a trap.
        for at in stride(from: 0, to: min(good.count - 4, 200), by: 2) {
            for v: UInt32 in [0, 0xFFFF_FFFF, 0x8000_0000, 12, 13] {
                var d = good
                put(&d, at, v)
                d.withUnsafeBytes { FuzzPcapng.run($0) }
            }
        }
    }

    func testTimestampResolutions() {
        let r = PcapngReader(bytes: UnsafeRawBufferPointer(start: nil, count: 0))
        var i = PcapngReader.Interface(linkType: 1, snaplen: 0)
        XCTAssertEqual(r.timestamp(1_700_000_000_123_456, i), Timestamp(seconds: 1_700_000_000, nanos: 123_456_000))
        i.resolution = .decimal(12); i.unitsPerSecond = 1_000_000_000_000
        XCTAssertEqual(r.timestamp(1_000_000_000_123_456, i), Timestamp(seconds: 1000, nanos: 123))
        i.resolution = .binary(32); i.unitsPerSecond = 1 << 32; i.offsetSeconds = 10
        XCTAssertEqual(r.timestamp(5 << 32 | 1 << 31, i), Timestamp(seconds: 15, nanos: 500_000_000))
        i.resolution = .decimal(0); i.unitsPerSecond = 1; i.offsetSeconds = 0
        XCTAssertEqual(r.timestamp(UInt64.max, i), Timestamp(seconds: -1, nanos: 0))
    }
}
