import XCTest
@testable import FramedumpCore

/// `-Y FILTER -w FILE`: the written file, read again, gives the same messages at the same
/// times from the same packets (numbered as in the new file).
final class FilteredWriteTests: XCTestCase {
    /// Each packet's time, by its number in the file.
    func packetTimes(_ path: String) throws -> [String] {
        var t: [String] = []
        try PacketSource(.file(path)).forEach { p in
            t.append("\(p.ref.ts.seconds).\(p.ref.ts.nanos)")
            return true
        }
        return t
    }

    /// NDJSON message lines with their packet numbers turned into the packets' times, and
    /// without what a response says of its request (a filtered file may hold a response
    /// without the request it answered, which then answers nothing).
    func messages(_ args: [String], times: [String]) throws -> [String] {
        let r = try TestSupport.framedump(args + ["-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let pairing = try NSRegularExpression(pattern: ",\"answers\":\\{[^}]*\\},\"latency\":[0-9.]+")
        return r.stdout.split(separator: "\n").map(String.init).filter { $0.contains("\"pkts\":[") }.map { whole in
            let line = pairing.stringByReplacingMatches(in: whole, range: NSRange(whole.startIndex..., in: whole), withTemplate: "")
            guard let a = line.range(of: "\"pkts\":["), let b = line[a.upperBound...].firstIndex(of: "]") else { return line }
            let nums = line[a.upperBound..<b].split(separator: ",").compactMap { Int($0) }
            let ts = nums.map { $0 >= 1 && $0 <= times.count ? times[$0 - 1] : "?\($0)" }
            return line.replacingCharacters(in: a.lowerBound...b, with: "\"pkts@\":\(ts)")
        }
    }

    func roundTrip(_ sample: String, _ filter: String, extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let src = TestSupport.sample(sample)
        let out = TestSupport.tempDir() + "/out.pcap"
        let w = try TestSupport.framedump(["-r", src, "-Y", filter, "-w", out] + extra)
        XCTAssertEqual(w.status, 0, w.stderr, file: file, line: line)
        XCTAssertEqual(w.stdout, "", "-w prints no message", file: file, line: line)
        XCTAssertTrue(w.stderr.contains(" packets written to "), w.stderr, file: file, line: line)
        let before = try messages(["-r", src, "-Y", filter] + extra, times: try packetTimes(src))
        let after = try messages(["-r", out, "-Y", filter] + extra, times: try packetTimes(out))
        XCTAssertFalse(before.isEmpty, "\(sample): \(filter) matches nothing", file: file, line: line)
        XCTAssertEqual(after, before, "\(sample): \(filter)", file: file, line: line)
        // Without the filter: every message there is one of the original's, as it was.
        let all = Set(try messages(["-r", src] + extra, times: try packetTimes(src)))
        let reread = try messages(["-r", out] + extra, times: try packetTimes(out))
        for m in reread { XCTAssertTrue(all.contains(m), "not in the original: \(m)", file: file, line: line) }
    }

    func testTheFilteredFileDecodesTheSameWay() throws {
        try roundTrip("game.pcap", "msg.name == \"SC_20001\"")
        try roundTrip("game.pcap", "msg.dir == c2s")
        try roundTrip("game.pcap", "game.SceneId == 152")
        try roundTrip("zgame.pcap", "msg.name == \"Inventory\"")
        try roundTrip("svc.pcap", "msg.name == \"ListItems\"")
        try roundTrip("im.pcap", "msg.name == \"LoginAck\"")
        try roundTrip("kcp.pcap", "msg.name == \"SC_20001\"")
        try roundTrip("websocket-deflate.pcap", "msg.dir == s2c")
        try roundTrip("tls13.pcap", "msg.dir == s2c", extra: ["--tls-keylog", TestSupport.sample("tls13.keys")])
    }

    /// A packet left out is written cut to its headers, as a snap length cuts: tcpdump reads
    /// the same line for it, and the reader reports the bytes as left out at once.
    func testLeftOutPacketsAreCutNotDropped() throws {
        let out = TestSupport.tempDir() + "/sc.pcap"
        XCTAssertEqual(try TestSupport.framedump(["-r", "samples/game.pcap", "-Y", "msg.name == \"SC_20001\"", "-w", out]).status, 0)
        var cut = 0
        try PacketSource(.file(out)).forEach { p in
            if p.data.count < p.wireLength { cut += 1 }
            return true
        }
        XCTAssertEqual(cut, 6)
        let r = try TestSupport.framedump(["-r", out])
        XCTAssertFalse(r.stdout.contains("capture-end)\n") && r.stdout.contains("GAP 18 bytes missing at stream offset 54 (capture-end)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("GAP 18 bytes missing at stream offset 54 (truncated)"), r.stdout)
        XCTAssertFalse(r.stdout.contains("split over"), r.stdout)
        // --print prints the messages as well.
        let p = try TestSupport.framedump(["-r", "samples/game.pcap", "-Y", "msg.name == \"SC_20001\"", "-w", out, "--print"])
        XCTAssertEqual(p.stdout.split(separator: "\n").filter { $0.contains(" SC_20001 ") }.count, 9, p.stdout)
    }
}
