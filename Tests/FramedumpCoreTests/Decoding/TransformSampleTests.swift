import Foundation
import XCTest
@testable import FramedumpCore

/// `samples/zgame.pcap`: real peers whose bodies are zlib- or LZ4-compressed and XORed under
/// header flags. Every message must decode to exactly what the peers logged having sent
/// (`samples/zgame.messages.json`), with the steps that ran shown, on one thread and two.
final class TransformSampleTests: XCTestCase {
    struct Sent {
        let id: Int
        let flags: Int
        let transforms: [String]
        let bodyLength: Int
        let body: String
        let fields: NSDictionary?
    }

    /// The log, by client port and direction.
    func sent() throws -> [String: [Sent]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("zgame.messages.json")))
        let log = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var out: [String: [Sent]] = [:]
        for c in try XCTUnwrap(log["connections"] as? [[String: Any]]) {
            let port = try XCTUnwrap(c["client_port"] as? Int)
            for dir in ["c2s", "s2c"] {
                out["\(port) \(dir)"] = try XCTUnwrap(c[dir] as? [[String: Any]]).map {
                    Sent(id: $0["msgId"] as! Int, flags: $0["flags"] as! Int, transforms: $0["transforms"] as! [String],
                         bodyLength: $0["bodyLength"] as! Int, body: $0["body"] as! String,
                         fields: $0["fields"] as? NSDictionary)
                }
            }
        }
        return out
    }

    func testEveryMessageDecodesAsSentOnOneThreadAndTwo() throws {
        let expected = try sent()
        XCTAssertEqual(expected.values.reduce(0) { $0 + $1.count }, 225)
        for threads in [["--one-thread"], []] {
            let r = try TestSupport.framedump(["-r", "samples/zgame.pcap", "-T", "json"] + threads)
            XCTAssertEqual(r.status, 0, r.stderr)
            var got: [String: [[String: Any]]] = [:]
            for line in r.stdout.split(separator: "\n") {
                let m = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                guard m["fields"] != nil, let conn = m["conn"] as? String, let dir = m["dir"] as? String else { continue }
                // "127.0.0.1:47036-127.0.0.1:7300": the client's port.
                let port = conn.split(separator: "-")[0].split(separator: ":")[1]
                got["\(port) \(dir)", default: []].append(m)
            }
            XCTAssertEqual(Set(got.keys), Set(expected.keys), "\(threads)")
            var transformed = 0
            for (key, sentList) in expected {
                let decoded = got[key] ?? []
                XCTAssertEqual(decoded.count, sentList.count, key)
                for (i, (s, m)) in zip(sentList, decoded).enumerated() {
                    let at = "\(key) #\(i) \(threads)"
                    XCTAssertEqual(m["id"] as? Int, s.id, at)
                    XCTAssertEqual(m["length"] as? Int, 8 + s.bodyLength, at)
                    let header = m["header"] as? [String: Any]
                    XCTAssertEqual(header?["flags"] as? String, String(format: "0x%02x", s.flags), at)
                    // The steps undone, in the reverse of the order the sender applied them.
                    let steps = (m["transforms"] as? [[String: Any]] ?? []).map { $0["name"] as! String }
                    XCTAssertEqual(steps, s.transforms.reversed(), at)
                    if let last = (m["transforms"] as? [[String: Any]])?.last {
                        XCTAssertEqual(last["out"] as? Int, s.body.count / 2, at)
                        transformed += 1
                    }
                    XCTAssertNil(m["warnings"].flatMap { s.fields == nil ? nil : $0 }, at)
                    if let f = s.fields {
                        XCTAssertEqual(NSDictionary(dictionary: m["fields"] as! [String: Any]), f, at)
                    } else {
                        // The unknown id: the body shown raw, as it was sent.
                        XCTAssertEqual((m["fields"] as? [String: Any])?["body"] as? String, s.body, at)
                    }
                }
            }
            XCTAssertEqual(transformed, 113, "\(threads)")
        }
    }

    /// `-Y` reads a header field's named bits; a misspelt bit is an error with a suggestion.
    func testFilterOnHeaderBits() throws {
        // The peers' log: 43 zlib bodies (12 of them XORed too), 12 LZ4, 112 plain.
        for (filter, count) in [("zgame.flags.compressed == 1", 43), ("zgame.flags.xored == 1 && zgame.flags.compressed == 1", 12),
                                ("zgame.flags.lz4 == 1", 12), ("zgame.flags == 0", 112), ("zgame.flags.xored == 0", 225 - 76)] {
            let r = try TestSupport.framedump(["-r", "samples/zgame.pcap", "-Y", filter, "-T", "json"])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.stdout.split(separator: "\n").filter { $0.contains("\"fields\"") }.count, count, filter)
        }
        let typo = try TestSupport.framedump(["-r", "samples/zgame.pcap", "-Y", "zgame.flags.compresed == 1"])
        XCTAssertEqual(typo.status, 2)
        XCTAssertTrue(typo.stderr.contains("(did you mean zgame.flags.compressed?)"), typo.stderr)
        let none = try TestSupport.framedump(["-r", "samples/zgame.pcap", "-Y", "zgame.msgId.x == 1"])
        XCTAssertEqual(none.status, 2)
        XCTAssertTrue(none.stderr.contains("'msgId' is a header field with no named bits"), none.stderr)
    }

    /// The tree names the steps with their sizes and the flags by their bits; `check` passes
    /// with only the unknown id to allow.
    func testTreeAndCheck() throws {
        var r = try TestSupport.framedump(["-r", "samples/zgame.pcap"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("    transforms: xor 938 → 938, zlib 938 → 1427 bytes (body offsets count the result)\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("    [1+1]     flags: 0x03 (compressed, xored)\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("    [1+1]     flags: 0x00 (none)\n"), r.stdout)
        r = try TestSupport.framedump(["check", "-r", "samples/zgame.pcap", "--allow", "unknown-message"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        // A wrong XOR key: the zlib step behind it fails, the body is shown as it came, and
        // decoding goes on with the next message.
        let dir = TestSupport.tempDir()
        let text = try String(contentsOfFile: TestSupport.dissectors + "/zgame.dissector", encoding: .utf8)
            .replacingOccurrences(of: "5a17c3e1", with: "5a17c3e2")
        try text.write(toFile: dir + "/zgame.dissector", atomically: true, encoding: .utf8)
        r = try TestSupport.framedump(["-d", dir, "-r", "samples/zgame.pcap", "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("225 messages"), r.stdout)
        r = try TestSupport.framedump(["check", "-d", dir, "-r", "samples/zgame.pcap", "--allow", "unknown-message"])
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stdout.contains("transform "), r.stdout)
        XCTAssertTrue(r.stdout.contains("(after xor): body shown as it came"), r.stdout)
    }
}
