import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Classic pcap files whose records are longer than the header's snaplen: libpcap 1.10 cuts
/// each to the snaplen (and skips its other bytes); `PcapReader` reads on from the first such
/// record (fixtures by `scripts/make_pcapng_fixtures.py`). Compared byte for byte with
/// tshark's TCP follow, which reads the whole records.
final class PcapReaderTests: XCTestCase {
    static let whole = ["over_snaplen.pcap", "over_snaplen_be.pcap", "over_snaplen_ns.pcap"]

    func testEveryRecordWhole() throws {
        for name in Self.whole {
            let source = try PacketSource(.file(TestSupport.fixture(name)))
            var seen: [(Int, Int, Timestamp)] = []
            try source.forEach { p in seen.append((p.data.count, p.wireLength, p.ref.ts)); return true }
            XCTAssertEqual(seen.count, 20, name)
            XCTAssertEqual(seen.filter { $0.0 != $0.1 }.count, 0, "\(name): a packet cut")
            XCTAssertEqual(seen.map(\.0).max(), 14 + 40 + 400, name)
            // The first record above 64 bytes (packet 5) is where our reader takes over.
            XCTAssertEqual(source.handedOver, "a record at offset 308 of 82 captured bytes, bigger than the snaplen of 64: libpcap keeps its first 64", name)
            // Timestamps: packet i at T0 + i ms + 123 µs (+ 456 ns with the nanosecond magic),
            // the same from libpcap (packets 1-3) and our reader.
            let extra: UInt32 = name.hasSuffix("_ns.pcap") ? 456 : 0
            for (i, s) in seen.enumerated() {
                XCTAssertEqual(s.2, Timestamp(seconds: 1_700_000_000, nanos: UInt32(i) * 1_000_000 + 123_000 + extra), "\(name) packet \(i + 1)")
            }
            XCTAssertEqual(source.linkTypesSeen, [1], name)
        }
        // A file libpcap reads whole stays libpcap's.
        let plain = try PacketSource(.file(TestSupport.sample("game.pcap")))
        var n = 0
        try plain.forEach { _ in n += 1; return true }
        XCTAssertNil(plain.handedOver)
        XCTAssertGreaterThan(n, 0)
    }

