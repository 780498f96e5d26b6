import Foundation
import XCTest
@testable import FramedumpCore

/// Handshakes seen in real captures that used to lose bytes or invent gaps: a handshake
/// answered twice with different ISNs, a stale ACK before the SYN-ACK, a SYN retried after a
/// RST with the same ISN, bytes after both FINs. Each capture is written here through libpcap
/// (`CaptureBuilder`), and its streams are compared with what was sent and with tshark's follow.
final class HandshakeOddityTests: XCTestCase {
    let client: UInt32 = 0x0A01_0001, server: UInt32 = 0x0A00_0001
    let cport: UInt16 = 40_000, sport: UInt16 = 8000
    static let syn: UInt8 = 0x02, ack: UInt8 = 0x10, psh: UInt8 = 0x18, rst: UInt8 = 0x04, fin: UInt8 = 0x11, synAck: UInt8 = 0x12

    /// Game frames `[u32 length][u16 id][u8 n]` (SceneId-sized bodies), `count` of them.
    func messages(_ id: UInt16, _ count: Int) -> [UInt8] {
        (0..<count).flatMap { i -> [UInt8] in .be32(7) + .be16(id) + [UInt8(i & 0xff)] }
    }

    func c2s(_ b: CaptureBuilder, _ seq: UInt32, _ ack: UInt32, _ flags: UInt8, _ payload: [UInt8] = []) {
        payload.withUnsafeBytes { b.segment(src: client, sport: cport, dst: server, dport: sport, seq: seq, ack: ack, flags: flags, payload: $0) }
    }

    func s2c(_ b: CaptureBuilder, _ seq: UInt32, _ ack: UInt32, _ flags: UInt8, _ payload: [UInt8] = []) {
        payload.withUnsafeBytes { b.segment(src: server, sport: sport, dst: client, dport: cport, seq: seq, ack: ack, flags: flags, payload: $0) }
    }

    struct Stream { var conn: String; var c2s: [UInt8]; var s2c: [UInt8]; var gaps: Int; var entry: [String: Any] }

