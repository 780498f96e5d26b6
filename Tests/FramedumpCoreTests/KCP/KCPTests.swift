import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Collects what the KCP and UDP stacks hand up: each message's frame and KCP note, and the
/// malformed reports.
class DatagramCollector: MessageSink {
    struct Message: Equatable {
        var dir: Direction
        var frame: [UInt8]
        var conv: UInt32?
        var fragments: UInt16?
        /// The message's packets: the earliest that carried its bytes, the one that completed it.
        var pkts: [UInt64] = []
        /// Bytes of a cut frame the stream lacked (0: whole).
        var missing = 0
    }
    var messages: [Message] = []
    var malformed: [(Direction, MalformedReason)] = []
    var opened = 0, closed: [CloseReason] = []

    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) { opened += 1 }
    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let k = m.layerNotes.note(of: KCPLayer.layer).map(KCPLayer.info)
        messages.append(Message(dir: m.direction, frame: Array(m.frame.bytes), conv: k?.conv, fragments: k?.fragments,
                                pkts: [m.frame.firstPacket.number, m.frame.lastPacket.number], missing: m.frame.missing))
    }
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) { malformed.append((d, reason)) }
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {}
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) { closed.append(reason) }
    func finish() {}
    func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {}
    func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {}
}

/// Datagrams of one UDP flow fed through the flow table and the session stage, in-process.
struct DatagramFeeder {
    static let client = Endpoint(IPAddress(v4: 0x7F00_0001), 40000)

    static let dissector = """
        protocol kgame { udp port 8100; kcp; header { uint32 length; uint16 id; } frame_length = length; message_id = id; body raw; }
        protocol kstream { udp port 8101; kcp stream; header { uint32 length; uint16 id; } frame_length = length; message_id = id; body raw; }
        protocol kwhole { udp port 8102; kcp; header { uint16 id; } message_id = id; body raw; }
        protocol ugame { udp port 8200; header { uint32 length; uint16 id; } frame_length = length; message_id = id; body raw; }
        """

    /// `datagrams`: (client to server?, bytes, announced length beyond what is present).
    static func run(port: UInt16, _ datagrams: [(Bool, [UInt8])], cutBy: [Int: Int] = [:],
                    idleTimeout: Int64 = 60, gapSeconds: [Int: Int64] = [:]) throws -> (DatagramCollector, SessionManager, UDPFlows) {
        let sink = DatagramCollector()
        let sessions = SessionManager(protocols: try DissectorLoader.parse(text: dissector, file: "test.dissector"), sink: sink)
        var number: UInt64 = 0
        var o = UDPFlows.Options()
        o.idleTimeoutSeconds = idleTimeout
        let flows = UDPFlows(options: o, consumer: sessions, isServerPort: sessions.isUDPServerPort,
                             nextNumber: { number += 1; return number })
        let server = Endpoint(IPAddress(v4: 0x7F00_0002), port)
        var seconds: Int64 = 1
        for (i, (up, bytes)) in datagrams.enumerated() {
            seconds += gapSeconds[i] ?? 0
            bytes.withUnsafeBytes { b in
                let d = UDPDatagram(src: up ? client : server, dst: up ? server : client, payload: b,
                                    payloadLength: b.count + (cutBy[i] ?? 0))
                flows.add(d, packet: PacketRef(number: UInt64(i + 1), ts: Timestamp(seconds: seconds, nanos: UInt32(i))))
            }
        }
        flows.finish()
        return (sink, sessions, flows)
    }
}

/// A KCP sender as ikcp.c writes segments: sn from 0, message mode fragments counting down.
struct KCPSender {
    var conv: UInt32 = 0x1122_3344
    var sn: UInt32 = 0
    var mss = 100

