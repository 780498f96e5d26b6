import Foundation
import XCTest
@testable import FramedumpCore

/// Collects what the reassembler delivers, per connection and direction.
final class StreamCollector: StreamConsumer {
    var data: [Direction: [UInt8]] = [.c2s: [], .s2c: []]
    var gaps: [(Direction, UInt64, UInt64, GapReason)] = []
    var conflicts = 0
    var opened = 0
    var closed: [CloseReason] = []
    var late: [(Direction, UInt64, UInt64)] = []

    func opened(_ c: Connection, packet: PacketRef) { opened += 1 }
    func data(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        // Offsets must follow on from what came before (data and gaps alike).
        let expected = UInt64(data[d]!.count) + gaps.filter { $0.0 == d }.map(\.2).reduce(0, +)
        XCTAssertEqual(offset, expected)
        data[d]!.append(contentsOf: bytes)
    }
    func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        gaps.append((d, offset, length, reason))
    }
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) { conflicts += 1 }
    func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) { closed.append(reason) }
    func lateData(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        late.append((d, offset, length))
    }
}

final class ReassemblyTests: XCTestCase {
    let client = Endpoint(IPAddress(v4: 0x0A00_0002), 40000)
    let server = Endpoint(IPAddress(v4: 0x0A00_0001), 8000)

    func segment(_ payload: UnsafeRawBufferPointer, seq: UInt32, flags: TCPFlags, c2s: Bool = true, ack: UInt32 = 0) -> TCPSegment {
        TCPSegment(src: c2s ? client : server, dst: c2s ? server : client, seq: seq, ack: ack, flags: flags,
                   window: 512, payload: payload, payloadLength: payload.count)
    }

    /// Sends `pieces` (offset, length) of `stream` as segments in the given order, after a SYN.
    func reassemble(_ stream: [UInt8], isn: UInt32, pieces: [(Int, Int)], options: ReassemblyOptions = ReassemblyOptions()) -> StreamCollector {
        let col = StreamCollector()
        let r = Reassembler(options: options, consumer: col)
        var n: UInt64 = 0
        func pkt() -> PacketRef { n += 1; return PacketRef(number: n, ts: Timestamp(seconds: 1, nanos: 0)) }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        r.add(segment(empty, seq: isn, flags: .syn), packet: pkt())
        stream.withUnsafeBytes { b in
            for (off, len) in pieces {
                r.add(segment(b.slice(off, len), seq: isn &+ 1 &+ UInt32(off), flags: [.psh]), packet: pkt())
            }
        }
        // The FIN tells where the stream ends, so a missing tail is a gap too.
        r.add(segment(empty, seq: isn &+ 1 &+ UInt32(stream.count), flags: [.fin]), packet: pkt())
        r.finish()
        return col
    }

