import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Capture patterns of real host-side and span-port captures (issue 11): ACKs captured
/// before their data, RSTs outside the window, segments after the connection closed,
/// timestamps that jump.
final class ReassemblyFidelityTests: XCTestCase {
    let client = Endpoint(IPAddress(v4: 0x0A00_0002), 40000)
    let server = Endpoint(IPAddress(v4: 0x0A00_0001), 8000)
    let empty = UnsafeRawBufferPointer(start: nil, count: 0)

    /// Feeds segments one by one with increasing packet numbers and a clock in milliseconds.
    final class Feed {
        let r: Reassembler
        let col = StreamCollector()
        var n: UInt64 = 0
        var ms: Int64 = 0
        init(_ o: ReassemblyOptions = ReassemblyOptions()) { r = Reassembler(options: o, consumer: col) }
        func add(_ s: TCPSegment, seconds: Int64? = nil) {
            n += 1
            ms += 1
            let ts = seconds.map { Timestamp(seconds: $0, nanos: 0) }
                ?? Timestamp(seconds: 1_700_000_000 + ms / 1000, nanos: UInt32(ms % 1000) * 1_000_000)
            r.add(s, packet: PacketRef(number: n, ts: ts))
        }
    }

    func seg(_ c2s: Bool, _ flags: TCPFlags, seq: UInt32, ack: UInt32 = 0, _ payload: UnsafeRawBufferPointer? = nil,
             window: UInt16 = 512) -> TCPSegment {
        let p = payload ?? empty
        return TCPSegment(src: c2s ? client : server, dst: c2s ? server : client, seq: seq, ack: ack, flags: flags,
                          window: window, payload: p, payloadLength: p.count)
    }

    func handshake(_ f: Feed, isnC: UInt32 = 999, isnS: UInt32 = 4999) {
        f.add(seg(true, .syn, seq: isnC))
        f.add(seg(false, [.syn, .ack], seq: isnS, ack: isnC &+ 1))
        f.add(seg(true, .ack, seq: isnC &+ 1, ack: isnS &+ 1))
    }

    func testAckCapturedBeforeItsDataLosesNothing() {
        let f = Feed()
        handshake(f)
        let data = [UInt8](repeating: 7, count: 100)
        // The server's ACK for 100 bytes is written a few microseconds before the bytes.
        f.add(seg(false, .ack, seq: 5000, ack: 1100))
        data.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        f.r.finish()
        XCTAssertTrue(f.col.gaps.isEmpty, "\(f.col.gaps)")
        XCTAssertEqual(f.col.data[.c2s]!, data)
    }

