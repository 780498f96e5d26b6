import Foundation
import XCTest
@testable import FramedumpCore

/// `body msgpack;` on bytes written by hand from the MessagePack specification (every type,
/// every width), so the decoder is checked against the spec rather than against one encoder;
/// samples/msgpack.pcap checks it against the msgpack library's peers.
final class MessagePackTests: XCTestCase {
    static let dissector = """
    protocol mp { port 7600; header { uint32 length; uint16 cmd; } body_length = length; message_id = cmd;
                  max_frame 100000; body msgpack; }
    Message Any = 1 { }
    Message Move = 3 { Int32 x; Int32 y; Float speed; Pos at; Pos[rest] path; }
    Message Pos { Int32 x; Int32 y; }
    """

    func render(_ body: [UInt8], cmd: UInt16 = 1) throws -> (json: [String: Any], line: String, tree: String, m: DecodedMessage) {
        let runtime = ProtocolRuntime(try DissectorLoader.parse(text: Self.dissector, file: "mp.dissector")[0])
        let n = body.count
        let frame = [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), UInt8(cmd >> 8), UInt8(cmd & 0xff)] + body
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
        let c = Connection(number: 1, client: Endpoint(IPAddress(v4: 0x7f00_0001), 40000),
                           server: Endpoint(IPAddress(v4: 0x7f00_0001), 7600), rolesFromSYN: true, packet: p)
        let m = DecodedMessage()
        var line = "", tree = ""
        frame.withUnsafeBytes { b in
            runtime.decoder.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
            for f in m.fields { XCTAssertTrue(f.offset >= 6 && Int(f.offset) + Int(f.width) <= b.count, "a field outside the body") }
            let jo = OutputBuffer(fd: nil)
            JSONPrinter(output: jo, diffable: true).message(m, c, runtime)
            line = jo.text
            let to = OutputBuffer(fd: nil)
            TreePrinter(output: to, hexDump: false, verbose: false, color: false).message(m, c, runtime)
            tree = to.text
        }
        let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        return (json, line, tree, m)
    }

    func str(_ s: String) -> [UInt8] { let u = Array(s.utf8); precondition(u.count < 32); return [0xa0 | UInt8(u.count)] + u }

    /// One map holding every type of the format, in every width.
    func testEveryTypeInEveryWidth() throws {
        var body: [UInt8] = [0xde, 0x00, 26]  // map16 of 26 entries
        body += str("pos") + [0x7f]                                  // positive fixint
        body += str("neg") + [0xe0]                                  // negative fixint: -32
        body += str("u8") + [0xcc, 0xff]
        body += str("u16") + [0xcd, 0x01, 0x00]
        body += str("u32") + [0xce, 0xff, 0xff, 0xff, 0xff]
        body += str("u64") + [0xcf] + [UInt8](repeating: 0xff, count: 8)
        body += str("i8") + [0xd0, 0x80]                             // -128
        body += str("i16") + [0xd1, 0xff, 0x7f]                      // -129
        body += str("i32") + [0xd2, 0x80, 0x00, 0x00, 0x00]          // -2147483648
        body += str("i64") + [0xd3, 0x80] + [UInt8](repeating: 0, count: 7)
        body += str("f32") + [0xca, 0x3f, 0xc0, 0x00, 0x00]          // 1.5
        body += str("f64") + [0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18]  // pi
        body += str("nil") + [0xc0]
        body += str("t") + [0xc3] + str("f") + [0xc2]
        body += str("s8") + [0xd9, 3] + Array("abc".utf8)
        body += str("s16") + [0xda, 0, 2] + Array("é".utf8)
        body += str("bin") + [0xc4, 3, 0x00, 0x01, 0xff]
        body += str("bin32") + [0xc6, 0, 0, 0, 0]
        body += str("arr") + [0x93, 0x01, 0xa1, 0x78, 0x90]          // [1, "x", []]
        body += str("ints") + [0x82, 0x01, 0xa1, 0x61, 0xff, 0xa1, 0x62]  // {1: "a", -1: "b"}
        body += str("ext") + [0xd4, 0x05, 0x2a]                      // fixext1 type 5
        body += str("ext8") + [0xc7, 3, 0x80, 1, 2, 3]               // ext8 type -128
        body += str("ts32") + [0xd6, 0xff, 0x69, 0x28, 0x89, 0x90]   // 1764264336
        body += str("ts64") + [0xd7, 0xff] + tsb64(seconds: 1764264336, nanos: 123456789)
        body += str("ts96") + [0xc7, 12, 0xff, 0, 0, 1, 0xf4] + [UInt8](repeating: 0xff, count: 8)  // -1 s, 500 ns
        let (json, line, tree, m) = try render(body)
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
        let f = json["fields"] as! [String: Any]
        XCTAssertEqual(f.count, 26, line)
        for piece in ["\"pos\":127", "\"neg\":-32", "\"u8\":255", "\"u16\":256", "\"u32\":4294967295", "\"u64\":18446744073709551615",
                      "\"i8\":-128", "\"i16\":-129", "\"i32\":-2147483648", "\"i64\":-9223372036854775808", "\"f32\":1.5",
                      "\"f64\":3.141592653589793", "\"nil\":null", "\"t\":true", "\"f\":false", "\"s8\":\"abc\"", "\"s16\":\"é\"",
                      "\"bin\":\"0001ff\"", "\"bin32\":\"\"", "\"arr\":[1,\"x\",[]]", "\"ints\":{\"1\":\"a\",\"-1\":\"b\"}",
                      "\"ext\":{\"ext\":5,\"hex\":\"2a\"}", "\"ext8\":{\"ext\":-128,\"hex\":\"010203\"}",
                      "\"ts32\":\"2025-11-27T17:25:36.000000000Z\"", "\"ts64\":\"2025-11-27T17:25:36.123456789Z\"",
                      "\"ts96\":\"1969-12-31T23:59:59.000000500Z\""] {
            XCTAssertTrue(line.contains(piece), "\(piece) not in \(line)")
        }
        for piece in ["pos: 127", "neg: -32", "nil: null", "bin: 3 bytes 0001ff", "arr [3 elements]", "[1]: \"a\"", "[-1]: \"b\"",
                      "ext: ext 5: 1 byte 2a", "ts96: 1969-12-31T23:59:59.000000500Z", "s16: \"é\""] {
            XCTAssertTrue(tree.contains(piece), "\(piece) not in \(tree)")
        }
    }

    func tsb64(seconds: UInt64, nanos: UInt64) -> [UInt8] {
        let v = nanos << 34 | seconds
        return (0..<8).map { UInt8(v >> (56 - 8 * UInt64($0)) & 0xff) }
    }

    /// MessagePack-CSharp's `[Key(0)]` objects are arrays: the message's declared fields name
    /// their elements, nested ones and arrays of them too; an array with more elements than
    /// names is shown whole, as `body`.
    func testObjectsWrittenAsArraysTakeTheDeclaredNames() throws {
        // Move [x, y, speed, at [x, y], path [[x, y], [x, y]]]
        let body: [UInt8] = [0x95, 0xfb, 0xcd, 0x01, 0x2c, 0xca, 0x3f, 0x80, 0, 0, 0x92, 0x01, 0x02, 0x92, 0x92, 0x03, 0x04, 0x92, 0x05, 0x06]
        let (json, line, tree, _) = try render(body, cmd: 3)
        XCTAssertEqual(json["message"] as? String, "Move")
        XCTAssertTrue(line.contains("\"fields\":{\"x\":-5,\"y\":300,\"speed\":1,\"at\":{\"x\":1,\"y\":2},\"path\":[{\"x\":3,\"y\":4},{\"x\":5,\"y\":6}]}"), line)
        XCTAssertTrue(tree.contains("at {2 fields}") && tree.contains("path [2 elements]"), tree)
        // Six elements for five names: the array as it is.
        let (json2, line2, _, _) = try render([0x96, 1, 2, 3, 4, 5, 6], cmd: 3)
        XCTAssertEqual((json2["fields"] as? [String: Any])?["body"] as? [Int], [1, 2, 3, 4, 5, 6], line2)
        // No declared fields: a top-level array is `body`, a scalar too.
        XCTAssertEqual((try render([0x92, 0xc3, 0xc0]).json["fields"] as? [String: Any])?.keys.sorted(), ["body"])
        XCTAssertEqual((try render([0x05]).json["fields"] as? [String: Any])?["body"] as? Int, 5)
    }

    /// Hostile bodies: each is said, what was read before is kept, and nothing is allocated
    /// for what a count announces.
    func testMalformedBodiesAreSaidAndKeepWhatWasRead() throws {
        func problem(_ body: [UInt8]) throws -> (String, [String: Any]) {
            let r = try render(body)
            return (r.m.warnings.map(\.text).joined(separator: "; "), r.json["fields"] as? [String: Any] ?? [:])
        }
        var (w, f) = try problem([0x82] + str("a") + [0x01] + str("b") + [0xcd, 0x01])
        XCTAssertEqual(w, "MessagePack value cut at byte 12: 1 more bytes announced than the body holds")
        XCTAssertEqual(f["a"] as? Int, 1)
        XCTAssertEqual(f["undecoded"] as? String, "cd01")
        (w, _) = try problem([0xc1])
        XCTAssertTrue(w.contains("0xc1 at byte 6 is no MessagePack type"), w)
        (w, _) = try problem([0xdd, 0xff, 0xff, 0xff, 0xff, 0x00])
        XCTAssertTrue(w.contains("announces 4294967295 elements, more than the body can hold"), w)
        (w, _) = try problem([0xdf, 0x10, 0x00, 0x00, 0x00, 0x00])
        XCTAssertTrue(w.contains("announces 268435456 entries"), w)
        (w, _) = try problem([0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00])
        XCTAssertTrue(w == "MessagePack value cut at byte 6: 2147483646 more bytes announced than the body holds", w)
        (w, f) = try problem([UInt8](repeating: 0x91, count: 100) + [0x01])
        XCTAssertTrue(w.contains("nested deeper than 64 levels (--max-depth) at byte 69"), w)
        (w, f) = try problem([0x01, 0x02, 0x03])
        XCTAssertEqual(w, "2 bytes after the MessagePack value at byte 7")
        XCTAssertEqual(f["body"] as? Int, 1)
        XCTAssertEqual(f["trailing"] as? String, "0203")
        // A key that is no name: the entry is named by its place, said once.
        (w, f) = try problem([0x82, 0xc0, 0x01, 0x91, 0x02, 0x03])
        XCTAssertEqual(w, "MessagePack map key at byte 7 is not a string, integer or boolean: its entry is named by its place")
        // A timestamp with nanoseconds past a second is shown as the extension it is.
        let (_, line, _, _) = try render([0x81] + str("t") + [0xd7, 0xff] + tsb64(seconds: 0, nanos: 1_000_000_000))
        XCTAssertTrue(line.contains("\"t\":{\"ext\":-1,\"hex\":\"ee6b280000000000\"}"), line)
    }

    /// The 96-bit timestamp reaches years of twelve digits either side of zero: written in full
    /// by every output and by `-Y`'s text (a fuzz finding: `-Y`'s scratch area was too small).
    func testTimestampsAtTheEndsOfTheRange() {
        func ts96(_ seconds: Int64, _ nanos: UInt32) -> [UInt8] {
            let s = UInt64(bitPattern: seconds)
            return (0..<4).map { UInt8(nanos >> (24 - 8 * UInt32($0)) & 0xff) } + (0..<8).map { UInt8(s >> (56 - 8 * UInt64($0)) & 0xff) }
        }
        for (seconds, want) in [(Int64.max, "292277026596-12-04T15:30:07.999999999Z"), (Int64.min, "-292277022657-01-27T08:29:52.999999999Z"),
                                (0, "1970-01-01T00:00:00.999999999Z"), (-62_135_596_800, "0001-01-01T00:00:00.999999999Z")] {
            ts96(seconds, 999_999_999).withUnsafeBytes { XCTAssertEqual(MessagePackTimestamp.text($0), want) }
        }
    }

    /// Keys that need quoting are quoted in the tree and escaped in NDJSON; `-Y` finds them.
    func testKeysAreNamesEverywhere() throws {
        let body: [UInt8] = [0x83] + str("plain") + [1] + str("a \"q\"") + [2] + str("名前") + [3]
        let (json, _, tree, _) = try render(body)
        let f = json["fields"] as! [String: Any]
        XCTAssertEqual(f["a \"q\""] as? Int, 2)
        XCTAssertEqual(f["名前"] as? Int, 3)
        XCTAssertTrue(tree.contains("plain: 1") && tree.contains("\"a \\\"q\\\"\": 2") && tree.contains("名前: 3"), tree)
    }
}
