import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// samples/redis.pcap read with Dissectors/examples/redis-resp.dissector: a nested grammar whose
/// end is known only by reading it (`frame_length = message`, `Decimal(crlf)` counts and
/// lengths, values that are arrays of values), so each command and each reply is one message,
/// RESP2 and RESP3 alike. The frames tile the streams tshark's TCP follow gives; each command is
/// an array of bulk strings, answered by one reply.
final class RedisCommandSampleTests: XCTestCase {
    func messages() throws -> [[String: Any]] {
        let r = try TestSupport.framedump(["-r", TestSupport.sample("redis.pcap"), "-d", "Dissectors/examples/redis-resp.dissector", "-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        return try r.stdout.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    func testEachCommandAndReplyIsOneMessage() throws {
        let all = try messages()
        XCTAssertEqual(all.filter { ($0["type"] as? String) == "malformed" }.count, 0)
        let ms = all.filter { $0["type"] == nil && $0["dir"] != nil }
        let commands = ms.filter { ($0["dir"] as? String) == "c2s" }, replies = ms.filter { ($0["dir"] as? String) == "s2c" }
        XCTAssertEqual(commands.count, 47)
        XCTAssertEqual(replies.count, commands.count, "one reply per command")
        var names: [String] = []
        for c in commands {
            XCTAssertEqual(c["message"] as? String, "Array")
            let elements = try XCTUnwrap((c["fields"] as? [String: Any])?["elements"] as? [[String: Any]])
            XCTAssertEqual(elements.count, (c["fields"] as? [String: Any])?["count"] as? Int)
            for e in elements { XCTAssertEqual(e["type"] as? String, "0x24", "a command is bulk strings") }
            names.append(try XCTUnwrap((elements.first?["bulk"] as? [String: Any])?["data"] as? String))
        }
        XCTAssertEqual(Array(names.prefix(4)), ["PING", "HELLO", "PING", "SET"])
        XCTAssertTrue(names.contains("PUBLISH") && names.contains("HGETALL") && names.contains("MGET"))
        // The 100,000-byte value, whole in one command.
        XCTAssertTrue(commands.contains { ($0["length"] as? Int ?? 0) > 100_000 })
        // RESP3 (HELLO 3): maps; RESP2: a null bulk string inside MGET's array reply.
        XCTAssertTrue(replies.contains { ($0["message"] as? String) == "Map" })
        let nullBulk = replies.contains { r in
            ((r["fields"] as? [String: Any])?["elements"] as? [[String: Any]])?.contains { (($0["bulk"] as? [String: Any])?["length"] as? Int) == -1 } ?? false
        }
        XCTAssertTrue(nullBulk, "a $-1 null among an array's elements")
        for m in ms where m["warnings"] != nil {
            XCTAssertEqual(m["warnings"] as? [String], ["field 'data' is not valid UTF-8"],
                           "only the value of all 256 bytes is no text")
        }
    }

    func testTheMessagesTileTsharksStreams() throws {
        let ms = try messages().filter { $0["type"] == nil && $0["dir"] != nil }
        for stream in 0..<2 {
            let (port, bytes) = try TestSupport.tsharkFollow("redis.pcap", stream: stream)
            let mine = ms.filter { ($0["conn"] as? String)?.contains(":\(port)-") == true }
            var got = [0, 0]
            for dir in 0..<2 {
                var offset = 0
                for m in mine where (m["dir"] as? String) == (dir == 0 ? "c2s" : "s2c") {
                    XCTAssertEqual(m["offset"] as? Int, offset)
                    offset += m["length"] as! Int
                }
                got[dir] = offset
            }
            XCTAssertEqual(got, bytes, "stream \(stream) (port \(port))")
        }
    }

    /// `Decimal(crlf)` and `String(crlf)`/`String("...")` on bytes written by hand.
    func testDecimalsAndDelimitedStrings() throws {
        let text = """
        protocol t { port 7800; header { uint8 kind; } frame_length = message; message_id = kind; }
        Message A = 1 { Decimal(crlf) n; String("||") s; Decimal(lf) m; Uint8[n] xs; }
        """
        let schemas = try DissectorLoader.parse(text: text, file: "t.dissector")
        let good: [UInt8] = [1] + Array("-2\r\nab||3\n".utf8) + [1] + Array("2\r\n||0\n".utf8) + [9, 9]
        let bad: [UInt8] = [1] + Array("1x\r\n".utf8)
        for piece in [1, 2, 1000] {
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            FuzzStreams.feed(sessions, runs: [(true, good + bad)], piece: piece, port: 7800)
            let lines = out.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let ms = lines.filter { $0["dir"] != nil && $0["type"] == nil }
            XCTAssertEqual(ms.count, 2, "piece \(piece): \(lines)")
            let f = ms.map { $0["fields"] as? [String: Any] ?? [:] }
            XCTAssertEqual(f[0]["n"] as? Int, -2)
            XCTAssertEqual(f[0]["s"] as? String, "ab")
            XCTAssertEqual(f[0]["m"] as? Int, 3)
            XCTAssertEqual((f[0]["xs"] as? [Any])?.count, 0, "a negative count is no elements")
            XCTAssertEqual(f[1]["xs"] as? [Int], [9, 9])
            // "1x" is no number: the frame's end is unknown, which is said at once.
            XCTAssertTrue(lines.contains { ($0["type"] as? String) == "malformed" && ($0["reason"] as? String) == "bad-value" }, "piece \(piece): \(lines)")
            XCTAssertFalse(lines.contains { ($0["type"] as? String) == "cut" }, "piece \(piece)")
        }
        // Both ends of Int64, and one past (a fuzz finding: it trapped; now it is no number).
        let ends: [UInt8] = [2] + Array("9223372036854775807\r\n".utf8) + [2] + Array("-9223372036854775808\r\n".utf8)
            + [2] + Array("9999999999999999999\r\n".utf8)
        let e = try DissectorLoader.parse(text: "protocol e { port 7801; header { uint8 kind; } frame_length = message; message_id = kind; }\nMessage N = 2 { Decimal(crlf) n; }", file: "e.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: e, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, ends)], piece: 1000, port: 7801)
        let lines = out.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(lines.filter { $0["dir"] != nil && $0["type"] == nil }.compactMap { ($0["fields"] as? [String: Any])?["n"] as? Int },
                       [Int.max, Int.min])
        XCTAssertTrue(lines.contains { ($0["reason"] as? String) == "bad-value" && ($0["detail"] as? String ?? "").hasPrefix("field 'n' at byte 1 is no decimal number") },
                      "the number past Int64 is no number: \(lines)")
        for (t, want) in [
            ("Message A = 1 { Decimal n; }", "Decimal needs the bytes that end it"),
            ("Message A = 1 { Decimal(u8) n; }", "Decimal needs the bytes that end it"),
            ("Message A = 1 { String(\"\") s; }", "a delimiter is 1 to 16 bytes"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol t { port 7800; header { uint8 kind; } frame_length = message; message_id = kind; }\n" + t, file: "t.dissector")) { e in
                XCTAssertTrue((e as! DissectorError).description.contains(want), "\(t): \(e)")
            }
        }
    }
}
