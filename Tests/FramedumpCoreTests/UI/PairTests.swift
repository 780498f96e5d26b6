import Foundation
import XCTest
@testable import FramedumpCore
@testable import FramedumpUI

/// `pair A -> B`: responses of another message type than their requests (issue #40), paired
/// in order or by a field, on samples/pairs.pcap (real asyncio peers; the server waits a known
/// time per request and answers two back-to-back requests out of order). Checked against the
/// pairs and latencies the client itself logged (samples/pairs.messages.json).
final class PairTests: XCTestCase {
    func load(_ text: String) throws -> ProtocolSchema {
        try DissectorLoader.parse(text: text, file: "p.dissector")[0]
    }

    let head = "protocol p { port 8401; header { uint32 length; uint16 cmd; uint32 seq; } frame_length = length; message_id = cmd;\n"
    let messages = "}\nMessage Req = 1 c2s { Uint32 x; }\nMessage Resp = 2 s2c { Uint32 ack; }\nMessage Other = 3 { }\n"

    func testPairsAreCheckedWhereTheyAreWritten() throws {
        let s = try load(head + "pair Req -> Resp by seq = ack;" + messages)
        XCTAssertEqual(s.pairs, [PairSpec(request: 0, response: 1, requestField: "seq", responseField: "ack")])
        XCTAssertEqual(try load(head + "pair req -> RESP;" + messages).pairs, [PairSpec(request: 0, response: 1)])
        XCTAssertEqual(try load(head + "pair_by seq = ack;" + messages).pairBy, .field(request: "seq", response: "ack"))
        TestSupport.assertRefused([
            ("pair Req -> Respo;", "p.dissector:2:13: error: unknown message 'Respo' in pair (did you mean 'Resp'?)"),
            ("pair Req Resp;", "p.dissector:2:10: error: expected '->' between the request and the response, found 'Resp'"),
            ("pair Req -> Resp by sequ = ack;", "p.dissector:2:21: error: 'sequ' is neither a header field nor a field of 'Req'"),
            ("pair Req -> Resp by x;", "p.dissector:2:21: error: 'x' is neither a header field nor a field of 'Resp'"),
            ("pair Req -> Req;", "p.dissector:2:13: error: 'Req' cannot answer itself in order (pair it by a field: 'by seq = ackSeq')"),
            ("pair Req -> Resp; pair Other -> Resp;", "p.dissector:2:33: error: message 'Resp' is already in a pair"),
            ("pair_by sequ;", "p.dissector:2:9: error: pair_by 'sequ': no header field and no message's field has that name"),
            ("pair_by seq = acks;", "p.dissector:2:15: error: pair_by 'acks': no header field and no message's field has that name"),
        ].map { (head + $0.0 + messages, $0.1) }, file: "p.dissector")
    }

    struct Logged { let request: (cmd: Int, seq: Int); let response: (cmd: Int, seq: Int); let ms: Double; let port: Int }

