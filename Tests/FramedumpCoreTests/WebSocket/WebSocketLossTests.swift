import Foundation
import XCTest
@testable import FramedumpCore

/// WebSocket streams with segments lost inside frames: the frame a gap cuts has a known end
/// (its header gave its length), so the next frame is read from there; hunting inside the rest
/// of the payload found "headers" that were data and invented messages.
final class WebSocketLossTests: XCTestCase {
    /// Binary payloads full of bytes that look like frame headers (0x82 and a small length).
    func payload(_ n: Int, _ seed: UInt8) -> [UInt8] {
        (0..<n).map { (i: Int) -> UInt8 in
            if i % 9 == 0 { return 0x82 }
            if i % 9 == 1 { return 0x05 }
            return UInt8(truncatingIfNeeded: i &* 31 &+ Int(seed))
        }
    }

    func testAGapInsideAFrameLosesThatMessageOnly() {
        let head = WS.response()
        var s2c = head
        var sent: [[UInt8]] = []
        var starts: [Int] = []
        for k in 0..<20 {
            let p = payload(1200 + k * 37, UInt8(k))
            starts.append(s2c.count)
            sent.append(p)
            s2c += WS.frame(2, p)
        }
        // Segments of 700 bytes; lose the ones that start inside frames 3, 9 and 15.
        let cuts = Array(stride(from: head.count, to: s2c.count, by: 700))
        var lost = Set<Int>()
        var dropped: [Int] = []
        for f in [3, 9, 15] {
            let inside = cuts.first { $0 > starts[f] + 2 && $0 + 700 < starts[f + 1] }!
            dropped.append(inside)
            lost.insert(f)
        }
        var recovered: [[UInt8]] = []
        var invented = 0
        let (s, _) = StreamFeeder.run(c2s: WS.request(), s2c: s2c, s2cCuts: cuts, dropS2C: nil, dropS2CAt: Set(dropped))
        for m in s.messages where m.dir == .s2c {
            if sent.contains(m.payload) { recovered.append(m.payload) } else { invented += 1 }
        }
        XCTAssertEqual(invented, 0, "no message made of payload bytes")
        XCTAssertEqual(recovered, sent.enumerated().filter { !lost.contains($0.offset) }.map(\.element),
                       "every frame the loss did not touch")
        // The cut frames are reported, none silently.
        XCTAssertGreaterThanOrEqual(s.malformed.filter { $0.0 == .s2c }.count, 3)
    }

    /// A gap that runs past the end of the frame it began in: the next boundary is unknown, and
    /// the hunt finds the next frame.
    func testAGapPastTheFramesEndHuntsAsBefore() {
        let head = WS.response()
        let frames = (0..<6).map { WS.frame(1, Array(String(repeating: "{\"messageType\":\"heartBeat\",\"n\":\($0)}", count: 8).utf8)) }
        let s2c = head + frames.joined()
        let f1 = head.count + frames[0].count
        // One piece from inside frame 1 to inside frame 2.
        let cuts = [head.count, f1 + 100, f1 + frames[1].count + 100, f1 + frames[1].count + frames[2].count]
        let (s, _) = StreamFeeder.run(c2s: WS.request(), s2c: s2c, s2cCuts: cuts, dropS2C: nil, dropS2CAt: [f1 + 100])
        let got = s.messages.filter { $0.dir == .s2c }.map(\.payload)
        let sent = frames.map { Array($0.dropFirst($0[1] == 126 ? 4 : 2)) }
        XCTAssertTrue(got.allSatisfy { sent.contains($0) }, "nothing invented")
        XCTAssertEqual(got.suffix(3), sent.suffix(3), "the frames after the hunt")
    }

    // MARK: - Real peers, six segments removed

