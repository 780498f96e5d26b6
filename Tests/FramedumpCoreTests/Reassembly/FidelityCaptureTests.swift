import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Issue 11's capture classes, each a fixture made by `scripts/make_fixtures.py`, reassembled
/// and compared byte for byte with tshark's TCP follow; plus the counts the summary shows.
final class FidelityCaptureTests: XCTestCase {
    static let fixtures = [
        "ack_before_data.pcap", "tso_len0.pcap", "ip_fragments.pcap", "rst_out_of_window.pcap", "after_fin.pcap",
        "ppp.pcap", "ppp_hdlc.pcap", "c_hdlc.pcap", "nflog.pcap", "mpls.pcap", "llc_snap.pcap", "ppi.pcap", "pktap.pcap",
        "timestamps.pcap", "tunnels.pcap", "ipoib.pcap", "pppoe_qinq.pcap", "fddi.pcap", "pbb.pcap",
        "ip_options.pcap", "many_fragments.pcap", "ah.pcap", "fragments_clock_jump.pcap",
        "link-arcnet.pcap", "link-arcnet-bsd.pcap", "link-ppp-chdlc.pcap",
    ]

    func testStreamsMatchTsharkFollow() throws {
        try Self.streamsMatchTsharkFollow(Self.fixtures)
    }