    func logged() throws -> [Logged] {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("pairs.messages.json")))) as! [String: Any]
        return (log["connections"] as! [[String: Any]]).flatMap { c in
            (c["pairs"] as! [[String: Any]]).map { p in
                let q = p["request"] as! [String: Int], r = p["response"] as! [String: Int]
                return Logged(request: (q["cmd"]!, q["seq"]!), response: (r["cmd"]!, r["seq"]!),
                              ms: p["client_latency_ms"] as! Double, port: c["client_port"] as! Int)
            }
        }
    }

    /// Every response the page pairs is the one the client logged for that request, and its
    /// latency is the client's own within a millisecond and a half (the client reads its clock
    /// after the kernel handed it the bytes the capture saw a little earlier).
    func testThePagePairsWhatTheClientPaired() throws {
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        let i = try CaptureIndexer(UIConfiguration(input: .file(TestSupport.sample("pairs.pcap")), options: o))
        i.start()
        _ = i.waitForIndex()
        let views = Views(indexer: i)
        // (client port, cmd, seq) of every message, by its number in the index.
        var key: [Int: (port: Int, cmd: Int, seq: Int)] = [:]
        var pairs: [(response: Int, request: Int, ms: Double)] = []
        var n = 0
        while let text = views.message(n) {
            let m = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let hex = Array((m["bytes"] as! String).utf8)
            func byte(_ k: Int) -> Int { Int(String(decoding: hex[(2 * k)..<(2 * k + 2)], as: UTF8.self), radix: 16)! }
            let conn = m["conn"] as! String
            let port = Int(conn.split(separator: "-")[0].split(separator: ":")[1])!
            key[n] = (port, byte(4) << 8 | byte(5), byte(6) << 24 | byte(7) << 16 | byte(8) << 8 | byte(9))
            if let p = m["pair"] as? [String: Any], m["dir"] as? String == "s2c" {
                pairs.append((n, p["n"] as! Int, p["ms"] as! Double))
            }
            n += 1
        }
        XCTAssertEqual(n, 48)
        // The sample's point: an answer overtook the request before it (room 2's before room 1's),
        // so pairing in order would have been wrong; only `by seq = ackSeq` gets these right.
        let overtaken = try logged().filter { $0.request.cmd == 32 }
        XCTAssertTrue(zip(overtaken, overtaken.dropFirst()).contains { $0.port == $1.port && $0.response.seq > $1.response.seq })
        let want = try logged()
        XCTAssertEqual(pairs.count, want.count, "every request answered, and nothing else paired (the Notices)")
        for w in want {
            let got = pairs.first { p in
                let r = key[p.response]!
                return r.port == w.port && r.cmd == w.response.cmd && r.seq == w.response.seq
            }
            let p = try XCTUnwrap(got, "response \(w.response) on \(w.port) not paired")
            let q = key[p.request]!
            XCTAssertEqual([q.cmd, q.seq], [w.request.cmd, w.request.seq], "response \(w.response) on \(w.port)")
            XCTAssertEqual(p.ms, w.ms, accuracy: 1.5, "request \(w.request) on \(w.port)")
            XCTAssertLessThanOrEqual(p.ms, w.ms + 0.05, "the capture sees the answer before the client reads it")
        }
    }

    /// NDJSON: every response says the request it answers (its message, its number in the
    /// connection, its packets) and the latency; each is the client's own pair, within the
    /// capture's distance from the client's clock. The same with `-j 2`.
    func testNDJSONSaysWhatEachResponseAnswersAsTheClientPairedIt() throws {
        let want = try logged()
        for jobs in ["1", "2"] {
            let r = try TestSupport.framedump(["-r", TestSupport.sample("pairs.pcap"), "-T", "json", "-j", jobs])
            XCTAssertEqual(r.status, 0, r.stderr)
            var byNumber: [String: [[String: Any]]] = [:]   // per connection, its messages in order
            for line in r.stdout.split(separator: "\n") {
                let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                guard o["dir"] != nil, o["type"] == nil else { continue }
                byNumber[o["conn"] as! String, default: []].append(o)
            }
            var answered = 0
            for (conn, ms) in byNumber {
                let port = Int(conn.split(separator: "-")[0].split(separator: ":")[1])!
                for m in ms {
                    guard let a = m["answers"] as? [String: Any] else {
                        XCTAssertNil(m["latency"])
                        continue
                    }
                    answered += 1
                    let seq = (m["header"] as! [String: Any])["seq"] as! Int
                    let w = try XCTUnwrap(want.first { $0.port == port && $0.response.cmd == m["id"] as! Int && $0.response.seq == seq }, "\(m)")
                    let q = ms[(a["n"] as! Int) - 1]   // (n: the request's number in its connection, from 1)
                    XCTAssertEqual([q["id"] as! Int, (q["header"] as! [String: Any])["seq"] as! Int], [w.request.cmd, w.request.seq], "\(m)")
                    XCTAssertEqual(a["message"] as? String, q["message"] as? String)
                    XCTAssertEqual(a["pkts"] as? [Int], q["pkts"] as? [Int])
                    XCTAssertEqual(a["offset"] as? Int, q["offset"] as? Int)
                    let ms = try XCTUnwrap(m["latency"] as? Double) * 1000
                    XCTAssertEqual(ms, w.ms, accuracy: 1.5, "\(m)")
                    XCTAssertLessThanOrEqual(ms, w.ms + 0.05)
                }
            }
            XCTAssertEqual(answered, want.count, "every response answered, and nothing else (the Notices)")
        }
    }

    /// `-z rtt`: each request type's count and spread are the client's.
    func testRTTTableIsTheClients() throws {
        func rows(_ dissectors: String) throws -> [String: [String: Any]] {
            let r = try TestSupport.framedump(["-r", TestSupport.sample("pairs.pcap"), "-d", dissectors, "-q", "-T", "json", "-z", "rtt"])
            XCTAssertEqual(r.status, 0, r.stderr)
            for line in r.stdout.split(separator: "\n") {
                let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                guard o["stat"] as? String == "rtt", let rows = o["rows"] as? [[String: Any]] else { continue }
                return Dictionary(uniqueKeysWithValues: rows.map { ($0["request"] as! String, $0) })
            }
            XCTFail("no rtt table")
            return [:]
        }
        let want = try logged()
        let names = [1: "LoginReq", 32: "EnterRoomReq", 100: "Ping"]
        let table = try rows(TestSupport.dissectors + "/pgame.dissector")
        XCTAssertEqual(Set(table.keys), Set(names.values))
        for (cmd, name) in names {
            let ms = want.filter { $0.request.cmd == cmd }.map(\.ms)
            let row = try XCTUnwrap(table[name])
            XCTAssertEqual(row["answered"] as? Int, ms.count, name)
            XCTAssertEqual(row["unanswered"] as? Int, 0, name)
            XCTAssertEqual(try XCTUnwrap(row["min_ms"] as? Double), ms.min()!, accuracy: 1.5, name)
            XCTAssertEqual(try XCTUnwrap(row["max_ms"] as? Double), ms.max()!, accuracy: 1.5, name)
        }
    }
}
