import Foundation
import XCTest
@testable import FramedumpCore

/// Lines larger than every buffer they pass through: a cursor that outgrows its buffer, bodies
/// and transform outputs of 64 KiB, 1 MiB and the `--max-inflate` limit, 64 KiB strings that
/// expand six times when escaped, arrays of 100,000 elements; on one thread and sharded with
/// output buffers of one byte, so that every line of every output grows its buffer. (A line
/// larger than a shard's buffer once wrote past it: a crash, or corrupt NDJSON.)
final class LargeMessageTests: XCTestCase {
    static let dir = TestSupport.fixture("large")
    static let dissector = TestSupport.fixture("large/bigz.dissector")

    /// Rounds of a few events, blocks of 64 bytes, output buffers of one byte.
    static let tinyOut = ShardPool.Sizes(events: 3, blockBytes: 64, rounds: 2, outBytes: 1)

    static func run(_ file: String, jobs: Int, sizes: ShardPool.Sizes = .init(),
                    _ configure: @escaping (inout PipelineOptions) -> Void) throws -> String {
        try ShardPoolTests.run(file, jobs: jobs, sizes: sizes) { o in
            configure(&o)
            o.dissectorPaths = [Self.dissector]
        }
    }

    // MARK: - The cursor

    /// Every write a cursor makes, into a buffer of one byte: each grows it, and the bytes come
    /// out as String formatting writes them.
    func testACursorGrowsItsBufferOnEveryWrite() {
        let out = OutputBuffer(fd: nil, capacity: 1)
        var expected = ""
        var k = out.cursor()
        let text = "say \"hi\" \\ \u{1}\t 欢迎 👍 "
        for i in 0..<2000 {
            k.decimal(UInt64(i) * 1_000_003)
            expected += String(UInt64(i) * 1_000_003)
            k.decimal(Int64(-i))
            expected += String(-i)
            k.byte(0x2c); expected += ","
            k.spaces(i % 37); expected += String(repeating: " ", count: i % 37)
            k.hex(UInt8(i & 0xFF)); expected += String(format: "%02x", i & 0xFF)
            k.write("static text that is longer than sixteen bytes"); expected += "static text that is longer than sixteen bytes"
            k.fraction(UInt32(i), digits: 6); expected += "." + String(format: "%06d", i)
            let s = String(repeating: text, count: i % 50)
            Array(s.utf8).withUnsafeBytes { k.jsonString($0) }
            // The rare path's String-based escaping, an independent writer of the same rule.
            expected += JSONText.quoted(s)
            if i % 100 == 0 {
                // A float leaves the cursor for the buffer and takes a new one.
                out.commit(k)
                out.write("|")
                expected += "|"
                k = out.cursor()
            }
        }
        out.commit(k)
        XCTAssertEqual(out.text, expected)
        XCTAssertGreaterThan(out.count, 1_000_000)
    }

    // MARK: - Large messages, one thread against shards

    func testLargeMessagesPrintTheSameOnEveryShardCount() throws {
        let f = Self.dir + "/large.pcap"
        // Under a sanitizer: the tree, NDJSON and --diffable, on 3 shards with one-byte buffers.
        let outputs = TestSupport.sanitized ? [0, 1, 6].map { ShardPoolTests.outputs[$0] } : ShardPoolTests.outputs
        let shards = TestSupport.sanitized ? [(3, Self.tinyOut)] : [(2, ShardPool.Sizes()), (3, Self.tinyOut), (5, Self.tinyOut)]
        for (name, configure) in outputs {
            let one = try Self.run(f, jobs: 1, configure)
            if !name.contains("-q") { XCTAssertGreaterThan(one.utf8.count, 1 << 20, name) }
            for (jobs, sizes) in shards {
                let many = try Self.run(f, jobs: jobs, sizes: sizes, configure)
                XCTAssertTrue(one == many, "\(name) -j \(jobs) \(sizes): \(one.utf8.count) bytes against \(many.utf8.count)")
            }
        }
    }

