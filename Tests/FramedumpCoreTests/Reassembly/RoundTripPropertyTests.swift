import Foundation
import XCTest
@testable import FramedumpCore

/// Random protocols, random messages, random TCP delivery: what NDJSON shows must be what was
/// encoded (#26). Each case has its own seed, given in every failure:
/// `FRAMEDUMP_ROUNDTRIP_SEED=S FRAMEDUMP_ROUNDTRIP_CASES=1 swift test --filter RoundTrip` replays it.
final class RoundTripPropertyTests: XCTestCase {
    func testRandomProtocolsRoundTrip() throws {
        let env = ProcessInfo.processInfo.environment
        let cases = Int(env["FRAMEDUMP_ROUNDTRIP_CASES"] ?? "") ?? 300
        let seed = UInt64(env["FRAMEDUMP_ROUNDTRIP_SEED"] ?? "") ?? 26_000
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var failed = 0
        var coverage = RTCoverage()
        let start = Date()
        for k in 0..<cases {
            let s = seed &+ UInt64(k)
            var one = RoundTripCase(seed: s, dir: dir)
            let t0 = Date()
            let result = try one.run()
            if Date().timeIntervalSince(t0) > 3 { print("roundtrip: seed \(s) took \(Date().timeIntervalSince(t0)) s") }
            coverage.add(result.coverage)
            if let problem = result.problem {
                failed += 1
                XCTFail("round trip seed \(s) (replay: FRAMEDUMP_ROUNDTRIP_SEED=\(s) FRAMEDUMP_ROUNDTRIP_CASES=1): \(problem)")
                if failed >= 5 { break }
            }
        }
        // The defects this test was written for must stay within its reach.
        if cases >= 200 {
            XCTAssertGreaterThan(coverage.outOfOrderCompletions, 0, "no message was completed by an out-of-order segment")
            XCTAssertGreaterThan(coverage.unsuffixedDoubleBig, 0, "no unsuffixed Double in a big-endian protocol")
            XCTAssertGreaterThan(coverage.numbersAbove2To63, 0, "no number at or above 2^63")
            XCTAssertGreaterThan(coverage.seqWraps, 0, "no sequence number wrap")
            XCTAssertGreaterThan(coverage.retransmissions, 0, "no retransmission")
            XCTAssertGreaterThan(coverage.recursion, 0, "no recursive message")
            XCTAssertGreaterThan(coverage.maxLengthStrings, 0, "no string at its largest length")
        }
        print(String(format: "roundtrip: %d cases from seed %llu, %d failed, %d frames, %.1f s", cases, seed, failed,
                     coverage.frames, Date().timeIntervalSince(start)) + " \(coverage)")
    }
}

/// One case: a protocol, its connections, the capture, the run and the comparison.
struct RoundTripCase {
    let seed: UInt64
    let dir: String
    var r: RTRand

    init(seed: UInt64, dir: String) {
        self.seed = seed
        self.dir = dir
        r = RTRand(seed)
    }

    /// A direction of a connection: its frames, laid end to end.
    struct Stream {
        var frames: [RTFrame] = []
        var starts: [Int] = []
        var bytes: [UInt8] = []
        var isn: UInt32 = 0
        /// Per frame: the packet that completed it and the earliest that carried any of its bytes.
        var completedBy: [Int] = []
        var firstCarrier: [Int] = []
        var carriers: [[Int]] = []
        /// The packets written, `number:offset+length` (R: a retransmission), for failure reports.
        var log: [String] = []
    }

    struct Conn {
        var client: UInt32
        var cport: UInt16
        var streams = [Stream(), Stream()]
        var name: String
    }

    /// A packet to write: a connection's segment, in capture order.
    enum Event {
        case syn, synAck, ack, data(dir: Int, offset: Int, length: Int, retransmission: Bool), fin(dir: Int), lastAck
    }

