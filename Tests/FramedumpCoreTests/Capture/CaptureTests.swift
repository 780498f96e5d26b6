import Foundation
import XCTest
@testable import FramedumpCore

/// Capture and link decoding, checked against tcpdump on every fixture.
final class CaptureTests: XCTestCase {
    static let fixtures = [
        "any_sll2.pcap", "vlan.pcap", "qinq.pcap", "ipv6_ext.pcap", "ipv4_options.pcap", "rawip.pcap",
        "null.pcap", "loop.pcap", "sll.pcap", "nanosecond.pcap", "snaplen.pcap", "mixed.pcapng",
        "reorder_wrap.pcap", "conflict.pcap", "lost_segment.pcap",
        // Issue 11: link layers and capture patterns tcpdump prints one line per segment for
        // (not tso_len0.pcap: tcpdump says "bad-len 0"; not ip_fragments.pcap: tcpdump does
        // not reassemble; not tunnels.pcap: tcpdump writes VXLAN and Geneve inner packets on a
        // line of their own; not pbb.pcap: tcpdump does not decode 802.1ah).
        "ppp.pcap", "ppp_hdlc.pcap", "c_hdlc.pcap", "nflog.pcap", "mpls.pcap", "llc_snap.pcap", "ppi.pcap",
        "pktap.pcap", "ipoib.pcap", "fddi.pcap", "ack_before_data.pcap", "rst_out_of_window.pcap", "after_fin.pcap",
    ]

    /// What both tools must agree on for a segment: endpoints, flags, seq/ack and length.
    struct Seg: Equatable, CustomStringConvertible {
        var src, dst, flags: String
        var seq: String?
        var ack: String?
        var length: Int
        var description: String { "\(src) > \(dst) [\(flags)] seq \(seq ?? "-") ack \(ack ?? "-") len \(length)" }
    }

    static func parse(_ line: Substring) -> Seg? {
        // "... IP 10.0.0.2.40000 > 10.0.0.1.8000: Flags [S.], seq 1:5, ack 9, win 512, ..., length 4"
        // (tcpdump puts IPv6 extension headers between "IP6" and the ports, so take the last
        // "src > dst" before ": Flags".)
        guard line.contains(" IP6 ") || line.contains(" IP "), let colon = line.range(of: ": Flags [") else { return nil }
        let rest = line[colon.lowerBound...]
        let words = line[..<colon.lowerBound].split(separator: " ")
        guard words.count >= 3, words[words.count - 2] == ">" else { return nil }
        var ends = [String(words[words.count - 3]), String(words[words.count - 1])]
        if ends.allSatisfy({ $0.allSatisfy(\.isNumber) }), let ip = words.firstIndex(of: "IP6"), words.count > ip + 3 {
            // "IP6 a > b: HBH ... 40000 > 8000: Flags": addresses first, ports after the extension headers.
            ends = [words[ip + 1] + "." + ends[0], words[ip + 3].dropLast() + "." + ends[1]]
        }
        guard let close = rest[colon.upperBound...].firstIndex(of: "]") else { return nil }
        let flags = String(rest[colon.upperBound..<close])
        func field(_ name: String) -> String? {
            guard let r = rest.range(of: ", \(name) ") else { return nil }
            return String(rest[r.upperBound...].prefix { $0 != "," && $0 != " " })
        }
        guard let l = rest.range(of: "length ", options: .backwards) else { return nil }
        let len = Int(rest[l.upperBound...].prefix { $0.isNumber }) ?? -1
        return Seg(src: ends[0], dst: ends[1], flags: flags, seq: field("seq"), ack: field("ack"), length: len)
    }

    func testSegmentsAgreeWithTcpdump() throws {
        let tcpdump = try TestSupport.oracle("tcpdump")
        for f in Self.fixtures {
            let path = TestSupport.fixture(f)
            let theirs = try TestSupport.run(tcpdump, ["-nn", "-tt", "-S", "-r", path])
            XCTAssertEqual(theirs.status, 0, theirs.stderr)
            let ours = try TestSupport.pipeline(path) { $0.segments = true }
            let a = theirs.stdout.split(separator: "\n").compactMap(Self.parse)
            let b = ours.split(separator: "\n").compactMap(Self.parse)
            XCTAssertFalse(a.isEmpty, "\(f): tcpdump printed no TCP segments")
            XCTAssertEqual(a, b, "\(f): per-segment lines differ from tcpdump")
        }
    }

    func testSkippedTrafficIsCounted() throws {
        var o = PipelineOptions()
        o.segments = true
        let out = OutputBuffer(fd: nil)
        let p = try Pipeline(options: o, output: out)
        try p.run(try PacketSource(.file(TestSupport.fixture("mixed.pcapng"))), limit: nil, dumper: nil, lineBuffered: false)
        XCTAssertEqual(p.capture.notTCP, 1)
        XCTAssertEqual(p.capture.fragments, 2)
        XCTAssertEqual(p.capture.tcpSegments, 9)
    }

