import XCTest
@testable import FramedumpCore

/// Varints (issue #39): a header field read as LEB128 (`varint32 length;`, `svarint`,
/// `varint(4)`), the fields after it read where it ends; a length, an id or any header field;
/// and in bodies as a value, a string or bytes prefix and an array count.
final class VarintFramingTests: XCTestCase {
    let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))

    static func varint(_ v: UInt64) -> [UInt8] {
        var v = v, out: [UInt8] = []
        repeat {
            let b = UInt8(v & 0x7f)
            v >>= 7
            out.append(v == 0 ? b : b | 0x80)
        } while v != 0
        return out
    }

    func schema(_ text: String) throws -> ProtocolSchema {
        try DissectorLoader.parse(text: text, file: "v.dissector")[0]
    }

    func decode(_ s: ProtocolSchema, _ bytes: [UInt8]) -> DecodedMessage {
        let m = DecodedMessage()
        bytes.withUnsafeBytes { b in
            MessageDecoder(schema: s).decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
        }
        return m
    }

    func testTheVarintReader() {
        let cases: [([UInt8], Int, VarintRead)] = [
            ([0x00], 10, .value(0, length: 1)),
            ([0x7f], 10, .value(127, length: 1)),
            ([0x80, 0x01], 10, .value(128, length: 2)),
            ([0xac, 0x02], 10, .value(300, length: 2)),
            ([0x80, 0x80, 0x01, 0xff], 10, .value(16384, length: 3)),
            ([0xff, 0xff, 0xff, 0xff, 0x0f], 5, .value(0xffff_ffff, length: 5)),
            ([0xff, 0xff, 0xff, 0xff, 0x8f], 5, .overlong),
            ([0xff, 0xff, 0xff, 0x7f], 3, .overlong),
            ([0xff, 0xff, 0xff], 4, .truncated),
            ([], 4, .truncated),
            ([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], 10, .value(.max, length: 10)),
            ([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], 10, .overlong),  // past 64 bits
            ([0x80, 0x00], 10, .value(0, length: 2)),  // not minimal: protobuf accepts it
        ]
        for (bytes, most, want) in cases {
            XCTAssertEqual(bytes.withUnsafeBytes { $0.varint(0, maxBytes: most) }, want, "\(bytes)")
        }
        XCTAssertEqual([0, 1, 2, 3, 4, 0xffff_fffe, 0xffff_ffff].map(zigzagDecoded), [0, -1, 1, -2, 2, 2_147_483_647, -2_147_483_648])
        for v: UInt64 in [0, 1, 127, 128, 300, 16383, 16384, 1 << 35, .max] {
            XCTAssertEqual(Self.varint(v).withUnsafeBytes { $0.varint(0, maxBytes: 10) }, .value(v, length: Self.varint(v).count))
        }
    }

    // MARK: - Framing

    static let chat = "protocol c { port 7500; header { varint32 length; uint8 kind; } body_length = length - 1; message_id = kind; max_frame 100000; }"

    func frame(_ kind: UInt8, _ body: [UInt8]) -> [UInt8] { Self.varint(UInt64(body.count + 1)) + [kind] + body }

    /// Bodies whose lengths need 1, 2 and 3 varint bytes, under every split of the stream (one
    /// or two cuts: a varint cut between its bytes, from its kind byte, from its body).
    func testEverySplitOfTheStreamGivesTheSameFrames() throws {
        let layout = FrameLayout(try schema(Self.chat))
        XCTAssertTrue(layout.variable)
        XCTAssertEqual(layout.headerSize, 2)
        XCTAssertEqual(layout.maxHeaderSize, 6)
        let frames = [frame(1, [1, 2, 3]), frame(2, Array(repeating: 0xab, count: 200)), frame(3, []),
                      frame(4, Array(repeating: 0x80, count: 17000)), frame(5, [0x80, 0x80])]
        let stream = frames.flatMap { $0 }
        XCTAssertEqual(FrameCollector.deframe(stream, layout: layout, cuts: []).frames, frames)
        // Every single cut, and every pair of cuts around the varints.
        let edges = [0, frames[0].count, frames[0].count + frames[1].count, stream.count - frames[4].count - frames[3].count]
        let near = Set(edges.flatMap { e in (e - 3...e + 4).filter { $0 > 0 && $0 < stream.count } })
        for i in 1..<stream.count where i % 97 == 0 || near.contains(i) {
            let col = FrameCollector.deframe(stream, layout: layout, cuts: [i])
            XCTAssertEqual(col.frames, frames, "cut at \(i)")
            XCTAssertTrue(col.malformed.isEmpty, "cut at \(i): \(col.malformed)")
        }
        for i in near.sorted() {
            for j in near.sorted() where j > i {
                let col = FrameCollector.deframe(stream, layout: layout, cuts: [i, j])
                XCTAssertEqual(col.frames, frames, "cuts at \(i), \(j)")
                XCTAssertTrue(col.malformed.isEmpty, "cuts at \(i), \(j)")
            }
        }
        // A byte at a time.
        XCTAssertEqual(FrameCollector.deframe(stream, layout: layout, cuts: Array(1..<stream.count)).frames, frames)
    }

    /// (With its ids known: without a magic value or known ids, where frames resume after damage
    /// is a guess, which issue #39's resync without a magic value is about.)
    func testAnOverlongVarintIsReportedAndTheNextFrameFound() throws {
        let layout = FrameLayout(try schema(Self.chat))
        let known: (UInt64) -> Bool = { (1...3).contains($0) }
        let good = [frame(1, [9, 9]), frame(2, [8]), frame(3, [7, 7, 7])]
        // Six bytes of continuation: longer than a varint32 may be.
        let bad: [UInt8] = [0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        for cuts in [[], [3], [1, 2, 3, 4, 5, 6, 7]] {
            let col = FrameCollector.deframe(good[0] + bad + good[1] + good[2], layout: layout, cuts: cuts, knownID: known)
            XCTAssertEqual(col.frames, good, "\(cuts)")
            XCTAssertTrue(col.malformed.contains { if case .badVarint(field: "length", maxBytes: 5) = $0.2 { return true }; return false },
                          "\(col.malformed)")
            XCTAssertEqual(col.malformedBytes, UInt64(bad.count), "\(cuts)")
        }
        XCTAssertEqual(MalformedReason.badVarint(field: "length", maxBytes: 5).text, "header field length is a varint longer than 5 bytes")
        // A capture that starts inside a frame finds the boundary after it.
        let stream = good.flatMap { $0 }
        let late = FrameCollector.deframe(Array(stream.dropFirst(2)), layout: layout, cuts: [], startsAtBoundary: false, knownID: known)
        XCTAssertEqual(late.frames, Array(good.dropFirst()))
    }

    /// A protocol with neither a constant nor message ids: after a lost segment (or a capture
    /// that starts inside a frame) nothing in a header tells a frame from the text of a body, so
    /// the resync takes a frame only if its body decodes cleanly (issue #39, item 5).
    func testResyncWithoutAMagicValueAsksTheBody() throws {
        let s = try schema("protocol t { port 7503; header { varint32 length; } body_length = length; }\nMessage Line { Uint8 kind; String(u8) text; }")
        let runtime = ProtocolRuntime(s)
        XCTAssertNotNil(runtime.plausibleBody(.c2s))
        func line(_ kind: UInt8, _ text: String) -> [UInt8] {
            let body = [kind, UInt8(text.utf8.count)] + Array(text.utf8)
            return Self.varint(UInt64(body.count)) + body
        }
        let long = line(1, (0..<9).map { "line \($0) of a long text, " }.joined())
        let rest = [line(2, "after"), line(3, "the long"), line(4, "one"), line(5, "")]
        // The capture starts 40 bytes into the long line.
        let stream = Array(long.dropFirst(40)) + rest.flatMap { $0 }
        let judged = FrameCollector.deframe(stream, layout: runtime.layout, cuts: [7, 100, stream.count - 5], startsAtBoundary: false,
                                            plausibleBody: runtime.plausibleBody(.c2s))
        XCTAssertEqual(judged.frames, rest)
        XCTAssertEqual(judged.malformedBytes, UInt64(long.count - 40))
        // The header alone takes the text for frames.
        let blind = FrameCollector.deframe(stream, layout: runtime.layout, cuts: [7, 100, stream.count - 5], startsAtBoundary: false)
        XCTAssertNotEqual(blind.frames, rest)
        // Where ids, a constant or a delimiter tell frames apart, the body is not asked.
        XCTAssertNil(ProtocolRuntime(try schema(Self.chat + "\nMessage A = 1 { }")).plausibleBody(.c2s))
    }

    /// While resynchronising, a frame whose next header has more bytes than the least header
    /// size but a varint still arriving waits for it: the frame is not skipped.
    func testResyncWaitsForTheNextHeadersVarint() throws {
        let layout = FrameLayout(try schema(Self.chat))
        let good = [frame(1, [9]), frame(2, Array(repeating: 0, count: 200)), frame(3, [7])]
        let stream: [UInt8] = [0] + good.flatMap { $0 }
        // Cut after the second frame's two length bytes, before its kind byte.
        for cuts in [[], [1 + good[0].count + 2]] {
            let col = FrameCollector.deframe(stream, layout: layout, cuts: cuts, startsAtBoundary: false, knownID: { (1...3).contains($0) })
            XCTAssertEqual(col.frames, good, "\(cuts)")
            XCTAssertEqual(col.malformedBytes, 1, "\(cuts)")
        }
    }

    /// The header's fields at the offsets this frame's varints give, a zigzag value, the body after them.
    func testHeaderFieldsAfterAVarintAndZigzag() throws {
        let s = try schema("""
        protocol z { port 7501; header { uint8 magic == 0xa5; svarint delta; varint(4) length; uint16 id; }
        body_length = length; message_id = id; }
        Message Ping = 7 { Uint8 x; }
        """)
        XCTAssertTrue(DissectorDescription.text(s).contains("header (5-17 bytes): uint8 magic == 165; svarint(10) delta; varint(4) length; uint16 id"),
                      DissectorDescription.text(s))
        // delta = -300 (zigzag 599: two bytes), length = 1, id = 7, x = 42.
        let bytes: [UInt8] = [0xa5] + Self.varint(599) + Self.varint(1) + [0x00, 0x07, 42]
        XCTAssertEqual(bytes.withUnsafeBytes { FrameLayout(s).check($0, at: 0) }, .ok(frameLength: bytes.count))
        let m = decode(s, bytes)
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
        XCTAssertEqual(m.id, 7)
        XCTAssertEqual(m.message.map { s.messages[$0].name }, "Ping")
        XCTAssertEqual(m.bodyOffset, 6)
        let header = (0..<m.headerFields.count).map { m.headerFields[$0] }
        XCTAssertEqual(header.map(\.offset), [0, 1, 3, 4])
        XCTAssertEqual(header.map(\.width), [1, 2, 1, 2])
        XCTAssertEqual(header[1].value, .signed(-300))
        XCTAssertEqual(m.fields[0].value, .unsigned(42))
        XCTAssertEqual(m.fields[0].offset, 6)
    }

    /// `message_id = flags.type;`: the id is a named bit group (MQTT's high nibble).
    func testMessageIDFromABitField() throws {
        let s = try schema("""
        protocol mqtt { port 1883; header { uint8 fixed { type = 0xf0; flags = 0x0f; } varint(4) remaining; }
        body_length = remaining; message_id = fixed.type; }
        Message PINGREQ = 12 c2s { }
        Message PUBLISH = 3 { String(u16) topic; Bytes(rest) payload; }
        """)
        XCTAssertTrue(DissectorDescription.text(s).contains("message id: fixed.type (bits 0xf0)"), DissectorDescription.text(s))
        let publish: [UInt8] = [0x31] + Self.varint(7) + [0, 1, 0x74] + Array("abcd".utf8)
        let m = decode(s, publish)
        XCTAssertEqual(m.id, 3)
        XCTAssertEqual(m.message.map { s.messages[$0].name }, "PUBLISH")
        XCTAssertEqual(decode(s, [0xc0, 0x00]).message.map { s.messages[$0].name }, "PINGREQ")
    }

    // MARK: - Bodies

    func testVarintBodyFieldsPrefixesAndCounts() throws {
        let s = try schema("""
        protocol b { port 7502; header { uint8 len; } body_length = len; }
        Message M { Varint a; Svarint b; String(varint) name; Bytes(varint) blob; Uint16[varint] ids; Varint32 c; }
        """)
        let name = Array(String(repeating: "n", count: 130).utf8)
        let body = Self.varint(300) + Self.varint(3) + Self.varint(130) + name + Self.varint(2) + [1, 2]
            + Self.varint(2) + [0, 5, 0, 6] + Self.varint(0xffff_ffff)
        let m = decode(s, [UInt8(body.count)] + body)
        XCTAssertTrue(m.warnings.isEmpty, "\(m.warnings)")
        let v = (0..<m.fields.count).map { m.fields[$0] }
        XCTAssertEqual(v[0].value, .unsigned(300))
        XCTAssertEqual(v[0].width, 2)
        XCTAssertEqual(v[1].value, .signed(-2))
        XCTAssertEqual(v[2].offset, 1 + 3 + 2)
        XCTAssertEqual(v[2].width, 130)
        XCTAssertEqual(v[3].width, 2)
        XCTAssertEqual(v[4].value, .array(count: 2))
        XCTAssertEqual(v[5].value, .unsigned(5))
        XCTAssertEqual(v[6].value, .unsigned(6))
        XCTAssertEqual(v[7].value, .unsigned(0xffff_ffff))
        // A prefix longer than the body, a count no body could hold, a varint32 of six bytes: said, not read.
        for bad in [Self.varint(1) + Self.varint(1) + Self.varint(500) + [1],
                    [0, 0, 0] + Self.varint(1) + [0] + Self.varint(1 << 40)] {
            XCTAssertFalse(decode(s, [UInt8(bad.count)] + bad).warnings.isEmpty, "\(bad)")
        }
        let tooLong: [UInt8] = [0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        XCTAssertFalse(decode(s, [UInt8(tooLong.count)] + tooLong).warnings.isEmpty)
    }

    /// One list of varint names for headers and bodies: each name reads the same in both, with
    /// the same bound; a nonsense name is refused in both.
    func testHeaderAndBodyTakeTheSameVarintNames() throws {
        let names: [(String, Bool, Int)] = [("varint", false, 10), ("uvarint", false, 10), ("varint32", false, 5), ("uvarint32", false, 5),
                                            ("varint64", false, 10), ("uvarint64", false, 10), ("svarint", true, 10), ("sint", true, 10),
                                            ("svarint32", true, 5), ("svarint64", true, 10), ("Varint(4)", false, 4), ("svarint(3)", true, 3)]
        for (name, signed, most) in names {
            let s = try schema("protocol b { port 7404; header { \(name) len; } body_length = len; }\nMessage M { \(name) a; }")
            XCTAssertEqual(s.header[0].signed, signed, name)
            XCTAssertEqual(s.header[0].varintMax, most, name)
            guard case .varint(signed, most) = s.messages[0].fields[0].type else { return XCTFail("\(name): \(s.messages[0].fields[0].type)") }
        }
        for bad in ["suvarint", "varint32(4)", "svarint64(2)"] {
            XCTAssertThrowsError(try schema("protocol b { port 7404; header { \(bad) len; } body_length = len; }"), bad)
            XCTAssertThrowsError(try schema("protocol b { port 7404; header { uint8 len; } body_length = len; }\nMessage M { \(bad) a; }"), bad)
        }
    }

    func testTheLanguage() throws {
        let errors: [(String, String)] = [
            ("header { varint(11) n; } body_length = n;", "a varint takes 1 to 10 bytes, not 11"),
            ("header { varint n { low = 0x0f; } } body_length = n;", "bit fields need a fixed-width integer"),
            ("header { uint8 k; varint n; } body_length = n; message_id = k.type;", "header field 'k' has no bit field 'type'"),
            ("header { uint8 k { t = 0xf0; } varint n; } body_length = n; message_id = k.nope;", "(it has 't')"),
            ("header { varint(2) n == 20000; } body_length = n;", "does not fit in varint"),
        ]
        // A body varint's bound, as a header's.
        let bounded = try schema("protocol b { port 7404; header { uint8 len; } body_length = len; }\nMessage M { Varint(2) a; Svarint(3) b; }")
        guard case .varint(false, 2) = bounded.messages[0].fields[0].type, case .varint(true, 3) = bounded.messages[0].fields[1].type else {
            return XCTFail("\(bounded.messages[0].fields.map(\.type))")
        }
        XCTAssertFalse(decode(bounded, [3, 0x80, 0x80, 0x01]).warnings.isEmpty, "three bytes where two at most are allowed")
        XCTAssertThrowsError(try schema("protocol b { port 7404; header { uint8 len; } body_length = len; }\nMessage M { Varint(11) a; }")) { e in
            XCTAssertTrue("\(e)".contains("Varint(N) takes the most bytes the varint may have, 1 to 10"), "\(e)")
        }
        // A size on a type whose size is its own was once ignored: refused, at the size.
        for field in ["Uint8(3) a;", "Int16(2) a;", "Float(4) a;", "Bool(1) a;", "M(2) a;"] {
            XCTAssertThrowsError(try schema("protocol b { port 7404; header { uint8 len; } body_length = len; }\nMessage M { }\nMessage N { \(field) }"), field) { e in
                let d = "\(e)"
                XCTAssertTrue(d.contains("has a size of its own: it takes no (...)") && d.contains("v.dissector:3:"), d)
            }
        }
        for (setting, message) in errors {
            XCTAssertThrowsError(try schema("protocol z { port 7401; \(setting) }"), setting) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.hasPrefix("v.dissector:1:"), d)
                XCTAssertTrue(d.contains(message), d)
            }
        }
        // An id that the id bits cannot hold is never on the wire.
        XCTAssertThrowsError(try schema("protocol z { port 1; header { uint8 k { t = 0xf0; } varint n; } body_length = n; message_id = k.t; }\nMessage X = 16 { }")) { e in
            XCTAssertTrue("\(e)".contains("does not fit in the id bits 'k.t'"), "\(e)")
        }
    }
}
