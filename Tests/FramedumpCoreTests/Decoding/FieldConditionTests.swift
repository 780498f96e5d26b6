import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// `when TEST` after a field (on the wire only when a header field, bit group or earlier field
/// says so) and `Item[rest]` arrays (elements to the body's end), as MQTT needs them
/// (issue #39: sizes and layouts from the header).
final class FieldConditionTests: XCTestCase {
    static let mqtt = """
    protocol mqtt { port 1883;
        header { uint8 fixed { type = 0xf0; dup = 0x08; qos = 0x06; retain = 0x01; } varint(4) remaining; }
        body_length = remaining; message_id = fixed.type; }
    Message CONNECT = 1 c2s { String(u16) protocol_name; Uint8 level; Uint8 flags; Uint16 keep_alive; String(u16) client_id;
        String(u16) will_topic when flags & 0x04; Bytes(u16) will_message when flags & 0x04;
        String(u16) user_name when flags & 0x80; Bytes(u16) password when flags & 0x40; }
    Message PUBLISH = 3 { String(u16) topic; Uint16 packet_id when fixed.qos; Bytes(rest) payload; }
    Message Subscription { String(u16) filter; Uint8 options; }
    Message SUBSCRIBE = 8 c2s { Uint16 packet_id; Subscription[rest] topics; }
    Message SUBACK = 9 s2c { Uint16 packet_id; Uint8[rest] codes; }
    """
    let s = try! DissectorLoader.parse(text: FieldConditionTests.mqtt, file: "mqtt.dissector")[0]