    static func segment(conv: UInt32, cmd: UInt8, frg: UInt8 = 0, ts: UInt32 = 0, sn: UInt32, una: UInt32 = 0,
                        _ data: [UInt8] = []) -> [UInt8] {
        var s: [UInt8] = []
        func le32(_ v: UInt32) { for i in 0..<4 { s.append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
        le32(conv); s.append(cmd); s.append(frg); s += [0x80, 0]; le32(ts); le32(sn); le32(una); le32(UInt32(data.count))
        return s + data
    }

    /// Message mode: one message (whole protocol frames) as its fragments.
    mutating func message(_ m: [UInt8], stream: Bool = false) -> [[UInt8]] {
        let pieces = stride(from: 0, to: max(m.count, 1), by: mss).map { Array(m[$0..<min($0 + mss, m.count)]) }
        defer { sn &+= UInt32(pieces.count) }
        return pieces.enumerated().map { i, p in
            Self.segment(conv: conv, cmd: 81, frg: stream ? 0 : UInt8(pieces.count - 1 - i), ts: 1000 + sn, sn: sn + UInt32(i), p)
        }
    }
}

final class KCPTests: XCTestCase {
    func game(_ id: UInt16, _ body: [UInt8]) -> [UInt8] {
        let n = UInt32(6 + body.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), UInt8(id >> 8), UInt8(id & 0xff)] + body
    }

    /// Messages of 1 to 3 game frames, some longer than the mss (fragmented).
    func messages(_ rng: inout SeededRandom, _ count: Int) -> [[[UInt8]]] {
        (0..<count).map { i in
            (0..<Int.random(in: 1...3, using: &rng)).map { j in
                game(UInt16(10 + i % 7), (0..<Int.random(in: 0...(j == 0 ? 260 : 40), using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            }
        }
    }

    /// Message mode, in every order a bounded reordering allows, with copies: every frame comes
    /// out once, in order, exact; every copy is counted; nothing is lost.
    func testMessageModeReorderedAndDuplicatedDecodesEveryFrameOnce() throws {
        for seed in 1...40 {
            var rng = SeededRandom(seed: UInt64(seed))
            let msgs = messages(&rng, 12)
            var sender = KCPSender()
            var segs = msgs.flatMap { sender.message($0.flatMap { $0 }) }
            // Copies (retransmissions) of some segments, and shuffles within windows of 6.
            var copies = 0
            for i in stride(from: segs.count - 1, through: 0, by: -1) where Int.random(in: 0..<5, using: &rng) == 0 {
                segs.insert(segs[i], at: min(segs.count, i + Int.random(in: 1...4, using: &rng)))
                copies += 1
            }
            for w in stride(from: 0, to: segs.count, by: 6) { segs[w..<min(w + 6, segs.count)].shuffle(using: &rng) }
            // Several segments per datagram now and then.
            var datagrams: [(Bool, [UInt8])] = []
            var i = 0
            while i < segs.count {
                let n = min(segs.count - i, Int.random(in: 1...3, using: &rng))
                datagrams.append((true, segs[i..<(i + n)].flatMap { $0 }))
                i += n
            }
            let (sink, sessions, _) = try DatagramFeeder.run(port: 8100, datagrams)
            XCTAssertEqual(sink.messages.map(\.frame), msgs.flatMap { $0 }, "seed \(seed)")
            XCTAssertTrue(sink.malformed.isEmpty, "seed \(seed): \(sink.malformed)")
            let k = sessions.protocols.first { $0.schema.name == "kgame" }!.layerStates[Int(KCPLayer.layer)] as! KCPProtocolState
            XCTAssertEqual(k.retransmitted, UInt64(copies), "seed \(seed)")
            XCTAssertEqual(k.lost, 0)
            XCTAssertEqual(k.messages, UInt64(msgs.count))
        }
    }

    /// A message held behind a missing segment: its `pkts` are [the packet that carried it,
    /// the one that filled the hole], as outputs.md says (message and stream mode).
    func testAHeldMessageKeepsItsFirstPacket() throws {
        for port: UInt16 in [8100, 8101] {
            let a = game(1, [1]), b = game(2, [2, 2]), c = game(3, [3, 3, 3])
            let seg = { (sn: UInt32, m: [UInt8]) in KCPSender.segment(conv: 7, cmd: 81, ts: sn, sn: sn, m) }
            // sn 0, then sn 2 (held), then sn 1 fills the hole; then a fragmented message whose
            // second fragment comes first.
            var datagrams: [(Bool, [UInt8])] = [(true, seg(0, a)), (true, seg(2, c)), (true, seg(1, b))]
            if port == 8100 {
                let d = game(4, [4, 4, 4, 4])
                datagrams += [(true, KCPSender.segment(conv: 7, cmd: 81, frg: 0, ts: 4, sn: 4, Array(d[5...]))),
                              (true, KCPSender.segment(conv: 7, cmd: 81, frg: 1, ts: 3, sn: 3, Array(d[..<5])))]
            }
            let (sink, _, _) = try DatagramFeeder.run(port: port, datagrams)
            XCTAssertEqual(sink.messages.map(\.frame), [a, b, c] + (port == 8100 ? [game(4, [4, 4, 4, 4])] : []), "port \(port)")
            XCTAssertEqual(sink.messages.map(\.pkts), [[1, 1], [3, 3], [2, 3]] + (port == 8100 ? [[4, 5]] : []), "port \(port)")
        }
    }

    /// Stream mode: the frames' byte stream cut into segments of every size from 1 to 70.
    func testStreamModeUnderEverySegmentSize() throws {
        var rng = SeededRandom(seed: 7)
        let frames = messages(&rng, 10).flatMap { $0 }
        let stream = frames.flatMap { $0 }
        for mss in 1...70 {
            var sender = KCPSender()
            sender.mss = mss
            let segs = sender.message(stream, stream: true)
            let (sink, _, _) = try DatagramFeeder.run(port: 8101, segs.map { (true, $0) })
            XCTAssertEqual(sink.messages.map(\.frame), frames, "mss \(mss)")
            XCTAssertTrue(sink.malformed.isEmpty, "mss \(mss)")
        }
    }

    /// A segment the capture never saw, which the peer acknowledged (its una passed it): reported
    /// once, the message it cut lost, every other message exact, none invented.
    func testALostSegmentIsReportedAndNothingIsInvented() throws {
        var rng = SeededRandom(seed: 3)
        let msgs = messages(&rng, 8)
        var sender = KCPSender()
        let perMessage = msgs.map { sender.message($0.flatMap { $0 }) }
        let all = perMessage.flatMap { $0 }
        // Lose the first fragment of a fragmented message.
        let cut = perMessage.firstIndex { $0.count > 1 }!
        let lostSN = perMessage[..<cut].reduce(0) { $0 + $1.count }
        var datagrams: [(Bool, [UInt8])] = []
        for (sn, s) in all.enumerated() {
            if sn != lostSN { datagrams.append((true, s)) }
            datagrams.append((false, KCPSender.segment(conv: sender.conv, cmd: 82, sn: UInt32(sn), una: UInt32(sn + 1))))
        }
        let (sink, sessions, _) = try DatagramFeeder.run(port: 8100, datagrams)
        XCTAssertEqual(sink.messages.map(\.frame), msgs.enumerated().filter { $0.offset != cut }.flatMap { $0.element })
        let lost = sink.malformed.filter { if case .layer(let l) = $0.1 { return l.kind == "lost-segments" }; return false }
        XCTAssertEqual(lost.count, 2, "the missing segment, then the tail it leaves: \(sink.malformed)")
        let k = sessions.protocols.first { $0.schema.name == "kgame" }!.layerStates[Int(KCPLayer.layer)] as! KCPProtocolState
        XCTAssertEqual(k.lost, 1)
    }

    /// Stream mode after a lost segment: the frames it cut are reported, the deframer finds the
    /// next frame, and no frame is made of the lost bytes' neighbours.
    func testStreamModeResynchronisesAfterALoss() throws {
        let frames = (0..<12).map { i in game(UInt16(10 + i), [UInt8](repeating: UInt8(i), count: 5 + 7 * i)) }
        var sender = KCPSender()
        sender.mss = 50
        let segs = sender.message(frames.flatMap { $0 }, stream: true)
        var datagrams: [(Bool, [UInt8])] = []
        for (sn, s) in segs.enumerated() {
            if sn != 4 { datagrams.append((true, s)) }
            datagrams.append((false, KCPSender.segment(conv: sender.conv, cmd: 82, sn: UInt32(sn), una: UInt32(sn + 1))))
        }
        let (sink, _, _) = try DatagramFeeder.run(port: 8101, datagrams)
        let got = sink.messages.filter { $0.missing == 0 }.map(\.frame)
        XCTAssertTrue(got.allSatisfy(frames.contains), "no invented frame")
        // Bytes 200..<250 lost: frames 6 (171..<224) and 7 (224..<284) are cut, the rest decode.
        XCTAssertEqual(got, frames.enumerated().filter { ![6, 7].contains($0.offset) }.map(\.element))
        // Frame 6's header came whole: it is shown as far as it came (29 of its 53 bytes).
        let cut = sink.messages.filter { $0.missing > 0 }
        XCTAssertEqual(cut.map(\.frame), [Array(frames[6].prefix(29))])
        XCTAssertEqual(cut.map(\.missing), [24])
    }

    /// Message mode without a length rule: a KCP message is one protocol message.
    func testAWholeKCPMessageIsOneMessageWithoutALengthRule() throws {
        var sender = KCPSender()
        let bodies: [[UInt8]] = [[0, 1, 9, 9], [0, 2] + [UInt8](repeating: 7, count: 250), [0, 3]]
        let segs = bodies.flatMap { sender.message($0) }
        let (sink, _, _) = try DatagramFeeder.run(port: 8102, segs.map { (true, $0) })
        XCTAssertEqual(sink.messages.map(\.frame), bodies)
        XCTAssertEqual(sink.messages.map(\.fragments), [1, 3, 1])
    }

    /// Plain UDP: frames cut from each datagram on its own; one that runs past its datagram is
    /// reported and the next datagram decodes.
    func testPlainUDPDatagramsAreCutOnTheirOwn() throws {
        let a = game(1, [1, 2, 3]), b = game(2, []), c = game(3, [UInt8](repeating: 5, count: 20))
        let d = game(4, [9])
        let (sink, _, flows) = try DatagramFeeder.run(port: 8200, [
            (true, a), (false, b + c), (true, Array(c.prefix(10))), (true, d), (false, a),
        ])
        XCTAssertEqual(sink.messages.map(\.frame), [a, b, c, d, a])
        XCTAssertEqual(sink.messages.map(\.dir), [.c2s, .s2c, .s2c, .c2s, .s2c])
        XCTAssertEqual(sink.malformed.count, 1)
        if case .cutByUnitEnd(let have, let need) = sink.malformed.first?.1 {
            XCTAssertEqual(have, 10); XCTAssertEqual(need, c.count)
        } else {
            XCTFail("\(sink.malformed)")
        }
        XCTAssertEqual(flows.stats.flows, 1)
        XCTAssertEqual(sink.opened, 1)
    }

    /// Datagrams to ports no protocol claims are not taken; a flow idle past the timeout
    /// closes, and the next datagram opens a new one.
    func testFlowsAreClaimedByPortAndCloseWhenIdle() throws {
        let (sink, _, flows) = try DatagramFeeder.run(port: 8200, [(true, game(1, [])), (true, game(2, []))],
                                                      idleTimeout: 5, gapSeconds: [1: 30])
        XCTAssertEqual(flows.stats.flows, 2)
        XCTAssertEqual(flows.stats.idleClosed, 1)
        XCTAssertEqual(sink.closed, [.idle, .captureEnd])
        let (other, _, none) = try DatagramFeeder.run(port: 5353, [(true, game(1, []))])
        XCTAssertEqual(none.stats.flows, 0)
        XCTAssertTrue(other.messages.isEmpty)
    }

    /// Garbage in a datagram after valid segments: reported as not KCP, the valid ones kept.
    func testBytesThatAreNotKCPAreReported() throws {
        var sender = KCPSender()
        let m = game(5, [1, 2, 3])
        let seg = sender.message(m)[0]
        let (sink, _, _) = try DatagramFeeder.run(port: 8100, [(true, seg + [1, 2, 3]), (true, [UInt8](repeating: 0xff, count: 30))])
        XCTAssertEqual(sink.messages.map(\.frame), [m])
        XCTAssertEqual(sink.malformed.count, 2)
    }

    /// What a dissector may not say about UDP and KCP, each with its place in the file.
    func testDissectorErrors() {
        func error(_ text: String) -> String {
            do { _ = try DissectorLoader.parse(text: text, file: "t.dissector"); return "no error" } catch { return error.description }
        }
        XCTAssertTrue(error("protocol a { port 9000; kcp; header { uint16 id; } message_id = id; }").contains("kcp runs over UDP"))
        XCTAssertTrue(error("protocol a { udp port 9000; kcp stream; header { uint16 id; } message_id = id; }").contains("needs 'frame_length"))
        XCTAssertTrue(error("protocol a { udp port 9000; websocket; }").contains("WebSocket runs over TCP"))
        XCTAssertTrue(error("protocol a { udp port 9000; any_port; header { uint16 l; } frame_length = l; }").contains("not by any_port"))
        XCTAssertTrue(error("protocol a { port 9000; udp port 9001; header { uint16 l; } frame_length = l; }").contains("TCP or by UDP"))
        XCTAssertTrue(error("protocol a { udp port 9000; kcp fast; header { uint16 id; } message_id = id; }").contains("'stream' or 'message'"))
        XCTAssertTrue(error("protocol a { udp port 9000; header { uint16 l; } frame_length = l; }\nprotocol b { udp port 9000; header { uint16 l; } frame_length = l; }").contains("t.dissector:2:"))
        // The same number as a TCP port and a UDP port is two ports.
        XCTAssertEqual(error("protocol a { port 9000; header { uint16 l; } frame_length = l; }\nprotocol b { udp port 9000; header { uint16 l; } frame_length = l; }"), "no error")
    }

    /// The fuzz entry on random inputs (the campaign runs `scripts/fuzz.sh kcp`).
    func testTheFuzzEntryTakesRandomBytes() {
        var rng = SeededRandom(seed: 11)
        for _ in 0..<300 {
            let n = Int.random(in: 0...600, using: &rng)
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            bytes.withUnsafeBytes { FuzzKCP.run($0) }
        }
    }
}