    mutating func run() throws -> (problem: String?, coverage: RTCoverage) {
        var g = RTProtocolGenerator(RTRand(r.bits()), index: Int(seed % 1000))
        let p = g.build()
        var coverage = p.coverage
        let path = dir + "/rt.dissector"
        try p.text.write(toFile: path, atomically: true, encoding: .utf8)
        let keep = FileManager.default.temporaryDirectory.appendingPathComponent("framedump-roundtrip-\(seed)").path
        func fail(_ s: String, _ extra: String = "") -> (String?, RTCoverage) {
            // The capture and the dissector stay behind for a reproducer.
            try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
            for f in ["rt.dissector", "rt.pcap"] {
                try? FileManager.default.removeItem(atPath: keep + "/" + f)
                try? FileManager.default.copyItem(atPath: dir + "/" + f, toPath: keep + "/" + f)
            }
            return (s + "\n(capture and dissector kept in \(keep))\n--- dissector ---\n" + p.text + extra, coverage)
        }

        // Frames for each direction of one to three connections.
        var enc = RTEncoder(RTRand(r.bits()), p)
        var conns: [Conn] = []
        for c in 0..<r.int(1...3) {
            let client = 0x0A01_0000 | UInt32(r.int(1...60000))
            let cport = UInt16(20_000 + c * 1000 + r.int(0...999))
            var conn = Conn(client: client, cport: cport, name: "\(ip(client)):\(cport)-10.0.0.1:\(p.port)")
            for d in 0...1 {
                let choices = p.messages.indices.filter { p.messages[$0].id != nil && (p.messages[$0].direction ?? d) == d }
                guard !choices.isEmpty else { continue }
                for _ in 0..<r.pick([0, 1, 2, 4, 8, 12, 30]) {
                    guard let f = enc.frame(r.pick(choices)) else { continue }
                    conn.streams[d].starts.append(conn.streams[d].bytes.count)
                    conn.streams[d].bytes += f.bytes
                    conn.streams[d].frames.append(f)
                }
                let n = conn.streams[d].bytes.count
                // Sequence numbers that wrap past 2^32 inside the stream, now and then.
                conn.streams[d].isn = r.chance(0.3) ? UInt32.max - UInt32(r.int(0...max(0, n))) : UInt32(truncatingIfNeeded: r.bits())
                if UInt64(conn.streams[d].isn) + 1 + UInt64(n) > UInt64(UInt32.max) + 1 && n > 0 { coverage.seqWraps += 1 }
            }
            conns.append(conn)
        }
        coverage.add(enc.coverage)

        // Each connection's packets, then all connections interleaved.
        var perConn: [[Event]] = []
        for c in conns.indices {
            var data: [[Event]] = [[], []]
            for d in 0...1 { data[d] = schedule(conns[c].streams[d].bytes.count, dir: d, &coverage) }
            perConn.append([.syn, .synAck, .ack] + interleave(data) + [.fin(dir: 0), .fin(dir: 1), .lastAck])
        }
        var order: [(Int, Event)] = []
        var next = [Int](repeating: 0, count: conns.count)
        while true {
            let open = next.indices.filter { next[$0] < perConn[$0].count }
            guard let c = open.randomElement(using: &r.g) else { break }
            order.append((c, perConn[c][next[c]]))
            next[c] += 1
        }

        // Written through libpcap, with a model of when each frame is complete.
        let pcap = dir + "/rt.pcap"
        let b = try CaptureBuilder(pcap)
        var delivered = [[Int]](repeating: [0, 0], count: conns.count)
        var held = [[[(Int, Int, Int)]]](repeating: [[], []], count: conns.count)  // (start, end, packet)
        var carriers = [[[(Int, Int, Int, Bool)]]](repeating: [[], []], count: conns.count)
        for c in conns.indices {
            for d in 0...1 {
                conns[c].streams[d].completedBy = Array(repeating: 0, count: conns[c].streams[d].frames.count)
                conns[c].streams[d].firstCarrier = Array(repeating: 0, count: conns[c].streams[d].frames.count)
                conns[c].streams[d].carriers = Array(repeating: [], count: conns[c].streams[d].frames.count)
            }
        }
        for (c, e) in order {
            let conn = conns[c]
            let cisn = conn.streams[0].isn, sisn = conn.streams[1].isn
            let cdata = UInt32(truncatingIfNeeded: conn.streams[0].bytes.count), sdata = UInt32(truncatingIfNeeded: conn.streams[1].bytes.count)
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            func send(_ d: Int, seq: UInt32, ack: UInt32, flags: UInt8, _ payload: UnsafeRawBufferPointer) {
                if d == 0 {
                    b.segment(src: conn.client, sport: conn.cport, dst: 0x0A00_0001, dport: p.port, seq: seq, ack: ack, flags: flags, payload: payload)
                } else {
                    b.segment(src: 0x0A00_0001, sport: p.port, dst: conn.client, dport: conn.cport, seq: seq, ack: ack, flags: flags, payload: payload)
                }
            }
            switch e {
            case .syn: send(0, seq: cisn, ack: 0, flags: 0x02, none)
            case .synAck: send(1, seq: sisn, ack: cisn &+ 1, flags: 0x12, none)
            case .ack: send(0, seq: cisn &+ 1, ack: sisn &+ 1, flags: 0x10, none)
            case .fin(let d):
                send(d, seq: (d == 0 ? cisn &+ 1 &+ cdata : sisn &+ 1 &+ sdata), ack: d == 0 ? sisn &+ 1 : cisn &+ 1, flags: 0x11, none)
            case .lastAck: send(0, seq: cisn &+ 2 &+ cdata, ack: sisn &+ 2 &+ sdata, flags: 0x10, none)
            case .data(let d, let off, let len, let retransmitted):
                let s = conn.streams[d]
                s.bytes[off..<(off + len)].withUnsafeBytes { part in
                    send(d, seq: s.isn &+ 1 &+ UInt32(off), ack: d == 0 ? sisn &+ 1 : cisn &+ 1, flags: 0x18, part)
                }
                let pkt = Int(b.packets)
                carriers[c][d].append((off, off + len, pkt, retransmitted))
                conns[c].streams[d].log.append("\(pkt):\(off)+\(len)" + (retransmitted ? "R" : ""))
                if off <= delivered[c][d] {
                    delivered[c][d] = max(delivered[c][d], off + len)
                    var moved = true
                    while moved {
                        moved = false
                        for h in held[c][d] where h.0 <= delivered[c][d] && h.1 > delivered[c][d] {
                            delivered[c][d] = h.1
                            moved = true
                        }
                    }
                    held[c][d].removeAll { $0.1 <= delivered[c][d] }
                } else {
                    held[c][d].append((off, off + len, pkt))
                }
                for (i, start) in s.starts.enumerated() where conns[c].streams[d].completedBy[i] == 0 {
                    let end = start + s.frames[i].bytes.count
                    guard end <= delivered[c][d] else { break }
                    conns[c].streams[d].completedBy[i] = pkt
                    // The earliest packet that carried any of its bytes. When a retransmission
                    // also carried them, the copy that was used may be either: nil, any carrier.
                    let carried = carriers[c][d].filter { $0.0 < end && $0.1 > start }
                    conns[c].streams[d].firstCarrier[i] = carried.contains { $0.3 } ? -1 : carried.map(\.2).min() ?? pkt
                    conns[c].streams[d].carriers[i] = carried.map(\.2)
                    // Its last byte came earlier, held behind a hole this packet filled.
                    if !(off < end && off + len >= end) { coverage.outOfOrderCompletions += 1 }
                }
            }
        }
        b.finish()

        // The run, on one thread or two; now and then on both, which must print the same.
        let twoThreads = r.chance(0.5)
        func decode(_ two: Bool) throws -> String {
            try TestSupport.pipeline(pcap) { o in
                o.dissectorPaths = [path]
                o.format = .json
                o.jobs = two ? 2 : 1
            }
        }
        let out: String
        do {
            out = try decode(twoThreads)
            if r.chance(0.1), try decode(!twoThreads) != out { return fail("one thread and two print differently") }
        } catch {
            return fail("the run failed: \(error)")
        }

        // Expected message lines per connection and direction, in stream order.
        var expected: [String: [(Int, Int)]] = [:]  // "conn dir" → [(conn, frame)] with direction in key
        for (c, conn) in conns.enumerated() {
            for d in 0...1 {
                expected["\(conn.name) \(d == 0 ? "c2s" : "s2c")"] = conn.streams[d].frames.indices.map { (c, $0) }
                coverage.frames += conn.streams[d].frames.count
            }
        }
        var seen: [String: Int] = [:]
        var lastTS = ""
        var closes = 0
        let keys = ["conn", "dir", "ts", "protocol", "pkts", "offset", "id", "message", "length", "header", "fields", "warnings"]
        for line in out.split(separator: "\n") {
            guard let j = RTJSONParser.parse(line), case .object(let members) = j else {
                return fail("not a JSON object: \(line.prefix(500))")
            }
            guard case .string(let ts)? = j["ts"] else { return fail("no ts: \(line.prefix(500))") }
            if ts < lastTS { return fail("ts goes backwards: \(lastTS) then \(line.prefix(500))", "\n" + out.prefix(4000)) }
            lastTS = ts
            if case .string(let type)? = j["type"] {
                switch type {
                case "open": continue
                case "close":
                    closes += 1
                    guard case .string(let cname)? = j["conn"], let conn = conns.first(where: { $0.name == cname }) else {
                        return fail("close of an unknown connection: \(line)")
                    }
                    let want = RTJSON.object([("c2s", .number(String(conn.streams[0].bytes.count))),
                                              ("s2c", .number(String(conn.streams[1].bytes.count)))])
                    if let m = want.mismatch(j["bytes"] ?? .null, at: "close.bytes") { return fail(m + " in " + line) }
                    if case .string("fin")? = j["reason"] {} else { return fail("close not by FIN: \(line)") }
                    continue
                default:
                    return fail("unexpected \(type) line (nothing of the kind was made): \(line.prefix(600))")
                }
            }
            // A message line: keys in the documented order.
            let names = members.map(\.0)
            let order = keys.filter { names.contains($0) }
            guard names == order, names.contains("fields") else { return fail("keys \(names), expected in the order \(keys)") }
            guard case .string(let cname)? = j["conn"], case .string(let dname)? = j["dir"] else { return fail("no conn/dir: \(line)") }
            let key = "\(cname) \(dname)"
            guard let list = expected[key] else { return fail("a message on an unknown connection or direction: \(line.prefix(400))") }
            let k = seen[key, default: 0]
            seen[key] = k + 1
            guard k < list.count else { return fail("more messages than were sent on \(key): \(line.prefix(400))") }
            let (c, fi) = list[k]
            let s = conns[c].streams[dname == "c2s" ? 0 : 1]
            let f = s.frames[fi]
            let m = p.messages[f.message]
            // With a retransmission among its carriers, `pkts` starts at one of them.
            var first = s.firstCarrier[fi]
            if first < 0, case .array(let pk)? = j["pkts"], case .number(let t)? = pk.first, let v = Int(t),
               s.carriers[fi].contains(v) { first = v }
            var want: [(String, RTJSON)] = [
                ("conn", .string(cname)), ("dir", .string(dname)), ("ts", .string(tsText(s.completedBy[fi]))),
                ("protocol", .string(p.name)),
                ("pkts", .array([.number(String(first)), .number(String(s.completedBy[fi]))])),
                ("offset", .number(String(s.starts[fi]))), ("id", .number(String(f.id))), ("message", .string(m.name)),
                ("length", .number(String(f.bytes.count)))]
            if let h = f.header { want.append(("header", h)) }
            want.append(("fields", f.fields))
            if !f.invalidStrings.isEmpty {
                want.append(("warnings", .array(f.invalidStrings.map { .string("field '\($0)' is not valid UTF-8") })))
            }
            if let problem = RTJSON.object(want).mismatch(j, at: "\(key) message \(k)") {
                return fail(problem, "\n--- packets of \(key) ---\n\(s.log.joined(separator: " ").prefix(3000))\n--- frame \(fi) at stream offset \(s.starts[fi]) ---\n\(rtHex(Array(f.bytes.prefix(2000))))\n--- line ---\n\(line.prefix(3000))")
            }
        }
        for (key, list) in expected where seen[key, default: 0] != list.count {
            return fail("\(key): \(seen[key, default: 0]) messages shown, \(list.count) sent", "\n" + out.prefix(3000))
        }
        if closes != conns.count { return fail("\(closes) close lines for \(conns.count) connections") }
        return (nil, coverage)
    }