    /// The NDJSON of the large messages is valid, line by line, and says what was sent: every
    /// valid text exactly, 100,000 array elements, the bytes in hex.
    func testLargeMessagesDecodeToWhatWasSent() throws {
        let text = try Self.run(Self.dir + "/large.pcap", jobs: 3, sizes: Self.tinyOut) { $0.format = .json }
        var kinds: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("{") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], String(line.prefix(200)))
            guard let name = o["message"] as? String, let fields = o["fields"] as? [String: Any] else { continue }
            kinds[name, default: 0] += 1
            switch name {
            case "Text":
                let t = try XCTUnwrap(fields["text"] as? String)
                if !t.contains("\u{FFFD}") {
                    XCTAssertNil(o["warnings"])
                    XCTAssertEqual(t, Self.sentText(t.utf8.count), "a text of \(t.utf8.count) bytes")
                } else {
                    XCTAssertGreaterThan(t.utf8.count, 64 << 10)
                    XCTAssertEqual(o["warnings"] as? [String], ["field 'text' is not valid UTF-8"])
                }
            case "Blob":
                let hex = try XCTUnwrap(fields["data"] as? String)
                XCTAssertTrue([(64 << 10) - 4, (1 << 20) - 4].contains(hex.utf8.count / 2))
                XCTAssertTrue(hex.hasPrefix("000102030405"))
            case "Many":
                let items = try XCTUnwrap(fields["items"] as? [Int])
                XCTAssertEqual(items.count, try XCTUnwrap(fields["count"] as? Int))
                XCTAssertEqual(items[257], 1)
            case "Pairs":
                XCTAssertEqual((fields["pairs"] as? [Any])?.count, 100_000)
            case "Words":
                let w = try XCTUnwrap(fields["words"] as? [String])
                XCTAssertEqual(w.count, 100_000)
                XCTAssertEqual(w.last, "w\"x")
            default: XCTFail(name)
            }
            if name != "Text" { XCTAssertNil(o["warnings"], name) }
        }
        XCTAssertEqual(kinds, ["Text": 8, "Blob": 2, "Many": 2, "Pairs": 1, "Words": 1])
    }

    /// The text the fixture's script sends: a kilobyte piece repeated, cut to `n` bytes, a
    /// character the cut would split turned into dots.
    static func sentText(_ n: Int) -> String {
        let piece = Array(Array(String(repeating: "say \"hi\" \\ back\u{1}\u{2}\u{1f}\t\n\r 欢迎 👍 ", count: 40).utf8).prefix(1024))
        var b: [UInt8] = []
        while b.count < n { b += piece }
        b = Array(b.prefix(n))
        var i = b.count
        while i > 0 && b[i - 1] & 0xC0 == 0x80 { i -= 1 }
        if i > 0 && b[i - 1] >= 0xC0 { for j in (i - 1)..<b.count { b[j] = 0x2E } }
        return String(decoding: b, as: UTF8.self)
    }

    /// Bodies that inflate to exactly `--max-inflate` are decoded; one byte more is shown as it
    /// came, with a warning; the same on one thread and sharded.
    func testBodiesAtTheInflateLimit() throws {
        let f = Self.dir + "/at_limit.pcap"
        let json: (inout PipelineOptions) -> Void = { $0.format = .json; $0.limits.maxInflate = 2 << 20 }
        let one = try Self.run(f, jobs: 1, json)
        let lines = one.split(separator: "\n").filter { $0.hasPrefix("{") && !$0.contains("\"type\":") }
        XCTAssertEqual(lines.count, 6)
        let over = lines.filter { $0.contains("passes --max-inflate 2097152") }
        XCTAssertEqual(over.count, 1)
        for l in lines where !l.contains("passes --max-inflate") {
            XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(l.utf8)))
        }
        XCTAssertEqual(one, try Self.run(f, jobs: 2, json))
        XCTAssertEqual(one, try Self.run(f, jobs: 3, sizes: Self.tinyOut, json))
        let tree: (inout PipelineOptions) -> Void = { $0.hexDump = true; $0.limits.maxInflate = 2 << 20 }
        XCTAssertEqual(try Self.run(f, jobs: 1, tree), try Self.run(f, jobs: 5, sizes: Self.tinyOut, tree))
    }

    // MARK: - A property over protocols, sizes and shard counts

    /// Random length-prefixed protocols (byte order, length and id widths, a length that counts
    /// the header or not), random message sizes from empty to 300 KB, random segment sizes,
    /// written as a capture; every output on random shard counts and round sizes is the same as
    /// on one thread.
    func testRandomProtocolsAndSizesPrintTheSameSharded() throws {
        var rng = SeededRandom(seed: 0x38)
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("framedump-large-\(getpid())")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        for trial in 0..<6 {
            let p = RandomProtocol(&rng)
            let dissector = tmp.appendingPathComponent("p\(trial).dissector").path
            let capture = tmp.appendingPathComponent("p\(trial).pcap").path
            try p.dissector.write(toFile: dissector, atomically: true, encoding: .utf8)
            try p.capture(&rng, to: capture)
            for (name, configure) in [ShardPoolTests.outputs[0], ShardPoolTests.outputs[1], ShardPoolTests.outputs[6]] {
                let setup: (inout PipelineOptions) -> Void = { configure(&$0); $0.dissectorPaths = [dissector] }
                let one = try ShardPoolTests.run(capture, jobs: 1, setup)
                XCTAssertTrue(one.contains(" R\(p.name)") || one.contains("\"protocol\":\"r\(p.name)\""), "trial \(trial) \(name)")
                let sizes = ShardPool.Sizes(events: 1 + rng.below(8), blockBytes: 1 << rng.below(18),
                                            rounds: 2 + rng.below(3), outBytes: 1 << rng.below(18))
                let jobs = 2 + rng.below(4)
                let many = try ShardPoolTests.run(capture, jobs: jobs, sizes: sizes, setup)
                XCTAssertTrue(one == many, "trial \(trial) \(name) -j \(jobs) \(sizes)")
            }
        }
    }
}