    /// `ws_loss.pcap` (`scripts/make_ws_loss_fixture.py`): ten real `websockets` connections
    /// (four plain, three permessage-deflate with context takeover, three without), six TCP data
    /// segments removed: three inside large frames, one holding a frame boundary, two holding a
    /// large frame's header. Checked against what the peers logged (`ws_loss.messages.json`),
    /// as `scripts/measure_ws_loss.py` measures it: nothing invented, every message the loss
    /// did not touch recovered exactly, the rest of a cut frame passed over at once.
    func testRealPeersWithSixSegmentsRemoved() throws {
        let log = try LossLog()
        // The capture as recorded (the removed records put back): every message, as a baseline.
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let full = dir + "/ws_loss_full.pcap"
        try log.rebuildFull(into: full)
        let whole = try LossRun(log: log, ndjson: TestSupport.pipeline(full) { $0.format = .json })
        XCTAssertEqual(whole.recovered, log.total, "the capture as recorded gives every logged message")
        XCTAssertEqual(whole.invented + whole.flagged, 0)

        let run = try LossRun(log: log, ndjson: TestSupport.pipeline(TestSupport.fixture("ws_loss.pcap")) { $0.format = .json })
        XCTAssertEqual(run.invented, 0, "no message the peers did not send, but for those said not to inflate: \(run.inventedSample)")
        for key in log.directions {
            let sent = log.messages[key]!
            let need = sent.indices.filter { !log.touched(key).contains($0) && !log.afterLostWindow(key).contains($0) }
            let missing = need.filter { !run.got[key, default: []].contains($0) }
            XCTAssertEqual(missing, [], "\(key): messages the removed segments did not touch")
        }
        // Measured with scripts/measure_ws_loss.py (docs/layers.md, "WebSocket after a gap"): 8 messages
        // held by the removed segments, 24 after a lost window, shown with "cannot inflate".
        XCTAssertEqual(run.recovered, 620)
        XCTAssertEqual(log.total, 652)
        XCTAssertEqual(run.flagged, 24)

        // The rest of a frame whose header gave its length is passed over to that frame's end
        // at once, as the gap becomes known (no hunt through its payload: that waits for a
        // verified chain of headers). A large frame whose header was lost is hunted through,
        // and the hunt resumes at that frame's end.
        for r in log.removed where r.rule != "frame boundary" {
            let gap = try XCTUnwrap(run.events.first { $0.type == "gap" && $0.key == r.key && $0.offset == r.offset }, "\(r)")
            let skipped = try XCTUnwrap(run.events.first { $0.type == "malformed" && $0.reason == "skipped" && $0.key == r.key
                && $0.offset == r.offset + r.length }, "\(r)")
            XCTAssertEqual(skipped.offset + skipped.length, r.frameEnd, "\(r.rule) at \(r.key) \(r.offset): to the frame's end")
            if r.rule == "inside a frame" {
                XCTAssertEqual(skipped.packet, gap.packet, "\(r.key) \(r.offset): passed over with the gap")
            }
        }
    }
}

/// `ws_loss.messages.json`: what the peers sent, and the segments removed.
struct LossLog {
    typealias Key = String  // "PORT c2s"
    struct Removed {
        var packet: Int, key: Key, offset: Int, length: Int, rule: String, frameEnd: Int, after: Int, record: [UInt8]
    }
    var messages: [Key: [(opcode: String, payload: [UInt8], lost: Bool)]] = [:]
    var takeover: [Key: Bool] = [:]
    var removed: [Removed] = []
    var directions: [Key] = []
    var total: Int { messages.values.map(\.count).reduce(0, +) }