    /// Each fixture's connections are tshark's, and each stream is tshark's follow, byte for byte.
    static func streamsMatchTsharkFollow(_ fixtures: [String]) throws {
        let tshark = try TestSupport.oracle("tshark")
        for name in fixtures {
            let cap = TestSupport.fixture(name)
            let dir = TestSupport.tempDir()
            let r = try TestSupport.framedump(["-r", cap, "-q", "--streams", dir])
            XCTAssertEqual(r.status, 0, r.stderr)
            let index = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as! [[String: Any]]
            // The same connections as tshark: none split in two, none lost.
            let conv = try TestSupport.run(tshark, ["-r", cap, "-q", "-z", "conv,tcp"])
            let tsharkConnections = conv.stdout.split(separator: "\n").filter { $0.contains("<->") }.count
            XCTAssertEqual(index.count, tsharkConnections, "\(name): connections")
            for (n, entry) in index.enumerated() {
                let follow = try TestSupport.run(tshark, ["-r", cap, "-q", "-z", "follow,tcp,raw,\(n)"])
                XCTAssertEqual(follow.status, 0, follow.stderr)
                // (parseFollow keeps only hex lines: tshark's "[N bytes missing in capture file]" is dropped.)
                let (nodes, bytes) = ReassemblyTests.parseFollow(follow.stdout)
                let files = entry["files"] as! [String: String]
                let client = String((entry["conn"] as! String).split(separator: "-").first!)
                let clientNode = nodes.firstIndex(of: client) ?? 0
                XCTAssertFalse(bytes[0].isEmpty && bytes[1].isEmpty, "\(name) stream \(n): tshark followed nothing")
                for d in ["c2s", "s2c"] {
                    let ours = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: dir + "/" + files[d]!))) ?? Data())
                    XCTAssertEqual(ours, bytes[d == "c2s" ? clientNode : 1 - clientNode], "\(name) stream \(n) \(d)")
                }
                XCTAssertEqual((entry["gaps"] as? [Any])?.count ?? 0, 0, "\(name) stream \(n): no gap")
            }
        }
    }

    func summary(_ name: String) throws -> String {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture(name), "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout
    }

    func testSummaryCounts() throws {
        var s = try summary("tso_len0.pcap")
        XCTAssertTrue(s.contains("IP length 0 (segmentation offload), captured length used: 1 segments"), s)
        XCTAssertTrue(s.contains("gaps: 0 (0 bytes)"), s)
        XCTAssertTrue(s.contains("game: 1 connections, 304 messages"), s)
        s = try summary("ip_fragments.pcap")
        XCTAssertTrue(s.contains("IP fragments: 14, 3 datagrams reassembled, 1 duplicate fragments"), s)
        XCTAssertTrue(s.contains("game: 3 connections, 21 messages"), s)
        s = try summary("rst_out_of_window.pcap")
        XCTAssertTrue(s.contains("1 out-of-window RSTs ignored"), s)
        XCTAssertTrue(s.contains("game: 1 connections, 4 messages"), s)
        s = try summary("after_fin.pcap")
        XCTAssertTrue(s.contains("connections: 2,"), s)
        XCTAssertTrue(s.contains("segments after close"), s)
        // A malformed IPv4 option (security, length 2): the packet is counted and dropped, and
        // the well-formed copy that follows is taken (corpus: suricata-verify).
        s = try summary("ip_options.pcap")
        XCTAssertTrue(s.contains("skipped packets: 1 malformed headers"), s)
        XCTAssertFalse(s.contains("retransmitted"), s)
        XCTAssertTrue(s.contains("game: 1 connections, 4 messages"), s)
        // 16-byte fragments, over 256 to a datagram, two datagrams with one IP id in a row
        // (corpus: nDPI's ip_fragmented_garbage.pcap).
        s = try summary("many_fragments.pcap")
        XCTAssertTrue(s.contains("IP fragments: 701, 3 datagrams reassembled\n"), s)
        // Complete datagrams after a jump of the packet clock (45 s, then 13 hours) are aged
        // from their own first fragment: only the stale leftover times out (issue 44;
        // corpus: PcapPlusPlus' ip-frag.pcap and ip6_fragments.pcap).
        s = try summary("fragments_clock_jump.pcap")
        XCTAssertTrue(s.contains("IP fragments: 59, 3 datagrams reassembled, 1 timed out (30 s)\n"), s)
        XCTAssertTrue(s.contains("gaps: 0 (0 bytes)"), s)
        XCTAssertTrue(s.contains("gaps: 0 (0 bytes)"), s)
        s = try summary("ack_before_data.pcap")
        XCTAssertTrue(s.contains("gaps: 0 (0 bytes)"), s)
        XCTAssertTrue(s.contains("game: 1 connections, 10 messages"), s)
        s = try summary("timestamps.pcap")
        XCTAssertTrue(s.contains("connections: 2,"), s)
        XCTAssertFalse(s.contains("idle timeout"), s)
        XCTAssertTrue(s.contains("game: 2 connections, 5 messages"), s)
        s = try summary("tunnels.pcap")
        XCTAssertTrue(s.contains("game: 5 connections, 20 messages"), s)
        s = try summary("pktap.pcap")
        XCTAssertTrue(s.contains("game: 2 connections, 8 messages"), s)
    }

    /// Bytes acknowledged 80 packets before they come: a gap once the grace is over, then
    /// said to be late when they arrive, in the summary, --follow and the --streams index.
    func testLateBytesForAReportedGapAreReported() throws {
        let path = TestSupport.fixture("late_data.pcap")
        let s = try summary("late_data.pcap")
        XCTAssertTrue(s.contains("gaps: 1 (14 bytes)"), s)
        XCTAssertTrue(s.contains("reassembly: 1 late data for reported gaps (14 bytes)"), s)
        XCTAssertFalse(s.contains("retransmitted"), s)
        let follow = try TestSupport.framedump(["-r", path, "--follow"])
        XCTAssertTrue(follow.stdout.contains("c2s gap: 14 bytes missing at offset 18 (acked-unseen)"), follow.stdout)
        XCTAssertTrue(follow.stdout.contains("late data: 14 bytes at offset 18 arrived after their gap was reported, pkt 87"), follow.stdout)
        let dir = TestSupport.tempDir()
        XCTAssertEqual(try TestSupport.framedump(["-r", path, "-q", "--streams", dir]).status, 0)
        let index = try String(contentsOfFile: dir + "/index.json", encoding: .utf8)
        XCTAssertTrue(index.contains("\"late\": [{\"dir\": \"c2s\", \"stream_offset\": 18, \"length\": 14}]"), index)
    }

    /// A pcapng whose timestamps libpcap turns into seconds at both ends of the 64-bit range.
    func testExtremeTimestampsInACapture() throws {
        let s = try summary("extreme_timestamps.pcapng")
        XCTAssertTrue(s.contains("game: 1 connections, 4 messages"), s)
        for args in [[], ["--segments"], ["-T", "json"], ["--follow"]] {
            let r = try TestSupport.framedump(["-r", TestSupport.fixture("extreme_timestamps.pcapng")] + args)
            XCTAssertEqual(r.status, 0, "\(args): \(r.stderr)")
        }
    }

    /// The duplicated capture keeps the client's messages as Cs_ and the server's as Sc_.
    func testRolesDoNotFlipAfterClose() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture("after_fin.pcap"), "-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let opens = r.stdout.split(separator: "\n").filter { $0.contains("\"type\":\"open\"") }
        XCTAssertEqual(opens.count, 2, r.stdout)
        XCTAssertTrue(opens.allSatisfy { $0.contains("\"conn\":\"10.0.0.2:40000-10.0.0.1:8000\"") }, "\(opens)")
    }

    /// Any-port detection looks past a first chunk that is not the protocol (a banner).
    func testAnyPortDetectionLooksBeyondTheFirstChunk() throws {
        let text = try String(contentsOfFile: TestSupport.dissectors + "/game.dissector", encoding: .utf8)
            .replacingOccurrences(of: "port 8000;", with: "detect any;")
        let dir = TestSupport.tempDir()
        try text.write(toFile: dir + "/game.dissector", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: TestSupport.dissectors + "/game_messages.txt", toPath: dir + "/game_messages.txt")
        let game = try DissectorLoader.loadFile(dir + "/game.dissector")
        let sink = SinkCollector()
        let sessions = SessionManager(protocols: game, sink: sink)
        let r = Reassembler(options: ReassemblyOptions(), consumer: sessions, isServerPort: sessions.isServerPort)
        let client = Endpoint(IPAddress(v4: 0x7F00_0001), 40000), server = Endpoint(IPAddress(v4: 0x7F00_0001), 9999)
        var n: UInt64 = 0
        func add(_ seq: UInt32, _ flags: TCPFlags, _ data: [UInt8]) {
            n += 1
            data.withUnsafeBytes {
                r.add(TCPSegment(src: client, dst: server, seq: seq, ack: 0, flags: flags, window: 1, payload: $0,
                                 payloadLength: $0.count), packet: PacketRef(number: n, ts: Timestamp(seconds: 1, nanos: 0)))
            }
        }
        add(99, .syn, [])
        let banner = Array("HELLO framedump\r\n".utf8)
        // Cs_10002 (a u64 body) twice, after the banner.
        let frame: [UInt8] = [0, 0, 0, 14, 0x27, 0x12, 0, 0, 0, 0, 0, 0, 0x30, 0x39]
        add(100, .psh, banner)
        add(100 + UInt32(banner.count), .psh, frame)
        add(100 + UInt32(banner.count + frame.count), .psh, frame)
        r.finish()
        XCTAssertEqual(sink.messages.map(\.1), [10002, 10002])
        XCTAssertEqual(sessions.undissectedConnections, 0)
    }

    // MARK: - Decoders of untrusted input: never trap, whatever the bytes

    func testLinkDecodersSurviveRandomBytes() {
        var rng = SeededRandom(seed: 21)
        let types: [Int32] = [0, 1, 9, 10, 12, 50, 51, 104, 108, 113, 149, 166, 192, 204, 228, 229, 239, 242, 258, 276]
        var defrag = Defragmenter()
        for i in 0..<40_000 {
            let t = types[i % types.count]
            var bytes = (0..<Int.random(in: 0...160, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Plausible starts, so the decoders get past their first checks.
            if bytes.count > 20, Bool.random(using: &rng) {
                switch t {
                case 1: bytes[12] = [0x08, 0x86, 0x88, 0x81, 0x00][Int.random(in: 0..<5, using: &rng)]
                    bytes[13] = [0x00, 0xdd, 0x47, 0x00, 0x40][Int.random(in: 0..<5, using: &rng)]
                case 192: bytes[2] = 8; bytes[3] = 0; bytes[4] = 1; bytes[5] = 0; bytes[6] = 0; bytes[7] = 0
                case 149, 258: bytes[0] = 12; bytes[1] = 0; bytes[2] = 0; bytes[3] = 0; bytes[4] = 1
                    bytes[5] = 0; bytes[6] = 0; bytes[7] = 0; bytes[8] = 12; bytes[9] = 0; bytes[10] = 0; bytes[11] = 0
                default: bytes[0] = Bool.random(using: &rng) ? 0x45 : 0x60
                }
            }
            bytes.withUnsafeBytes { b in
                if case .fragment(let f) = LinkDecoder(linkType: t).decode(b) {
                    let fuzzed = Self.fuzzEntry(f, &defrag, Timestamp(seconds: 1_700_000_000 + Int64(i / 1000), nanos: 0))
                    _ = fuzzed
                }
            }
        }
    }

    /// The fuzz entry (for the lead's fuzz script) over random inputs and over the fixtures'
    /// packets with random bytes flipped.
    func testFuzzEntryOnMutatedFixtures() throws {
        var rng = SeededRandom(seed: 31)
        var packets: [[UInt8]] = []
        for name in ["ip_fragments.pcap", "tunnels.pcap", "mpls.pcap", "llc_snap.pcap"] {
            let src = try PacketSource(.file(TestSupport.fixture(name)))
            try src.forEach { p in packets.append(Array(p.data)); return true }
        }
        for round in 0..<300 {
            // Mostly Ethernet (what these packets are), sometimes another link type.
            let ethernet = UInt8(FuzzLink.linkTypes.firstIndex(of: 1)!)
            var input: [UInt8] = [round % 4 == 0 ? UInt8(round % 256) : ethernet]
            for p in packets.shuffled(using: &rng).prefix(Int.random(in: 1...packets.count, using: &rng)) {
                var q = p
                for _ in 0..<Int.random(in: 0...4, using: &rng) where !q.isEmpty {
                    q[Int.random(in: 0..<q.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                input += [UInt8(q.count >> 8), UInt8(q.count & 0xff)] + q
            }
            input.withUnsafeBytes { FuzzLink.run($0) }
        }
    }

    static func fuzzEntry(_ f: IPFragment, _ d: inout Defragmenter, _ ts: Timestamp) -> Bool {
        guard let dg = d.add(f, at: ts) else { return false }
        return dg.bytes.withUnsafeBytes { b in
            if case .tcp = LinkDecoder(linkType: 1).datagram(b, dg) { return true }
            return false
        }
    }

    // MARK: - Defragmenter

    func fragment(_ data: [UInt8], offset: Int, more: Bool, id: UInt32 = 1, v6: Bool = false,
                  _ body: (IPFragment) -> Void) {
        data.withUnsafeBytes { b in
            let src = v6 ? IPAddress(v6Hi: 0x2001_0db8_0000_0000, lo: 2) : IPAddress(v4: 0x0A00_0002)
            let dst = v6 ? IPAddress(v6Hi: 0x2001_0db8_0000_0000, lo: 1) : IPAddress(v4: 0x0A00_0001)
            body(IPFragment(src: src, dst: dst, id: id, proto: 6, offset: offset, more: more, data: b, dataLength: b.count))
        }
    }

    func testFragmentsInAnyOrderMakeTheDatagram() {
        let d = Defragmenter()
        let data = (0..<64).map { UInt8($0) }
        var out: Defragmenter.Datagram?
        let ts = Timestamp(seconds: 1, nanos: 0)
        for (off, more) in [(32, true), (48, false), (0, true), (16, true)] {
            fragment(Array(data[off..<off + 16]), offset: off, more: more) { out = d.add($0, at: ts) ?? out }
        }
        XCTAssertEqual(out?.bytes, data)
        XCTAssertEqual(d.inProgress, 0)
    }

    func testOverlappingFragmentsAbandonTheDatagram() {
        let d = Defragmenter()
        let ts = Timestamp(seconds: 1, nanos: 0)
        var out: Defragmenter.Datagram?
        fragment([UInt8](repeating: 1, count: 16), offset: 0, more: true, v6: true) { out = d.add($0, at: ts) }
        // Overlaps the first fragment's last 8 bytes with other bytes (RFC 5722: drop it all).
        fragment([UInt8](repeating: 2, count: 16), offset: 8, more: false, v6: true) { out = d.add($0, at: ts) }
        fragment([UInt8](repeating: 1, count: 8), offset: 16, more: false, v6: true) { out = d.add($0, at: ts) }
        XCTAssertNil(out)
        XCTAssertEqual(d.stats.overlaps, 1)
    }

    /// IPv4 overlaps (Zeek's ipv4_fragmented-4 evasion trace): the first copy of each byte is kept.
    func testOverlappingIPv4FragmentsKeepTheFirstCopy() {
        let d = Defragmenter()
        let ts = Timestamp(seconds: 1, nanos: 0)
        var out: Defragmenter.Datagram?
        fragment([UInt8](repeating: 1, count: 24), offset: 0, more: true) { out = d.add($0, at: ts) }
        fragment([UInt8](repeating: 3, count: 24), offset: 48, more: true) { out = d.add($0, at: ts) }
        fragment([UInt8](repeating: 4, count: 17), offset: 72, more: false) { out = d.add($0, at: ts) }
        // Covers 24..<72, overlapping the piece at 48: only 24..<48 is new.
        fragment([UInt8](repeating: 2, count: 48), offset: 24, more: true) { out = d.add($0, at: ts) }
        let expected = [UInt8](repeating: 1, count: 24) + [UInt8](repeating: 2, count: 24)
            + [UInt8](repeating: 3, count: 24) + [UInt8](repeating: 4, count: 17)
        XCTAssertEqual(out?.bytes, expected)
        XCTAssertEqual(d.stats.overlapsTrimmed, 1)
    }

    /// A datagram with more fragments than the bound is dropped under its own count, and the
    /// fragments that follow for it are counted as dropped with it, not passed over unseen.
    func testTooManyFragmentsIsCountedApart() {
        var o = Defragmenter.Options()
        o.maxFragmentsPerDatagram = 4
        let d = Defragmenter(options: o)
        let ts = Timestamp(seconds: 1, nanos: 0)
        var out: Defragmenter.Datagram?
        for off in stride(from: 0, to: 80, by: 16) {
            fragment([UInt8](repeating: 1, count: 16), offset: off, more: off < 64) { out = d.add($0, at: ts) ?? out }
        }
        XCTAssertNil(out)
        XCTAssertEqual(d.stats.tooManyFragments, 1)
        XCTAssertEqual(d.stats.malformed, 0)
        fragment([UInt8](repeating: 1, count: 16), offset: 80, more: false) { out = d.add($0, at: ts) ?? out }
        XCTAssertEqual(d.stats.dropped, 1)
        // The default bound is the most fragments 65,535 bytes can be cut into.
        XCTAssertEqual(Defragmenter.Options().maxFragmentsPerDatagram, 65_536 / 8)
    }

    func testFragmentBoundsAndTimeout() {
        var o = Defragmenter.Options()
        o.maxDatagrams = 4
        o.timeoutSeconds = 5
        let d = Defragmenter(options: o)
        // Fragments that claim to end past 65,535 bytes are refused, not allocated.
        fragment([UInt8](repeating: 0, count: 16), offset: 65_528, more: true) { _ = d.add($0, at: Timestamp(seconds: 1, nanos: 0)) }
        XCTAssertEqual(d.stats.malformed, 1)
        for id in 0..<10 as Range<UInt32> {
            fragment([UInt8](repeating: 0, count: 16), offset: 0, more: true, id: id) { _ = d.add($0, at: Timestamp(seconds: 1, nanos: 0)) }
        }
        XCTAssertEqual(d.inProgress, 4)
        XCTAssertEqual(d.stats.evicted, 6)
        // The clock moves in steps no longer than the timeout (a lone far jump is not followed).
        fragment([UInt8](repeating: 0, count: 16), offset: 0, more: true, id: 98) { _ = d.add($0, at: Timestamp(seconds: 5, nanos: 0)) }
        XCTAssertEqual(d.stats.timedOut, 0)
        fragment([UInt8](repeating: 0, count: 16), offset: 0, more: true, id: 99) { _ = d.add($0, at: Timestamp(seconds: 7, nanos: 0)) }
        XCTAssertEqual(d.stats.timedOut, 3)  // the fourth was evicted to make room for id 98
        XCTAssertEqual(d.inProgress, 2)
    }

    /// A sequence number 3,000,000,000 ahead (zeek's ftp/bigtransfer.pcap has such a jump):
    /// serial arithmetic reads it as 1.3 GB behind, further than a window of 512 lets any
    /// retransmission be, so it is a gap of exactly the bytes skipped, and the bytes after it
    /// are stream (tshark calls them retransmissions and its follow leaves them out).
    func testSequenceJumpOverHalfTheSpaceIsAGap() throws {
        let s = try summary("seq_jump.pcap")
        XCTAssertTrue(s.contains("gaps: 1 (3000000000 bytes)"), s)
        XCTAssertTrue(s.contains("reassembly: 1 sequence jumps of over 2^31"), s)
        XCTAssertFalse(s.contains("retransmitted"), s)
        XCTAssertTrue(s.contains("game: 1 connections, 7 messages"), s)
        let follow = try TestSupport.framedump(["-r", TestSupport.fixture("seq_jump.pcap"), "--follow"])
        XCTAssertTrue(follow.stdout.contains("c2s gap: 3000000000 bytes missing at offset 32 (sequence-jump)"), follow.stdout)
        XCTAssertTrue(follow.stdout.contains("c2s offset 3000000032, 18 bytes, pkt 10"), follow.stdout)
    }

    /// A datagram whose fragments all come right after a jump of the packet clock completes,
    /// though the clock follows the jump while its fragments arrive (after 8 agree); the stale
    /// datagram from before the jump times out.
    func testDatagramAfterAClockJumpIsNotTimedOut() {
        let d = Defragmenter()
        fragment([UInt8](repeating: 7, count: 16), offset: 0, more: true, id: 1) { _ = d.add($0, at: Timestamp(seconds: 100, nanos: 0)) }
        var out: Defragmenter.Datagram?
        for off in stride(from: 0, through: 160, by: 16) {
            fragment([UInt8](repeating: UInt8(off / 16), count: 16), offset: off, more: off < 160, id: 2) {
                out = d.add($0, at: Timestamp(seconds: 100 + 13 * 3600, nanos: UInt32(off))) ?? out
            }
        }
        XCTAssertEqual(out?.bytes.count, 176)
        XCTAssertEqual(out?.bytes[160], 10)
        XCTAssertEqual(d.stats.timedOut, 1)
        XCTAssertEqual(d.stats.reassembled, 1)
        XCTAssertEqual(d.inProgress, 0)
    }
}
