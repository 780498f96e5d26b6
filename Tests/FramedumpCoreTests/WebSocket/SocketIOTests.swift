import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// `text socketio` (Dissectors/socketio.dissector): Engine.IO v4 and Socket.IO v5 packets as
/// the protocol's messages. The sample, samples/socketio.pcap, is python-socketio's server and
/// client; samples/socketio.messages.json is every WebSocket message each peer wrote, and the
/// expected decoding of each is read from that text here, by a parser of the test's own.
final class SocketIOTests: XCTestCase {
    /// What a logged text message must decode to: the message, and its fields as NDJSON writes them.
    static func expected(_ text: String) throws -> (message: String, fields: [String: Any]) {
        var t = Substring(text)
        let engine = ["open", "close", "ping", "pong", "message", "upgrade", "noop"]
        let type = Int(String(t.removeFirst()))!
        if type != 4 {
            if type == 0 { return ("open", try JSONSerialization.jsonObject(with: Data(t.utf8)) as! [String: Any]) }
            return (engine[type], t.isEmpty ? [:] : ["data": String(t)])
        }
        let kinds = ["connect", "disconnect", "event", "ack", "connect_error", "binary_event", "binary_ack"]
        let kind = Int(String(t.removeFirst()))!
        var fields: [String: Any] = [:]
        if kind >= 5 {
            let dash = t.firstIndex(of: "-")!
            fields["attachments"] = Int(t[..<dash])!
            t = t[t.index(after: dash)...]
        }
        if t.first == "/" {
            let comma = t.firstIndex(of: ",") ?? t.endIndex
            fields["namespace"] = String(t[..<comma])
            t = comma == t.endIndex ? "" : t[t.index(after: comma)...]
        }
        let digits = t.prefix { $0.isASCII && $0.isNumber }
        if !digits.isEmpty { fields["ack"] = Int(digits)! }
        t = t.dropFirst(digits.count)
        if !t.isEmpty {
            let json = try JSONSerialization.jsonObject(with: Data(t.utf8), options: .fragmentsAllowed)
            if var a = json as? [Any] {
                if kind == 2 || kind == 5 { fields["event"] = a.removeFirst() }
                fields["args"] = a
            } else if let o = json as? [String: Any] {
                for (k, v) in o { fields[k] = v }
            } else {
                fields["data"] = json
            }
        }
        return (kinds[kind], fields)
    }

    /// python-socketio 5 (Socket.IO v5 on Engine.IO v4).
    func testEveryMessageThePeersWroteDecodesAsTheirText() throws {
        try checkSample("socketio", engineIO3: false)
    }

    /// python-socketio 4 (Socket.IO v4 on Engine.IO v3, as Socket.IO 2.x clients speak it): the
    /// client pings, a connect_error carries a string, an attachment starts with its packet type.
    func testEngineIOv3PeersDecodeAsTheirText() throws {
        try checkSample("socketio-eio3", engineIO3: true)
    }