    init() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.fixture("ws_loss.messages.json")))
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        for c in try XCTUnwrap(o["connections"] as? [[String: Any]]) {
            let port = try XCTUnwrap(c["client_port"] as? Int)
            for d in ["c2s", "s2c"] {
                let key = "\(port) \(d)"
                directions.append(key)
                takeover[key] = c["\(d)_context_takeover"] as? Bool ?? false
                messages[key] = try XCTUnwrap(c[d] as? [[String: Any]]).map { m in
                    let op = m["opcode"] as! String
                    let payload = op == "text" ? Array((m["text"] as! String).utf8) : LossLog.bytes(m["payload"] as! String)
                    return (op, payload, m["lost"] != nil)
                }
            }
        }
        for r in try XCTUnwrap(o["removed"] as? [[String: Any]]) {
            removed.append(Removed(packet: r["packet"] as! Int, key: "\(r["conn"] as! Int) \(r["dir"] as! String)",
                                   offset: r["offset"] as! Int, length: r["length"] as! Int, rule: r["rule"] as! String,
                                   frameEnd: (r["frame"] as! [Int])[1], after: r["after"] as! Int,
                                   record: LossLog.bytes(r["record"] as! String)))
        }
    }

    static func bytes(_ hex: String) -> [UInt8] {
        let u = Array(hex.utf8)
        func v(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : c - 87 }
        return stride(from: 0, to: u.count - 1, by: 2).map { v(u[$0]) << 4 | v(u[$0 + 1]) }
    }

    func touched(_ key: Key) -> Set<Int> {
        Set(messages[key]!.indices.filter { messages[key]![$0].lost })
    }

    /// With context takeover, the messages after a removed segment may need the window it held.
    func afterLostWindow(_ key: Key) -> Set<Int> {
        guard takeover[key]! else { return [] }
        var s = Set<Int>()
        for r in removed where r.key == key { s.formUnion(r.after..<messages[key]!.count) }
        return s.subtracting(touched(key))
    }

    /// The capture as recorded: the lossy one with the removed records put back in place.
    func rebuildFull(into path: String) throws {
        let lossy = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestSupport.fixture("ws_loss.pcap"))))
        var records: [[UInt8]] = []
        var i = 24
        while i + 16 <= lossy.count {
            let n = Int(lossy[i + 8]) | Int(lossy[i + 9]) << 8 | Int(lossy[i + 10]) << 16 | Int(lossy[i + 11]) << 24
            records.append(Array(lossy[i..<(i + 16 + n)]))
            i += 16 + n
        }
        for r in removed.sorted(by: { $0.packet < $1.packet }) { records.insert(r.record, at: r.packet - 1) }
        try Data(lossy[0..<24] + records.joined()).write(to: URL(fileURLWithPath: path))
    }
}

/// framedump's NDJSON on a loss capture matched against the log, per direction and in order.
struct LossRun {
    struct Event { var type: String, key: LossLog.Key, offset: Int, length: Int, packet: Int, reason: String }
    var got: [LossLog.Key: Set<Int>] = [:]
    var recovered = 0, invented = 0, flagged = 0
    var inventedSample: [String] = []
    var events: [Event] = []

    init(log: LossLog, ndjson: String) throws {
        var next: [LossLog.Key: Int] = [:]
        for line in ndjson.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard let conn = o["conn"] as? String, let dir = o["dir"] as? String else { continue }
            let port = conn.split(separator: "-")[0].split(separator: ":").last!
            let key = "\(port) \(dir)"
            if let type = o["type"] as? String {
                events.append(Event(type: type, key: key, offset: o["offset"] as? Int ?? -1, length: o["length"] as? Int ?? 0,
                                    packet: o["pkt"] as? Int ?? -1, reason: o["reason"] as? String ?? ""))
                continue
            }
            // Every frame but close, ping and pong: the peers sent no other control frames and no
            // reserved opcodes, so any such frame is invented.
            guard let ws = o["ws"] as? [String: Any], let op = ws["opcode"] as? String,
                  !["close", "ping", "pong"].contains(op) else { continue }
            let fields = o["fields"] as? [String: Any] ?? [:]
            let value = fields["payload"] ?? fields["text"] ?? fields["body"]
            let payload = op == "text" ? Array((value as? String ?? "").utf8) : LossLog.bytes(value as? String ?? "")
            let warnings = o["warnings"] as? [String] ?? []
            let sent = log.messages[key] ?? []
            let from = next[key, default: 0]
            if let k = (from..<sent.count).first(where: { sent[$0].opcode == op && sent[$0].payload == payload }) {
                got[key, default: []].insert(k)
                next[key] = k + 1
                recovered += 1
            } else if warnings.contains(where: { $0.contains("cannot inflate") || $0.contains("without a message to continue") }) {
                // The compressed bytes, or the rest of a message whose start was lost, said to
                // be so: reported, not invented.
                flagged += 1
            } else {
                invented += 1
                inventedSample.append("\(key) offset \(o["offset"] ?? "?")")
            }
        }
    }
}


