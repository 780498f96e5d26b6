import XCTest
@testable import FramedumpCore

/// Body kinds are a registry (issue #47): every part that reads a protocol's `body` asks the
/// registered kind. These check each registered kind through every such part, so a new kind is
/// checked by adding its line to `BodyRegistry.kinds`.
final class BodyRegistryTests: XCTestCase {
    let head = "protocol z { port 7301; header { uint16 id; uint32 len; } body_length = len; message_id = id; "

    func testEveryKindIsDeclaredByItsNameAndNamedInTheErrors() throws {
        XCTAssertEqual(BodyRegistry.kinds.map { $0.name }, ["fields", "json", "text", "raw", "protobuf", "msgpack", "socketio"])
        for k in BodyRegistry.kinds {
            guard k.readsFrames else {
                // A kind that reads only a layer's text messages is refused as a body, at its name.
                XCTAssertThrowsError(try DissectorLoader.parse(text: head + "body \(k.name); }", file: "z.dissector")) { e in
                    let d = (e as! DissectorError).description
                    XCTAssertTrue(d.hasPrefix("z.dissector:1:\(head.count + 6):") && d.contains("write 'text \(k.name);'"), d)
                }
                XCTAssertTrue(k.readsText, "\(k.name) reads something")
                continue
            }
            let s = try DissectorLoader.parse(text: head + "body \(k.name.uppercased()); }", file: "z.dissector")[0]
            XCTAssertEqual(s.body.rawValue, k.name)
            XCTAssertTrue(DissectorDescription.text(s).contains("body: \(k.name)"))
            // `text NAME;`: the kinds a layer's text message can be read as, and no other.
            let text = "protocol t { port 7302; websocket; text \(k.name); }"
            if k.readsText {
                XCTAssertEqual(try DissectorLoader.parse(text: text, file: "t.dissector")[0].textBody.rawValue, k.name)
            } else {
                XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: "t.dissector")) { e in
                    let d = (e as! DissectorError).description
                    XCTAssertTrue(d.hasPrefix("t.dissector:1:"), d)
                    XCTAssertTrue(d.contains("text messages are json, text, raw or socketio"), d)
                }
            }
        }
        XCTAssertThrowsError(try DissectorLoader.parse(text: head + "body yaml; }", file: "z.dissector")) { e in
            let d = (e as! DissectorError).description
            XCTAssertTrue(d.hasPrefix("z.dissector:1:"), d)
            XCTAssertTrue(d.contains("body must be one of fields, json, text, raw, protobuf, msgpack") && !d.contains("socketio"), d)
        }
    }

    /// Each kind decodes bytes it was not made for without reading outside the frame, and the
    /// flags the other parts ask agree with what it does.
    func testEveryKindStaysInsideTheFrame() throws {
        var rng = SystemRandomNumberGenerator()
        // (A kind that reads only text messages is fuzzed through them: `scripts/fuzz.sh socketio`.)
        for k in BodyRegistry.kinds where k.readsFrames {
            let s = try DissectorLoader.parse(text: head + "body \(k.name); } Message A = 1 { uint8 a; String b; }", file: "z.dissector")[0]
            let d = MessageDecoder(schema: s)
            let m = DecodedMessage()
            for round in 0..<300 {
                let n = Int.random(in: 0..<40, using: &rng)
                var bytes: [UInt8] = [0, UInt8(round % 3), 0, 0, 0, UInt8(n)]
                let json = Array("{\"a\":[1,\"x\"]}".utf8)
                for j in 0..<n { bytes.append(round % 2 == 0 ? UInt8.random(in: 0...255, using: &rng) : json[j % json.count]) }
                bytes.withUnsafeBytes { b in
                    let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
                    d.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
                    for i in 0..<m.fields.count {
                        let f = m.fields[i]
                        XCTAssertTrue(f.offset >= 6 && Int(f.offset) + Int(f.width) <= b.count, "\(k.name): field out of the body")
                    }
                }
                if k.idsSelectLayout, m.message == nil, n > 0 {
                    XCTAssertTrue(m.warnings.contains(.unknownMessage(UInt64(round % 3))), "\(k.name): an unknown id is said")
                }
            }
        }
        // `-Y` takes any name exactly under the kinds whose names come from the traffic.
        for k in BodyRegistry.kinds where k.readsFrames {
            let s = try DissectorLoader.parse(text: head + "body \(k.name); } Message A = 1 { uint8 a; }", file: "z.dissector")[0]
            let parsed = Result { try FilterParser.parse("z.someName == 1", protocols: [s]) }
            if k.namesFromTraffic { XCTAssertNoThrow(try parsed.get(), k.name) } else { XCTAssertThrowsError(try parsed.get(), k.name) }
        }
    }

    /// `when` is taken only where the kind reads declared fields in their layout; elsewhere it
    /// would be ignored, and is refused where it is written.
    func testWhenOnlyWhereFieldsAreReadInTheirLayout() throws {
        for k in BodyRegistry.kinds where k.readsFrames {
            let text = head + "body \(k.name); }\nMessage A = 1 { Uint8 a; Uint8 b when a; }"
            if k.readsConditions {
                XCTAssertNoThrow(try DissectorLoader.parse(text: text, file: "z.dissector"), k.name)
            } else {
                XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: "z.dissector"), k.name) { e in
                    let d = (e as! DissectorError).description
                    XCTAssertTrue(d.hasPrefix("z.dissector:2:") && d.contains("'when' is not read under body \(k.name)"), d)
                }
            }
        }
        XCTAssertEqual(BodyRegistry.kinds.filter { $0.readsConditions }.map { $0.name }, ["fields"])
    }

    /// A kind's own problems are filed under its class, which `check -r --allow` knows.
    func testAKindsProblemsHaveItsClass() {
        for (i, k) in BodyRegistry.kinds.enumerated() {
            guard let c = k.problemClass else { continue }
            XCTAssertNotNil(ProblemClass(rawValue: c), k.name)
            XCTAssertEqual(DecodeWarning.body(kind: UInt8(i), text: "x").text, "x")
        }
        XCTAssertEqual(ProblemClass.allCases.map(\.rawValue).filter { $0 == "json" || $0 == "protobuf" }.count, 2, "no class twice")
    }
}