    /// `--streams` of a capture, connection by connection, each compared with tshark's follow.
    func streams(_ pcap: String, tsharkAgrees: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws -> [Stream] {
        let dir = TestSupport.tempDir()
        let r = try TestSupport.framedump(["-r", pcap, "-q", "--streams", dir])
        XCTAssertEqual(r.status, 0, r.stderr, file: file, line: line)
        let index = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as? [[String: Any]])
        let tshark = try TestSupport.oracle("tshark")
        var out: [Stream] = []
        for (n, e) in index.enumerated() {
            let files = e["files"] as! [String: String]
            func read(_ d: String) -> [UInt8] { [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: dir + "/" + files[d]!))) ?? Data()) }
            let s = Stream(conn: e["conn"] as! String, c2s: read("c2s"), s2c: read("s2c"), gaps: (e["gaps"] as? [Any])?.count ?? 0, entry: e)
            out.append(s)
            guard tsharkAgrees else { continue }
            let follow = try TestSupport.run(tshark, ["-r", pcap, "-q", "-z", "follow,tcp,raw,\(n)"])
            let (nodes, bytes) = ReassemblyTests.parseFollow(follow.stdout)
            let clientNode = nodes.firstIndex(of: String(s.conn.split(separator: "-")[0])) ?? 0
            XCTAssertEqual(s.c2s, bytes[clientNode], "stream \(n) c2s against tshark", file: file, line: line)
            XCTAssertEqual(s.s2c, bytes[1 - clientNode], "stream \(n) s2c against tshark", file: file, line: line)
        }
        return out
    }

    func summary(_ pcap: String) throws -> String { try TestSupport.framedump(["-r", pcap, "-q"]).stdout }

    /// Two SYN-ACKs with different ISNs: the client acknowledges the second, the server sends
    /// from it. All its bytes were counted as retransmissions, without a word.
    func testAHandshakeAnsweredTwiceWithDifferentISNs() throws {
        let pcap = TestSupport.tempDir() + "/synack-twice.pcap"
        let b = try CaptureBuilder(pcap)
        let data = messages(20001, 40)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 5000, 1001, Self.synAck)
        s2c(b, 90_000, 1001, Self.synAck)
        c2s(b, 1001, 90_001, Self.ack)
        c2s(b, 1001, 90_001, Self.psh, messages(10002, 2))
        s2c(b, 90_001, 1015, Self.psh, Array(data[0..<140]))
        s2c(b, 90_141, 1015, Self.psh, Array(data[140...]))
        b.finish()
        let s = try streams(pcap)
        XCTAssertEqual(s.count, 1)
        XCTAssertEqual(s[0].s2c, data, "every server byte")
        XCTAssertEqual(s[0].gaps, 0)
        let q = try summary(pcap)
        XCTAssertTrue(q.contains("1 handshakes answered again with another ISN"), q)
        XCTAssertFalse(q.contains("retransmitted"), q)
        XCTAssertTrue(q.contains("42 messages"), q)
    }

    /// The client acknowledges the first of two SYN-ACKs: that one is the stream's. (tshark
    /// keeps the last SYN-ACK's ISN and follows no server byte here: the bytes are checked
    /// against what was sent.)
    func testTheAcknowledgedSynAckWins() throws {
        let pcap = TestSupport.tempDir() + "/synack-first.pcap"
        let b = try CaptureBuilder(pcap)
        let data = messages(20001, 10)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 5000, 1001, Self.synAck)
        s2c(b, 90_000, 1001, Self.synAck)
        c2s(b, 1001, 5001, Self.ack)
        s2c(b, 5001, 1001, Self.psh, data)
        b.finish()
        let s = try streams(pcap, tsharkAgrees: false)
        XCTAssertEqual(s[0].s2c, data)
        XCTAssertEqual(s[0].gaps, 0)
    }

    /// A stale connection's ACK answers the SYN, the client resets and retries: the ACK's
    /// number became an "acked-unseen" gap of up to 2 GB at offset 0, and every later client
    /// byte "late".
    func testAStaleAckBeforeTheSynAckIsNotAGap() throws {
        let pcap = TestSupport.tempDir() + "/stale-ack.pcap"
        let b = try CaptureBuilder(pcap)
        let data = messages(20001, 12)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 3_000_000_000, 2_147_000_000, Self.ack)      // a half-open peer's ACK (RFC 793 3.4)
        c2s(b, 2_147_000_000, 0, Self.rst)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 7000, 1001, Self.synAck)
        c2s(b, 1001, 7001, Self.ack)
        c2s(b, 1001, 7001, Self.psh, data)
        s2c(b, 7001, 1001 + UInt32(data.count), Self.psh, messages(20001, 1))
        b.finish()
        let s = try streams(pcap)
        let withData = try XCTUnwrap(s.first { !$0.c2s.isEmpty })
        XCTAssertEqual(withData.c2s, data, "every client byte")
        XCTAssertEqual(s.reduce(0) { $0 + $1.gaps }, 0, "no gap")
        let q = try summary(pcap)
        XCTAssertTrue(q.contains("gaps: 0 (0 bytes)"), q)
        XCTAssertTrue(q.contains("ACKs of bytes their sender could not have seen, ignored"), q)
    }

    /// An ACK far beyond any window the acker advertised is not evidence of lost bytes.
    func testAnAckBeyondEveryWindowIsNotAGap() throws {
        let pcap = TestSupport.tempDir() + "/far-ack.pcap"
        let b = try CaptureBuilder(pcap)
        let data = messages(20001, 5)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 7000, 1001, Self.synAck)
        c2s(b, 1001, 7001, Self.ack)
        c2s(b, 1001, 7001, Self.psh, data)
        s2c(b, 7001, 1_500_000_000, Self.ack)               // corrupt: 1.5 GB ahead of a 64 KiB window
        c2s(b, 1001 + UInt32(data.count), 7001, Self.psh, data)
        b.finish()
        let s = try streams(pcap)
        XCTAssertEqual(s[0].c2s, data + data)
        XCTAssertEqual(s[0].gaps, 0)
    }

    /// A RST, then the client's SYN with the same ISN and a new handshake: two connections,
    /// each with its bytes (they were merged, then split at an arbitrary point).
    func testASynWithTheSameISNAfterAResetIsANewConnection() throws {
        let pcap = TestSupport.tempDir() + "/rst-same-isn.pcap"
        let b = try CaptureBuilder(pcap)
        let first = messages(20001, 3), second = messages(10002, 50)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 7000, 1001, Self.synAck)
        c2s(b, 1001, 7001, Self.ack)
        c2s(b, 1001, 7001, Self.psh, first)
        s2c(b, 7001, 1001 + UInt32(first.count), Self.rst)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 30_000, 1001, Self.synAck)
        c2s(b, 1001, 30_001, Self.ack)
        for i in stride(from: 0, to: second.count, by: 7) {
            c2s(b, 1001 + UInt32(i), 30_001, Self.psh, Array(second[i..<(i + 7)]))
        }
        b.finish()
        let r = try TestSupport.framedump(["-r", pcap, "-T", "json"])
        let opens = r.stdout.split(separator: "\n").filter { $0.contains("\"type\":\"open\"") }
        XCTAssertEqual(opens.count, 2, r.stdout)
        XCTAssertTrue(opens.allSatisfy { $0.contains("\"syn\":true") }, "both began at a SYN")
        let dir = TestSupport.tempDir()
        XCTAssertEqual(try TestSupport.framedump(["-r", pcap, "-q", "--streams", dir]).status, 0)
        let index = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as? [[String: Any]])
        XCTAssertEqual(index.count, 2)
        let streams = index.map { e -> [UInt8] in
            let f = (e["files"] as! [String: String])["c2s"]!
            return [UInt8](try! Data(contentsOf: URL(fileURLWithPath: dir + "/" + f)))
        }
        XCTAssertEqual(streams, [first, second])
    }

    /// Two bytes after both FINs continue the closed connection: said so, not a SYN.
    func testBytesAfterBothFinsAreAContinuationNotASyn() throws {
        let pcap = TestSupport.tempDir() + "/after-fins.pcap"
        let b = try CaptureBuilder(pcap)
        let data = messages(20001, 2)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 7000, 1001, Self.synAck)
        c2s(b, 1001, 7001, Self.ack)
        c2s(b, 1001, 7001, Self.psh, data)
        c2s(b, 1001 + UInt32(data.count), 7001, Self.fin)
        s2c(b, 7001, 1002 + UInt32(data.count), Self.fin)
        c2s(b, 1002 + UInt32(data.count), 7002, Self.psh, [0xAB, 0xCD])
        b.finish()
        let r = try TestSupport.framedump(["-r", pcap, "-T", "json"])
        let opens = r.stdout.split(separator: "\n").filter { $0.contains("\"type\":\"open\"") }
        XCTAssertEqual(opens.count, 2, r.stdout)
        XCTAssertTrue(opens[0].contains("\"syn\":true"))
        XCTAssertTrue(opens[1].contains("\"syn\":false,\"continues\":1"), String(opens[1]))
        let tree = try TestSupport.framedump(["-r", pcap]).stdout
        XCTAssertTrue(tree.contains("connection continues #1 (bytes after it closed, no new SYN)"), tree)
    }

    /// An IPv4 total length larger than an uncut frame: a lying header, not a snaplen cut. It
    /// invented a 4,096-byte gap, then the real bytes after it were "retransmissions".
    func testAnIPLengthBeyondAnUncutFrameLosesNothing() throws {
        let pcap = TestSupport.tempDir() + "/lying-length.pcap"
        let b = try CaptureBuilder(pcap)
        let data = messages(20001, 30)
        c2s(b, 1000, 0, Self.syn)
        s2c(b, 7000, 1001, Self.synAck)
        c2s(b, 1001, 7001, Self.ack)
        let first = Array(data[0..<70])
        first.withUnsafeBytes {
            b.segment(src: server, sport: sport, dst: client, dport: cport, seq: 7001, ack: 1001, flags: Self.psh, payload: $0,
                      ipLengthExtra: 4096)
        }
        s2c(b, 7071, 1001, Self.psh, Array(data[70...]))
        b.finish()
        let dir = TestSupport.tempDir()
        XCTAssertEqual(try TestSupport.framedump(["-r", pcap, "-q", "--streams", dir]).status, 0)
        let index = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as? [[String: Any]])
        let f = (index[0]["files"] as! [String: String])["s2c"]!
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/" + f))), data)
        XCTAssertEqual((index[0]["gaps"] as? [Any])?.count ?? 0, 0)
        let q = try summary(pcap)
        XCTAssertTrue(q.contains("IP length beyond an uncut frame (a lying or corrupt header), captured length used: 1 segments"), q)
        XCTAssertTrue(q.contains("30 messages"), q)
    }
}
