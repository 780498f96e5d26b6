import Foundation
import SwiftProtobuf
import XCTest
@testable import FramedumpCore

/// Protobuf bodies: the `.proto` loader against protoc's own descriptors, the wire decoder
/// against `protoc --decode`, malformed and hostile input, and every `.proto` error class.
final class ProtobufTests: XCTestCase {
    static let protoDir = TestSupport.testsDir.appendingPathComponent("Fixtures/proto").path

    /// A protocol `[u16 frame length][u16 id][protobuf body]` whose id 1 is test.kinds.Kinds.
    func kindsSchema(defaults: Bool = false) throws -> ProtocolSchema {
        var s = try DissectorLoader.parse(text: """
            protocol t {
                header { uint16 len; uint16 id; }
                frame_length = len;
                message_id = id;
                body protobuf;
                proto "kinds.proto", "legacy.proto";
            }
            Message K = 1 : test.kinds.Kinds;
            Message L = 2 : test.legacy.Legacy;
            """, file: Self.protoDir + "/t.dissector")[0]
        s.protoAddDefaults = defaults
        return s
    }

    /// Decodes `body` as message `id` and hands the result (and the bytes its offsets refer to) to `check`.
    func decode(_ s: ProtocolSchema, id: UInt16, _ body: [UInt8],
                _ check: (DecodedMessage, UnsafeRawBufferPointer) throws -> Void) rethrows {
        let frame = [UInt8(truncatingIfNeeded: (body.count + 4) >> 8), UInt8(truncatingIfNeeded: body.count + 4),
                     UInt8(id >> 8), UInt8(id & 0xff)] + body
        let d = MessageDecoder(schema: s)
        let m = DecodedMessage()
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
        try frame.withUnsafeBytes { b in
            d.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
            try check(m, m.fieldBytes)
            // Every field lies inside the bytes it refers to.
            for f in m.fields {
                XCTAssertGreaterThanOrEqual(f.offset, 0)
                XCTAssertLessThanOrEqual(Int(f.offset) + Int(f.width), m.fieldBytes.count)
            }
        }
    }

