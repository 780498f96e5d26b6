import Foundation
import XCTest
@testable import FramedumpCore

/// One test per `--max-…` bound: an input that tries to go past it, a child framedump whose
/// peak memory (from the kernel, wait4) stays under a bound, and the summary's or NDJSON's
/// `limit hit` line that says the bound was met. Where it shows the bound is what keeps memory
/// down, the same input with the bound raised is measured too.
final class LimitTests: XCTestCase {
    var dir = ""

    override func setUp() { dir = TestSupport.tempDir() }

    func dissector(_ text: String) throws -> String {
        let d = dir + "/dissectors"
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        try text.write(toFile: d + "/t.dissector", atomically: true, encoding: .utf8)
        return d
    }

    func limitLine(_ text: String, _ flag: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix("limit hit: " + flag) }.map(String.init)
    }

    /// A header announcing 1 GiB, which the file's own max_frame allows, then 32 MB of bytes:
    /// with --max-frame (default 16 MiB) the length is refused at once and nothing is held.
    func testFrameLongerThanMaxFrameIsNeverHeld() throws {
        let d = try dissector("""
            protocol big { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id;
                           max_frame 1073741824; body raw; }
            """)
        let path = dir + "/big.pcap"
        let b = try CaptureBuilder(path)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        c.send(.be32(1 << 30) + .be16(1))
        c.send([UInt8](repeating: 0x41, count: 32 << 20))
        b.finish()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-d", d, "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertNotNil(limitLine(r.stdout, "--max-frame 16777216:"), r.stdout)
        XCTAssertLessThan(r.peakMiB, base + 24, "a refused length holds nothing")
        // The same capture with the ceiling raised to the file's max_frame: the frame is held.
        let raised = try Measured.framedump(["-r", path, "-d", d, "-q", "--max-frame", "1073741824"])
        XCTAssertNil(limitLine(raised.stdout, "--max-frame "), raised.stdout)
        XCTAssertGreaterThan(raised.peakMiB, base + 30, "the bound is what kept memory down")
    }

    /// A frame longer than the dissector's own `max_frame` is malformed, not a hit of
    /// `--max-frame`: the limit line names only the flag that refused something.
    func testADissectorsMaxFrameIsNotTheFlag() throws {
        let d = try dissector("""
            protocol small { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id;
                             max_frame 1024; body raw; }
            """)
        let path = dir + "/small.pcap"
        let b = try CaptureBuilder(path)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        c.send(.be32(2000) + .be16(1) + [UInt8](repeating: 0x41, count: 1994))
        b.finish()
        let r = try TestSupport.run(TestSupport.binary, ["-r", path, "-d", d, "-T", "json"])
        XCTAssertTrue(r.stdout.contains("\"reason\":\"length-too-long\",\"detail\":\"length 2000 exceeds max_frame 1024\""), r.stdout)
        XCTAssertFalse(r.stdout.contains("\"type\":\"limit\""), r.stdout)
        let q = try TestSupport.run(TestSupport.binary, ["-r", path, "-d", d, "-q"])
        XCTAssertTrue(q.stdout.contains("2 malformed (2000 bytes)"), q.stdout)
        XCTAssertNil(limitLine(q.stdout, "--max-frame"), q.stdout)
    }

    /// WebSocket messages of 256 MiB once inflated (a deflate bomb of a few hundred KB each),
    /// and a frame announcing 2^40 bytes: with the default bound none of it is held.
    func testWebSocketMessageSizeIsBounded() throws {
        let path = dir + "/ws.pcap"
        let b = try CaptureBuilder(path)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8080)
        c.send(WS.request(extensions: "permessage-deflate"))
        c.send(WS.response(extensions: "permessage-deflate; client_no_context_takeover"), fromClient: false)
        let bomb = WS.deflate([UInt8](repeating: 0, count: 256 << 20))
        for _ in 0..<3 { c.send(WS.client(2, bomb, rsv: 0x40)) }
        // A 64-bit length of 2^40, masked, then a little of its payload.
        c.send([0x82, 0xff, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4] + [UInt8](repeating: 9, count: 100_000))
        b.finish()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let line = try XCTUnwrap(limitLine(r.stdout, "--max-ws-message 16777216:"), r.stdout)
        XCTAssertTrue(line.contains(": 3 WebSocket messages"), line)
        // The 2^40-byte frame is cut by the capture's end: reported as cut, its bytes counted.
        XCTAssertTrue(r.stdout.contains("1 frames cut by the end of the capture (100014 bytes)"), r.stdout)
        XCTAssertLessThan(r.peakMiB, base + 40, "16 MiB of inflate output at most, never 256")
    }

    /// One connection: a hole at the start, then 40 MB after it.
    func testOutOfOrderBytesPerStreamAreBounded() throws {
        let path = dir + "/hole.pcap"
        let b = try CaptureBuilder(path)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 9999)
        c.skip(1000)
        c.send([UInt8](repeating: 0x42, count: 40 << 20))
        b.finish()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-q", "--max-buffer", "1048576"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let line = try XCTUnwrap(limitLine(r.stdout, "--max-buffer 1048576:"), r.stdout)
        XCTAssertTrue(line.contains("gaps forced by out-of-order bytes held in one direction"), line)
        XCTAssertLessThan(r.peakMiB, base + 16)
    }

    /// 100 connections, each with a hole and 400 KB after it (under the per-direction bound):
    /// only the total bound stops them from holding 40 MB together.
    func testOutOfOrderBytesInTotalAreBounded() throws {
        let path = dir + "/holes.pcap"
        let b = try CaptureBuilder(path)
        let conns = (0..<100).map { CaptureBuilder.Connection(b, index: $0, serverPort: 9999) }
        for c in conns { c.skip(1000) }
        for _ in 0..<4 { for c in conns { c.send([UInt8](repeating: 0x43, count: 100_000)) } }
        b.finish()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-q", "--max-buffer-total", "4194304"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertNotNil(limitLine(r.stdout, "--max-buffer-total 4194304:"), r.stdout)
        XCTAssertNil(limitLine(r.stdout, "--max-buffer "), "no direction reached its own bound")
        XCTAssertLessThan(r.peakMiB, base + 16)
        let raised = try Measured.framedump(["-r", path, "-q", "--max-buffer-total", "1073741824"])
        XCTAssertNil(limitLine(raised.stdout, "--max-buffer-total "), raised.stdout)
        XCTAssertGreaterThan(raised.peakMiB, base + 30, "the bound is what kept memory down")
        // Every byte is still accounted for: held bytes became gaps, none vanished.
        XCTAssertTrue(r.stdout.contains("connections: 100,"), r.stdout)
    }

    /// 100,000 connections, each with a little out-of-order data, in a table of 1,000.
    func testConnectionsTrackedAreBounded() throws {
        let path = dir + "/many.pcap"
        let b = try CaptureBuilder(path)
        for i in 0..<100_000 {
            let c = CaptureBuilder.Connection(b, index: i, serverPort: 9999)
            c.skip(10)
            c.send([UInt8](repeating: 0x44, count: 100))
        }
        b.finish()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-q", "--max-connections", "1000"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let line = try XCTUnwrap(limitLine(r.stdout, "--max-connections 1000:"), r.stdout)
        XCTAssertTrue(line.contains(": 99000 connections evicted"), line)
        XCTAssertLessThan(r.peakMiB, base + 16)
    }

    /// 20,000 datagrams of which only a first fragment (1,400 bytes) ever comes.
    func testIPFragmentsHeldAreBounded() throws {
        let path = dir + "/frags.pcap"
        let d = try PacketDumper.create(path: path, linkType: 12)
        var p = [UInt8](repeating: 0x45, count: 20 + 1400)
        for i in 0..<20_000 {
            p[0] = 0x45; p[1] = 0; p[2] = UInt8(p.count >> 8); p[3] = UInt8(p.count & 0xff)
            p[4] = UInt8(i >> 8); p[5] = UInt8(i & 0xff)
            p[6] = 0x20; p[7] = 0  // more fragments, offset 0
            p[8] = 64; p[9] = 6
            p[12] = 10; p[13] = 2; p[14] = UInt8(i >> 8); p[15] = UInt8(i & 0xff)
            p[16] = 10; p[17] = 0; p[18] = 0; p[19] = 1
            p.withUnsafeBytes { d.write(Packet(ref: PacketRef(number: 0, ts: Timestamp(seconds: 1_700_000_000, nanos: UInt32(i) * 1000)), data: $0, wireLength: $0.count)) }
        }
        d.flush()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-q", "--max-ip-fragments", "262144"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertNotNil(limitLine(r.stdout, "--max-ip-fragments 262144:"), r.stdout)
        XCTAssertTrue(r.stdout.contains("IP fragments: 20000,"), r.stdout)
        XCTAssertLessThan(r.peakMiB, base + 16)
    }

    /// The game protocol, with one message type per test, framed by a u32 total length.
    static let head = "protocol z { port 8000; strings u16; header { uint32 length; uint16 id; } frame_length = length; message_id = id; max_frame 16777216; }\n"

    func frame(_ id: UInt16, _ body: [UInt8]) -> [UInt8] { .be32(UInt32(6 + body.count)) + .be16(id) + body }

    /// Messages nested through a recursive type as deep as the bytes go (100,000 levels per
    /// frame): decoding stops at --max-depth, the stack and memory stay small.
    func testNestingDepthIsBounded() throws {
        let d = try dissector(Self.head + "Message N { Uint8 more; N[more] next; }\nMessage Cs_1 { N root; }\n")
        let path = dir + "/deep.pcap"
        let b = try CaptureBuilder(path)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        for _ in 0..<10 { c.send(frame(1, [UInt8](repeating: 1, count: 100_000) + [0])) }
        b.finish()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-d", d, "-T", "json", "--max-depth", "40"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("messages nested deeper than 40 levels (--max-depth)") }.count, 10)
        XCTAssertTrue(lines.contains { $0.hasPrefix(#"{"type":"limit","flag":"--max-depth","value":40,"hits":10,"#) }, r.stdout)
        XCTAssertLessThan(r.peakMiB, base + 40)
        // The same bound holds JSON and protobuf bodies.
        XCTAssertEqual(try decodeJSON(String(repeating: "[", count: 30) + String(repeating: "]", count: 30), depth: 20).warnings,
                       [.jsonTooDeep(limit: 20)])
    }

    func decodeJSON(_ body: String, depth: Int) throws -> DecodedMessage {
        let schema = try DissectorLoader.loadFile(TestSupport.dissectors + "/svc.dissector")[0]
        var l = Limits()
        l.maxDepth = depth
        let decoder = MessageDecoder(schema: schema, limits: l)
        let bytes: [UInt8] = .be32(1) + .be32(UInt32(body.utf8.count)) + Array(body.utf8)
        let m = DecodedMessage()
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
        bytes.withUnsafeBytes { decoder.decode(Frame(bytes: $0, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m) }
        return m
    }

    /// Arrays announcing 8 million one-byte elements that the frame really holds: past
    /// --max-array the array is refused (its bytes shown raw), so no field list of millions.
    func testArrayElementsAreBounded() throws {
        let d = try dissector(Self.head + "Message Cs_1 { Uint8[u32] a; }\n")
        let path = dir + "/array.pcap"
        let b = try CaptureBuilder(path)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        let n = 8_000_000
        for _ in 0..<2 { c.send(frame(1, .be32(UInt32(n)) + [UInt8](repeating: 7, count: n))) }
        b.finish()
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", path, "-d", d, "-T", "json", "--max-array", "1000"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.components(separatedBy: "more than --max-array 1000: the rest shown raw").count - 1, 2)
        XCTAssertTrue(r.stdout.contains(#"{"type":"limit","flag":"--max-array","value":1000,"hits":2,"#), r.stdout)
        // Each NDJSON line holds the 8 MB as hex (16 MB): that, not fields, is the memory.
        XCTAssertLessThan(r.peakMiB, base + 150)
        XCTAssertFalse(r.stdout.contains(#""a":["#), "no element was decoded")
    }

    /// 4 MB strings printed with --max-string 100: the lines stay short, the summary counts them.
    func testStringLengthPrintedIsBounded() throws {
        let d = try dissector(Self.head + "Message Cs_1 { Uint8 a; String(rest) s; }\n")
        let path = dir + "/string.pcap"
        let b = try CaptureBuilder(path)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        // "é" is two bytes: the cut must not split one.
        for _ in 0..<5 { c.send(frame(1, [1, 0x61] + Array(String(repeating: "é", count: 2 << 20).utf8))) }
        b.finish()
        let base = try Measured.baselineMiB()
        let tree = try Measured.framedump(["-r", path, "-d", d, "-v", "--max-string", "100"])
        XCTAssertEqual(tree.status, 0, tree.stderr)
        let shown = tree.stdout.split(separator: "\n").filter { $0.contains("s: \"a") }
        XCTAssertEqual(shown.count, 5)
        for l in shown { XCTAssertTrue(l.hasSuffix("\"a" + String(repeating: "é", count: 49) + "…\""), String(l)) }
        XCTAssertEqual(tree.stdout.components(separatedBy: "warning: a string longer than --max-string 100 bytes shown cut").count - 1, 5)
        XCTAssertNotNil(limitLine(tree.stdout, "--max-string 100:"), tree.stdout)
        XCTAssertLessThan(tree.peakMiB, base + 60)
        let json = try Measured.framedump(["-r", path, "-d", d, "-T", "json", "--max-string", "100"])
        for l in json.stdout.split(separator: "\n") {
            XCTAssertLessThan(l.utf8.count, 2000)
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(l.utf8)))
        }
    }

    /// Dissector files past --max-protocols or --max-messages are refused where the first one
    /// too many is declared, before anything is built for them.
    func testProtocolsAndMessagesLoadedAreBounded() throws {
        let many = (0..<5000).map { "protocol p\($0) { header { uint8 l; } frame_length = l; }" }.joined(separator: "\n")
        let d = try dissector(many)
        let base = try Measured.baselineMiB()
        let r = try Measured.framedump(["-r", TestSupport.sample("game.pcap"), "-d", d, "-q"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("t.dissector:257:1: error: more protocols than --max-protocols allows"), r.stderr)
        XCTAssertLessThan(r.peakMiB, base + 40)
        let allowed = try Measured.framedump(["-r", TestSupport.sample("game.pcap"), "-d", d, "-q", "--max-protocols", "5000"])
        XCTAssertEqual(allowed.status, 0, allowed.stderr)

        let messages = Self.head + (1...70_000).map { "Message Cs_\($0) { }" }.joined(separator: "\n")
        let d2 = try dissector(messages)
        let m = try Measured.framedump(["-r", TestSupport.sample("game.pcap"), "-d", d2, "-q"])
        XCTAssertEqual(m.status, 2)
        XCTAssertTrue(m.stderr.contains("t.dissector:65538:9: error: more messages and enums than --max-messages allows"), m.stderr)
        XCTAssertLessThan(m.peakMiB, base + 80)
        // The budget is shared by every file loaded.
        XCTAssertThrowsError(try DissectorLoader.load(paths: [TestSupport.dissectors], options: {
            var o = LoadOptions(); o.limits.maxProtocols = 2; return o }()))
    }
}