    func decode(_ bytes: [UInt8], _ dir: Direction = .c2s) -> (names: [String], values: [FieldValue], m: DecodedMessage) {
        let m = DecodedMessage()
        bytes.withUnsafeBytes { b in
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            MessageDecoder(schema: s).decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), dir, into: m)
        }
        var names: [String] = [], values: [FieldValue] = []
        for i in 0..<m.fields.count {
            switch m.fields[i].name {
            case .field(let mi, let fi): names.append(s.messages[Int(mi)].fields[Int(fi)].name)
            case .element(let e): names.append("[\(e)]")
            default: names.append("?")
            }
            values.append(m.fields[i].value)
        }
        return (names, values, m)
    }

    func str(_ t: String) -> [UInt8] { [UInt8(t.utf8.count >> 8), UInt8(t.utf8.count & 0xff)] + Array(t.utf8) }
    func frame(_ first: UInt8, _ body: [UInt8]) -> [UInt8] { [first] + VarintFramingTests.varint(UInt64(body.count)) + body }

    func testAFieldIsThereOnlyWhenItsTestHolds() {
        // QoS 0: no packet id; QoS 1 (bits 0x02): a packet id before the payload.
        let q0 = decode(frame(0x30, str("a/b") + Array("hi".utf8)))
        XCTAssertEqual(q0.names, ["topic", "payload"])
        let q1 = decode(frame(0x32, str("a/b") + [0x12, 0x34] + Array("hi".utf8)))
        XCTAssertEqual(q1.names, ["topic", "packet_id", "payload"])
        XCTAssertEqual(q1.values[1], .unsigned(0x1234))
        XCTAssertEqual(q1.m.fields[2].width, 2)
        // CONNECT: user name and password follow the client id when its flags say so (0xc2).
        let connect = str("MQTT") + [4, 0xc2, 0, 60] + str("c1") + str("ann") + str("pw")
        XCTAssertEqual(decode(frame(0x10, connect)).names, ["protocol_name", "level", "flags", "keep_alive", "client_id", "user_name", "password"])
        let plain = str("MQTT") + [4, 0x02, 0, 60] + str("c1")
        let d = decode(frame(0x10, plain))
        XCTAssertEqual(d.names, ["protocol_name", "level", "flags", "keep_alive", "client_id"])
        XCTAssertTrue(d.m.warnings.isEmpty, "\(d.m.warnings)")
    }

    func testRestArraysTakeElementsToTheBodysEnd() {
        let sub = decode(frame(0x82, [0, 7] + str("x/#") + [1] + str("y") + [2]))
        XCTAssertEqual(sub.names, ["packet_id", "topics", "[0]", "filter", "options", "[1]", "filter", "options"])
        XCTAssertEqual(sub.values[1], .array(count: 2))
        XCTAssertTrue(sub.m.warnings.isEmpty, "\(sub.m.warnings)")
        let ack = decode(frame(0x90, [0, 7, 1, 0x80, 2]), .s2c)
        XCTAssertEqual(ack.values[1], .array(count: 3))
        XCTAssertEqual(ack.values[2...], [.unsigned(1), .unsigned(0x80), .unsigned(2)])
        // An element cut by the body's end is said.
        let cut = decode(frame(0x82, [0, 7] + str("x/#") + [1] + [0, 9, 0x61]))
        XCTAssertFalse(cut.m.warnings.isEmpty)
        // Empty: no elements.
        XCTAssertEqual(decode(frame(0x90, [0, 7]), .s2c).values[1], .array(count: 0))
    }

    /// Sizes and counts from the header or an earlier field (memcached's binary protocol: the
    /// header gives the key and extras lengths, the value is what remains).
    func testSizesAndCountsFromTheHeaderAndEarlierFields() throws {
        let s = try DissectorLoader.parse(text: """
        protocol mc { port 11211; header { uint8 magic; uint8 opcode; uint16 key_length; uint8 extras_length; uint8 n; uint32 total; }
            body_length = total; message_id = opcode; }
        Message Set = 1 { Bytes(extras_length) extras; String(key_length) key; Uint8 k; Uint16[n] ids; String(k) tail; Bytes(rest) value; }
        """, file: "mc.dissector")[0]
        let body: [UInt8] = [0xde, 0xad, 0xbe, 0xef] + Array("key1".utf8) + [2] + [0, 1, 0, 2] + Array("ab".utf8) + Array("VALUE".utf8)
        let frame: [UInt8] = [0x80, 1, 0, 4, 4, 2] + [0, 0, 0, UInt8(body.count)] + body
        let m = DecodedMessage()
        frame.withUnsafeBytes { b in
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            MessageDecoder(schema: s).decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
        }
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
        let f = (0..<m.fields.count).map { m.fields[$0] }
        XCTAssertEqual(f.map(\.width), [4, 4, 1, 4, 2, 2, 2, 5])
        XCTAssertEqual(f[3].value, .array(count: 2))
        // A size beyond the body is said, not read.
        let short: [UInt8] = [0x80, 1, 0, 40, 0, 0] + [0, 0, 0, 3] + [1, 2, 3]
        let w = DecodedMessage()
        short.withUnsafeBytes { b in
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            MessageDecoder(schema: s).decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: w)
        }
        XCTAssertEqual(w.warnings.count, 1, "\(w.warnings)")
        XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol z { port 1; header { uint8 len; } body_length = len; }\nMessage M { String(nosuch) x; }", file: "z.dissector")) { e in
            XCTAssertTrue("\(e)".contains("'nosuch' is not u8, u16, u32, varint, nul, rest, an earlier field of this message or a header field"), "\(e)")
        }
    }

    func testTheLanguage() {
        let errors: [(String, String)] = [
            ("Message M = 1 { String(u16) t; Uint8 x when t; }", "'t' is not a single integer field"),
            ("Message M = 1 { Uint8 x when nosuch; }", "'nosuch' is neither a header field nor an earlier field"),
            ("Message M = 1 { Uint8 x when fixed.nope; }", "'nope' is not a bit field of 'fixed'"),
            ("Message M = 1 { Uint8 x when later; Uint8 later; }", "'later' is neither a header field nor an earlier field"),
        ]
        let head = "protocol z { port 1; header { uint8 fixed { t = 0xf0; } uint8 len; } body_length = len; message_id = fixed.t; }\n"
        for (text, message) in errors {
            XCTAssertThrowsError(try DissectorLoader.parse(text: head + text, file: "z.dissector"), text) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.hasPrefix("z.dissector:2:"), d)
                XCTAssertTrue(d.contains(message), d)
            }
        }
    }

    /// An element whose every field may be absent may take no bytes: allowed, and a count could
    /// then make fields from nothing, so decoding stops at the first element that takes none.
    func testElementsThatTakeNoBytesStopTheirArray() throws {
        let text = "protocol z { port 7001; header { uint8 fixed { t = 0xf0; } uint8 len; } body_length = len; message_id = fixed.t; }\n"
            + "Message E { Uint8 a when fixed.t == 2; } Message M = 1 { E[u8] es; Uint8 tail; } Message N = 2 { E[u8] es; }"
        let schemas = try DissectorLoader.parse(text: text, file: "z.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, [0x10, 2, 200, 7] + [0x20, 3, 2, 5, 6])], piece: 1000, port: 7001)
        let ms = out.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["dir"] != nil && $0["type"] == nil }
        XCTAssertEqual(ms.count, 2, out.text)
        XCTAssertEqual((ms.first?["warnings"] as? [String])?.first, "field 'es' at byte 3 has an element that takes no bytes (none of its fields is there)", out.text)
        XCTAssertEqual(((ms.last?["fields"] as? [String: Any])?["es"] as? [[String: Any]])?.count, 2, out.text)
    }
}
