import Foundation
import XCTest
@testable import FramedumpCore

/// samples/memcached-text.pcap (the memcached server and pymemcache speaking the text protocol;
/// Dissectors/memcached-text.dissector, `frame_end` with `payload` rules) against tshark's TCP
/// follow: each direction's messages tile its stream, at their offsets, each one exactly the
/// stream's bytes there; a storage command or VALUE line is one message with its data block,
/// even when the block holds CR LF or is empty or spans segments.
final class MemcachedTextSampleTests: XCTestCase {
    func testMessagesTileTsharksStreamsAndKeepTheirDataBlocks() throws {
        let tshark = try TestSupport.oracle("tshark")
        let (flows, events) = try TestSupport.messagesByFlow("memcached-text.pcap")
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var streams: [String: [UInt8]] = [:]
        for n in 0..<2 {
            let follow = try TestSupport.run(tshark, ["-r", TestSupport.sample("memcached-text.pcap"), "-q", "-z", "follow,tcp,raw,\(n)"])
            XCTAssertEqual(follow.status, 0, follow.stderr)
            var nodes: [String] = []
            for line in follow.stdout.split(separator: "\n") {
                if line.hasPrefix("Node ") { nodes.append(String(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces))) }
                guard nodes.count == 2, let first = line.first, first.isHexDigit || first == "\t" else { continue }
                let toServer = first != "\t"
                let hex = line.trimmingCharacters(in: .whitespaces)
                guard hex.count % 2 == 0, hex.allSatisfy(\.isHexDigit) else { continue }
                let key = toServer ? "\(nodes[0])>\(nodes[1])" : "\(nodes[1])>\(nodes[0])"
                var i = hex.startIndex
                while i < hex.endIndex {
                    let j = hex.index(i, offsetBy: 2)
                    streams[key, default: []].append(UInt8(hex[i..<j], radix: 16)!)
                    i = j
                }
            }
        }
        XCTAssertEqual(Set(flows.keys), Set(streams.keys))
        var messages = 0, withData = 0
        for (key, stream) in streams {
            var offset = 0
            for m in flows[key] ?? [] {
                let length = try XCTUnwrap(m["length"] as? Int)
                XCTAssertEqual(m["offset"] as? Int, offset, key)
                XCTAssertNil(m["warnings"], "\(m)")
                guard offset + length <= stream.count else { return XCTFail("\(key): a message past the stream's end") }
                let bytes = Array(stream[offset..<(offset + length)])
                XCTAssertEqual(Array(bytes.suffix(2)), [13, 10], "every message ends with CR LF")
                let fields = try XCTUnwrap(m["fields"] as? [String: Any])
                let text = try XCTUnwrap(fields["text"] as? String)
                // The line as `text`, the block after it (if the line announced one) as `payload`.
                let shown = Array(text.utf8) + ((fields["payload"] as? String).map { [13, 10] + Array($0.utf8) } ?? [])
                if shown.count == length - 2 { XCTAssertEqual(shown, Array(bytes.dropLast(2)), key) }
                else { XCTAssertTrue(bytes.starts(with: Array(shown.prefix(1000))), "a long payload is shown cut, from its start") }
                // A line that announces a data block holds it: the count of its word, then CR LF.
                let line = bytes.prefix { $0 != 13 }
                let words = line.split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
                let counted = ["set": 4, "add": 4, "replace": 4, "append": 4, "prepend": 4, "cas": 4, "VALUE": 3]
                if let w = words.first.flatMap({ counted[$0] }) {
                    let n = try XCTUnwrap(Int(words[w]), "\(words)")
                    XCTAssertEqual(length, line.count + 2 + n + 2, "\(words)")
                    XCTAssertNotNil(fields["payload"], "\(words)")
                    withData += 1
                } else {
                    XCTAssertFalse(bytes.dropLast(2).contains(13), "a plain line is one line: \(words)")
                }
                offset += length
                messages += 1
            }
            XCTAssertEqual(offset, stream.count, "\(key): the messages cover the whole stream")
        }
        XCTAssertGreaterThan(withData, 20)
        XCTAssertGreaterThan(messages, 100)
    }
}
