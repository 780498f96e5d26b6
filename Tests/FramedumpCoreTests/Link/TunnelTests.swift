import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// TCP inside tunnels (GRE, ERSPAN, IP in IP, VXLAN, Geneve, nested), each kind a fixture made by
/// `scripts/make_tunnel_fixtures.py`, reassembled and compared byte for byte with tshark's
/// TCP follow; and malformed tunnel headers, counted and never trapping.
final class TunnelTests: XCTestCase {
    static let fixtures = [
        "tunnel-gre.pcap", "tunnel-erspan.pcap", "tunnel-ipip.pcap", "tunnel-vxlan.pcap", "tunnel-geneve.pcap",
        "tunnel-nested.pcap", "tunnel-teredo.pcap", "tunnel-ayiya.pcap", "tunnel-pptp.pcap", "tunnel-capwap.pcap",
    ]

    func testTunnelStreamsMatchTsharkFollow() throws {
        try FidelityCaptureTests.streamsMatchTsharkFollow(Self.fixtures)
    }

    func summary(_ name: String) throws -> String {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture(name), "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout
    }

    /// Every packet is decoded (nothing skipped), and the game messages are all there.
    func testTunnelSummaryCounts() throws {
        for (name, connections) in [("tunnel-gre.pcap", 4), ("tunnel-erspan.pcap", 4), ("tunnel-ipip.pcap", 4),
                                    ("tunnel-vxlan.pcap", 2), ("tunnel-geneve.pcap", 2), ("tunnel-nested.pcap", 1),
                                    ("tunnel-teredo.pcap", 3), ("tunnel-ayiya.pcap", 2), ("tunnel-pptp.pcap", 2),
                                    ("tunnel-capwap.pcap", 2), ("tunnel-capwap-rfc.pcap", 1), ("tunnel-ipcomp.pcap", 2)] {
            let s = try summary(name)
            XCTAssertTrue(s.contains("game: \(connections) connections, \(connections * 4) messages"), "\(name): \(s)")
            XCTAssertFalse(s.contains("skipped packets"), "\(name): \(s)")
            XCTAssertTrue(s.contains("gaps: 0 (0 bytes)"), "\(name): \(s)")
        }
        // IPv4 in IPv4 with the inner datagrams fragmented; IPv6 in IPv4 with the outer ones.
        let s = try summary("tunnel-ipip.pcap")
        XCTAssertTrue(s.contains("IP fragments: 18, 6 datagrams reassembled"), s)
    }

    /// CAPWAP's 802.11 frames in RFC order (tshark swaps the frame control bytes by default,
    /// as Cisco access points send them; told not to, it finds the same connection); and
    /// IPComp's DEFLATE inflated behind AH (libpcap's AH-IPComp captures), as tshark does.
    func testCAPWAPInRFCOrderAndIPComp() throws {
        let tshark = try TestSupport.oracle("tshark")
        let conv = try TestSupport.run(tshark, ["-r", TestSupport.fixture("tunnel-capwap-rfc.pcap"), "-o", "capwap.swap_fc:FALSE",
                                                "-q", "-z", "conv,tcp"])
        XCTAssertTrue(conv.stdout.contains("10.0.0.2:40312"), conv.stdout)
        let s = try summary("tunnel-ipcomp.pcap")
        XCTAssertTrue(s.contains("IPComp: 18 payloads, 18 TCP segments inflated\n"), s)
        try FidelityCaptureTests.streamsMatchTsharkFollow(["tunnel-ipcomp.pcap"])
    }

    /// An ARCNET exception packet (RFC 1201 §4.5: flag 0xFF, two pad bytes, the header again)
    /// is read past its padding; a split one (flag not 0) is not put together: unsupported.
    func testARCNETExceptionPacket() throws {
        let first = try Self.packets("link-arcnet.pcap")[0]  // src, dst, offset (2), D4, flag 0, seq (2), IPv4
        let exception = Array(first[0..<5]) + [0xFF, 0xFF, 0xFF, 0xD4, 0] + Array(first[6...])
        exception.withUnsafeBytes { b in
            guard case .tcp(let s) = LinkDecoder(linkType: 129).decode(b) else { return XCTFail("not TCP") }
            XCTAssertEqual(s.dst.port, 8000)
        }
        var split = first
        split[5] = 1
        split.withUnsafeBytes { b in
            guard case .unsupported = LinkDecoder(linkType: 129).decode(b) else { return XCTFail("a fragment decoded") }
        }
    }

