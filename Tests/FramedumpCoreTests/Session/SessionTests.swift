import Foundation
import XCTest
@testable import FramedumpCore

/// Collects what the session stage hands to an output.
final class SinkCollector: MessageSink {
    var messages: [(Direction, UInt64?, Int?)] = []
    var malformed: [(Direction, UInt64, MalformedReason)] = []
    var gaps = 0
    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) { messages.append((m.direction, m.id, m.message)) }
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) { malformed.append((d, length, reason)) }
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) { gaps += 1 }
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    func finish() {}
}

final class SessionTests: XCTestCase {
    let client = Endpoint(IPAddress(v4: 0x7F00_0001), 40000)
    let server = Endpoint(IPAddress(v4: 0x7F00_0001), 8000)

    func frame(_ id: UInt16, _ body: [UInt8]) -> [UInt8] {
        let n = UInt32(body.count + 6)
        return [0, 0, UInt8(n >> 8), UInt8(n & 0xff), UInt8(id >> 8), UInt8(id & 0xff)] + body
    }

    /// Both directions of a connection that began with a SYN start at a frame boundary, even
    /// though the server's direction begins (SYN-ACK) after the connection opened: a first
    /// frame with an unknown id is a message shown raw, not bytes skipped while hunting.
    func testServerDirectionAfterHandshakeStartsAtABoundary() throws {
        let game = try DissectorLoader.loadFile(TestSupport.dissectors + "/game.dissector")
        let sink = SinkCollector()
        let sessions = SessionManager(protocols: game, sink: sink)
        let r = Reassembler(options: ReassemblyOptions(), consumer: sessions, isServerPort: sessions.isServerPort)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        func seg(_ c2s: Bool, _ seq: UInt32, _ ack: UInt32, _ flags: TCPFlags, _ data: UnsafeRawBufferPointer) -> TCPSegment {
            TCPSegment(src: c2s ? client : server, dst: c2s ? server : client, seq: seq, ack: ack, flags: flags,
                       window: 1, payload: data, payloadLength: data.count)
        }
        r.add(seg(true, 100, 0, .syn, empty), packet: p)
        r.add(seg(false, 500, 101, [.syn, .ack], empty), packet: p)
        let reply = frame(4242, [1, 2, 3]) + frame(30005, [0, 0, 0, 9, 0, 1, 0, 2, 0x68, 0x69])
        reply.withUnsafeBytes { r.add(seg(false, 501, 101, [.psh, .ack], $0), packet: p) }
        r.finish()
        XCTAssertEqual(sink.messages.map(\.1), [4242, 30005])
        XCTAssertNil(sink.messages[0].2, "unknown id: no schema message")
        XCTAssertTrue(sink.malformed.isEmpty, "\(sink.malformed)")
    }

    /// A connection picked up mid-stream hunts for the first plausible header.
    func testMidStreamPickupHunts() throws {
        let game = try DissectorLoader.loadFile(TestSupport.dissectors + "/game.dissector")
        let sink = SinkCollector()
        let sessions = SessionManager(protocols: game, sink: sink)
        let r = Reassembler(options: ReassemblyOptions(), consumer: sessions, isServerPort: sessions.isServerPort)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        let tail: [UInt8] = [0x55, 0x66, 0x77]  // the end of a frame whose start was not captured
        let data = tail + frame(20001, [1, 0, 0, 0, 2, 0, 0]) + frame(10002, [0, 0, 0, 0, 0, 0, 0, 1])
        data.withUnsafeBytes {
            r.add(TCPSegment(src: client, dst: server, seq: 7, ack: 0, flags: [.psh, .ack], window: 1,
                             payload: $0, payloadLength: $0.count), packet: p)
        }
        r.finish()
        XCTAssertEqual(sink.messages.map(\.1), [20001, 10002])
        XCTAssertEqual(sink.malformed.map(\.1), [3])
    }
}