/// HTTP before the WebSocket: a capture that starts after the SYN, and an upgrade that is
/// not the connection's first request.
final class WebSocketHTTPTests: XCTestCase {
    let serverFrames = WS.frame(1, Array("{\"messageType\":\"heartBeat\"}".utf8)) + WS.frame(2, [7, 0, 0, 0] + Array("hi".utf8))
    let clientFrames = WS.client(1, Array("{\"messageType\":\"openUrl\"}".utf8))

    /// Picked up mid-stream (no SYN) with the handshake in the capture: the handshake is read,
    /// not hunted through as if it were frames.
    func testAHandshakeWithoutItsSynIsReadAsAHandshake() throws {
        let bridge = try DissectorLoader.loadFile(TestSupport.dissectors + "/bridge.dissector")
        for protocols in [[], bridge] {
            let (s, m) = StreamFeeder.run(c2s: WS.request() + clientFrames, s2c: WS.response() + serverFrames,
                                          syn: false, protocols: protocols)
            XCTAssertEqual(s.handshakes.count, 2, "request and response")
            XCTAssertEqual(s.byDirection[0].map(\.payload), [Array("{\"messageType\":\"openUrl\"}".utf8)])
            XCTAssertEqual(s.byDirection[1].count, 2)
            XCTAssertTrue(s.malformed.isEmpty, "\(s.malformed)")
            XCTAssertEqual(m.httpPassedOver, 0)
        }
    }

    /// Mid-stream plain HTTP on a WebSocket protocol's port: passed over, nothing invented.
    func testMidStreamPlainHTTPIsNotHuntedForFrames() throws {
        let bridge = try DissectorLoader.loadFile(TestSupport.dissectors + "/bridge.dissector")
        let c2s = Array("GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n".utf8)
        let s2c = Array("HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n".utf8) + [UInt8](repeating: 0x82, count: 300)
        let (s, m) = StreamFeeder.run(c2s: c2s, s2c: s2c, syn: false, protocols: bridge)
        XCTAssertTrue(s.messages.isEmpty, "\(s.messages.count) messages invented")
        XCTAssertTrue(s.malformed.isEmpty)
        XCTAssertEqual(m.httpPassedOver, 1)
    }

    /// HTTP the head reader cannot read (LF-only lines, HTTP/0.9, a head cut by a gap) on a
    /// connection no dissector claimed: passed over quietly, not reported as broken WebSocket.
    func testUnreadableHTTPWithoutADissectorIsPassedOverQuietly() {
        let cases: [([UInt8], [UInt8], Range<Int>?)] = [
            (Array("OPTIONS * HTTP/1.1\nHost: x\n\n".utf8), Array("HTTP/1.1 200 OK\nAllow: GET\n\n".utf8), nil),
            (Array("GET /\n".utf8), Array("<html>hello</html>".utf8), nil),
            (Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
             Array("HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n".utf8) + [UInt8](repeating: 0x82, count: 500), 0..<1),
        ]
        for (c2s, s2c, drop) in cases {
            let (s, _) = StreamFeeder.run(c2s: c2s, s2c: s2c, s2cCuts: [10], port: 80, dropS2C: drop)
            XCTAssertTrue(s.messages.isEmpty, "\(String(decoding: c2s, as: UTF8.self)): \(s.messages.count) messages")
            XCTAssertTrue(s.malformed.isEmpty, "\(String(decoding: c2s, as: UTF8.self)): \(s.malformed)")
        }
    }