    func protoc(_ args: [String], stdin: [UInt8]? = nil) throws -> [UInt8] {
        let exe = try TestSupport.oracle("protoc")
        var input: String?
        if let stdin {
            let path = NSTemporaryDirectory() + "framedump-protoc-in-\(getpid())"
            try Data(stdin).write(to: URL(fileURLWithPath: path))
            input = path
        }
        let out = NSTemporaryDirectory() + "framedump-protoc-out-\(getpid())"
        let r = try TestSupport.run("/bin/sh", ["-c", "exec \"$0\" \"$@\" > \(out)", exe] + args, stdin: input)
        XCTAssertEqual(r.status, 0, r.stderr)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    // MARK: - Oracles

    /// The loader's view of each test file equals protoc's descriptor of it.
    func testLoaderMatchesProtocDescriptors() throws {
        let bytes = try protoc(["--descriptor_set_out=/dev/stdout", "--include_imports", "-I", Self.protoDir,
                                "kinds.proto", "legacy.proto"])
        let set = try Google_Protobuf_FileDescriptorSet(serializedBytes: bytes)
        let reg = ProtoRegistry(searchPaths: [Self.protoDir])
        try reg.load("kinds.proto")
        try reg.load("legacy.proto")
        var compared = 0
        for f in set.file where !f.name.hasPrefix("google/") {
            guard let mine = reg.files.first(where: { $0.name == f.name }) else { XCTFail("\(f.name) not loaded"); continue }
            XCTAssertEqual(mine, ProtoRegistry.model(f), f.name)
            compared += 1
        }
        XCTAssertEqual(compared, 3)
        // The well-known types came from the embedded copies, with protoc's fields.
        for f in set.file where f.name == "google/protobuf/timestamp.proto" {
            let mine = reg.files.first { $0.name == f.name }
            XCTAssertEqual(mine?.messages.map(\.fields), ProtoRegistry.model(f).messages.map(\.fields))
        }
    }

    /// A compiled descriptor set gives the same schema as the .proto text.
    func testDescriptorSetLoadsLikeTheText() throws {
        let bytes = try protoc(["--descriptor_set_out=/dev/stdout", "--include_imports", "-I", Self.protoDir, "kinds.proto"])
        let fromSet = ProtoRegistry(searchPaths: [])
        try fromSet.loadDescriptorSet(path: "kinds.desc", bytes: bytes)
        let fromText = ProtoRegistry(searchPaths: [Self.protoDir])
        try fromText.load("kinds.proto")
        XCTAssertEqual(fromSet.messages["test.kinds.Kinds"], fromText.messages["test.kinds.Kinds"])
        XCTAssertThrowsError(try ProtoRegistry(searchPaths: []).loadDescriptorSet(path: "x.desc", bytes: [0x0a, 0xff]))
    }

    /// A dissector naming a compiled descriptor set decodes like one naming the .proto text.
    func testDissectorWithDescriptorSetDecodesLikeText() throws {
        let desc = NSTemporaryDirectory() + "framedump-kinds-\(getpid()).desc"
        _ = try protoc(["--descriptor_set_out=" + desc, "--include_imports", "-I", Self.protoDir, "kinds.proto"])
        let fromSet = try DissectorLoader.parse(text: """
            protocol t {
                header { uint16 len; uint16 id; }
                frame_length = len;
                message_id = id;
                body protobuf;
                proto_descriptor "\(desc)";
            }
            Message K = 1 : test.kinds.Kinds;
            """, file: "/nonexistent/t.dissector")[0]
        let bin = try protoc(["-I", Self.protoDir, "--encode=test.kinds.Kinds", "kinds.proto"], stdin: Array(Self.kindsText.utf8))
        var a = "", b2 = ""
        let text = try kindsSchema()
        decode(fromSet, id: 1, bin) { m, b in a = TextFormat.render(m, fromSet, b) }
        decode(text, id: 1, bin) { m, b in b2 = TextFormat.render(m, text, b) }
        XCTAssertEqual(a, b2)
        XCTAssertTrue(a.contains("color: NEGATIVE"), a)
    }

    static let kindsText = """
        i32: -7
        i64: -9000000000
        u32: 4000000000
        u64: 18446744073709551615
        s32: -12345
        s64: -9223372036854775808
        f32: 305419896
        f64: 1311768467294899695
        sf32: -2
        sf64: -3
        fl: 1.5
        db: -2.25
        flag: true
        text: "hello \\"world\\"\\n"
        blob: "\\000\\001\\377"
        color: NEGATIVE
        inner { label: "in" deltas: -1 deltas: 2 }
        packed_ints: [1, 150, -1]
        loose_ints: 3
        loose_ints: 4
        names: "a"
        names: ""
        scores { key: "x" value: 1 }
        scores { key: "y" value: -2 }
        by_id { key: -5 value { label: "five" } }
        choice_number: 42
        maybe: 0
        child { i32: 1 child { text: "deep" } }
        shared { version: 3 level: HIGH }
        when { seconds: 1700000000 nanos: 5 }
        wrapped { value: 9 }
        colors: [RED, GREEN, 7]
        doubles: [0.5, 3]
        flags { key: true value: "yes" }
        json_named: "j"
        """

    /// Bytes encoded by protoc from text; framedump's decoded values, written as protobuf
    /// text format, equal `protoc --decode` of the same bytes.
    func testDecodedValuesMatchProtocDecode() throws {
        let bin = try protoc(["-I", Self.protoDir, "--encode=test.kinds.Kinds", "kinds.proto"], stdin: Array(Self.kindsText.utf8))
        let expected = String(decoding: try protoc(["-I", Self.protoDir, "--decode=test.kinds.Kinds", "kinds.proto"], stdin: bin),
                              as: UTF8.self)
        let s = try kindsSchema()
        decode(s, id: 1, bin) { m, b in
            XCTAssertEqual(m.warnings, [])
            XCTAssertEqual(TextFormat.render(m, s, b), expected)
        }
    }

    /// Packed and unpacked encodings of the same repeated field decode alike (protoc decodes both).
    func testPackedAndUnpackedBothAccepted() throws {
        let s = try kindsSchema()
        // packed_ints (18) written unpacked, loose_ints (19) written packed.
        let body: [UInt8] = [0x90, 0x01, 0x05, 0x90, 0x01, 0x06, 0x9a, 0x01, 0x02, 0x07, 0x08]
        let expected = String(decoding: try protoc(["-I", Self.protoDir, "--decode=test.kinds.Kinds", "kinds.proto"], stdin: body),
                              as: UTF8.self)
        decode(s, id: 1, body) { m, b in
            XCTAssertEqual(TextFormat.render(m, s, b), expected)
            XCTAssertEqual(m.fields.map(\.value), [.array(count: 2), .signed(5), .signed(6), .array(count: 2), .signed(7), .signed(8)])
        }
    }

    func testProto2GroupsDefaultsAndUnknownFields() throws {
        let s = try kindsSchema(defaults: true)
        let text = "id: 5\nItem { key: \"k\" count: 2 }\nplain_list: 1\nplain_list: 2\n"
        var bin = try protoc(["-I", Self.protoDir, "--encode=test.legacy.Legacy", "legacy.proto"], stdin: Array(text.utf8))
        bin += [0xa8, 0x1f, 0x2a]  // field 501 = 42, not in the schema
        decode(s, id: 2, bin) { m, b in
            let names = m.fields.map { f -> String in
                switch f.name {
                case .field(let mi, let fi): return s.messages[Int(mi)].fields[Int(fi)].name
                case .unknown(let n, let w): return "#\(n)/\(w)"
                case .element(let i): return "[\(i)]"
                default: return "?"
                }
            }
            XCTAssertEqual(names, ["id", "plain_list", "[0]", "[1]", "item", "key", "count", "#501/0",
                                   // --proto-defaults: what was not on the wire, at its default
                                   // (text defaults other than "" have no bytes to point at: left out)
                                   "big", "ratio", "on", "mode"])
            XCTAssertEqual(m.fields[4].value, .object(count: 2))
            XCTAssertEqual(m.fields[7].value, .unsigned(42))
            XCTAssertEqual(m.fields[8].value, .signed(-5))
            XCTAssertEqual(m.fields[9].value, .float(1.5))
            XCTAssertEqual(m.fields[10].value, .bool(true))
            XCTAssertEqual(m.fields[11].value, .signed(2))
            XCTAssertEqual(m.fields[8].width, 0)
            _ = b
        }
    }

    /// Both outputs of one message covering every kind: NDJSON with json names, exact 64-bit
    /// integers, enums by name (repeated ones too, unknown numbers kept), maps as objects;
    /// the tree with enum labels and map keys.
    func testOutputsOfEveryKind() throws {
        let bin = try protoc(["-I", Self.protoDir, "--encode=test.kinds.Kinds", "kinds.proto"], stdin: Array(Self.kindsText.utf8))
        let runtime = ProtocolRuntime(try kindsSchema())
        let frame = [UInt8((bin.count + 4) >> 8), UInt8((bin.count + 4) & 0xff), 0, 1] + bin
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
        let c = Connection(number: 1, client: Endpoint(IPAddress(v4: 0x7f00_0001), 40000),
                           server: Endpoint(IPAddress(v4: 0x7f00_0001), 9000), rolesFromSYN: true, packet: p)
        let m = DecodedMessage()
        var json = "", tree = ""
        frame.withUnsafeBytes { b in
            runtime.decoder.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: m)
            let jo = OutputBuffer(fd: nil)
            JSONPrinter(output: jo, diffable: true).message(m, c, runtime)
            json = jo.text
            let to = OutputBuffer(fd: nil)
            TreePrinter(output: to, hexDump: false, verbose: false, color: false).message(m, c, runtime)
            tree = to.text
        }
        for piece in ["\"i64\":-9000000000", "\"u64\":18446744073709551615", "\"s64\":-9223372036854775808",
                      "\"blob\":\"0001ff\"", "\"color\":\"NEGATIVE\"", "\"packedInts\":[1,150,-1]",
                      "\"scores\":{\"x\":1,\"y\":-2}", "\"byId\":{\"-5\":{\"label\":\"five\"}}",
                      "\"colors\":[\"RED\",\"GREEN\",7]", "\"flags\":{\"true\":\"yes\"}", "\"customName\":\"j\"",
                      "\"shared\":{\"version\":3,\"level\":\"HIGH\"}", "\"text\":\"hello \\\"world\\\"\\n\""] {
            XCTAssertTrue(json.contains(piece), "\(piece) not in \(json)")
        }
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(json.utf8)))
        for piece in ["color: -3 (NEGATIVE)", "scores {2 fields}", "[\"x\"]: 1", "[-5] {1 field}", "[true]: \"yes\"",
                      "packed_ints [3 elements]", "K (id 1) test.kinds.Kinds"] {
            XCTAssertTrue(tree.contains(piece), "\(piece) not in \(tree)")
        }
    }

    // MARK: - Hostile and malformed wire data

    func warnings(_ body: [UInt8], id: UInt16 = 1) throws -> ([String], [FieldValue]) {
        let s = try kindsSchema()
        var out: ([String], [FieldValue]) = ([], [])
        decode(s, id: id, body) { m, _ in out = (m.warnings.map(\.text), m.fields.map(\.value)) }
        return out
    }

    func testMalformedWireIsReportedWithItsOffsetAndDecodingGoesOn() throws {
        // i32 = 1, then a varint that never ends.
        var (w, v) = try warnings([0x08, 0x01, 0x10, 0xff, 0xff])
        XCTAssertEqual(w, ["malformed protobuf at byte 7: value of 'test.kinds.Kinds.i64' runs past the end of the body"])
        XCTAssertEqual(v, [.signed(1), .bytes])
        // text (14) announces 5 bytes, 1 is there.
        (w, v) = try warnings([0x08, 0x01, 0x72, 0x05, 0x61])
        XCTAssertEqual(w, ["malformed protobuf at byte 7: length 5 runs past the end of the body (1 bytes left)"])
        XCTAssertEqual(v, [.signed(1), .bytes])
        // Wire type 7 does not exist.
        (w, _) = try warnings([0x08, 0x01, 0x0f])
        XCTAssertEqual(w, ["malformed protobuf at byte 6: invalid wire type 7 (field 1)"])
        // A group end without its start; a group closed by another number (schema-less, id 9).
        (w, _) = try warnings([0x0c], id: 9)
        XCTAssertEqual(w.last, "malformed protobuf at byte 4: group end for field 1 without its start")
        (w, _) = try warnings([0x0b, 0x08, 0x01, 0x14], id: 9)
        XCTAssertEqual(w.last, "malformed protobuf at byte 7: group end 2 does not match group 1")
        (w, _) = try warnings([0x0b, 0x08, 0x01], id: 9)
        XCTAssertEqual(w.last, "malformed protobuf at byte 7: group 1 is not closed")
        // A tag varint longer than 10 bytes; field number 0.
        (w, _) = try warnings([UInt8](repeating: 0x80, count: 11) + [0x01])
        XCTAssertEqual(w, ["malformed protobuf at byte 4: truncated or overlong varint in a field tag"])
        (w, _) = try warnings([0x00, 0x01])
        XCTAssertEqual(w, ["malformed protobuf at byte 4: field number 0 is out of range"])
        // A field of the wrong wire type is kept as an unknown field.
        (w, v) = try warnings([0x75, 0x01, 0x02, 0x03, 0x04])  // text (string) as fixed32
        XCTAssertEqual(v, [.unsigned(0x0403_0201)])
        XCTAssertEqual(w, ["field 'test.kinds.Kinds.text' (string) arrived as fixed32 at byte 4: shown as an unknown field"])
    }

    func testInvalidUTF8IsFlaggedNotFatal() throws {
        let (w, v) = try warnings([0x72, 0x02, 0xc3, 0x28, 0x08, 0x01])
        XCTAssertEqual(w, ["field 'test.kinds.Kinds.text' is not valid UTF-8"])
        XCTAssertEqual(v, [.string, .signed(1)])
    }

    func testDeepRecursionStopsAtTheDepthLimit() throws {
        // child (26) inside child, 500 deep.
        var body: [UInt8] = [0x08, 0x01]
        for _ in 0..<500 {
            var len: [UInt8] = []
            var n = body.count
            while n >= 0x80 { len.append(UInt8(n & 0x7f) | 0x80); n >>= 7 }
            len.append(UInt8(n))
            body = [0xd2, 0x01] + len + body
        }
        let s = try kindsSchema()
        decode(s, id: 1, body) { m, _ in
            XCTAssertEqual(m.warnings.map(\.text).filter { $0.contains("nested deeper than 64") }.count, 1)
            XCTAssertEqual(m.fields.map(\.depth).max(), 64)
            XCTAssertEqual(m.fields.last?.name, .builtin(.undecoded))
        }
    }

    func testSchemaLessDecodingGuessesTypes() throws {
        // Person { age: 7, username: "typing" } and a nested message, under an unbound id.
        let body: [UInt8] = [0x08, 0x07, 0x12, 0x02, 0x68, 0x69, 0x1a, 0x03, 0x08, 0x96, 0x01, 0x25, 1, 0, 0, 0, 0x2a, 0x02, 0xff, 0x00]
        let s = try kindsSchema()
        decode(s, id: 9, body) { m, _ in
            XCTAssertEqual(m.fields.map(\.name), [.unknown(number: 1, wire: 0), .unknown(number: 2, wire: 2),
                                                 .unknown(number: 3, wire: 2), .unknown(number: 1, wire: 0),
                                                 .unknown(number: 4, wire: 5), .unknown(number: 5, wire: 2)])
            XCTAssertEqual(m.fields.map(\.value), [.unsigned(7), .validString, .object(count: 1), .unsigned(150), .unsigned(1), .bytes])
        }
    }

    /// Random bodies never trap, every field stays inside the body, and the list stays bounded.
    func testRandomBodiesStayInBounds() throws {
        let s = try kindsSchema()
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let n = Int.random(in: 0..<64, using: &rng)
            var body = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random() && !body.isEmpty { body[0] = [0x8a, 0xd2, 0xaa, 0xb2][Int.random(in: 0..<4)] }
            decode(s, id: [1, 2, 9][Int.random(in: 0..<3)], body) { m, _ in
                XCTAssertLessThanOrEqual(m.fields.count, body.count + 1)
            }
        }
    }

    // MARK: - .proto syntax errors

    func testEveryProtoErrorClassHasItsLocation() throws {
        let cases: [(String, Int, Int, String)] = [
            ("syntax = \"proto3\";\nmessage A { int32 a = 1 }", 2, 25, "expected ';' after field 'a'"),
            ("syntax = \"proto4\";", 1, 10, "unknown syntax \"proto4\""),
            ("message A {}\nsyntax = \"proto3\";", 2, 1, "must be the first statement"),
            ("edition = \"2023\";", 1, 1, "editions"),
            ("syntax = \"proto3\";\nmessage A { Missing m = 1; }", 2, 13, "unknown type 'Missing'"),
            ("syntax = \"proto3\";\nmessage A { int32 a = 1; int32 b = 1; }", 2, 26, "field number 1 of 'b' is already used by 'a'"),
            ("syntax = \"proto3\";\nmessage A { int32 a = 1; string a = 2; }", 2, 26, "declared twice"),
            ("syntax = \"proto3\";\nmessage A { reserved 5; int32 a = 5; }", 2, 25, "reserved number 5"),
            ("syntax = \"proto3\";\nmessage A { reserved \"x\"; int32 x = 1; }", 2, 27, "field name 'x' is reserved"),
            ("syntax = \"proto3\";\nmessage A { int32 a = 0; }", 2, 23, "out of range"),
            ("syntax = \"proto3\";\nmessage A { int32 a = 536870912; }", 2, 23, "out of range"),
            ("syntax = \"proto3\";\nmessage A { int32 a = 19500; }", 2, 23, "reserved for the protobuf implementation"),
            ("syntax = \"proto2\";\nmessage A { int32 a = 1; }", 2, 13, "needs a label"),
            ("syntax = \"proto3\";\nmessage A { required int32 a = 1; }", 2, 13, "'required' is not allowed in proto3"),
            ("syntax = \"proto3\";\nmessage A { map<float, int32> m = 1; }", 2, 17, "cannot be a map key"),
            ("syntax = \"proto3\";\nmessage A { string s = 1 [default = \"x\"]; }", 2, 27, "default values are not allowed in proto3"),
            ("syntax = \"proto3\";\nmessage A { oneof o { optional int32 a = 1; } }", 2, 23, "fields in a oneof have no label"),
            ("syntax = \"proto2\";\nmessage A { optional group item = 1 {} }", 2, 28, "must start with a capital letter"),
            ("syntax = \"proto3\";\nenum E { A = 1; }", 2, 6, "first value of a proto3 enum must be 0"),
            ("syntax = \"proto3\";\nenum E { A = 0; B = 0; }", 2, 17, "reuses the number 0"),
            ("syntax = \"proto3\";\nmessage A { string s = 1; } \"open", 2, 29, "string is not closed"),
            ("syntax = \"proto3\";\n/* never closed\nmessage A {}", 2, 1, "comment is not closed"),
            ("syntax = \"proto3\";\nmessage A { int32 a = 1; } @", 2, 28, "unexpected character '@'"),
            ("syntax = \"proto3\";\nmessage A { string s = 1 [json_name = \"\\q\"]; }", 2, 40, "unknown escape"),
            ("syntax = \"proto3\";\nimport \"nowhere.proto\";", 2, 8, "cannot find 'nowhere.proto'"),
            ("syntax = \"proto3\";\nmessage A {\n  int32 a = 1;\n", 2, 9, "message 'A' is not closed"),
            ("syntax = \"proto3\";\nmessage A { repeated string s = 1 [packed = true]; }", 2, 22, "[packed] applies only"),
        ]
        for (text, line, column, fragment) in cases {
            let reg = ProtoRegistry(searchPaths: ["/nonexistent"]) { $0 == "/nonexistent/t.proto" ? text : nil }
            XCTAssertThrowsError(try reg.load("t.proto"), text) { e in
                guard let e = e as? DissectorError else { return XCTFail("not a DissectorError: \(e)") }
                XCTAssertTrue(e.message.contains(fragment), "\(e.message) does not say \(fragment)")
                XCTAssertEqual(e.file, "/nonexistent/t.proto", text)
                XCTAssertEqual(e.line, line, "\(text)\n\(e)")
                XCTAssertEqual(e.column, column, "\(text)\n\(e)")
                // file:line:column, then the line and a caret under the column.
                let lines = e.description.split(separator: "\n", omittingEmptySubsequences: false)
                XCTAssertTrue(lines[0].hasPrefix("/nonexistent/t.proto:\(line):\(column): error: "))
                XCTAssertEqual(lines.count, 3)
                XCTAssertEqual(lines[2].count, 4 + column, "caret under column \(column)")
            }
        }
    }

    /// A big enum used by many fields: labels are copied only up to a budget (1M entries), so
    /// loading stays linear; the fields past it show numbers.
    func testHostileEnumFanOutIsBounded() throws {
        let values = (0..<2000).map { "V\($0) = \($0);" }.joined(separator: " ")
        let fields = (0..<1000).map { "E f\($0) = \($0 + 1);" }.joined(separator: " ")
        let text = "syntax = \"proto3\"; enum E { \(values) } message M { \(fields) }"
        let reg = ProtoRegistry(searchPaths: ["/p"]) { $0 == "/p/big.proto" ? text : nil }
        try reg.load("big.proto")
        var s = ProtocolSchema(name: "t", file: "t")
        let t = ProtoTables.attach(reg, to: &s)
        let m = s.messages[t.byName["M"]!]
        XCTAssertEqual(m.fields.filter { $0.labels != nil }.count, (1 << 20) / 2000)
        XCTAssertEqual(m.fields[0].labels?[1999], "V1999")
        XCTAssertNil(m.fields[999].labels)
    }

    func testImportCycleIsAnError() throws {
        let files = ["/p/a.proto": "syntax = \"proto3\";\nimport \"b.proto\";", "/p/b.proto": "syntax = \"proto3\";\nimport \"a.proto\";"]
        let reg = ProtoRegistry(searchPaths: ["/p"]) { files[$0] }
        XCTAssertThrowsError(try reg.load("a.proto")) { e in
            XCTAssertTrue("\(e)".contains("import cycle: a.proto → b.proto → a.proto"), "\(e)")
            XCTAssertTrue("\(e)".hasPrefix("/p/b.proto:2:8: error:"), "\(e)")
        }
    }

    func testDissectorBindingErrors() throws {
        let head = "protocol t { header { uint16 len; uint16 id; } frame_length = len; message_id = id; body protobuf; "
        let cases: [(String, String)] = [
            (head + "proto \"kinds.proto\"; }\nMessage K = 1 : test.kinds.Nope;", "unknown protobuf message 'test.kinds.Nope'"),
            (head + "proto \"missing.proto\"; }", "cannot find 'missing.proto'"),
            (head + "key k; cipher aes_cbc key k iv \"000102030405060708090a0b0c0d0e0f\"; }", "give it with --key k=HEX"),
            (head + "key k = \"0011\"; cipher aes_ecb key k; }", "AES needs 16, 24 or 32"),
            (head + "key k = \"000102030405060708090a0b0c0d0e0f\"; cipher aes_cbc key k; }", "needs an IV"),
            (head + "key k = \"000102030405060708090a0b0c0d0e0f\"; cipher aes_xts key k; }", "unknown cipher 'aes_xts'"),
            (head + "key k = \"000102030405060708090a0b0c0d0e0f\"; cipher aes_ecb key k when nope == 1; }", "'nope' is not a header field"),
        ]
        for (text, fragment) in cases {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: Self.protoDir + "/t.dissector"), text) { e in
                XCTAssertTrue("\(e)".contains(fragment), "\(e)")
                XCTAssertTrue("\(e)".hasPrefix(Self.protoDir + "/t.dissector:"), "\(e)")
            }
        }
        // A key given on the command line fills a key the file only names.
        let s = try DissectorLoader.parse(text: head + "key k; cipher aes_ctr key k iv \"000102030405060708090a0b\"; }",
                                          file: Self.protoDir + "/t.dissector",
                                          options: LoadOptions(keys: ["k": [UInt8](repeating: 7, count: 32)]))[0]
        guard case .aes(let a)? = s.transforms.first?.kind else { return XCTFail("no AES transform") }
        XCTAssertEqual(a.key.count, 32)
        XCTAssertEqual("\(s.transforms[0].name)", "aes-256-ctr")
    }

    // MARK: - AES

    /// Bodies encrypted by `openssl enc` decrypt to the same bytes (CBC and ECB with PKCS#7, CTR).
    func testCipherMatchesOpenSSL() throws {
        let openssl = try TestSupport.oracle("openssl")
        let plain = Array("the body: 你好, 48 bytes or so, any length works!".utf8)
        let path = NSTemporaryDirectory() + "framedump-aes-\(getpid())"
        try Data(plain).write(to: URL(fileURLWithPath: path))
        let iv = "0f0e0d0c0b0a09080706050403020100"
        let cases: [(String, String, BodyCipherSpec.Mode, Bool)] = [
            ("-aes-128-cbc", "000102030405060708090a0b0c0d0e0f", .cbc, true),
            ("-aes-192-cbc", "000102030405060708090a0b0c0d0e0f1011121314151617", .cbc, true),
            ("-aes-256-ecb", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", .ecb, false),
            ("-aes-128-ctr", "2b7e151628aed2a6abf7158809cf4f3c", .ctr, true),
        ]
        for (alg, key, mode, withIV) in cases {
            let r = try TestSupport.run("/bin/sh", ["-c", "\"$0\" enc \(alg) -K \(key) \(withIV ? "-iv " + iv : "") -in \(path) | od -An -v -tx1", openssl])
            XCTAssertEqual(r.status, 0, r.stderr)
            let ct = BodyCipherSpec.hex(r.stdout.filter { !$0.isWhitespace })!
            let spec = BodyCipherSpec(mode: mode, keyName: "k", key: BodyCipherSpec.hex(key)!,
                                      iv: withIV ? BodyCipherSpec.hex(iv)! : [])
            let frame: [UInt8] = [1, 2, 3] + ct
            switch TransformRun.one(.aes(spec), frame, headerSize: 3) {
            case .done(let p): XCTAssertEqual(p, [1, 2, 3] + plain, alg)
            case .failed(let w): XCTFail("\(alg): \(w)")
            case .untouched: XCTFail("\(alg): not run")
            }
            if mode == .cbc {
                // The wrong key: bad padding, one warning, nothing decoded.
                var wrong = spec
                wrong.key[0] ^= 1
                guard case .failed(let w) = TransformRun.one(.aes(wrong), frame, headerSize: 3) else {
                    return XCTFail("wrong key accepted")
                }
                XCTAssertTrue(w.contains("bad PKCS#7 padding"), w)
            }
        }
    }

    /// The sample's AES connection decodes with the dissector's key; a wrong `--key` gives one
    /// warning per message and the raw body, and the key is never printed.
    func testSampleAESConnectionAndWrongKey() throws {
        var r = try TestSupport.framedump(["-r", "samples/im.pcap", "-T", "json", "--diffable"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let decrypted = r.stdout.split(separator: "\n").filter { $0.contains("\"transforms\":[{\"name\":\"aes-128-cbc\"") }
        XCTAssertEqual(decrypted.count, 10)
        XCTAssertTrue(decrypted.contains { $0.contains("\"username\":\"alice3\"") })
        let wrong = "ffeeddccbbaa99887766554433221100"
        r = try TestSupport.framedump(["-r", "samples/im.pcap", "--key", "im_session=" + wrong])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.components(separatedBy: "warning: bad PKCS#7 padding").count - 1, 10)
        XCTAssertFalse(r.stdout.contains(wrong) || r.stderr.contains(wrong))
        r = try TestSupport.framedump(["-r", "samples/im.pcap", "--key", "im_session=" + wrong.dropLast(2)])
        XCTAssertEqual(r.status, 2, r.stderr)  // a usage error
        XCTAssertFalse(r.stderr.contains(wrong.dropLast(2)), r.stderr)
    }
}

/// Decoded fields written as protobuf text format, the way `protoc --decode` prints them.
enum TextFormat {
    static func render(_ m: DecodedMessage, _ s: ProtocolSchema, _ b: UnsafeRawBufferPointer) -> String {
        var out = ""
        var i = 0
        let fs = Array(m.fields)
        while i < fs.count { i = field(fs, i, s, b, indent: 0, name: nil, &out) }
        return out
    }

    static func escape(_ bytes: UnsafeRawBufferPointer.SubSequence) -> String {
        var o = "\""
        for c in bytes {
            switch c {
            case 0x0a: o += "\\n"
            case 0x0d: o += "\\r"
            case 0x09: o += "\\t"
            case 0x22: o += "\\\""
            case 0x27: o += "\\'"
            case 0x5c: o += "\\\\"
            case 0x20..<0x7f: o.append(Character(Unicode.Scalar(c)))
            default:
                let oct = String(c, radix: 8)
                o += "\\" + String(repeating: "0", count: 3 - oct.count) + oct
            }
        }
        return o + "\""
    }

    static func scalar(_ f: DecodedField, _ def: FieldDef?, _ b: UnsafeRawBufferPointer) -> String {
        switch f.value {
        case .signed(let v): return def?.labels?[v] ?? String(v)
        case .unsigned(let v): return String(v)
        case .bool(let v): return v ? "true" : "false"
        case .float(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .string, .validString, .bytes: return escape(b[Int(f.offset)..<Int(f.offset + f.width)])
        default: return "?"
        }
    }

    /// Writes field `i` (named `name`, or its own name) and its children; returns the next index.
    static func field(_ fs: [DecodedField], _ i: Int, _ s: ProtocolSchema, _ b: UnsafeRawBufferPointer, indent: Int,
                      name: String?, _ out: inout String) -> Int {
        let f = fs[i]
        let pad = String(repeating: " ", count: indent)
        var def: FieldDef?
        if case .field(let mi, let fi) = f.name { def = s.messages[Int(mi)].fields[Int(fi)] }
        let n = name ?? def?.name ?? "?"
        switch f.value {
        case .array(let count):
            var j = i + 1
            for _ in 0..<count {
                var d = def
                d?.name = n
                if case .object = fs[j].value {
                    j = field(fs, j, s, b, indent: indent, name: n, &out)
                } else {
                    out += pad + n + ": " + scalar(fs[j], def, b) + "\n"
                    j += 1
                }
            }
            return j
        case .object(let count):
            var j = i + 1
            let isMap = count > 0 && { switch fs[i + 1].name {
                case .stringKey, .intKey, .uintKey, .boolKey: return true
                default: return false } }()
            if isMap {
                for _ in 0..<count {
                    let e = fs[j]
                    out += pad + n + " {\n" + pad + "  key: "
                    switch e.name {
                    case .stringKey(let o, let l): out += escape(b[Int(o)..<Int(o + l)])
                    case .intKey(let v): out += String(v)
                    case .uintKey(let v): out += String(v)
                    case .boolKey(let v): out += v ? "true" : "false"
                    default: break
                    }
                    out += "\n"
                    if case .object = e.value {
                        j = field(fs, j, s, b, indent: indent + 2, name: "value", &out)
                    } else {
                        // A map value's labels are those of the entry's value field.
                        out += pad + "  value: " + scalar(e, nil, b) + "\n"
                        j += 1
                    }
                    out += pad + "}\n"
                }
                return j
            }
            out += pad + n + " {\n"
            for _ in 0..<count { j = field(fs, j, s, b, indent: indent + 2, name: nil, &out) }
            out += pad + "}\n"
            return j
        default:
            out += pad + n + ": " + scalar(f, def, b) + "\n"
            return i + 1
        }
    }
}