    /// UDP inside every tunnel kind (issue 44: KCP and UDP game traffic captured on a mobile
    /// core or an overlay network): each tunnel's inner flow is found, as tshark finds it, and
    /// all of its messages decoded.
    func testUDPInsideTunnels() throws {
        let s = try summary("tunnel-udp.pcap")
        XCTAssertTrue(s.contains("UDP flows: 8 (96 datagrams, 2632 bytes)"), s)
        XCTAssertTrue(s.contains("udpgame: 8 connections, 112 messages"), s)
        XCTAssertFalse(s.contains("skipped packets"), s)
        let tshark = try TestSupport.oracle("tshark")
        let conv = try TestSupport.run(tshark, ["-r", TestSupport.fixture("tunnel-udp.pcap"), "-q", "-z", "conv,udp"])
        let inner = conv.stdout.split(separator: "\n").filter { $0.contains("<->") && $0.contains(":8200") }
        XCTAssertEqual(inner.count, 8, conv.stdout)
        let ports = Set(inner.compactMap { l in (40101...40108).first { l.contains(":\($0) ") } })
        XCTAssertEqual(ports.count, 8, conv.stdout)
    }

    /// The connection is the innermost packet's: addresses and ports of the mirrored or
    /// tunnelled TCP, not the tunnel's.
    func testEndpointsAreTheInnerPackets() throws {
        let want: [String: (String, String)] = [
            "tunnel-gre.pcap": ("10.0.0.2:40020", "10.0.0.1:8000"),
            "tunnel-erspan.pcap": ("10.0.0.2:40030", "10.0.0.1:8000"),
            "tunnel-vxlan.pcap": ("10.0.0.2:40050", "10.0.0.1:8000"),
            "tunnel-geneve.pcap": ("10.0.0.2:40060", "10.0.0.1:8000"),
            "tunnel-nested.pcap": ("[2001:db8::2]:40070", "[2001:db8::1]:8000"),
        ]
        for (name, (src, dst)) in want {
            let packets = try Self.packets(name)
            let first = packets[0].withUnsafeBytes { b -> (String, String)? in
                guard case .tcp(let s) = LinkDecoder(linkType: 1).decode(b) else { return nil }
                return (s.src.text, s.dst.text)
            }
            XCTAssertEqual(first?.0, src, name)
            XCTAssertEqual(first?.1, dst, name)
        }
    }

    /// Cut anywhere, a tunnelled packet is a segment, a fragment or "headers cut by
    /// snaplen": never malformed, never read past the cut.
    func testEveryPrefixOfATunnelledPacketIsTruncatedNotMalformed() throws {
        for name in Self.fixtures {
            for (n, packet) in try Self.packets(name).enumerated() {
                for cut in 0...packet.count {
                    // A copy of exactly `cut` bytes: a read past it is a read out of the allocation.
                    let prefix = Array(packet[0..<cut])
                    prefix.withUnsafeBytes { b in
                        switch LinkDecoder(linkType: 1).decode(b) {
                        case .tcp(let s):
                            XCTAssertLessThanOrEqual(s.payload.count, s.payloadLength)
                        case .fragment(let f):
                            XCTAssertLessThanOrEqual(f.data.count, f.dataLength)
                        case .truncated:
                            XCTAssertLessThan(cut, packet.count, "\(name) packet \(n)")
                        case let other:
                            XCTFail("\(name) packet \(n) cut at \(cut): \(other)")
                        }
                    }
                }
            }
        }
    }