    func testRandomSplitsReorderingDuplicatesAndOverlapsAcrossTheWrap() {
        var rng = SeededRandom(seed: 1)
        for round in 0..<300 {
            let size = Int.random(in: 1...3000, using: &rng)
            let stream = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Start close to 2^32 so most streams cross the wrap.
            let isn = UInt32.max &- UInt32.random(in: 0...2000, using: &rng)
            var cuts = Set<Int>()
            for _ in 0..<Int.random(in: 0...20, using: &rng) { cuts.insert(Int.random(in: 1...size, using: &rng)) }
            var bounds = [0] + cuts.sorted().filter { $0 < size } + [size]
            bounds = Array(Set(bounds)).sorted()
            var pieces = zip(bounds, bounds.dropFirst()).map { ($0, $1 - $0) }
            // Duplicates, and overlapping segments spanning several pieces (same bytes).
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                if let p = pieces.randomElement(using: &rng) { pieces.append(p) }
                let a = Int.random(in: 0..<size, using: &rng)
                pieces.append((a, Int.random(in: 1...(size - a), using: &rng)))
            }
            pieces.shuffle(using: &rng)
            let col = reassemble(stream, isn: isn, pieces: pieces)
            XCTAssertEqual(col.data[.c2s]!, stream, "round \(round)")
            XCTAssertTrue(col.gaps.isEmpty, "round \(round): \(col.gaps)")
            XCTAssertEqual(col.conflicts, 0)
        }
    }

    func testWithheldSegmentBecomesExactlyOneGap() {
        var rng = SeededRandom(seed: 2)
        for round in 0..<200 {
            let size = Int.random(in: 10...3000, using: &rng)
            let stream = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let isn = UInt32.random(in: 0...UInt32.max, using: &rng)
            var bounds = Set([0, size])
            for _ in 0..<Int.random(in: 2...15, using: &rng) { bounds.insert(Int.random(in: 1..<size, using: &rng)) }
            let b = bounds.sorted()
            var pieces = zip(b, b.dropFirst()).map { ($0, $1 - $0) }
            let withheld = pieces.remove(at: Int.random(in: 0..<pieces.count, using: &rng))
            for _ in 0..<3 { if let p = pieces.randomElement(using: &rng) { pieces.append(p) } }
            pieces.shuffle(using: &rng)
            let col = reassemble(stream, isn: isn, pieces: pieces)
            var expected = stream
            expected.removeSubrange(withheld.0..<(withheld.0 + withheld.1))
            XCTAssertEqual(col.data[.c2s]!, expected, "round \(round)")
            XCTAssertEqual(col.gaps.count, 1, "round \(round)")
            XCTAssertEqual(col.gaps.first?.1, UInt64(withheld.0))
            XCTAssertEqual(col.gaps.first?.2, UInt64(withheld.1))
        }
    }

    func testBufferLimitTurnsAHoleIntoAGapAndGoesOn() {
        let stream = [UInt8](repeating: 7, count: 10_000)
        var o = ReassemblyOptions()
        o.maxBufferedBytes = 1000
        // The first 100 bytes never arrive; the rest does, in order.
        let pieces = stride(from: 100, to: 10_000, by: 100).map { ($0, 100) }
        let col = reassemble(stream, isn: 5, pieces: pieces, options: o)
        XCTAssertEqual(col.gaps.count, 1)
        XCTAssertEqual(col.gaps[0].2, 100)
        XCTAssertEqual(col.gaps[0].3, .bufferLimit)
        XCTAssertEqual(col.data[.c2s]!.count, 9_900)
    }

    func testConflictingOverlapIsReportedAndFirstCopyWins() {
        let stream = Array("0123456789abcdefghij".utf8)
        let col = StreamCollector()
        let r = Reassembler(options: ReassemblyOptions(), consumer: col)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        r.add(segment(empty, seq: 99, flags: .syn), packet: p)
        let other = Array("XXXXX".utf8)
        stream.withUnsafeBytes { b in
            r.add(segment(b.slice(10, 5), seq: 110, flags: .psh), packet: p)
            other.withUnsafeBytes { r.add(segment($0, seq: 110, flags: .psh), packet: p) }
            r.add(segment(b.slice(0, 10), seq: 100, flags: .psh), packet: p)
            r.add(segment(b.slice(15, 5), seq: 115, flags: .psh), packet: p)
        }
        r.finish()
        XCTAssertEqual(col.conflicts, 1)
        XCTAssertEqual(col.data[.c2s]!, stream)
    }

    func testAckedUnseenBytesAreAGap() {
        let col = StreamCollector()
        let r = Reassembler(options: ReassemblyOptions(), consumer: col)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let data = [UInt8](repeating: 1, count: 50)
        r.add(segment(empty, seq: 999, flags: .syn), packet: p)
        r.add(segment(empty, seq: 4999, flags: [.syn, .ack], c2s: false, ack: 1000), packet: p)
        data.withUnsafeBytes { r.add(segment($0, seq: 1000, flags: [.psh, .ack], ack: 5000), packet: p) }
        // The server acknowledges 150 bytes: 100 were never captured. That is final only
        // once the connection ends (or after a grace): the bytes could still come.
        r.add(segment(empty, seq: 5000, flags: .ack, c2s: false, ack: 1150), packet: p)
        XCTAssertEqual(col.gaps.count, 0)
        r.finish()
        XCTAssertEqual(col.gaps.count, 1)
        XCTAssertEqual(col.gaps.first?.2, 100)
        XCTAssertEqual(col.gaps.first?.3, .ackedUnseen)
    }

    func testPortReuseStartsANewConnection() {
        let col = StreamCollector()
        let r = Reassembler(options: ReassemblyOptions(), consumer: col)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        r.add(segment(empty, seq: 10, flags: .syn), packet: p)
        r.add(segment(empty, seq: 11, flags: [.fin, .ack]), packet: p)
        r.add(segment(empty, seq: 900, flags: .syn), packet: p)
        r.finish()
        XCTAssertEqual(col.opened, 2)
        XCTAssertEqual(col.closed, [.reused, .captureEnd])
    }

    func testIdleTimeoutAndEviction() {
        let col = StreamCollector()
        var o = ReassemblyOptions()
        o.maxConnections = 3
        o.idleTimeoutSeconds = 10
        let r = Reassembler(options: o, consumer: col)
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        for i in 0..<5 {
            let s = TCPSegment(src: Endpoint(IPAddress(v4: 0x0A00_0100 + UInt32(i)), 40000), dst: server, seq: 1, ack: 0,
                               flags: .syn, window: 1, payload: empty, payloadLength: 0)
            r.add(s, packet: PacketRef(number: UInt64(i), ts: Timestamp(seconds: 1, nanos: 0)))
        }
        XCTAssertEqual(r.openConnections, 3)
        XCTAssertEqual(r.stats.evicted, 2)
        let late = TCPSegment(src: client, dst: server, seq: 1, ack: 0, flags: .syn, window: 1, payload: empty, payloadLength: 0)
        // A jump of the clock is followed once several packets agree (a lone future-stamped
        // packet would otherwise time out every connection).
        r.add(late, packet: PacketRef(number: 9, ts: Timestamp(seconds: 100, nanos: 0)))
        XCTAssertEqual(r.stats.idleClosed, 0)
        for i in 10..<17 { r.add(late, packet: PacketRef(number: UInt64(i), ts: Timestamp(seconds: 100, nanos: 0))) }
        // The two old connections time out; the one the late packets belong to does not.
        XCTAssertEqual(r.stats.idleClosed, 2)
        XCTAssertEqual(r.openConnections, 1)
    }

    // MARK: - Against an independent reassembler: tshark's "follow tcp"

    func testStreamsMatchTsharkFollow() throws {
        let tshark = try TestSupport.oracle("tshark")
        let captures = [TestSupport.sample("game.pcap"), TestSupport.sample("svc.pcap"), TestSupport.sample("im.pcap"),
                        TestSupport.fixture("any_sll2.pcap"), TestSupport.fixture("vlan.pcap"),
                        TestSupport.fixture("reorder_wrap.pcap"), TestSupport.fixture("ipv6_ext.pcap"),
                        TestSupport.fixture("mixed.pcapng"), TestSupport.fixture("lost_segment.pcap"),
                        TestSupport.fixture("conflict.pcap")]
        for cap in captures {
            let dir = TestSupport.tempDir()
            let r = try TestSupport.framedump(["-r", cap, "-q", "--streams", dir])
            XCTAssertEqual(r.status, 0, r.stderr)
            let index = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/index.json"))) as! [[String: Any]]
            XCTAssertFalse(index.isEmpty, cap)
            for (n, entry) in index.enumerated() {
                let follow = try TestSupport.run(tshark, ["-r", cap, "-q", "-z", "follow,tcp,raw,\(n)"])
                XCTAssertEqual(follow.status, 0, follow.stderr)
                let (nodes, bytes) = Self.parseFollow(follow.stdout)
                let files = entry["files"] as! [String: String]
                let conn = entry["conn"] as! String
                let client = String(conn.split(separator: "-").first!)
                for d in ["c2s", "s2c"] {
                    let ours = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: dir + "/" + files[d]!))) ?? Data())
                    // Node 0 sent first; map tshark's nodes onto our client/server roles.
                    let clientNode = nodes.firstIndex(of: client) ?? 0
                    let node = d == "c2s" ? clientNode : 1 - clientNode
                    XCTAssertEqual(ours, bytes[node], "\(cap) stream \(n) \(d)")
                }
            }
        }
    }

    /// tshark's raw follow output: node addresses, then hex lines (indented: node 1).
    static func parseFollow(_ text: String) -> ([String], [[UInt8]]) {
        var nodes: [String] = [], bytes: [[UInt8]] = [[], []]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Node 0: ") || line.hasPrefix("Node 1: ") {
                var ep = String(line.dropFirst(8))
                // tshark writes IPv6 endpoints as "[addr]:port" like we do; keep as is.
                if ep.hasPrefix("[") == false, ep.filter({ $0 == ":" }).count > 1, let i = ep.lastIndex(of: ":") {
                    ep = "[" + ep[..<i] + "]" + ep[i...]
                }
                nodes.append(ep)
                continue
            }
            guard !line.hasPrefix("="), !line.isEmpty, !line.hasPrefix("Follow"), !line.hasPrefix("Filter") else { continue }
            let node = line.hasPrefix("\t") ? 1 : 0
            let hex = line.trimmingCharacters(in: .whitespaces)
            guard hex.allSatisfy(\.isHexDigit), hex.count % 2 == 0 else { continue }
            var decoded: [UInt8] = []
            var i = hex.startIndex
            while i < hex.endIndex {
                let j = hex.index(i, offsetBy: 2)
                decoded.append(UInt8(hex[i..<j], radix: 16)!)
                i = j
            }
            // tshark writes its "[N bytes missing in capture file]" notice into the raw bytes.
            let text = String(decoding: decoded.prefix { $0 != 0 }, as: UTF8.self)
            if text.hasPrefix("["), text.hasSuffix(" bytes missing in capture file]"), decoded.count <= text.utf8.count + 1 { continue }
            bytes[node] += decoded
        }
        return (nodes, bytes)
    }

    // MARK: - Bounded memory, measured by the process itself

    func testSynFloodKeepsMemoryBounded() throws {
        let path = TestSupport.tempDir() + "/synflood.pcap"
        let d = try PacketDumper.create(path: path, linkType: 12)  // raw IP
        var pkt = [UInt8](repeating: 0, count: 40)
        for i in 0..<200_000 {
            // IPv4 + TCP SYN from 10.x.y.z:port to 10.0.0.1:8000.
            pkt[0] = 0x45; pkt[2] = 0; pkt[3] = 40; pkt[8] = 64; pkt[9] = 6
            pkt[12] = 10; pkt[13] = UInt8(i >> 16); pkt[14] = UInt8((i >> 8) & 0xff); pkt[15] = UInt8(i & 0xff)
            pkt[16] = 10; pkt[17] = 0; pkt[18] = 0; pkt[19] = 1
            pkt[20] = 0x9c; pkt[21] = 0x40; pkt[22] = 0x1f; pkt[23] = 0x40
            pkt[24] = UInt8(i & 0xff); pkt[32] = 0x50; pkt[33] = 0x02
            pkt.withUnsafeBytes { b in
                d.write(Packet(ref: PacketRef(number: 0, ts: Timestamp(seconds: 1_700_000_000 + Int64(i / 100_000), nanos: UInt32(i % 100_000) * 1000)),
                               data: b, wireLength: 40))
            }
        }
        d.flush()
        // Peak memory from the kernel (wait4): a child spawned by this test process would
        // report this process's size as its own starting peak.
        let r = try Measured.framedump(["-r", path, "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("connections evicted"), r.stdout)
        let peak = r.peakMiB
        XCTAssertLessThan(peak, 400, "200,000 connections with a 65,536 table must stay bounded")
    }

    func testOneGigabyteHoleKeepsMemoryBounded() throws {
        let path = TestSupport.tempDir() + "/hole.pcap"
        let d = try PacketDumper.create(path: path, linkType: 12)
        func tcp(_ seq: UInt32, _ flags: UInt8, _ payload: Int, fromClient: Bool = true) -> [UInt8] {
            var p = [UInt8](repeating: 0, count: 40) + [UInt8](repeating: 0x41, count: payload)
            let total = 40 + payload
            p[0] = 0x45; p[2] = UInt8(total >> 8); p[3] = UInt8(total & 0xff); p[8] = 64; p[9] = 6
            let (a, b): ([UInt8], [UInt8]) = fromClient ? ([10, 0, 0, 2], [10, 0, 0, 1]) : ([10, 0, 0, 1], [10, 0, 0, 2])
            p.replaceSubrange(12..<16, with: a); p.replaceSubrange(16..<20, with: b)
            let (sp, dp): (UInt16, UInt16) = fromClient ? (40000, 8000) : (8000, 40000)
            p[20] = UInt8(sp >> 8); p[21] = UInt8(sp & 0xff); p[22] = UInt8(dp >> 8); p[23] = UInt8(dp & 0xff)
            p[24] = UInt8(seq >> 24); p[25] = UInt8((seq >> 16) & 0xff); p[26] = UInt8((seq >> 8) & 0xff); p[27] = UInt8(seq & 0xff)
            p[32] = 0x50; p[33] = flags
            return p
        }
        var n: Int64 = 0
        func put(_ p: [UInt8]) {
            n += 1
            p.withUnsafeBytes { d.write(Packet(ref: PacketRef(number: 0, ts: Timestamp(seconds: 1_700_000_000, nanos: UInt32(n))), data: $0, wireLength: $0.count)) }
        }
        put(tcp(0, 0x02, 0))
        // 1 GiB never captured, then 20 MB of segments after the hole.
        let after: UInt32 = 1 + (1 << 30)
        for i in 0..<14_000 { put(tcp(after &+ UInt32(i * 1400), 0x18, 1400)) }
        d.flush()
        let r = try Measured.framedump(["-r", path, "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("gaps: 1 (1073741824 bytes)"), r.stdout)
        let peak = r.peakMiB
        XCTAssertLessThan(peak, 100, "a 1 GiB hole must not be buffered")
    }
}
