import XCTest
@testable import FramedumpCore

/// `frame_length = message` measures a frame by decoding it from its start; a frame arriving
/// in many small pieces is measured again only as it grows by an eighth once measuring it has
/// cost `remeasureFactor` times its bytes. Frames cut late must still be the same frames, dated
/// by the packets of their first and last bytes, under every piece size, at a gap and at the end.
final class MeasureDeferralTests: XCTestCase {
    static let text = """
    protocol t { port 1; strings u8; header { uint8 cmd; } frame_length = message; message_id = cmd; }
    Message Item { Uint8 a; String s; }
    Message Big = 1 { Uint16 n; Item[n] items; }
    Message Text = 2 { String(nul) text; }
    Message Ping = 3 { }
    """
    static let layout = FrameLayout(try! DissectorLoader.parse(text: text, file: "t.dissector")[0])

    static func big(_ n: Int) -> [UInt8] {
        var b: [UInt8] = [1, UInt8(n >> 8), UInt8(n & 0xff)]
        for i in 0..<n {
            b += [UInt8(i & 0xff), UInt8(i % 3)]
            b += Array(repeating: UInt8(0x61), count: i % 3)
        }
        return b
    }
    static let frames: [[UInt8]] = [[3], big(300), [2] + Array(repeating: 0x62, count: 800) + [0], [3], [3], big(40),
                                    [2, 0x63, 0], big(500)]
    static let stream = frames.flatMap { $0 }

