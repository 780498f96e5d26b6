import Foundation
import XCTest
@testable import FramedumpCore

/// samples/zookeeper.pcap (the ZooKeeper server and kazoo; Dissectors/zookeeper.dissector):
/// requests and replies have different headers, each direction's first message (connect) has
/// none of them, replies are typed by the request whose xid they carry, and watch events, ping
/// and auth replies by their negative xid. tshark has no ZooKeeper dissector: its TCP follow
/// gives the streams the frames must tile, and the client's log (samples/zookeeper.messages.json)
/// what was asked, in order, and what came back.
final class ZooKeeperSampleTests: XCTestCase {
    func testEveryMessageIsCutTypedAndDecodedAsTheClientSawIt() throws {
        let (flows, events) = try TestSupport.messagesByFlow("zookeeper.pcap")
        XCTAssertEqual(events.filter { ($0["type"] as? String) == "malformed" }.count, 0)
        // Each client's flows, by the session id the server gave it (the log names it).
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("zookeeper.messages.json")))) as! [[String: Any]]
        var clientOf: [String: String] = [:]  // client port → "a" / "b"
        for (flow, ms) in flows where flow.hasPrefix("2181>") {
            let session = try XCTUnwrap((ms.first?["fields"] as? [String: Any])?["sessionId"] as? String)
            let entry = try XCTUnwrap(log.first { ($0["op"] as? String) == "connect" && ($0["result"] as! String).contains(String(session.dropFirst(2).drop { $0 == "0" })) })
            clientOf[String(flow.dropFirst(5))] = entry["client"] as? String
        }
        XCTAssertEqual(Set(clientOf.values), ["a", "b"])
        var total = 0
        for (port, client) in clientOf {
            let requests = flows["\(port)>2181"] ?? [], replies = flows["2181>\(port)"] ?? []
            for ms in [requests, replies] {
                var offset = 0
                for m in ms {
                    XCTAssertEqual(m["offset"] as? Int, offset, "frames tile the stream")
                    offset += m["length"] as! Int
                    XCTAssertNotNil(m["message"] as? String, "\(m)")
                    XCTAssertNil(m["warnings"], "\(m)")
                }
                total += ms.count
            }
            XCTAssertEqual(requests.first?["message"] as? String, "ConnectRequest")
            XCTAssertEqual(replies.first?["message"] as? String, "ConnectResponse")
            // What the client asked, in order (pings are kazoo's own, not in its log).
            let asked = requests.dropFirst().filter { ($0["message"] as? String) != "Ping" }
            let logged = log.filter { ($0["client"] as? String) == client && $0["opcode"] is Int }
            XCTAssertEqual(asked.map { $0["id"] as? Int }, logged.map { $0["opcode"] as? Int }, "client \(client)")
            for (m, l) in zip(asked, logged) {
                if let path = l["path"] as? String { XCTAssertEqual((m["fields"] as? [String: Any])?["path"] as? String, path) }
            }
            // Every request but a ping's has its reply, typed by it, in order; a ping's is -2.
            let answered = replies.dropFirst().filter { !["WatcherEvent"].contains($0["message"] as? String) }
            XCTAssertEqual(answered.map { $0["message"] as? String ?? "-" },
                           requests.dropFirst().map { m -> String in
                               let n = m["message"] as! String
                               return n == "Ping" ? "PingResponse" : n == "SetAuth" ? "AuthResponse" : n + "Response"
                           }, "client \(client)")
            XCTAssertEqual(answered.map { ($0["header"] as? [String: Any])?["xid"] as? Int ?? ($0["id"] as? Int) },
                           requests.dropFirst().map { ($0["header"] as? [String: Any])?["xid"] as? Int }, "each reply carries its request's xid")
            // A missing node is NoNode (-101) in the reply's err.
            for (q, r) in zip(requests.dropFirst(), answered) {
                let path = (q["fields"] as? [String: Any])?["path"] as? String ?? ""
                let err = (r["header"] as? [String: Any])?["err"] as? Int
                if ["/app/nothing", "/app/missing", "/app/never"].contains(path) { XCTAssertEqual(err, -101, path) }
            }
            // Watch events: the ones the log shows, with their path.
            let events = replies.filter { ($0["message"] as? String) == "WatcherEvent" }
            let notified = log.filter { ($0["client"] as? String) == client && ($0["op"] as? String) == "notification" }
            XCTAssertEqual(events.map { ($0["fields"] as? [String: Any])?["path"] as? String }, notified.map { $0["path"] as? String })
            XCTAssertTrue(events.allSatisfy { $0["id"] as? Int == -1 })
        }
        XCTAssertEqual(total, 68)
        XCTAssertTrue(log.contains { ($0["op"] as? String) == "notification" })
    }

    /// The frames cover each stream as tshark's TCP follow gives it, byte for byte.
    func testTheFramesCoverTsharksStreams() throws {
        let (flows, _) = try TestSupport.messagesByFlow("zookeeper.pcap")
        for stream in 0..<2 {
            let (port, bytes) = try TestSupport.tsharkFollow("zookeeper.pcap", stream: stream)
            let c2s = (flows["\(port)>2181"] ?? []).reduce(0) { $0 + ($1["length"] as! Int) }
            let s2c = (flows["2181>\(port)"] ?? []).reduce(0) { $0 + ($1["length"] as! Int) }
            XCTAssertEqual([c2s, s2c], bytes, "stream \(stream)")
            XCTAssertGreaterThan(bytes[0], 0)
        }
    }
}