    /// A classic pcap of version 2.5 (libpcap's own test file has one): libpcap refuses it,
    /// tshark reads it, and so does framedump, through its reader, with the same messages.
    func testMinorVersionLibpcapRefuses() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("game.pcap"))))
        XCTAssertEqual(bytes[0...3], [0xd4, 0xc3, 0xb2, 0xa1])  // little-endian, as recorded
        bytes[6] = 5  // version 2.5
        let path = TestSupport.tempDir() + "/v2_5.pcap"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let source = try PacketSource(.file(path))
        var n = 0
        try source.forEach { _ in n += 1; return true }
        XCTAssertEqual(source.handedOver?.contains("savefile version 2.5"), true, source.handedOver ?? "libpcap read it")
        XCTAssertGreaterThan(n, 0)
        let ours = try TestSupport.framedump(["-r", path, "-T", "json"])
        let original = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-T", "json"])
        XCTAssertEqual(ours.status, 0, ours.stderr)
        XCTAssertEqual(ours.stdout, original.stdout)
    }

    func testStreamsMatchTsharkFollow() throws {
        let tshark = try TestSupport.oracle("tshark")
        for name in Self.whole {
            let cap = TestSupport.fixture(name)
            let dir = TestSupport.tempDir()
            let r = try TestSupport.framedump(["-r", cap, "-q", "-d", TestSupport.dissectors, "--streams", dir])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stdout.contains("gaps: 0 (0 bytes)"), "\(name): \(r.stdout)")
            // Every game message whole: 200-byte frames among them (libpcap alone cut them at 64 bytes).
            XCTAssertTrue(r.stdout.contains("game: 2 connections, 11 messages"), "\(name): \(r.stdout)")
            let index = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as! [[String: Any]]
            XCTAssertEqual(index.count, 2, name)
            for (n, entry) in index.enumerated() {
                let follow = try TestSupport.run(tshark, ["-r", cap, "-q", "-z", "follow,tcp,raw,\(n)"])
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
    }

    func testFilterAndWrite() throws {
        let cap = TestSupport.fixture("over_snaplen_be.pcap")
        let f = try TestSupport.framedump(["-r", cap, "-q", "tcp port 40052"])
        XCTAssertEqual(f.status, 0, f.stderr)
        XCTAssertTrue(f.stdout.hasPrefix("packets: 10 (812 bytes)"), f.stdout)
        // -w writes the whole records (libpcap's writer, the source's snaplen in its header):
        // read back whole again.
        let out = TestSupport.tempDir() + "/w.pcap"
        let w = try TestSupport.framedump(["-r", cap, "-q", "-w", out])
        XCTAssertEqual(w.status, 0, w.stderr)
        var sizes: [Int] = []
        try PacketSource(.file(out)).forEach { p in sizes.append(p.data.count); return true }
        XCTAssertEqual(sizes.count, 20)
        XCTAssertEqual(sizes.max(), 454)
    }

    func testCutAndGarbageAreOneLine() throws {
        func run(_ path: String) throws -> TestSupport.Result {
            let r = try TestSupport.framedump(["-r", path, "-q", "-d", TestSupport.dissectors])
            XCTAssertNotEqual(r.status, 0, path)
            XCTAssertEqual(r.stderr.filter { $0 == "\n" }.count, 1, r.stderr)
            return r
        }
        let good = try Data(contentsOf: URL(fileURLWithPath: TestSupport.fixture("over_snaplen.pcap")))
        var r = try run(TestSupport.fixture("over_snaplen_cut.pcap"))
        XCTAssertEqual(r.status, 5)
        XCTAssertTrue(r.stderr.hasSuffix("over_snaplen_cut.pcap: capture is cut off mid-record (pcap record at offset \(good.count - 3 * 70 - 270) is 270 bytes, 170 remain)\n"), r.stderr)
        XCTAssertTrue(r.stdout.contains("packets: 16"), r.stdout)

        let dir = TestSupport.tempDir()
        func damaged(_ name: String, _ change: (inout Data) -> Void) -> String {
            var d = good
            change(&d)
            let p = dir + "/" + name
            _ = FileManager.default.createFile(atPath: p, contents: d)
            return p
        }
        func put(_ d: inout Data, _ at: Int, _ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.replaceSubrange(at..<at + 4, with: $0) } }
        // Records: 24-byte header, then 16 + 54 (the handshake), 16 + 54, 16 + 54, 16 + 58,
        // 16 + 82 (cut by libpcap: our reader from here), 16 + 83: its caplen announces 2 GB.
        let sixth = 24 + 3 * 70 + 74 + 98
        r = try run(damaged("huge", { put(&$0, sixth + 8, 0x7FFF_FFF0) }))
        XCTAssertEqual(r.status, 4)
        XCTAssertTrue(r.stderr.hasSuffix("huge: not a pcap or pcapng capture (pcap record at offset \(sixth): captured length 2147483632 > maximum 262144)\n"), r.stderr)
        r = try run(damaged("beyond", { put(&$0, sixth + 8, 0x10000) }))
        XCTAssertEqual(r.status, 5)
        XCTAssertTrue(r.stderr.contains("pcap record at offset \(sixth) is 65552 bytes"), r.stderr)

        // Every 4-byte field of the header and first records set to extremes, in memory and
        // through libpcap: an error or packets, never a trap.
        for at in stride(from: 0, to: min(good.count - 4, 400), by: 2) {
            for v: UInt32 in [0, 0xFFFF_FFFF, 0x8000_0000, 0x40000, 0x40001, 16, 65] {
                var d = good
                put(&d, at, v)
                d.withUnsafeBytes { FuzzPcap.run($0) }
            }
        }
    }

    func testHeaderForms() throws {
        func header(_ magic: UInt32, _ major: UInt16, _ minor: UInt16, linktype: UInt32 = 101, swap: Bool = false) -> [UInt8] {
            var b: [UInt8] = []
            func u32(_ v: UInt32) { withUnsafeBytes(of: swap ? v.byteSwapped : v) { b += $0 } }
            func u16(_ v: UInt16) { withUnsafeBytes(of: swap ? v.byteSwapped : v) { b += $0 } }
            u32(magic); u16(major); u16(minor); u32(0); u32(0); u32(64); u32(linktype)
            return b
        }
        for swap in [false, true] {
            let h = header(0xA1B2_3C4D, 2, 4, linktype: 0x1000_0065, swap: swap)  // FCS bits above LINKTYPE_RAW
            let r = try h.withUnsafeBytes { try PcapReader(bytes: $0) }
            XCTAssertEqual(r.linkType, 12)
            XCTAssertEqual(r.swapped, swap)
            XCTAssertTrue(r.nanosecond)
            XCTAssertNil(try r.next())
        }
        // 2.2 wrote the wire length first: swapped back, as libpcap does.
        var old = header(0xA1B2_C3D4, 2, 2)
        for v: UInt32 in [1, 5, 9, 4] { withUnsafeBytes(of: v) { old += $0 } }  // ts, len 9, caplen 4
        old += [1, 2, 3, 4]
        let r = try old.withUnsafeBytes { try PcapReader(bytes: $0) }
        let rec = try XCTUnwrap(try r.next())
        XCTAssertEqual(rec.data.count, 4)
        XCTAssertEqual(rec.wireLength, 9)
        XCTAssertEqual(rec.ts, Timestamp(seconds: 1, nanos: 5000))
        XCTAssertThrowsError(try header(0xA1B2_C3D4, 1, 0).withUnsafeBytes { try PcapReader(bytes: $0) })
        XCTAssertThrowsError(try header(0x0A0D_0D0A, 2, 4).withUnsafeBytes { try PcapReader(bytes: $0) })
        XCTAssertThrowsError(try [UInt8](header(0xA1B2_C3D4, 2, 4).prefix(20)).withUnsafeBytes { try PcapReader(bytes: $0) })
    }
}
