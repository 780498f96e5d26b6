import Foundation
import XCTest
@testable import FramedumpCore

final class FrameCollector: FrameConsumer {
    var frames: [[UInt8]] = []
    var offsets: [UInt64] = []
    var malformed: [(UInt64, UInt64, MalformedReason)] = []
    func frame(_ f: Frame, _ dir: Direction) {
        frames.append(Array(f.bytes))
        offsets.append(f.offset)
    }
    func malformed(_ dir: Direction, offset: UInt64, length: UInt64, reason: MalformedReason, packet: PacketRef) {
        malformed.append((offset, length, reason))
    }
    var malformedBytes: UInt64 { malformed.map(\.1).reduce(0, +) }

    /// `stream` cut at `cuts` through a deframer of `layout` (a gap of `gapsAt[c]` bytes before
    /// the piece starting at `c`), then finished: what it emitted.
    static func deframe(_ stream: [UInt8], layout: FrameLayout, cuts: [Int], startsAtBoundary: Bool = true,
                        gapsAt: [Int: UInt64] = [:], knownID: ((UInt64) -> Bool)? = nil,
                        plausibleBody: ((UnsafeRawBufferPointer) -> Bool)? = nil) -> FrameCollector {
        let col = FrameCollector()
        let d = Deframer(layout: layout, direction: .c2s, consumer: col, startsAtBoundary: startsAtBoundary, knownID: knownID,
                         plausibleBody: plausibleBody)
        var last = 0
        var offset: UInt64 = 0
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
        stream.withUnsafeBytes { b in
            for c in cuts + [stream.count] {
                if let g = gapsAt[last] {
                    d.gap(offset: offset, length: g, packet: p)
                    offset += g
                }
                d.data(b.slice(last, c - last), offset: offset, packet: p)
                offset += UInt64(c - last)
                last = c
            }
        }
        d.finish(packet: p, captureEnded: false)
        return col
    }
}

/// The sticky-packet deframer: every way of cutting a stream gives the same frames, and
/// after garbage, gaps or bogus lengths it finds its way back.
final class DeframerTests: XCTestCase {
    static let game = try! DissectorLoader.loadFile(TestSupport.dissectors + "/game.dissector")[0]
    let layout = FrameLayout(DeframerTests.game)

