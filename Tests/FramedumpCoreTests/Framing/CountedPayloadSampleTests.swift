import Foundation
import XCTest
@testable import FramedumpCore

/// The samples cut by `payload` against tshark's TCP follow: each direction's messages tile its
/// stream, at their offsets, each one exactly the stream's bytes there, and a line that
/// announces a data block is one message with that block (even when it holds CR LF, is empty
/// or spans segments), shown as the line's `text` and the block's `payload`.
/// - samples/memcached-text.pcap: the memcached server and pymemcache, memcached's text protocol
///   (Dissectors/memcached-text.dissector: `payload "set", ... word 5; payload "VALUE" word 4;`).
/// - samples/redis.pcap: redis-server and redis-py, RESP2 and RESP3
///   (Dissectors/redis.dissector: `payload prefix "$", "=", "!";`).
final class CountedPayloadSampleTests: XCTestCase {
    func testMemcachedTextMessagesTileTsharksStreams() throws {
        let counted = ["set": 4, "add": 4, "replace": 4, "append": 4, "prepend": 4, "cas": 4, "VALUE": 3]
        let (messages, blocks) = try tile("memcached-text.pcap", streams: 2) { line in
            let words = line.split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
            return words.first.flatMap { counted[$0] }.flatMap { Int(words[$0]) }
        }
        XCTAssertEqual(messages, 174)
        XCTAssertGreaterThan(blocks, 20)
    }

    func testRedisMessagesTileTsharksStreams() throws {
        let (messages, blocks) = try tile("redis.pcap", streams: 2) { line in
            guard let first = line.first, [0x24, 0x3d, 0x21].contains(first) else { return nil }  // $ = !
            return Int(String(decoding: line.dropFirst(), as: UTF8.self)).flatMap { $0 >= 0 ? $0 : nil }
        }
        XCTAssertGreaterThan(messages, 150)
        XCTAssertGreaterThan(blocks, 60)
    }

    /// `-Y` names a text body's own fields: the line (`text`) and the block (`payload`).
    func testFiltersOnTheLineAndTheBlock() throws {
        let values = try TestSupport.framedump(["-r", "samples/memcached-text.pcap", "-q", "-Y", "memcache_text.text contains \"VALUE\""])
        XCTAssertEqual(values.status, 0, values.stderr)
        XCTAssertTrue(values.stdout.contains("11 messages matched"), values.stdout)
        let big = try TestSupport.framedump(["-r", "samples/redis.pcap", "-Y", "redis.payload == \"big\""])
        XCTAssertEqual(big.status, 0, big.stderr)
        XCTAssertEqual(big.stdout.components(separatedBy: "payload: \"big\"").count - 1, 2, "SET big and GET big: \(big.stdout)")
        let typo = try TestSupport.framedump(["-r", "samples/redis.pcap", "-Y", "redis.paylod == \"x\""])
        XCTAssertNotEqual(typo.status, 0)
        XCTAssertTrue(typo.stderr.contains("did you mean redis.payload?"), typo.stderr)
    }

    /// Checks `sample`'s messages against tshark's follow of its `streams` TCP streams; `count`
    /// says how many bytes of data a line announces (nil: none). The messages and blocks seen.
    func tile(_ sample: String, streams n: Int, count: ([UInt8]) -> Int?) throws -> (Int, Int) {
        let tshark = try TestSupport.oracle("tshark")
        let (flows, events) = try TestSupport.messagesByFlow(sample)
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var streams: [String: [UInt8]] = [:]
        for i in 0..<n {
            let follow = try TestSupport.run(tshark, ["-r", TestSupport.sample(sample), "-q", "-z", "follow,tcp,raw,\(i)"])
            XCTAssertEqual(follow.status, 0, follow.stderr)
            var nodes: [String] = []
            for line in follow.stdout.split(separator: "\n") {
                if line.hasPrefix("Node ") { nodes.append(String(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces))) }
                guard nodes.count == 2, let first = line.first, first.isHexDigit || first == "\t" else { continue }
                let hex = line.trimmingCharacters(in: .whitespaces)
                guard hex.count % 2 == 0, hex.allSatisfy(\.isHexDigit) else { continue }
                let key = first != "\t" ? "\(nodes[0])>\(nodes[1])" : "\(nodes[1])>\(nodes[0])"
                var j = hex.startIndex
                while j < hex.endIndex {
                    let k = hex.index(j, offsetBy: 2)
                    streams[key, default: []].append(UInt8(hex[j..<k], radix: 16)!)
                    j = k
                }
            }
        }
        XCTAssertEqual(Set(flows.keys), Set(streams.keys))
        var messages = 0, blocks = 0
        for (key, stream) in streams {
            var offset = 0
            for m in flows[key] ?? [] {
                let length = try XCTUnwrap(m["length"] as? Int)
                XCTAssertEqual(m["offset"] as? Int, offset, key)
                XCTAssertNil(m["warnings"], "\(m)")
                guard offset + length <= stream.count else { XCTFail("\(key): a message past the stream's end"); return (messages, blocks) }
                let bytes = Array(stream[offset..<(offset + length)])
                XCTAssertEqual(Array(bytes.suffix(2)), [13, 10], "every message ends with CR LF")
                let fields = try XCTUnwrap(m["fields"] as? [String: Any])
                let text = try XCTUnwrap(fields["text"] as? String)
                let line = Array(bytes.prefix { $0 != 13 })
                // The line as `text`, the block after it (if the line announced one) as `payload`:
                // its text when it is UTF-8, else its bytes in hex; a long one cut.
                XCTAssertEqual(Array(text.utf8), line.count == length - 2 ? line : Array(bytes[..<(line.count)]), key)
                if let p = fields["payload"] as? String {
                    let block = Array(bytes[(line.count + 2)..<(length - 2)])
                    let want = String(bytes: block, encoding: .utf8) ?? block.map { String(format: "%02x", $0) }.joined()
                    if p.utf8.count == want.utf8.count { XCTAssertEqual(p, want, key) }
                    else { XCTAssertTrue(want.hasPrefix(String(p.prefix(1000))), "a long payload is shown cut, from its start") }
                }
                if let n = count(line) {
                    XCTAssertEqual(length, line.count + 2 + n + 2, "\(String(decoding: line, as: UTF8.self))")
                    XCTAssertNotNil(fields["payload"], "\(String(decoding: line, as: UTF8.self))")
                    blocks += 1
                } else {
                    XCTAssertFalse(bytes.dropLast(2).contains(13), "a plain line is one line: \(String(decoding: line, as: UTF8.self))")
                    XCTAssertNil(fields["payload"])
                }
                offset += length
                messages += 1
            }
            XCTAssertEqual(offset, stream.count, "\(key): the messages cover the whole stream")
        }
        return (messages, blocks)
    }
}
