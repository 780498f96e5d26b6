import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// `header text { decimal("|") cmd; ... }`: a header for WebSocket text messages. The sample,
/// samples/wsgame.pcap, is a `websockets` server and clients speaking `CMD|SEQ|JSON`;
/// samples/wsgame.messages.json is every message each peer sent, and what each must decode to
/// is read from that text here.
final class TextHeaderTests: XCTestCase {
    /// Dissectors/wsgame.dissector's messages, by id.
    static let names: [Int: String] = [0: "Heartbeat", 1: "HeartbeatAck", 1001: "Login", 1002: "LoginOk", 2001: "JoinRoom",
                                       2002: "RoomState", 3001: "Chat", 3002: "ChatOk", 5002: "BinaryAck", 9001: "ChatPush", 9999: "Error"]

    func testEveryMessageThePeersSentDecodesAsTheirText() throws {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("wsgame.messages.json")))) as! [String: Any]
        let flows = try TestSupport.messagesByFlow("wsgame.pcap").flows
        let server = log["server_port"] as! Int
        // Each connection's client by its login ("user") in its first message.
        let connections = log["connections"] as! [[String: Any]]
        var checked = 0, answered = 0, headerless = 0, unknown = 0
        for c in connections {
            let first = c["c2s"] as! [[String: String]]
            let login = String(decoding: Data(hex: first[0]["payload"]!), as: UTF8.self)
            let key = try XCTUnwrap(flows.keys.first { k in
                k.hasSuffix(">\(server)") && (flows[k]!.first!["fields"] as? [String: Any])?["user"] as? String == Self.user(login)
            }, "the connection of \(login)")
            let client = key.split(separator: ">")[0]
            for dir in ["c2s", "s2c"] {
                let sent = c[dir] as! [[String: String]]
                let got = (flows[dir == "c2s" ? "\(client)>\(server)" : "\(server)>\(client)"] ?? [])
                    .filter { ($0["ws"] as? [String: Any])?["opcode"] as? String != "close" }
                XCTAssertEqual(got.count, sent.count, "\(key) \(dir)")
                for (want, m) in zip(sent, got) {
                    let payload = Data(hex: want["payload"]!)
                    checked += 1
                    if want["opcode"] == "binary" {
                        XCTAssertEqual((m["fields"] as? [String: Any])?["body"] as? String, want["payload"])
                        continue
                    }
                    let text = String(decoding: payload, as: UTF8.self)
                    let parts = text.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
                    guard parts.count == 3, let cmd = Int(parts[0]), let seq = Int(parts[1]) else {
                        // No header: said, and the text shown as it came.
                        XCTAssertEqual(m["warnings"] as? [String], ["field 'cmd' at byte 0 is no decimal number"], text)
                        XCTAssertEqual(m["fields"] as? [String: String], ["text": text])
                        headerless += 1
                        continue
                    }
                    XCTAssertEqual(m["id"] as? Int, cmd, text)
                    XCTAssertEqual(m["message"] as? String, Self.names[cmd], text)
                    if Self.names[cmd] == nil { unknown += 1 }
                    XCTAssertEqual(m["header"] as? [String: Int], ["seq": seq], text)
                    let json = try JSONSerialization.jsonObject(with: Data(parts[2].utf8)) as! [String: Any]
                    XCTAssertEqual((m["fields"] ?? [:]) as? NSDictionary, json as NSDictionary, text)
                    XCTAssertNil(m["warnings"], text)
                    // A reply repeats its request's seq (a push has seq 0, answering nothing).
                    if dir == "s2c" && seq != 0 {
                        XCTAssertNotNil(m["answers"], text)
                        answered += 1
                    }
                }
            }
        }
        XCTAssertEqual(checked, connections.reduce(0) { $0 + ($1["c2s"] as! [Any]).count + ($1["s2c"] as! [Any]).count })
        XCTAssertEqual(headerless, 2)
        XCTAssertEqual(unknown, 4, "4242 and its reply 4243, on each connection")
        XCTAssertEqual(answered, 14)
    }

    static func user(_ login: String) -> String? {
        let json = login.split(separator: "|", maxSplits: 2)[2]
        return (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])?["user"] as? String
    }

    func testFiltersAndStatisticsSeeTheTextHeader() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.sample("wsgame.pcap"), "-Y", "wsgame.seq == -1 && msg.name == \"ChatOk\"", "-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").filter { $0.contains("\"ChatOk\"") }.count, 2)
        let s = try TestSupport.framedump(["-r", TestSupport.sample("wsgame.pcap"), "-q", "-z", "rtt"])
        XCTAssertEqual(s.status, 0, s.stderr)
        XCTAssertTrue(s.stdout.contains("Login "), s.stdout)
        let d = try TestSupport.framedump(["dissectors"])
        XCTAssertTrue(d.stdout.contains("header text (4-42 bytes): decimal(\"|\") cmd; decimal(\"|\") seq"), d.stdout)
    }

    /// Every way a decimal header field can be read, and fail, on crafted messages.
    func testDecimalFieldsReadDigitsAndSayWhenThereAreNone() throws {
        let text = """
            protocol t {
                websocket;
                port 7710;
                header { uint8 kind; }
                header text { decimal(1) eio == 4; decimal(2) sub; decimal(crlf) n; }
                message_id = sub;
                text text;
                body raw;
            }
            Message A = 12 { }
            Message B = 1 { }
            """
        let schemas = try DissectorLoader.parse(text: text, file: "t.dissector")
        func decode(_ payloads: [String], binary: Bool = false) -> [[String: Any]] {
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            let runs = payloads.map { (client: true, bytes: FuzzSocketIO.frame(ArraySlice(Array($0.utf8)), client: true, binary: binary)) }
            FuzzStreams.feed(sessions, runs: runs, piece: 1 << 20, port: 7710)
            return String(decoding: out.bytes, as: UTF8.self).split(separator: "\n")
                .map { try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }.filter { $0["type"] == nil }
        }
        let m = decode(["412-7\r\nrest", "4015\r\n", "4x1\r\n", "5127\r\n", "412", "41299999999999999999999\r\n", "412-\r\n", "412\n"])
        XCTAssertEqual(m.count, 8)
        XCTAssertEqual(m[0]["message"] as? String, "A")
        XCTAssertEqual(m[0]["header"] as? [String: Int], ["eio": 4, "n": -7])
        XCTAssertEqual(m[0]["fields"] as? [String: String], ["text": "rest"])
        XCTAssertEqual(m[1]["message"] as? String, "B", "01 is 1")
        XCTAssertEqual(m[1]["fields"] as? [String: String], ["text": ""])
        XCTAssertEqual(m[2]["warnings"] as? [String], ["field 'sub' at byte 1 is no decimal number"])
        XCTAssertEqual(m[2]["fields"] as? [String: String], ["text": "x1\r\n"])
        XCTAssertEqual(m[3]["message"] as? String, "A", "a constant that differs is said, and the message read")
        XCTAssertEqual(m[3]["warnings"] as? [String], ["field 'eio' at byte 0 is 5, not 4"])
        XCTAssertEqual(m[4]["warnings"] as? [String], ["body ends inside field 'n' at byte 3"])
        XCTAssertEqual(m[5]["warnings"] as? [String], ["field 'n' at byte 3 is no decimal number"], "more than 19 digits")
        XCTAssertEqual(m[6]["warnings"] as? [String], ["field 'n' at byte 3 is no decimal number"], "a sign alone")
        XCTAssertEqual(m[7]["warnings"] as? [String], ["field 'n' at byte 3 is no decimal number"], "LF where CR LF ends it")
        // Binary messages keep the binary header.
        let b = decode(["\u{1}abc"], binary: true)
        XCTAssertEqual(b[0]["header"] as? [String: Int], ["kind": 1])
        XCTAssertEqual((b[0]["fields"] as? [String: String])?["body"], "616263")
    }

    func testCheckRefusesTextHeadersWhereTheyCannotBeRead() {
        func expectError(_ text: String, _ location: String, _ message: String, line: UInt = #line) {
            do {
                _ = try DissectorLoader.parse(text: text, file: "t.dissector")
                XCTFail("no error for:\n\(text)", line: line)
            } catch {
                XCTAssertTrue(error.description.contains("t.dissector:\(location): error: \(message)"), error.description, line: line)
            }
        }
        expectError("protocol a {\n  port 1;\n  frame_end \"\\n\";\n  header text { decimal(\"|\") c; }\n}\n", "4:3",
                    "a text header is read in WebSocket text messages: the protocol needs 'websocket;'")
        expectError("protocol a {\n  port 1;\n  header { decimal(\"|\") c; uint8 len; }\n  frame_length = len;\n}\n", "3:12",
                    "decimal header fields are read in text messages' header")
        expectError("protocol a {\n  websocket;\n  header text { uint8 c; }\n}\n", "3:17", "a text header's fields are numbers in ASCII digits")
        expectError("protocol a {\n  websocket;\n  header text { decimal(20) c; }\n}\n", "3:25", "a decimal field has 1 to 19 digits, not 20")
        expectError("protocol a {\n  websocket;\n  header text { decimal(\"-\") c; }\n}\n", "3:25", "a decimal's delimiter cannot hold '-'")
        expectError("protocol a {\n  websocket;\n  header text { decimal(x) c; }\n}\n", "3:25", "expected the number of digits or the bytes that end the number")
        expectError("protocol a {\n  websocket;\n  text socketio;\n  header text { decimal(1) c; }\n}\n", "4:3",
                    "'text socketio' reads Engine.IO and Socket.IO packets itself")
        expectError("protocol a {\n  websocket;\n  header text { decimal(1) c; }\n  header text { decimal(1) d; }\n}\n", "4:3",
                    "the text header is already declared at line 3")
        expectError("protocol a {\n  websocket;\n  header text { decimal(1) c == 9223372036854775808; }\n}\n", "3:33", "9223372036854775808 does not fit in decimal 'c'")
    }
}

extension Data {
    init(hex: String) {
        var d = Data()
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            d.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        self = d
    }
}