    func frame(_ id: UInt16, _ body: [UInt8]) -> [UInt8] {
        let n = UInt32(body.count + 6)
        return [UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff),
                UInt8(id >> 8), UInt8(id & 0xff)] + body
    }

    func randomFrames(_ rng: inout SeededRandom, count: Int) -> [[UInt8]] {
        (0..<count).map { _ in
            let id: UInt16 = [20001, 10002].randomElement(using: &rng)!
            return frame(id, (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
    }

    func deframe(_ stream: [UInt8], cuts: [Int], startsAtBoundary: Bool = true,
                 gapsAt: [Int: UInt64] = [:]) -> FrameCollector {
        let known = Self.game.byID[.c2s]!
        return FrameCollector.deframe(stream, layout: layout, cuts: cuts, startsAtBoundary: startsAtBoundary,
                                      gapsAt: gapsAt, knownID: { known[$0] != nil })
    }

    func testEverySplitOfTheStreamGivesTheSameFrames() {
        var rng = SeededRandom(seed: 3)
        let frames = randomFrames(&rng, count: 4)
        let stream = frames.flatMap { $0 }
        // All at once, one byte at a time, every single cut and every pair of cuts.
        XCTAssertEqual(deframe(stream, cuts: []).frames, frames)
        XCTAssertEqual(deframe(stream, cuts: Array(1..<stream.count)).frames, frames)
        for i in 1..<stream.count {
            XCTAssertEqual(deframe(stream, cuts: [i]).frames, frames, "cut at \(i)")
            for j in (i + 1)..<stream.count {
                let col = deframe(stream, cuts: [i, j])
                XCTAssertEqual(col.frames, frames, "cuts at \(i), \(j)")
                XCTAssertTrue(col.malformed.isEmpty)
            }
        }
    }

    func testRandomStreamsRandomCuts() {
        var rng = SeededRandom(seed: 4)
        for _ in 0..<300 {
            let frames = randomFrames(&rng, count: Int.random(in: 1...30, using: &rng))
            let stream = frames.flatMap { $0 }
            let cuts = Set((0..<Int.random(in: 0...40, using: &rng)).map { _ in Int.random(in: 1..<max(2, stream.count), using: &rng) })
            let col = deframe(stream, cuts: cuts.sorted().filter { $0 < stream.count })
            XCTAssertEqual(col.frames, frames)
        }
    }

    func testGarbageBeforeTheFirstFrameIsSkippedAndReported() {
        var rng = SeededRandom(seed: 5)
        let frames = randomFrames(&rng, count: 10)
        let garbage: [UInt8] = [0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x4e, 0x21, 0x99]
        let stream = garbage + frames.flatMap { $0 }
        for cuts in [[], [3], [5, 11], Array(1..<stream.count)] {
            let col = deframe(stream, cuts: cuts, startsAtBoundary: false)
            XCTAssertEqual(col.frames, frames, "cuts \(cuts)")
            XCTAssertEqual(col.malformedBytes, UInt64(garbage.count), "every skipped byte is reported")
        }
    }

    func testStreamPickedUpMidFrame() {
        var rng = SeededRandom(seed: 6)
        let frames = randomFrames(&rng, count: 8)
        let stream = frames.flatMap { $0 }
        let start = 3  // inside the first frame's header
        let col = deframe(Array(stream[start...]), cuts: [10, 30], startsAtBoundary: false)
        XCTAssertEqual(col.frames, Array(frames.dropFirst()))
        XCTAssertEqual(col.malformedBytes, UInt64(frames[0].count - start))
    }

    func testGapMidFrameThenRecovery() {
        var rng = SeededRandom(seed: 7)
        let frames = randomFrames(&rng, count: 12).map { $0.count < 12 ? frame(10002, [UInt8](repeating: 1, count: 8)) : $0 }
        var stream: [UInt8] = []
        var lostFrom = 0, lostTo = 0
        for (i, f) in frames.enumerated() {
            if i == 4 { lostFrom = stream.count + 5 }
            if i == 5 { lostTo = stream.count + 3 }
            stream += f
        }
        // Bytes [lostFrom, lostTo) never arrive: frames 4 and 5 are cut, the rest survive.
        let seen = Array(stream[..<lostFrom]) + Array(stream[lostTo...])
        let col = deframe(seen, cuts: [lostFrom], gapsAt: [lostFrom: UInt64(lostTo - lostFrom)])
        XCTAssertEqual(col.frames, Array(frames[0..<4]) + Array(frames[6...]))
        XCTAssertEqual(col.malformedBytes + UInt64(col.frames.map(\.count).reduce(0, +)), UInt64(seen.count),
                       "nothing dropped without a report")
        XCTAssertTrue(col.malformed.contains { if case .cutByGap = $0.2 { return true } else { return false } })
    }

    func testBogusHugeLengthIsNotAllocatedAndLaterFramesRecover() {
        var rng = SeededRandom(seed: 8)
        let frames = randomFrames(&rng, count: 6)
        let bogus: [UInt8] = [0xff, 0xff, 0xff, 0xf0, 0x4e, 0x21] + [UInt8](repeating: 0x55, count: 10)
        let stream = Array(frames[0..<2].joined()) + bogus + Array(frames[2...].joined())
        let col = deframe(stream, cuts: [7, 40])
        XCTAssertEqual(col.frames, frames)
        XCTAssertTrue(col.malformed.contains { if case .lengthTooLong = $0.2 { return true } else { return false } })
        XCTAssertEqual(col.malformedBytes, UInt64(bogus.count))
    }

    func testLengthShorterThanHeaderIsMalformedNotAWait() {
        let stream: [UInt8] = [0, 0, 0, 2, 0x4e, 0x21] + frame(20001, [1, 0, 0, 0, 2, 0, 0])
        let col = deframe(stream, cuts: [])
        XCTAssertEqual(col.frames.count, 1)
        XCTAssertTrue(col.malformed.contains { if case .lengthTooShort = $0.2 { return true } else { return false } })
    }

    func testConstantHeaderFieldIsValidated() throws {
        let im = try DissectorLoader.loadFile(TestSupport.dissectors + "/im.dissector")[0]
        let l = FrameLayout(im)
        let good: [UInt8] = [0, 12, 0, 1, 0, 3, 0, 0, 0, 9, 0, 2, 0xaa, 0xbb]
        var bad = good
        bad[1] = 13
        XCTAssertEqual(good.withUnsafeBytes { l.check($0, at: 0) }, .ok(frameLength: 14))
        XCTAssertEqual(bad.withUnsafeBytes { l.check($0, at: 0) }, .constantMismatch(field: 0, value: 13))
    }
}