    final class Collector: FrameConsumer {
        var frames: [(offset: UInt64, length: Int, first: UInt64, last: UInt64)] = []
        var malformed = 0
        func frame(_ f: Frame, _ dir: Direction) { frames.append((f.offset, f.bytes.count, f.firstPacket.number, f.lastPacket.number)) }
        func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef) { malformed += 1 }
    }

    /// The stream in pieces of `piece` bytes, one packet each (numbered from 1), a gap of 5 bytes
    /// after the frame ending at `gapAfter` if any; finished at the end.
    func deframe(piece: Int, factor: Int, stream: [UInt8] = stream, gapAfter: Int? = nil) -> (Collector, Deframer) {
        let c = Collector()
        let d = Deframer(layout: Self.layout, direction: .c2s, consumer: c, startsAtBoundary: true)
        d.remeasureFactor = factor
        var offset: UInt64 = 0
        var number: UInt64 = 0
        stream.withUnsafeBytes { b in
            var i = 0
            while i < b.count {
                let n = min(piece, b.count - i, gapAfter.map { $0 > i ? $0 - i : b.count } ?? b.count)
                number += 1
                d.data(UnsafeRawBufferPointer(rebasing: b[i..<(i + n)]), offset: offset, packet: PacketRef(number: number, ts: Timestamp(seconds: 0, nanos: 0)))
                offset += UInt64(n)
                i += n
                if i == gapAfter {
                    number += 1
                    d.gap(offset: offset, length: 5, packet: PacketRef(number: number, ts: Timestamp(seconds: 0, nanos: 0)))
                    offset += 5
                }
            }
        }
        d.finish(packet: PacketRef(number: number + 1, ts: Timestamp(seconds: 0, nanos: 0)), captureEnded: true)
        return (c, d)
    }

    /// Where each frame is and which pieces carried its first and last bytes.
    func expected(piece: Int) -> [String] {
        var out: [String] = [], at = 0
        for f in Self.frames {
            out.append("\(at) \(f.count) \(at / piece + 1) \((at + f.count - 1) / piece + 1)")
            at += f.count
        }
        return out
    }

    func testFramesCutLateAreTheSameFramesFromTheSamePackets() {
        for piece in [1, 2, 3, 5, 7, 64, 1000, 100_000] {
            for factor in [0, 1, 64] {
                let (c, _) = deframe(piece: piece, factor: factor)
                XCTAssertEqual(c.frames.map { "\($0.offset) \($0.length) \($0.first) \($0.last)" }, expected(piece: piece), "piece \(piece) factor \(factor)")
                XCTAssertEqual(c.malformed, 0, "piece \(piece) factor \(factor)")
            }
        }
    }

    /// The work stays linear: a frame in one-byte pieces is not measured again per byte (it was:
    /// 8,000 three-byte items in one-byte segments took 12 s).
    func testMeasuringIsLinearInTheBytes() {
        let stream = Self.big(3000) + [3]
        let (c, d) = deframe(piece: 1, factor: 64, stream: stream)
        XCTAssertEqual(c.frames.map(\.length), [stream.count - 1, 1])
        XCTAssertLessThan(d.measuredBytes, 80 * stream.count)
        XCTAssertGreaterThan(d.measuredBytes, 10 * stream.count, "the rule kicks in past 64 times the bytes, not before")
    }

    /// A first frame of its own layout (`first c2s`) measured late is the same first frame.
    func testAFirstFrameCutLate() throws {
        let text = Self.text.replacingOccurrences(of: "message_id = cmd; }", with: "message_id = cmd; first c2s { header { uint8 version; } message Big; } }")
        let schema = try DissectorLoader.parse(text: text, file: "t.dissector")[0]
        let hello = Self.big(400)  // (its first byte, 1, is the version)
        let stream = hello + [3] + Self.big(20)
        for piece in [1, 2, 5, 1000] {
            for factor in [0, 64] {
                let c = Collector()
                let d = Deframer(layout: FrameLayout(schema, schema.variants.first { $0.direction == .c2s && !$0.first }!), direction: .c2s,
                                 consumer: c, startsAtBoundary: true, first: FrameLayout(schema, schema.variants.first { $0.first }!))
                d.remeasureFactor = factor
                stream.withUnsafeBytes { b in
                    var i = 0
                    while i < b.count {
                        let n = min(piece, b.count - i)
                        d.data(UnsafeRawBufferPointer(rebasing: b[i..<(i + n)]), offset: UInt64(i), packet: PacketRef(number: UInt64(i / piece + 1), ts: Timestamp(seconds: 0, nanos: 0)))
                        i += n
                    }
                }
                d.finish(packet: PacketRef(number: 99999, ts: Timestamp(seconds: 0, nanos: 0)), captureEnded: true)
                XCTAssertEqual(c.frames.map { "\($0.offset) \($0.length) \($0.last)" },
                               ["0 \(hello.count) \((hello.count - 1) / piece + 1)", "\(hello.count) 1 \(hello.count / piece + 1)",
                                "\(hello.count + 1) \(stream.count - hello.count - 1) \((stream.count - 1) / piece + 1)"], "piece \(piece) factor \(factor)")
                XCTAssertEqual(c.malformed, 0)
            }
        }
        // The first frame alone, whole only once the stream ends: cut then, not reported.
        let c = Collector()
        let d = Deframer(layout: FrameLayout(schema, schema.variants.first { $0.direction == .c2s && !$0.first }!), direction: .c2s,
                         consumer: c, startsAtBoundary: true, first: FrameLayout(schema, schema.variants.first { $0.first }!))
        hello.withUnsafeBytes { b in
            for i in 0..<b.count {
                d.data(UnsafeRawBufferPointer(rebasing: b[i..<(i + 1)]), offset: UInt64(i), packet: PacketRef(number: UInt64(i + 1), ts: Timestamp(seconds: 0, nanos: 0)))
            }
        }
        XCTAssertEqual(c.frames.count, 0, "its last bytes came while its measuring was put off")
        d.finish(packet: PacketRef(number: 99999, ts: Timestamp(seconds: 0, nanos: 0)), captureEnded: true)
        XCTAssertEqual(c.frames.map { "\($0.length) \($0.last)" }, ["\(hello.count) \(hello.count)"])
        XCTAssertEqual(c.malformed, 0)
    }

    /// A frame whole but not yet measured when a gap comes is cut before the gap, not reported as cut by it.
    func testAGapAfterAFrameNotYetMeasured() {
        let end = Self.frames[0...1].map(\.count).reduce(0, +)
        for factor in [0, 64] {
            let (c, _) = deframe(piece: 1, factor: factor, stream: Array(Self.stream[..<end]) + [3], gapAfter: end)
            // (The ping after the gap is found by the hunt.)
            XCTAssertEqual(c.frames.map(\.length), [1, Self.frames[1].count, 1], "factor \(factor)")
            XCTAssertEqual(c.malformed, 0, "factor \(factor)")
        }
    }

    /// What two linked deframers (the two sides of one connection) cut, in the order they cut it.
    final class Sides: FrameConsumer {
        var log: [String] = []
        func frame(_ f: Frame, _ dir: Direction) { log.append("\(dir) \(f.bytes.count) last \(f.lastPacket.number)") }
        func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef) {
            log.append("\(dir) malformed at \(offset): \(reason.kind)")
        }
    }

    /// A request whose measuring was put off is cut before its answer is read, not after it
    /// (it was cut only at the stream's end: the answer came first, and pairing failed).
    func testAFrameMeasuredLateIsCutBeforeTheOtherSidesAnswer() {
        let request = Self.big(2000)
        for factor in [16, 64] {
            let c = Sides()
            let a = Deframer(layout: Self.layout, direction: .c2s, consumer: c, startsAtBoundary: true)
            let b = Deframer(layout: Self.layout, direction: .s2c, consumer: c, startsAtBoundary: true)
            a.remeasureFactor = factor
            Deframer.link(a, b)
            var number: UInt64 = 0
            func packet() -> PacketRef { number += 1; return PacketRef(number: number, ts: Timestamp(seconds: 0, nanos: 0)) }
            request.withUnsafeBytes { r in
                for i in 0..<r.count { a.data(UnsafeRawBufferPointer(rebasing: r[i..<(i + 1)]), offset: UInt64(i), packet: packet()) }
            }
            let last = number
            [UInt8(3), 3].withUnsafeBytes { b.data($0, offset: 0, packet: packet()) }
            XCTAssertEqual(c.log, ["c2s \(request.count) last \(last)", "s2c 1 last \(last + 1)", "s2c 1 last \(last + 1)"], "factor \(factor)")
            a.finish(packet: packet(), captureEnded: true)
            b.finish(packet: packet(), captureEnded: true)
            XCTAssertEqual(c.log.count, 3)
        }
    }

    /// Both sides sending one byte at a time, turn about: the answers' prompting stays within
    /// its budget (linear work), and the frames are the same.
    func testSidesTakingTurnsInTinyPiecesStayLinear() {
        let stream = Self.big(3000) + [3]
        let c = Sides()
        let a = Deframer(layout: Self.layout, direction: .c2s, consumer: c, startsAtBoundary: true)
        let b = Deframer(layout: Self.layout, direction: .s2c, consumer: c, startsAtBoundary: true)
        Deframer.link(a, b)
        stream.withUnsafeBytes { s in
            for i in 0..<s.count {
                let p = PacketRef(number: UInt64(2 * i + 1), ts: Timestamp(seconds: 0, nanos: 0))
                a.data(UnsafeRawBufferPointer(rebasing: s[i..<(i + 1)]), offset: UInt64(i), packet: p)
                b.data(UnsafeRawBufferPointer(rebasing: s[i..<(i + 1)]), offset: UInt64(i), packet: PacketRef(number: p.number + 1, ts: p.ts))
            }
        }
        a.finish(packet: PacketRef(number: 1_000_000, ts: Timestamp(seconds: 0, nanos: 0)), captureEnded: true)
        b.finish(packet: PacketRef(number: 1_000_001, ts: Timestamp(seconds: 0, nanos: 0)), captureEnded: true)
        XCTAssertEqual(c.log.filter { $0.hasPrefix("c2s") }, ["c2s \(stream.count - 1) last \(2 * stream.count - 3)", "c2s 1 last \(2 * stream.count - 1)"])
        XCTAssertEqual(c.log.filter { $0.hasPrefix("s2c") }.count, 2)
        XCTAssertLessThan(a.measuredBytes + b.measuredBytes, 2 * 160 * stream.count)
    }

    /// A frame measured late that can be no frame (a varint past its bytes) is reported, at a gap
    /// or the end, with what is wrong with it: not as a frame the gap or the end cut.
    func testAFrameMeasuredLateThatIsBadIsReportedWithItsReason() throws {
        let text = Self.text + "\nMessage Bad = 4 { Uint16 n; Item[n] items; Varint32 v; }"
        let layout = FrameLayout(try DissectorLoader.parse(text: text, file: "t.dissector")[0])
        var bad = Self.big(300)
        bad[0] = 4
        bad += Array(repeating: 0xff, count: 6) + [0]
        for gap in [false, true] {
            let c = Sides()
            let d = Deframer(layout: layout, direction: .c2s, consumer: c, startsAtBoundary: true)
            (bad + [3]).withUnsafeBytes { b in
                for i in 0..<(b.count - 1) {
                    d.data(UnsafeRawBufferPointer(rebasing: b[i..<(i + 1)]), offset: UInt64(i), packet: PacketRef(number: UInt64(i + 1), ts: Timestamp(seconds: 0, nanos: 0)))
                }
            }
            XCTAssertTrue(d.measureDeferred, "the bad bytes came while its measuring was put off")
            let end = PacketRef(number: 99999, ts: Timestamp(seconds: 0, nanos: 0))
            if gap { d.gap(offset: UInt64(bad.count), length: 10, packet: end) } else { d.finish(packet: end, captureEnded: true) }
            XCTAssertEqual(c.log.first, "c2s malformed at 0: bad-value", "gap \(gap)")
            // (The hunt after it goes on in the frame's bytes, as after any bad frame.)
            XCTAssertFalse(c.log.contains { $0.contains("at 0: cut") }, "gap \(gap): \(c.log)")
        }
    }
}
