import Foundation
import XCTest
@testable import FramedumpCore

/// samples/mqtt.pcap (mosquitto and paho-mqtt; Dissectors/mqtt.dissector: the type in the high
/// nibble, a varint(4) Remaining Length, fields under the flags) against tshark's own MQTT
/// dissector: every packet, in order on each direction of each connection, with the same type,
/// Remaining Length, topic or filters, packet id and QoS (issue #39's proof on a real protocol).
final class MQTTSampleTests: XCTestCase {
    struct Packet: Equatable, CustomStringConvertible {
        var type: Int
        var length: Int
        var topics: [String]
        var packetID: Int?
        var qos: Int?
        var description: String { "type \(type) len \(length) topics \(topics) id \(packetID.map(String.init) ?? "-") qos \(qos.map(String.init) ?? "-")" }
    }

    /// tshark's view: one line a frame, its MQTT packets' fields joined by ';' (topics of one
    /// SUBSCRIBE by ',').
    func tsharkPackets() throws -> [String: [Packet]] {
        let tshark = try TestSupport.oracle("tshark")
        let r = try TestSupport.run(tshark, ["-r", TestSupport.sample("mqtt.pcap"), "-Y", "mqtt", "-T", "fields",
                                             "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "mqtt.msgtype", "-e", "mqtt.len",
                                             "-e", "mqtt.topic", "-e", "mqtt.msgid", "-e", "mqtt.qos",
                                             "-E", "occurrence=a", "-E", "aggregator=;"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var out: [String: [Packet]] = [:]
        for line in r.stdout.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard c.count == 7 else { continue }
            let types = c[2].split(separator: ";").compactMap { Int($0) }
            let lengths = c[3].split(separator: ";").compactMap { Int($0) }
            var topics = c[4].split(separator: ";").map(String.init)
            var ids = c[5].split(separator: ";").compactMap { Int($0) }
            var qoses = c[6].split(separator: ";").compactMap { Int($0) }
            let key = "\(c[0])>\(c[1])"
            for (t, n) in zip(types, lengths) {
                var p = Packet(type: t, length: n, topics: [], packetID: nil, qos: nil)
                switch t {
                case 3:  // PUBLISH: a topic, an id at QoS > 0, a QoS
                    p.topics = [topics.removeFirst()]
                    p.qos = qoses.removeFirst()
                    if p.qos! > 0 { p.packetID = ids.removeFirst() }
                case 8, 10:  // SUBSCRIBE, UNSUBSCRIBE: an id and their filters (tshark gives them all)
                    p.packetID = ids.removeFirst()
                    p.topics = topics
                    topics = []
                    if t == 8 { qoses = [] }
                case 4, 5, 6, 7, 9, 11:
                    p.packetID = ids.removeFirst()
                default: break
                }
                out[key, default: []].append(p)
            }
        }
        return out
    }

    func testEveryPacketAsTsharksMQTTDissectorReadsIt() throws {
        let want = try tsharkPackets()
        let (flows, events) = try TestSupport.messagesByFlow("mqtt.pcap")
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var got: [String: [Packet]] = [:]
        for (key, o) in flows.flatMap({ k, ms in ms.map { (k, $0) } }) {
            let header = o["header"] as! [String: Any], fields = o["fields"] as? [String: Any] ?? [:]
            let type = o["id"] as! Int
            var p = Packet(type: type, length: header["remaining"] as! Int, topics: [], packetID: fields["packet_id"] as? Int, qos: nil)
            if type == 3 {
                p.topics = [fields["topic"] as! String]
                p.qos = ((header["fixed"] as! Int) & 0x06) >> 1
            }
            if type == 8 { p.topics = (fields["topics"] as! [[String: Any]]).map { $0["filter"] as! String } }
            if type == 10 { p.topics = fields["filters"] as! [String] }
            XCTAssertNil(o["warnings"], "\(o)")
            got[key, default: []].append(p)
        }
        XCTAssertEqual(Set(got.keys), Set(want.keys))
        var count = 0
        for (key, packets) in want {
            XCTAssertEqual(got[key] ?? [], packets, key)
            count += packets.count
        }
        XCTAssertEqual(count, 47)
        // Every size of Remaining Length the capture has: 1, 2 and 3 bytes.
        XCTAssertTrue(want.values.joined().contains { $0.length > 16383 } && want.values.joined().contains { (128...16383).contains($0.length) })
    }
}