    /// The timestamp CaptureBuilder gives packet `n` (1-based), as NDJSON writes it.
    func tsText(_ n: Int) -> String {
        String(format: "%d.%09d", 1_700_000_000 + n / 1_000_000, (n % 1_000_000) * 1000)
    }

    func ip(_ a: UInt32) -> String { "\(a >> 24).\((a >> 16) & 0xff).\((a >> 8) & 0xff).\(a & 0xff)" }

    /// One direction's segments: cut at random (single bytes too, and many frames in one),
    /// some sent out of order, some sent again.
    mutating func schedule(_ n: Int, dir: Int, _ coverage: inout RTCoverage) -> [Event] {
        var segs: [(Int, Int)] = []
        var i = 0
        // Tiny pieces only, or a mix; a long stream in fewer, larger pieces (at most about 3,000).
        let style = n < 5000 ? r.int(0...3) : 1
        let floor = n / 3000
        while i < n {
            var len: Int
            switch style == 0 ? 0 : r.int(0...9) {
            case 0, 1: len = r.int(1...3)
            case 2, 3: len = r.int(4...40)
            case 4...6: len = r.int(41...400)
            default: len = r.int(401...1400)
            }
            len = min(max(len, floor), n - i)
            if len == 1 { coverage.oneByteSegments += 1 }
            segs.append((i, len))
            i += len
        }
        var events = segs.map { Event.data(dir: dir, offset: $0.0, length: $0.1, retransmission: false) }
        if segs.count > 1 {
            // Out of order: adjacent swaps and segments held back a few places.
            for _ in 0..<r.int(0...max(1, segs.count / 3)) {
                let a = r.int(0...(events.count - 2))
                if r.chance(0.5) { events.swapAt(a, a + 1) } else {
                    let e = events.remove(at: a)
                    events.insert(e, at: min(events.count, a + r.int(1...6)))
                }
            }
        }
        // Retransmissions: a segment again (later, or at once), or two neighbours as one.
        for _ in 0..<(segs.isEmpty ? 0 : r.int(0...3)) {
            let k = r.int(0...(segs.count - 1))
            var (off, len) = segs[k]
            if k + 1 < segs.count && r.chance(0.3) { len += segs[k + 1].1 }
            let at = events.firstIndex { if case .data(_, let o, _, _) = $0 { return o == off } else { return false } } ?? 0
            events.insert(.data(dir: dir, offset: off, length: len, retransmission: true), at: min(events.count, at + r.int(0...8)))
            coverage.retransmissions += 1
        }
        return events
    }

    /// Two lists merged at random, each keeping its own order.
    mutating func interleave(_ lists: [[Event]]) -> [Event] {
        var out: [Event] = []
        var next = [0, 0]
        while next[0] < lists[0].count || next[1] < lists[1].count {
            let d = next[0] >= lists[0].count ? 1 : next[1] >= lists[1].count ? 0 : r.int(0...1)
            out.append(lists[d][next[d]])
            next[d] += 1
        }
        return out
    }
}
