import XCTest
@testable import FramedumpCore

/// A protocol whose frames carry no id (no `message_id`): the one message declared without an
/// id is every frame (issue #39's "default message"; before, `Message Envelope : pkg.Envelope;`
/// passed `check` and was never applied). Where it cannot be meant, `check` says why.
final class DefaultMessageTests: XCTestCase {
    func decode(_ s: ProtocolSchema, _ bytes: [UInt8]) -> DecodedMessage {
        let m = DecodedMessage()
        bytes.withUnsafeBytes { b in
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            MessageDecoder(schema: s).decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
        }
        return m
    }

    func testOneProtobufTypeForTheWholeStream() throws {
        let text = """
        protocol env { port 7402; header { uint16 len; } body_length = len; body protobuf; proto "im.proto"; }
        Message Ack : im.SendAck;
        """
        let s = try DissectorLoader.parse(text: text, file: TestSupport.dissectors + "/env.dissector")[0]
        XCTAssertEqual(s.defaultMessage.map { s.messages[$0].name }, "Ack")
        // sender_seq = "q7", code = 3
        let body: [UInt8] = [0x0a, 0x02, 0x71, 0x37, 0x10, 0x03]
        let m = decode(s, [0, UInt8(body.count)] + body)
        XCTAssertEqual(m.message.map { s.messages[$0].name }, "Ack")
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
        let names = (0..<m.fields.count).compactMap { i -> String? in
            if case .field(let mi, let fi) = m.fields[i].name { return s.messages[Int(mi)].fields[Int(fi)].name }
            return nil
        }
        XCTAssertEqual(names, ["sender_seq", "code"])
        XCTAssertTrue(DissectorDescription.text(s).contains("every frame is message Ack"), DissectorDescription.text(s))
    }

    func testFieldsBodyAndNestedTypesAreNoCandidates() throws {
        let text = """
        protocol pos { port 7403; header { uint8 len; } body_length = len; }
        Message Point { Uint8 x; Uint8 y; }
        Message Track { Uint8 id; Point[u8] points; }
        """
        let s = try DissectorLoader.parse(text: text, file: "pos.dissector")[0]
        XCTAssertEqual(s.defaultMessage.map { s.messages[$0].name }, "Track")
        let m = decode(s, [5, 9, 1, 4, 2])
        XCTAssertEqual(m.message.map { s.messages[$0].name }, "Track")
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
    }

    func testWhereNoMessageCanBeEveryFrameCheckSaysWhy() {
        let cases: [(String, String)] = [
            ("protocol z { port 7404; header { uint8 n; } body_length = n; }\nMessage A { Uint8 x; }\nMessage B { Uint8 y; }",
             "'A', 'B' are each declared without an id and nested in no other"),
            ("protocol z { port 7404; header { uint8 n; uint8 id; } body_length = n; message_id = id; body protobuf; proto \"im.proto\"; }\nMessage A : im.SendAck;",
             "'A' has no id, so no frame would be decoded with it"),
        ]
        for (text, message) in cases {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: TestSupport.dissectors + "/z.dissector")) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.contains("z.dissector:") && d.contains(message), d)
            }
        }
    }
}