    func checkSample(_ sample: String, engineIO3: Bool) throws {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample(sample + ".messages.json")))) as! [String: Any]
        let flows = try TestSupport.messagesByFlow(sample + ".pcap").flows
        let server = log["server_port"] as! Int
        // The connections in the order the capture has them (by client port, first message first).
        let clients = flows.keys.filter { $0.hasSuffix(">\(server)") }
            .sorted { (flows[$0]!.first!["ts"] as! String) < (flows[$1]!.first!["ts"] as! String) }
        let connections = log["connections"] as! [[String: Any]]
        XCTAssertEqual(clients.count, connections.count)
        var names = Set<String>(), paired = 0, checked = 0
        for (key, c) in zip(clients, connections) {
            let client = key.split(separator: ">")[0]
            for dir in ["c2s", "s2c"] {
                let sent = c[dir] as! [[String: String]]
                // The WebSocket layer's own frames (close) are no Socket.IO message.
                let got = (flows[dir == "c2s" ? "\(client)>\(server)" : "\(server)>\(client)"] ?? [])
                    .filter { ($0["ws"] as? [String: Any])?["opcode"] as? String != "close" }
                XCTAssertEqual(got.count, sent.count, "\(key) \(dir)")
                var attachment = 0
                for (want, m) in zip(sent, got) {
                    XCTAssertNil(m["warnings"], "\(want)")
                    if let hex = want["binary"] {
                        XCTAssertEqual(m["message"] as? String, "attachment")
                        let f = m["fields"] as! [String: Any]
                        XCTAssertEqual(f["payload"] as? String, engineIO3 ? String(hex.dropFirst(2)) : hex)
                        if engineIO3 { XCTAssertTrue(hex.hasPrefix("04"), "Engine.IO v3's binary message type") }
                        XCTAssertEqual(f["num"] as? Int, attachment)
                        attachment += 1
                        names.insert("attachment")
                        checked += 1
                        continue
                    }
                    attachment = 0
                    let (name, fields) = try Self.expected(want["text"]!)
                    XCTAssertEqual(m["message"] as? String, name, want["text"]!)
                    XCTAssertEqual((m["fields"] ?? [:]) as? NSDictionary, fields as NSDictionary, want["text"]!)
                    if ["ack", "pong"].contains(name) {
                        XCTAssertNotNil(m["answers"], "\(want["text"]!) answers its request")
                        paired += 1
                    }
                    names.insert(name)
                    checked += 1
                }
            }
        }
        XCTAssertEqual(checked, connections.reduce(0) { $0 + ($1["c2s"] as! [Any]).count + ($1["s2c"] as! [Any]).count })
        for n in ["open", "ping", "pong", "connect", "disconnect", "event", "ack", "connect_error", "binary_event", "attachment"] {
            XCTAssertTrue(names.contains(n), "the sample has a \(n)")
        }
        XCTAssertGreaterThanOrEqual(paired, 7)
    }

    func testFiltersSelectByEventNameArgumentsAndAck() throws {
        func ndjson(_ args: [String]) throws -> [[String: Any]] {
            let r = try TestSupport.framedump(["-r", TestSupport.sample("socketio.pcap"), "-T", "json"] + args)
            XCTAssertEqual(r.status, 0, r.stderr)
            return try r.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
                .filter { $0["type"] == nil }
        }
        let all = try ndjson([])
        func fields(_ o: [String: Any]) -> [String: Any] { o["fields"] as? [String: Any] ?? [:] }
        for (filter, want) in [
            ("socketio.event == \"chat\"", { (o: [String: Any]) in fields(o)["event"] as? String == "chat" }),
            ("socketio.args.name == \"avatar.png\"", { (o: [String: Any]) in
                (fields(o)["args"] as? [Any])?.contains { ($0 as? [String: Any])?["name"] as? String == "avatar.png" } ?? false }),
            ("msg.name == \"ack\" and socketio.namespace == \"/admin\"", { (o: [String: Any]) in
                o["message"] as? String == "ack" && fields(o)["namespace"] as? String == "/admin" }),
        ] as [(String, ([String: Any]) -> Bool)] {
            let expected = all.filter(want).map { "\($0["pkts"]!)" }
            XCTAssertFalse(expected.isEmpty, filter)
            XCTAssertEqual(try ndjson(["-Y", filter]).map { "\($0["pkts"]!)" }, expected, filter)
        }
    }

    /// WebSocket frames of a `text socketio` protocol on port 7700 (no handshake: chosen by its
    /// port), fed as a connection's two sides, printed as NDJSON.
    func run(_ messages: [(client: Bool, text: String)]) throws -> [[String: Any]] {
        let schemas = try DissectorLoader.parse(text: "protocol socketio { websocket \"/socket.io/\"; port 7700; text socketio; }",
                                                file: "socketio.dissector")
        let out = OutputBuffer(fd: nil)
        let runs = messages.map { m in (m.client, FuzzSocketIO.frame(Array(m.text.utf8)[...], client: m.client, binary: false)) }
        FuzzStreams.feed(SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: false)), runs: runs, piece: 1000, port: 7700)
        return try out.text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
            .filter { $0["type"] == nil }
    }

    /// Both sides ask with ack id 1 at once (each side counts its own ids): each ack answers
    /// the other side's event, never the event its own side sent.
    func testAnAckAnswersTheOtherSidesEventWhenBothUseTheSameID() throws {
        let got = try run([(true, "421[\"fromClient\"]"), (false, "421[\"fromServer\"]"),
                           (true, "431[\"to the server's\"]"), (false, "431[\"to the client's\"]")])
        XCTAssertEqual(got.count, 4)
        XCTAssertEqual((got[2]["answers"] as? [String: Any])?["n"] as? Int, 2, "the client's ack answers the server's event (message 2)")
        XCTAssertEqual((got[3]["answers"] as? [String: Any])?["n"] as? Int, 1, "the server's ack answers the client's event (message 1)")
    }

    /// Texts that are no Socket.IO packet: each keeps its text with a warning saying why, and
    /// the next message decodes.
    func testTextsThatAreNoPacketAreReportedAndDecodingGoesOn() throws {
        let deep = "42[\"a\"," + String(repeating: "[", count: 200) + String(repeating: "]", count: 200) + "]"
        let bad: [(String, String)] = [
            ("", "empty"), ("9", "no Engine.IO packet"), ("42", "no JSON array"), ("42[1]", "its name: a JSON string"),
            ("42[\"a\"", "not closed"), ("45[\"a\"]", "number of attachments"), ("42[\"a\"] x", "bytes after the arguments"),
            ("0", "missing"), ("0[]", "no JSON object"), ("42" + String(repeating: "9", count: 30) + "[\"a\"]", "more than 18 digits"),
            (deep, "deeper than"), ("5x", "after an upgrade"), ("40{\"a\":}", "invalid JSON"),
        ]
        var messages: [(client: Bool, text: String)] = []
        for (text, _) in bad { messages += [(true, text), (true, "42[\"ok\"]")] }
        let got = try run(messages)
        XCTAssertEqual(got.count, 2 * bad.count)
        for (i, (text, why)) in bad.enumerated() {
            let m = got[2 * i], next = got[2 * i + 1]
            let warnings = (m["warnings"] as? [Any])?.map { "\($0)" }.joined() ?? ""
            XCTAssertTrue(warnings.contains(why), "\(text.prefix(40)): \(warnings)")
            XCTAssertTrue(m["message"] is NSNull, "\(text.prefix(40)) is no message")
            XCTAssertEqual((m["fields"] as? [String: Any])?["text"] as? String ?? "", text, "its text is kept")
            XCTAssertEqual((next["fields"] as? [String: Any])?["event"] as? String, "ok", "the next message decodes")
        }
    }

    func testPlainEngineIOMessagesAndProbes() throws {
        let got = try run([(false, "2probe"), (true, "3probe"), (true, "4hello engine"), (false, "6"), (true, "5")])
        XCTAssertEqual(got.map { $0["message"] as? String }, ["ping", "pong", "message", "noop", "upgrade"])
        XCTAssertEqual((got[0]["fields"] as? [String: Any])?["data"] as? String, "probe")
        XCTAssertEqual((got[2]["fields"] as? [String: Any])?["data"] as? String, "hello engine")
        XCTAssertNotNil(got[1]["answers"], "the probe's pong answers its ping")
    }

    /// The decoder names a field by arithmetic: the same index as the kind's list of fields.
    func testFieldSlotsAreTheKindsLists() {
        for k in SocketIOPackets.Kind.allCases {
            for (i, f) in k.fields.enumerated() { XCTAssertEqual(SocketIOPackets.slot(k, f), Int32(i), "\(k.name).\(f)") }
        }
    }

    func testCheckRefusesWhatTextSocketIOCannotHave() throws {
        for (text, says) in [
            ("protocol s { websocket \"/x\"; text socketio; header { uint8 a; } }", "declare no header and no messages"),
            ("protocol s { websocket \"/x\"; text socketio; }\nMessage A { Int32 a; }", "declare no header and no messages"),
            ("protocol s { port 1; frame_length = message; text socketio; }", "reads the text messages of a WebSocket"),
            ("protocol s { websocket \"/x\"; body socketio; }", "s.dissector:1:35: error: 'socketio' reads a WebSocket's text messages, not frames: write 'text socketio;'"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: "s.dissector"), text) { e in
                XCTAssertTrue("\(e)".contains(says), "\(text): \(e)")
            }
        }
    }
}