extension SeededRandom {
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// A random length-prefixed protocol, its dissector, and a capture of it.
struct RandomProtocol {
    let name: Int
    let little: Bool
    let lengthWidth: Int
    let idWidth: Int
    let countsHeader: Bool
    var headerBytes: Int { lengthWidth + idWidth }

    init(_ rng: inout SeededRandom) {
        name = rng.below(1000)
        little = rng.below(2) == 0
        lengthWidth = [3, 4][rng.below(2)]
        idWidth = [1, 2, 4][rng.below(3)]
        countsHeader = rng.below(2) == 0
    }

    var dissector: String {
        let t = { (w: Int) in ["", "uint8", "uint16", "uint24", "uint32"][w] }
        return """
        protocol r\(name) {
            port 7500;
            \(little ? "byte_order little;" : "")
            header { \(t(lengthWidth)) len; \(t(idWidth)) kind; }
            \(countsHeader ? "frame_length = len;" : "body_length = len;")
            message_id = kind;
            max_frame 16777215;
        }
        Message R\(name)Text = 1 { Uint16 tag; String(u32) text; }
        Message R\(name)Blob = 2 { Bytes(u32) data; Uint8 end; }
        Message R\(name)List = 3 { Uint32 n; Uint16[n] values; }
        """
    }

    func int(_ v: Int, _ width: Int) -> [UInt8] {
        let b = (0..<width).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
        return little ? b : b.reversed()
    }

    /// A message of about `size` body bytes.
    func message(_ rng: inout SeededRandom, size: Int) -> [UInt8] {
        let kind = 1 + rng.below(3)
        var body: [UInt8]
        switch kind {
        case 1:
            let text = (0..<size).map { i -> UInt8 in
                let c = UInt8(truncatingIfNeeded: (i &* 7 &+ size) % 97)
                return c < 32 ? c : 0x20 + c % 95
            }
            body = int(size & 0xFFFF, 2) + int(text.count, 4) + text
        case 2:
            body = int(size, 4) + (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) } + [0x7E]
        default:
            let n = size / 2
            body = int(n, 4) + (0..<n).flatMap { int($0 &* 13, 2) }
        }
        let len = body.count + (countsHeader ? headerBytes : 0)
        return int(len, lengthWidth) + int(kind, idWidth) + body
    }

    /// Sizes from empty to 300 KB, most small.
    func size(_ rng: inout SeededRandom) -> Int {
        switch rng.below(10) {
        case 0..<4: return rng.below(100)
        case 4..<7: return 1000 + rng.below(10_000)
        case 7..<9: return 60_000 + rng.below(12_000)
        default: return 100_000 + rng.below(200_000)
        }
    }

    /// The capture, written through libpcap (the suite's CaptureBuilder): up to four
    /// connections, each a few messages either way in segments of 500 to 9,500 bytes.
    func capture(_ rng: inout SeededRandom, to path: String) throws {
        let b = try CaptureBuilder(path)
        for c in 0..<(1 + rng.below(4)) {
            let conn = CaptureBuilder.Connection(b, index: c + 1, serverPort: 7500)
            for _ in 0..<(2 + rng.below(6)) {
                let fromClient = rng.below(2) == 0
                conn.send(message(&rng, size: size(&rng)), fromClient: fromClient, segment: 500 + rng.below(9000))
            }
        }
        b.finish()
    }
}