    /// The upgrade as the third request of a keep-alive connection (after a GET and a POST
    /// with a body): found, and its messages decoded.
    func testAnUpgradeAfterOtherRequestsOnAKeepAliveConnection() throws {
        let c2s = Array("GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            + Array("POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".utf8)
            + WS.request() + clientFrames
        let s2c = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
            + Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nyes\r\n0\r\n\r\n".utf8)
            + WS.response() + serverFrames
        // The client's requests in two pieces (the feeder sends them first), the server's answers
        // cut everywhere from its third piece on, so each answer comes after its request.
        for cut in [1, 7, 40, 1000] {
            let (s, m) = StreamFeeder.run(c2s: c2s, s2c: s2c, s2cCuts: [1, 2] + Array(stride(from: 2 + cut, to: s2c.count, by: cut)))
            XCTAssertEqual(s.handshakes.count, 2, "cut \(cut)")
            XCTAssertEqual(s.byDirection[0].count, 1, "cut \(cut)")
            XCTAssertEqual(s.byDirection[1].map(\.opcode), [1, 2], "cut \(cut)")
            XCTAssertTrue(s.malformed.isEmpty, "cut \(cut): \(s.malformed)")
            XCTAssertEqual(m.httpPassedOver, 0, "cut \(cut): the connection was upgraded")
        }
    }

    /// The server's answer to a keep-alive request and its 101 in one segment (the 101 right
    /// after the body, not at a line start): the upgrade is found, wherever the segments cut.
    func testA101RightAfterABodyInOneSegment() throws {
        for (first, answer) in [("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
                                ("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"),
                                ("GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 304 Not Modified\r\nETag: 1\r\n\r\n"),
                                ("GET /b HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")] {
            let c2s = Array(first.utf8) + WS.request() + clientFrames
            let s2c = Array(answer.utf8) + WS.response() + serverFrames
            // (The feeder alternates pieces: the server's first byte alone comes before the
            // client's second request, so each answer follows its request, as on the wire.)
            for cut in [0, 1, 5, 13] {
                let cuts = cut == 0 ? [1] : Array(stride(from: cut, to: s2c.count, by: cut))
                let (s, m) = StreamFeeder.run(c2s: c2s, s2c: s2c, s2cCuts: cuts)
                XCTAssertEqual(s.handshakes.count, 2, "\(answer) cut \(cut)")
                XCTAssertEqual(s.byDirection[1].map(\.opcode), [1, 2], "\(answer) cut \(cut)")
                XCTAssertTrue(s.malformed.isEmpty, "\(answer) cut \(cut): \(s.malformed)")
                XCTAssertEqual(m.httpPassedOver, 0, "\(answer) cut \(cut)")
            }
        }
    }
}

/// The summary of a damaged WebSocket stream: control and reserved frames were counted among
/// "messages with warnings" but not among the messages ("17 messages, 117 with warnings").
final class WebSocketSummaryTests: XCTestCase {
    func testWarningsCountOnlyTheMessagesTheLineCounts() {
        var s2c = WS.response()
        for k in 0..<5 { s2c += WS.frame(3, [UInt8(k)]) + WS.frame(0xB, [1]) }   // reserved data and control opcodes
        s2c += WS.frame(1, Array("{}".utf8)) + WS.frame(9, []) + WS.frame(2, [1, 2, 3], rsv: 0x20)
        let (s, m) = StreamFeeder.run(c2s: WS.request(), s2c: s2c)
        let p = m.webSocketDefault
        let counted = p.messageCounts.reduce(0, +)
        XCTAssertEqual(counted, 2, "the text and the binary message")
        XCTAssertEqual(p.warnings, 1, "the binary message with a reserved bit")
        XCTAssertEqual(s.messages.filter { $0.dir == .s2c }.count, 13, "every frame is still shown")
        let out = OutputBuffer(fd: nil)
        let summary = Summary(out: out)
        summary.protocols(m)
        out.flush()
        XCTAssertTrue(out.text.contains("5 reserved-data"), out.text)
        XCTAssertEqual(out.text.components(separatedBy: "reserved-data").count, 2, "one count per name: \(out.text)")
    }
}