    /// Tunnel headers cut by the snaplen are counted as such; tunnel headers that contradict
    /// their IP length, of an unknown version, without VXLAN's I flag, and tunnels nested more
    /// than 4 deep (IP in IP, GRE in GRE) are malformed; the good conversation among them is whole.
    func testMalformedTunnelsAreCountedNotDecoded() throws {
        let s = try summary("tunnel-malformed.pcap")
        XCTAssertTrue(s.contains("skipped packets: 4 headers cut by snaplen, 7 malformed headers"), s)
        XCTAssertTrue(s.contains("game: 1 connections, 4 messages"), s)
        XCTAssertTrue(s.contains("gaps: 0 (0 bytes)"), s)
        for args in [["--segments"], ["-T", "json"], ["--follow"]] {
            let r = try TestSupport.framedump(["-r", TestSupport.fixture("tunnel-malformed.pcap")] + args)
            XCTAssertEqual(r.status, 0, "\(args): \(r.stderr)")
            XCTAssertFalse(r.stdout.contains("40081"), "\(args): a bad tunnel's segment got through")
        }
    }

    /// The nesting bound: IPv4 in IPv4 up to 4 tunnels deep is decoded, 5 or more is malformed
    /// (and the decoder's recursion stays bounded for any depth).
    func testNestingDepthIsBounded() {
        let tcp: [UInt8] = [0x9c, 0x40, 0x1f, 0x40, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0x02, 0x00, 0, 0, 0, 0]
            + [0, 0, 0, 6, 0, 1]
        for levels in 0...64 {
            var packet = Self.ipv4(proto: 6, payload: tcp)
            for _ in 0..<levels { packet = Self.ipv4(proto: 4, payload: packet) }
            let frame = [UInt8](repeating: 0, count: 12) + [0x08, 0x00] + packet
            frame.withUnsafeBytes { b in
                switch LinkDecoder(linkType: 1).decode(b) {
                case .tcp(let s):
                    XCTAssertLessThanOrEqual(levels, 4)
                    XCTAssertEqual(s.src.text, "10.0.0.2:40000")
                    XCTAssertEqual(s.payload.count, 6)
                case .malformed: XCTAssertGreaterThan(levels, 4)
                case let other: XCTFail("\(levels) levels: \(other)")
                }
            }
        }
    }

    /// The fuzz entry over the tunnel fixtures' packets with random bytes flipped, cut, or
    /// with tunnel headers spliced into each other.
    func testFuzzEntryOnMutatedTunnels() throws {
        var rng = SeededRandom(seed: 47)
        var packets: [[UInt8]] = []
        for name in Self.fixtures + ["tunnel-malformed.pcap"] { packets += try Self.packets(name) }
        let ethernet = UInt8(FuzzLink.linkTypes.firstIndex(of: 1)!)
        for _ in 0..<400 {
            var input: [UInt8] = [ethernet]
            for p in packets.shuffled(using: &rng).prefix(Int.random(in: 1...12, using: &rng)) {
                var q = p
                for _ in 0..<Int.random(in: 0...4, using: &rng) where !q.isEmpty {
                    // Mostly within the headers (the first 120 bytes), where the tunnels are.
                    q[Int.random(in: 0..<min(q.count, 120), using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                if Bool.random(using: &rng), let other = packets.randomElement(using: &rng), !q.isEmpty {
                    // Another packet's bytes from a random point: tunnels inside the wrong tunnels.
                    q = Array(q[0..<Int.random(in: 0..<q.count, using: &rng)]) + other[Int.random(in: 0..<other.count, using: &rng)...]
                }
                q = Array(q.prefix(65535))
                input += [UInt8(q.count >> 8), UInt8(q.count & 0xff)] + q
            }
            input.withUnsafeBytes { FuzzLink.run($0) }
        }
    }

    // MARK: - Helpers

    static func packets(_ name: String) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        let src = try PacketSource(.file(TestSupport.fixture(name)))
        try src.forEach { p in out.append(Array(p.data)); return true }
        return out
    }

    /// An IPv4 header (10.0.0.2 → 10.0.0.1, checksum left 0: the decoder does not check it).
    static func ipv4(proto: UInt8, payload: [UInt8]) -> [UInt8] {
        let total = 20 + payload.count
        return [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 1, 0x40, 0, 64, proto, 0, 0,
                10, 0, 0, 2, 10, 0, 0, 1] + payload
    }
}