    func testAckHoleBecomesAGapAfterTheGraceAndLateBytesAreReported() {
        var o = ReassemblyOptions()
        o.ackGracePackets = 4
        let f = Feed(o)
        handshake(f)
        let data = (0..<200).map { UInt8($0) }
        f.add(seg(false, .ack, seq: 5000, ack: 1100))
        XCTAssertTrue(f.col.gaps.isEmpty)
        data.withUnsafeBytes { b in
            // The connection goes on without the first 100 bytes: after 4 packets the hole is final.
            for i in 0..<4 { f.add(seg(false, .ack, seq: 5000, ack: 1100 + UInt32(i) * 0)) }
            XCTAssertEqual(f.col.gaps.count, 1)
            XCTAssertEqual(f.col.gaps.first?.2, 100)
            XCTAssertEqual(f.col.gaps.first?.3, .ackedUnseen)
            f.add(seg(true, [.psh, .ack], seq: 1100, ack: 5000, b.slice(100, 100)))
            // The missing bytes do turn up: said so, not silently dropped.
            f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, b.slice(0, 100)))
        }
        XCTAssertEqual(f.r.stats.lateSegments, 1)
        XCTAssertEqual(f.r.stats.lateBytes, 100)
        XCTAssertEqual(f.col.late.map(\.1), [0])
        XCTAssertEqual(f.col.data[.c2s]!, Array(data[100...]))
    }

    func testAckHoleBecomesAGapAfterTheGraceTime() {
        let f = Feed()
        handshake(f)
        f.add(seg(false, .ack, seq: 5000, ack: 1100))
        // Another connection's packet two seconds later: the clock alone settles the hole.
        let other = TCPSegment(src: Endpoint(IPAddress(v4: 0x0A00_0009), 41000), dst: server, seq: 1, ack: 0,
                               flags: .syn, window: 1, payload: empty, payloadLength: 0)
        f.ms += 2000
        f.add(other)
        f.ms += 1000
        f.add(other)
        XCTAssertEqual(f.col.gaps.count, 1)
        XCTAssertEqual(f.col.gaps.first?.3, .ackedUnseen)
    }

    func testResetOutsideTheWindowIsFlaggedAndTheConnectionGoesOn() {
        let f = Feed()
        handshake(f)
        let a = [UInt8](repeating: 1, count: 10), b = [UInt8](repeating: 2, count: 10)
        a.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        // A blind RST far from anything the server would accept.
        f.add(seg(true, .rst, seq: 1000 &+ 0x4000_0000))
        XCTAssertEqual(f.r.openConnections, 1)
        XCTAssertEqual(f.r.stats.outOfWindowResets, 1)
        b.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1010, ack: 5000, $0)) }
        // A RST at the right place does close it (once the data in flight had its chance).
        f.add(seg(true, .rst, seq: 1020))
        f.r.finish()
        XCTAssertEqual(f.r.openConnections, 0)
        XCTAssertEqual(f.col.data[.c2s]!, a + b)
        XCTAssertEqual(f.col.closed, [.rst])
        XCTAssertEqual(f.col.opened, 1)
    }

    func testSegmentsAfterCloseBelongToTheClosedConnection() {
        let f = Feed()
        handshake(f)
        let a = [UInt8](repeating: 1, count: 10)
        a.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        f.add(seg(true, [.fin, .ack], seq: 1010, ack: 5000))
        f.add(seg(false, [.fin, .ack], seq: 5000, ack: 1011))
        XCTAssertEqual(f.col.closed, [.fin])
        // The last ACK, a retransmitted FIN from the server, a duplicate data copy from a
        // second VLAN, and the server's retransmitted FIN: none of them opens a connection.
        f.add(seg(true, .ack, seq: 1011, ack: 5001))
        f.add(seg(false, [.fin, .ack], seq: 5000, ack: 1011))
        a.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        f.add(seg(true, [.fin, .ack], seq: 1010, ack: 5000))
        XCTAssertEqual(f.col.opened, 1)
        XCTAssertEqual(f.r.stats.afterCloseSegments, 3)  // the pure ACK is not counted
        // The same SYN again is a duplicate; a SYN with a new ISN is a new connection.
        f.add(seg(true, .syn, seq: 999))
        XCTAssertEqual(f.col.opened, 1)
        f.add(seg(true, .syn, seq: 77_777))
        XCTAssertEqual(f.col.opened, 2)
        f.r.finish()
        XCTAssertEqual(f.col.closed, [.fin, .captureEnd])
    }

    /// An injected RST before the SYN-ACK whose ACK does not acknowledge the SYN (Zeek's
    /// rst-inject trace): ignored; the real handshake goes on in the same connection.
    func testResetNotAcknowledgingTheSYNIsIgnored() {
        let f = Feed()
        f.add(seg(true, .syn, seq: 999))
        f.add(seg(false, [.rst, .ack], seq: 0, ack: 999))
        XCTAssertEqual(f.r.stats.outOfWindowResets, 1)
        f.add(seg(false, [.syn, .ack], seq: 4999, ack: 1000))
        let a = [UInt8](repeating: 1, count: 25)
        a.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        f.r.finish()
        XCTAssertEqual(f.col.opened, 1)
        XCTAssertEqual(f.col.data[.c2s]!, a)
        // A RST that does acknowledge the SYN (a closed port) is believed.
        let g = Feed()
        g.add(seg(true, .syn, seq: 999))
        g.add(seg(false, [.rst, .ack], seq: 0, ack: 1000))
        g.r.finish()
        XCTAssertEqual(g.col.closed, [.rst])
    }

    /// A scanner's pattern: SYN, SYN-ACK, RST, then data from the same port. The bytes are
    /// not lost: a continuation of the closed connection carries them, roles unchanged.
    func testNewBytesAfterAResetContinueTheConnection() {
        let f = Feed()
        f.add(seg(true, .syn, seq: 0))
        f.add(seg(false, [.syn, .ack], seq: 4999, ack: 1))
        f.add(seg(true, .rst, seq: 1))
        XCTAssertEqual(f.col.closed, [])
        // 16 s later (Zeek's modbus trace): long after the RST's linger.
        f.ms += 16_000
        let probe = [UInt8](repeating: 9, count: 109)
        probe.withUnsafeBytes { f.add(seg(true, .ack, seq: 1, ack: 5000, $0)) }
        XCTAssertEqual(f.col.closed, [.rst])
        f.add(seg(false, .rst, seq: 5000))
        f.r.finish()
        XCTAssertEqual(f.col.opened, 2)
        XCTAssertEqual(f.r.stats.continuedAfterClose, 1)
        XCTAssertEqual(f.col.data[.c2s]!, probe, "the client's bytes, as the client's")
        XCTAssertEqual(f.col.closed, [.rst, .rst])
    }

    /// The client resets while the server's reply is in flight (Zeek's heartbleed trace):
    /// the reply still belongs to the connection.
    func testDataInFlightAfterAResetIsKept() {
        let f = Feed()
        handshake(f)
        f.add(seg(true, [.fin, .ack], seq: 1000, ack: 5000))
        f.add(seg(true, .rst, seq: 1000))
        let reply = [UInt8](repeating: 4, count: 300)
        reply.withUnsafeBytes { b in
            f.add(seg(false, [.psh, .ack], seq: 5000, ack: 1000, b.slice(0, 150)))
            f.add(seg(false, [.psh, .ack], seq: 5150, ack: 1000, b.slice(150, 150)))
        }
        f.r.finish()
        XCTAssertEqual(f.col.opened, 1)
        XCTAssertEqual(f.col.data[.s2c]!, reply)
        XCTAssertEqual(f.col.closed, [.rst])
    }

    func testClosedConnectionsRememberedAreBounded() {
        var o = ReassemblyOptions()
        o.maxTimeWait = 4
        o.timeWaitSeconds = 5
        let f = Feed(o)
        for i in 0..<10 {
            let c = Endpoint(IPAddress(v4: 0x0A00_0100 + UInt32(i)), 40000)
            f.add(TCPSegment(src: c, dst: server, seq: 1, ack: 0, flags: .syn, window: 1, payload: empty, payloadLength: 0))
            f.add(TCPSegment(src: c, dst: server, seq: 2, ack: 0, flags: .rst, window: 1, payload: empty, payloadLength: 0))
        }
        // Two seconds on, the resets' linger is over: all ten closed, four remembered.
        f.ms += 2000
        f.add(seg(true, .syn, seq: 3))
        XCTAssertEqual(f.col.closed.count, 10)
        XCTAssertEqual(f.r.timeWait.count, 4)
        // And they are forgotten after `timeWaitSeconds` of packet time.
        f.ms += 10_000
        f.add(seg(true, .syn, seq: 5))
        XCTAssertEqual(f.r.timeWait.count, 0)
    }

    func testAFutureTimestampDoesNotTimeOutLiveConnections() {
        var o = ReassemblyOptions()
        o.idleTimeoutSeconds = 10
        let f = Feed(o)
        handshake(f)
        // One packet stamped decades ahead (from another host's broken clock).
        let other = TCPSegment(src: Endpoint(IPAddress(v4: 0x0A00_0009), 41000), dst: server, seq: 1, ack: 0,
                               flags: .syn, window: 1, payload: empty, payloadLength: 0)
        f.add(other, seconds: 2_600_000_000)
        XCTAssertEqual(f.r.openConnections, 2)
        XCTAssertEqual(f.r.stats.idleClosed, 0)
        let a = [UInt8](repeating: 1, count: 10)
        a.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        XCTAssertEqual(f.col.data[.c2s]!, a)
        XCTAssertEqual(f.r.stats.idleClosed, 0)
        XCTAssertEqual(f.col.closed, [])
    }

    func testConflictWithBytesAlreadyDeliveredIsReported() {
        let f = Feed()
        handshake(f)
        let a = Array("0123456789".utf8), b = Array("abcdefghij".utf8), x = Array("XXXXXXXXXX".utf8)
        a.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        // An identical retransmission: nothing to report; from now on delivered bytes are kept.
        a.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1000, ack: 5000, $0)) }
        b.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1010, ack: 5000, $0)) }
        XCTAssertEqual(f.col.conflicts, 0)
        // A copy of the delivered b with other bytes: a conflict, though nothing waits out of order.
        x.withUnsafeBytes { f.add(seg(true, [.psh, .ack], seq: 1010, ack: 5000, $0)) }
        XCTAssertEqual(f.col.conflicts, 1)
        XCTAssertEqual(f.col.data[.c2s]!, a + b)
    }

    /// A capture stitched from two, days apart: the clock follows the jump once several
    /// packets agree, and the connection the first of them belong to is not split by it.
    func testAJumpTheClockFollowsDoesNotSplitTheConnectionsAfterIt() {
        var o = ReassemblyOptions()
        o.idleTimeoutSeconds = 10
        let f = Feed(o)
        handshake(f)
        let later = Int64(1_700_000_000 + 3 * 86_400)
        let other = Endpoint(IPAddress(v4: 0x0A00_0009), 41000)
        let one = [UInt8](repeating: 3, count: 1)
        one.withUnsafeBytes { b in
            for i in 0..<12 {
                f.add(TCPSegment(src: other, dst: server, seq: 100 + UInt32(i), ack: 1, flags: [.psh, .ack], window: 512,
                                 payload: b, payloadLength: 1), seconds: later)
            }
        }
        XCTAssertEqual(f.col.opened, 2)
        XCTAssertEqual(f.r.stats.idleClosed, 1, "the first connection, days old")
        XCTAssertEqual(f.col.data[.c2s]!.count, 12, "one connection holds all twelve bytes")
        XCTAssertEqual(f.r.stats.clockJumps, 0, "the jump was followed")
    }

    /// Timestamps anywhere in the 64-bit range (a crafted pcapng can write them): no trap.
    func testExtremeTimestampsDoNotTrap() {
        let r = Reassembler(options: ReassemblyOptions(), consumer: FuzzLink.Discard())
        let d = Defragmenter()
        let data = [UInt8](repeating: 1, count: 16)
        var n: UInt64 = 0
        for (i, sec) in [Int64.min + 1, Int64.max, 0, Int64.min, -5, Int64.max - 1, 1_700_000_000].enumerated() {
            for k in 0..<9 {
                let c = Endpoint(IPAddress(v4: 0x0A00_0100 + UInt32(i)), 40000)
                n += 1
                data.withUnsafeBytes { b in
                    r.add(TCPSegment(src: c, dst: server, seq: 1 + UInt32(k * 16), ack: 0, flags: [.psh], window: 1,
                                     payload: b, payloadLength: 16),
                          packet: PacketRef(number: n, ts: Timestamp(seconds: sec, nanos: 999_999_999)))
                    _ = d.add(IPFragment(src: c.address, dst: server.address, id: UInt32(i), proto: 6, offset: k * 16,
                                         more: true, data: b, dataLength: 16), at: Timestamp(seconds: sec, nanos: 0))
                }
            }
        }
        r.finish()
        XCTAssertEqual(r.stats.connections, 7)
        XCTAssertEqual(r.stats.deliveredBytes, 7 * 9 * 16)
    }

    // MARK: - Properties

    /// Random splits, each segment's ACK captured up to a few packets before the segment,
    /// segments reordered among themselves: the stream arrives whole, with no gap.
    func testAckBeforeDataReorderingsLoseNothing() {
        var rng = SeededRandom(seed: 11)
        for round in 0..<200 {
            let size = Int.random(in: 1...4000, using: &rng)
            let stream = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let isn = UInt32.random(in: 0...UInt32.max, using: &rng)
            var bounds = Set([0, size])
            for _ in 0..<Int.random(in: 0...20, using: &rng) { bounds.insert(Int.random(in: 1..<max(2, size), using: &rng)) }
            let b = bounds.sorted().filter { $0 <= size }
            let pieces = zip(b, b.dropFirst()).map { ($0, $1 - $0) }
            // Events: (data piece i) or (ack up to end of piece i); each ACK moved earlier.
            var events: [(isAck: Bool, i: Int)] = []
            for i in pieces.indices { events.append((false, i)); events.append((true, i)) }
            for k in events.indices where events[k].isAck {
                let back = Int.random(in: 0...min(6, k), using: &rng)
                let e = events.remove(at: k)
                events.insert(e, at: k - back)
            }
            let f = Feed()
            handshake(f, isnC: isn, isnS: 4999)
            stream.withUnsafeBytes { buf in
                for e in events {
                    let (off, len) = pieces[e.i]
                    if e.isAck {
                        f.add(seg(false, .ack, seq: 5000, ack: isn &+ 1 &+ UInt32(off + len)))
                    } else {
                        f.add(seg(true, [.psh, .ack], seq: isn &+ 1 &+ UInt32(off), ack: 5000, buf.slice(off, len)))
                    }
                }
            }
            f.add(seg(true, [.fin, .ack], seq: isn &+ 1 &+ UInt32(size), ack: 5000))
            f.add(seg(false, [.fin, .ack], seq: 5000, ack: isn &+ 2 &+ UInt32(size)))
            f.r.finish()
            XCTAssertEqual(f.col.data[.c2s]!, stream, "round \(round)")
            XCTAssertTrue(f.col.gaps.isEmpty, "round \(round): \(f.col.gaps)")
            XCTAssertEqual(f.col.opened, 1)
        }
    }

    /// After both FINs, copies of any earlier segment (both directions) and stray ACKs: one
    /// connection, the stream unchanged, roles unchanged.
    func testDuplicatesAfterFinOpenNoConnection() {
        var rng = SeededRandom(seed: 12)
        for round in 0..<200 {
            let size = Int.random(in: 1...2000, using: &rng)
            let stream = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let isn = UInt32.random(in: 0...UInt32.max, using: &rng)
            var bounds = Set([0, size])
            for _ in 0..<Int.random(in: 0...10, using: &rng) { bounds.insert(Int.random(in: 1..<max(2, size), using: &rng)) }
            let b = bounds.sorted()
            let pieces = zip(b, b.dropFirst()).map { ($0, $1 - $0) }
            let f = Feed()
            stream.withUnsafeBytes { buf in
                var sent: [TCPSegment] = []
                func send(_ s: TCPSegment) { sent.append(s); f.add(s) }
                send(seg(true, .syn, seq: isn))
                send(seg(false, [.syn, .ack], seq: 4999, ack: isn &+ 1))
                for (off, len) in pieces {
                    send(seg(true, [.psh, .ack], seq: isn &+ 1 &+ UInt32(off), ack: 5000, buf.slice(off, len)))
                    send(seg(false, .ack, seq: 5000, ack: isn &+ 1 &+ UInt32(off + len)))
                }
                let end = isn &+ 1 &+ UInt32(size)
                send(seg(true, [.fin, .ack], seq: end, ack: 5000))
                send(seg(false, [.fin, .ack], seq: 5000, ack: end &+ 1))
                XCTAssertEqual(f.col.closed, [.fin], "round \(round)")
                for _ in 0..<Int.random(in: 1...10, using: &rng) { f.add(sent.randomElement(using: &rng)!) }
                f.add(seg(true, .ack, seq: end &+ 1, ack: 5001))
            }
            f.r.finish()
            XCTAssertEqual(f.col.opened, 1, "round \(round)")
            XCTAssertEqual(f.col.data[.c2s]!, stream, "round \(round)")
            XCTAssertTrue(f.col.gaps.isEmpty, "round \(round): \(f.col.gaps)")
        }
    }
}
