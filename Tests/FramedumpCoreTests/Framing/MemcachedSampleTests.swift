import Foundation
import XCTest
@testable import FramedumpCore

/// samples/memcached.pcap (the memcached server and python-binary-memcached;
/// Dissectors/memcached.dissector: body fields sized by the header's key and extras lengths,
/// fields under the status) against tshark's own memcache dissector: every packet, in order on
/// each direction of each connection, with the same magic, opcode, lengths, status and key
/// (issue #39's proof on a real protocol).
final class MemcachedSampleTests: XCTestCase {
    struct Packet: Equatable {
        var magic, opcode, keyLength, extrasLength, totalBody: Int
        var status: Int?
        var key: String?
    }

    func testEveryPacketAsTsharksMemcacheDissectorReadsIt() throws {
        let tshark = try TestSupport.oracle("tshark")
        let t = try TestSupport.run(tshark, ["-r", TestSupport.sample("memcached.pcap"), "-Y", "memcache", "-T", "fields",
                                             "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "memcache.magic", "-e", "memcache.opcode",
                                             "-e", "memcache.key.length", "-e", "memcache.extras.length", "-e", "memcache.total_body_length",
                                             "-e", "memcache.status", "-e", "memcache.key", "-E", "occurrence=a", "-E", "aggregator=;"])
        XCTAssertEqual(t.status, 0, t.stderr)
        var want: [String: [Packet]] = [:]
        for line in t.stdout.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map { $0.split(separator: ";").map(String.init) }
            guard c.count == 9 else { continue }
            var statuses = c[7].compactMap { Int($0) }, keys = c[8]
            for i in c[2].indices {
                var p = Packet(magic: Int(c[2][i])!, opcode: Int(c[3][i])!, keyLength: Int(c[4][i])!,
                               extrasLength: Int(c[5][i])!, totalBody: Int(c[6][i])!)
                if p.magic == 0x81 { p.status = statuses.removeFirst() }
                // (tshark shows no key on an error response: those keys are not compared.)
                if p.keyLength > 0 && (p.status ?? 0) == 0 { p.key = keys.removeFirst() }
                want["\(c[0][0])>\(c[1][0])", default: []].append(p)
            }
        }
        let (flows, events) = try TestSupport.messagesByFlow("memcached.pcap")
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var got: [String: [Packet]] = [:]
        for (key, o) in flows.flatMap({ k, ms in ms.map { (k, $0) } }) {
            let h = o["header"] as! [String: Any], f = o["fields"] as? [String: Any] ?? [:]
            func hex(_ k: String) -> Int { Int((h[k] as! String).dropFirst(2), radix: 16)! }
            var p = Packet(magic: hex("magic"), opcode: o["id"] as! Int, keyLength: h["key_length"] as! Int,
                           extrasLength: h["extras_length"] as! Int, totalBody: h["total_body"] as! Int)
            if p.magic == 0x81 { p.status = h["status"] as? Int }
            if p.keyLength > 0 && (p.status ?? 0) == 0 { p.key = (f["key"] ?? f["name"]) as? String }
            XCTAssertNil(o["warnings"], "\(o)")
            XCTAssertNotNil(o["message"], "every opcode of the capture is declared: \(o)")
            got[key, default: []].append(p)
        }
        XCTAssertEqual(Set(got.keys), Set(want.keys))
        var count = 0
        for (k, packets) in want {
            XCTAssertEqual(got[k] ?? [], packets, k)
            count += packets.count
        }
        XCTAssertEqual(count, 141)
        XCTAssertTrue(want.values.joined().contains { $0.status == 1 }, "a miss (Key not found)")
        XCTAssertTrue(want.values.joined().contains { $0.status == 2 }, "a refused add (Key exists)")
    }
}
