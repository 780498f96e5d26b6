import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// The three defects the random-protocol round trip found, each on its own.
final class RandomProtocolDefectTests: XCTestCase {
    /// Three 10-byte messages `[u32 len][u16 id][u32 v]` whose segments arrive 10..20, 0..10,
    /// 25..30, 20..25: a message is dated by the packet that completed it, and its `pkts` are
    /// [earliest packet that carried any of its bytes, packet that completed it].
    func testMessagesCompletedByAnOutOfOrderSegmentAreDatedByIt() throws {
        let dir = TestSupport.tempDir()
        try """
            protocol t { port 7000; header { uint32 len; uint16 id; } frame_length = len; message_id = id; }
            Message Cs_1 { Uint32 v; }
            """.write(toFile: dir + "/t.dissector", atomically: true, encoding: .utf8)
        let pcap = dir + "/ooo.pcap"
        let b = try CaptureBuilder(pcap)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 7000)  // packets 1-3
        var stream: [UInt8] = []
        for v in UInt32(1)...3 { stream += .be32(10) + .be16(1) + .be32(v) }
        let base = c.seq[0]
        for (lo, hi) in [(10, 20), (0, 10), (25, 30), (20, 25)] {       // packets 4-7
            stream[lo..<hi].withUnsafeBytes { p in
                b.segment(src: c.client, sport: c.cport, dst: c.server, dport: c.sport, seq: base &+ UInt32(lo),
                          ack: c.seq[1], flags: 0x18, payload: p)
            }
        }
        b.finish()
        let out = try TestSupport.pipeline(pcap) { o in
            o.dissectorPaths = [dir]
            o.format = .json
        }
        let lines = out.split(separator: "\n").compactMap { l -> [String: Any]? in
            guard l.contains("\"message\":\"Cs_1\"") else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any]
        }
        XCTAssertEqual(lines.count, 3, out)
        let pkts = lines.map { ($0["pkts"] as? [Int]) ?? [] }
        XCTAssertEqual(pkts, [[5, 5], [4, 5], [6, 7]], out)
        let ts = lines.map { ($0["ts"] as? String) ?? "" }
        XCTAssertEqual(ts, ts.sorted(), "time goes backwards:\n\(out)")
        XCTAssertEqual(ts[1], ts[0], "the second message was completed by the packet of the first")
        let values = lines.map { (($0["fields"] as? [String: Any])?["v"] as? Int) ?? -1 }
        XCTAssertEqual(values, [1, 2, 3])
    }

    /// `Double` ends in "le": it must follow the protocol's order, not read little-endian.
    func testDoubleWithoutSuffixFollowsTheProtocolOrder() throws {
        let schema = try DissectorLoader.parse(text: """
            protocol t { port 7000; byte_order big; header { uint16 len; uint8 id; } frame_length = len; message_id = id; }
            Message Cs_1 { Double a; Float64 b; Doublebe c; Doublele d; Float e; Floatle f; }
            """, file: "t.dissector")
        XCTAssertEqual(floats(schema), ["f64be", "f64be", "f64be", "f64le", "f32be", "f32le"])
        let little = try DissectorLoader.parse(text: """
            protocol t { port 7000; byte_order little; header { uint16 len; uint8 id; } frame_length = len; message_id = id; }
            Message Cs_1 { Double a; Doublebe c; }
            """, file: "t.dissector")
        XCTAssertEqual(floats(little), ["f64le", "f64be"])
    }

    func floats(_ s: [ProtocolSchema]) -> [String] {
        s[0].messages[0].fields.map { f in
            switch f.type {
            case .float32(let o): return "f32" + (o == .big ? "be" : "le")
            case .float64(let o): return "f64" + (o == .big ? "be" : "le")
            default: return "?"
            }
        }
    }

    /// uint64 values above 2⁶³-1 are numbers: as a message id, a header constant, a label.
    func testNumbersAbove2To63AreAccepted() throws {
        let schema = try DissectorLoader.parse(text: """
            protocol t { port 7000; header { uint16 len; uint64 magic == 0xFFFFFFFFFFFFFFFF; uint64 id; }
                         frame_length = len; message_id = id; }
            Enum Big : Uint64 { TOP = 18446744073709551615; HALF = 9223372036854775808; }
            Message A = 9223372036854775808 { Big b; }
            """, file: "t.dissector")
        XCTAssertEqual(schema[0].header[1].constant, UInt64.max)
        XCTAssertEqual(schema[0].messages[0].id, 9_223_372_036_854_775_808)
        XCTAssertEqual(schema[0].enums[0].labels[Int64(bitPattern: UInt64.max)], "TOP")
        XCTAssertEqual(schema[0].enums[0].labels[Int64.min], "HALF")
        // Still refused: a number past 2⁶⁴-1, and a negative id.
        for bad in ["Message A = 18446744073709551616 { }", "Message A = -1 { }"] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: """
                protocol t { port 7000; header { uint16 len; uint64 id; } frame_length = len; message_id = id; }
                \(bad)
                """, file: "t.dissector"), bad)
        }
    }

    /// An array element cut short stays in its array (its fields used to follow the array,
    /// under an empty key, and the tree announced one element fewer than it showed).
    func testAPartlyDecodedElementStaysInItsArray() throws {
        let schema = try DissectorLoader.parse(text: """
            protocol qe { port 7000; header { uint16 len; uint8 id; } frame_length = len; message_id = id; }
            Message Item { Uint8 a; Uint16 b; }
            Message Cs_3 { Item[u8] items; }
            """, file: "qe.dissector")
        let frame: [UInt8] = [0, 8, 3, 2, 1, 0, 2, 3]   // two items announced, the second cut after a = 3
        for json in [true, false] {
            let out = OutputBuffer(fd: nil)
            let sink: MessageSink = json ? JSONPrinter(output: out, diffable: true)
                : TreePrinter(output: out, hexDump: false, verbose: false, color: false)
            FuzzStreams.feed(SessionManager(protocols: schema, sink: sink), c2s: frame, s2c: [], piece: 3, syn: true, port: 7000)
            out.flush()
            if json {
                XCTAssertTrue(out.text.contains("\"fields\":{\"items\":[{\"a\":1,\"b\":2},{\"a\":3}]}"), out.text)
                XCTAssertFalse(out.text.contains("\"\":"), out.text)
            } else {
                XCTAssertTrue(out.text.contains("items [2 elements]"), out.text)
            }
        }
    }
}
