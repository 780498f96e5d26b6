import Foundation
import XCTest
@testable import FramedumpCore

/// The real KCP and UDP samples (samples/make_kcp_samples.py, make_udp_sample.py): every game
/// frame the peers sent comes out once, exact, in order, though the lossy link dropped a tenth
/// of the datagrams and KCP sent them again; the same on one thread and on two.
final class KCPSampleTests: XCTestCase {
    /// The log's frames per "CLIENTPORT DIR", and the cut ones apart.
    func logged(_ name: String) throws -> (frames: [String: [[UInt8]]], cut: Int) {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample(name)))
        let log = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var out: [String: [[UInt8]]] = [:], cut = 0
        for c in try XCTUnwrap(log["connections"] as? [[String: Any]]) {
            let port = try XCTUnwrap(c["client_port"] as? Int)
            for dir in ["c2s", "s2c"] {
                for f in try XCTUnwrap(c[dir] as? [[String: Any]]) {
                    if f["cut"] as? Bool == true { cut += 1; continue }
                    out["\(port) \(dir)", default: []].append(Self.bytes(try XCTUnwrap(f["frame"] as? String)))
                }
            }
        }
        return (out, cut)
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = [], hi: UInt8?
        for c in hex.utf8 {
            let v = c <= 57 ? c - 48 : c - 87
            if let h = hi { out.append(h << 4 | v); hi = nil } else { hi = v }
        }
        return out
    }

    /// What the pipeline hands up, per "CLIENTPORT DIR".
    func decoded(_ pcap: String) throws -> (frames: [String: [[UInt8]]], sink: DatagramCollector) {
        let sink = PortCollector()
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        let out = OutputBuffer(fd: nil)
        let p = try Pipeline(options: o, output: out, messageSink: sink)
        try p.run(try PacketSource(.file(TestSupport.sample(pcap))), limit: nil, dumper: nil, lineBuffered: false)
        p.finish()
        return (sink.byPort, sink)
    }

    func testEveryKCPFrameDecodesAsSentDespiteTheLoss() throws {
        let (sent, _) = try logged("kcp.messages.json")
        let (got, sink) = try decoded("kcp.pcap")
        XCTAssertEqual(Set(got.keys), Set(sent.keys))
        for (key, frames) in sent { XCTAssertEqual(got[key] ?? [], frames, key) }
        XCTAssertEqual(sent.values.reduce(0) { $0 + $1.count }, 241)
        XCTAssertTrue(sink.malformed.isEmpty, "\(sink.malformed)")
        // The capture holds retransmissions (the recorder dropped a tenth of the datagrams).
        let r = try TestSupport.framedump(["-r", "samples/kcp.pcap", "-q"])
        XCTAssertTrue(r.stdout.contains("kcp (message mode): 2 conversations"), r.stdout)
        XCTAssertNil(r.stdout.range(of: " 0 copies seen again"), "the sample holds retransmissions: \(r.stdout)")
    }

    func testEveryUDPFrameDecodesAsSentAndTheCutOneIsReported() throws {
        let (sent, cut) = try logged("udp.messages.json")
        let (got, sink) = try decoded("udp.pcap")
        XCTAssertEqual(Set(got.keys), Set(sent.keys))
        for (key, frames) in sent { XCTAssertEqual(got[key] ?? [], frames, key) }
        XCTAssertEqual(cut, 1)
        XCTAssertEqual(sink.malformed.count, 1)
        if case .cutByUnitEnd = sink.malformed.first?.1 {} else { XCTFail("\(sink.malformed)") }
    }

    func testOneThreadAndTwoPrintTheSame() throws {
        for s in ["kcp", "udp"] {
            for format in [["-T", "json"], ["-v", "--color", "never"]] {
                let one = try TestSupport.framedump(["-r", "samples/\(s).pcap", "--one-thread"] + format)
                let two = try TestSupport.framedump(["-r", "samples/\(s).pcap"] + format)
                XCTAssertEqual(one.status, 0, one.stderr)
                let stable = { (t: String) in t.split(separator: "\n").filter { !$0.hasPrefix("peak memory") }.joined(separator: "\n") }
                XCTAssertEqual(stable(one.stdout), stable(two.stdout), "\(s) \(format)")
            }
        }
    }

    func testFiltersAndStatistics() throws {
        // Client 3's conversation (stream mode, port 8101): 149 messages, 59 of them to the server.
        let conv = try TestSupport.framedump(["-r", "samples/kcp.pcap", "-Y", "kcp.conv == 287454023 && udp.port == 8101", "-q"])
        XCTAssertTrue(conv.stdout.contains("filter kcp.conv == 287454023 && udp.port == 8101: 149 messages matched"), conv.stdout)
        let up = try TestSupport.framedump(["-r", "samples/kcp.pcap", "-Y", "kcp.conv == 287454023 && udp.dstport == 8101", "-q"])
        XCTAssertTrue(up.stdout.contains(": 59 messages matched"), up.stdout)
        let tcp = try TestSupport.framedump(["-r", "samples/kcp.pcap", "-Y", "tcp.port == 8100", "-q"])
        XCTAssertTrue(tcp.stdout.contains(": 0 messages matched"), tcp.stdout)
        let z = try TestSupport.framedump(["-r", "samples/kcp.pcap", "-q", "-z", "kcp"])
        XCTAssertTrue(z.stdout.contains("=== KCP conversations ==="), z.stdout)
        XCTAssertEqual(z.stdout.split(separator: "\n").filter { $0.hasPrefix("#") }.count, 3, z.stdout)
        let j = try TestSupport.framedump(["-r", "samples/kcp.pcap", "-q", "-z", "kcp", "-T", "json"])
        XCTAssertTrue(j.stdout.contains("{\"type\":\"stats\",\"stat\":\"kcp\",\"rows\":[{\"conn\":\"#1\""), j.stdout)
    }

    /// `--streams` and `--follow` take UDP flows too: each direction's datagrams one after
    /// another, byte for byte what the peers sent (and what tshark's UDP follow shows).
    func testStreamsAndFollowTakeUDPFlows() throws {
        let dir = TestSupport.tempDir()
        let r = try TestSupport.framedump(["-r", "samples/udp.pcap", "-q", "--streams", dir])
        XCTAssertEqual(r.status, 0, r.stderr)
        let index = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as? [[String: Any]])
        let log = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("udp.messages.json")))) as? [String: Any])
        let connections = log["connections"] as! [[String: Any]]
        XCTAssertEqual(index.count, connections.count)
        for e in index {
            XCTAssertEqual(e["transport"] as? String, "udp")
            let port = Int((e["conn"] as! String).split(separator: "-")[0].split(separator: ":").last!)!
            let c = try XCTUnwrap(connections.first { $0["client_port"] as! Int == port })
            let files = e["files"] as! [String: String]
            for d in ["c2s", "s2c"] {
                let sent = (c[d] as! [[String: Any]]).flatMap { Self.bytes($0["frame"] as! String) }
                let ours = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/" + files[d]!)))
                XCTAssertEqual(ours, sent, "\(port) \(d)")
            }
        }
        let follow = try TestSupport.framedump(["-r", "samples/udp.pcap", "--follow"])
        XCTAssertTrue(follow.stdout.hasPrefix("=== udp flow 1 "), follow.stdout)
    }

    /// `-Y … -w` on UDP flows writes the datagrams of the matching messages: read again, the
    /// written capture holds those messages and no message of another conversation.
    func testFilterWithWriteKeepsTheMatchingDatagrams() throws {
        let out = TestSupport.tempDir() + "/kcp-matched.pcap"
        let filter = "kcp.conv == 287454023 && udp.port == 8101"
        let r = try TestSupport.framedump(["-r", "samples/kcp.pcap", "-q", "-Y", filter, "-w", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        let again = try TestSupport.framedump(["-r", out, "-q", "-Y", filter])
        XCTAssertTrue(again.stdout.contains(": 149 messages matched"), again.stdout)
        let other = try TestSupport.framedump(["-r", out, "-q", "-Y", "udp.port == 8100"])
        XCTAssertTrue(other.stdout.contains(": 0 messages matched"), other.stdout)
    }
}

/// `DatagramCollector` keyed by the client's port and direction.
final class PortCollector: DatagramCollector {
    var byPort: [String: [[UInt8]]] = [:]
    override func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        super.message(m, c, p)
        byPort["\(c.client.port) \(m.direction.name)", default: []].append(Array(m.frame.bytes))
    }
}