    func testSnaplenCutSegmentsAreMarkedAndBecomeGaps() throws {
        let text = try TestSupport.pipeline(TestSupport.fixture("snaplen.pcap")) { $0.segments = true }
        XCTAssertTrue(text.contains("[truncated: "), text)
        let json = try TestSupport.pipeline(TestSupport.fixture("snaplen.pcap")) { $0.format = .json }
        XCTAssertTrue(json.contains("\"type\":\"gap\""), json)
        XCTAssertTrue(json.contains("\"reason\":\"truncated\""), json)
    }

    func testStandardInput() throws {
        let r = try TestSupport.run(TestSupport.binary, ["-r", "-", "--segments"], stdin: TestSupport.sample("game.pcap"))
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 60)
    }

    func testListInterfaces() throws {
        let r = try TestSupport.framedump(["-D"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.split(separator: "\n").contains { $0.hasSuffix(".lo") || $0.contains(".lo ") }, r.stdout)
    }

    func testCountLimit() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture("vlan.pcap"), "--segments", "-c", "3"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 3)
    }

    func testFilterIsCompiledByLibpcap() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "--segments", "tcp[tcpflags] & tcp-syn != 0"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 6, r.stdout)  // a SYN and a SYN-ACK for each of 3 connections
        XCTAssertTrue(lines.allSatisfy { $0.contains("Flags [S") })
    }

    // MARK: - Bad input: one clear line, a distinct exit code, no crash

    func expectFailure(_ args: [String], status: Int32, contains text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try TestSupport.framedump(args)
        XCTAssertEqual(r.status, status, "\(args): \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(text), "\(args): stderr was \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line: \(r.stderr)", file: file, line: line)
    }

    func testMissingFile() throws {
        try expectFailure(["-r", "/nonexistent/capture.pcap"], status: 3, contains: "no such file")
    }

    func testNotACapture() throws {
        try expectFailure(["-r", TestSupport.fixture("not_a_capture.pcap")], status: 4, contains: "not a pcap or pcapng capture")
    }

    func testCaptureCutMidRecordStillReportsWhatCameBefore() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture("cut.pcap"), "--segments"])
        XCTAssertEqual(r.status, 5, r.stderr)
        XCTAssertTrue(r.stderr.contains("cut off mid-record"), r.stderr)
        // vlan.pcap has 9 packets; the cut falls in the last one.
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 8, "the packets before the cut are printed")
    }

    func testReadErrorNamesTheFile() throws {
        // A record announcing a 2 GiB packet: libpcap refuses it; the message names the file.
        var bytes: [UInt8] = []
        func le32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        le32(0xA1B2_C3D4); bytes += [2, 0, 4, 0]; le32(0); le32(0); le32(65535); le32(1)
        le32(1_700_000_000); le32(0); le32(0x7fff_fff0); le32(60)
        bytes += [UInt8](repeating: 0x78, count: 60)
        let path = TestSupport.tempDir() + "/huge-record.pcap"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try expectFailure(["-r", path], status: 5, contains: "huge-record.pcap: read error: ")
    }

    /// A microsecond field of 10^6 or more is printed as tcpdump prints it, and a packet
    /// stamped years ahead is printed with its own time (timestamps.pcap).
    func testTimestampsPrintedAsTcpdumpPrintsThem() throws {
        let tcpdump = try TestSupport.oracle("tcpdump")
        let path = TestSupport.fixture("timestamps.pcap")
        let theirs = try TestSupport.run(tcpdump, ["-nn", "-tt", "-S", "-r", path])
        let ours = try TestSupport.pipeline(path) { $0.segments = true }
        let a = theirs.stdout.split(separator: "\n").map { $0.prefix { $0 != " " } }
        let b = ours.split(separator: "\n").map { $0.prefix { $0 != " " } }
        XCTAssertEqual(a, b)
        XCTAssertTrue(b.contains("1700000000.1500000"), "\(b)")
    }

    func testBadFilter() throws {
        try expectFailure(["-r", TestSupport.sample("game.pcap"), "tcp", "port", "notaport"], status: 2, contains: "bad filter expression")
    }

    func testUnknownInterface() throws {
        guard TestSupport.isRoot else { throw XCTSkip("needs root to reach the interface check") }
        try expectFailure(["-i", "nosuchif0"], status: 6, contains: "no such interface")
    }

    func testPermissionDenied() throws {
        guard TestSupport.isRoot, let setpriv = TestSupport.which("setpriv") else { throw XCTSkip("needs root and setpriv") }
        // Run as nobody, without CAP_NET_RAW.
        let r = try TestSupport.run(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                                              TestSupport.binary, "-i", "lo"])
        XCTAssertEqual(r.status, 7, r.stderr)
        XCTAssertTrue(r.stderr.contains("permission denied"), r.stderr)
    }

    func testNoInputIsAUsageError() throws {
        let r = try TestSupport.framedump([])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("Nothing to read"), r.stderr)
    }
}
