import FramedumpCore
/// Entry points for `scripts/fuzz.sh`: each takes arbitrary bytes and must return (no trap,
/// no hang) whatever they are.
public enum FuzzProtobuf {
    /// `proto-parser`: the bytes as a `.proto` file (importing a second, fixed file).
    public static func protoParser(_ data: UnsafeRawBufferPointer) {
        let text = String(decoding: data, as: UTF8.self)
        let files = ["/fuzz/f.proto": text, "/fuzz/dep.proto": "syntax = \"proto3\"; package dep; message D { int32 a = 1; }"]
        let reg = ProtoRegistry(searchPaths: ["/fuzz"]) { files[$0] }
        _ = try? reg.load("f.proto")
        var s = ProtocolSchema(name: "fuzz", file: "fuzz")
        _ = ProtoTables.attach(reg, to: &s)
    }

    static let wireSchema: ProtocolSchema = {
        let proto = """
            syntax = "proto2";
            package f;
            enum E { A = 0; B = 1; C = -1; }
            message M {
              optional int32 i32 = 1; optional int64 i64 = 2; optional uint32 u32 = 3; optional uint64 u64 = 4;
              optional sint32 s32 = 5; optional sint64 s64 = 6; optional fixed32 f32 = 7; optional fixed64 f64 = 8;
              optional sfixed32 sf32 = 9; optional sfixed64 sf64 = 10; optional float fl = 11; optional double db = 12;
              optional bool b = 13; optional string s = 14; optional bytes by = 15; optional E e = 16;
              optional M child = 17; repeated int32 packed = 18 [packed = true]; repeated string names = 19;
              map<string, M> by_name = 20; map<int64, E> by_id = 21; map<bool, bytes> flags = 22;
              optional group G = 23 { optional int32 x = 24; optional M inner = 25; }
              repeated double ds = 26; repeated E es = 27; optional int32 d = 28 [default = 5];
            }
            """
        let reg = ProtoRegistry(searchPaths: ["/fuzz"]) { $0 == "/fuzz/w.proto" ? proto : nil }
        try! reg.load("w.proto")
        var s = ProtocolSchema(name: "fuzz", file: "fuzz")
        s.header = [HeaderField(name: "id", width: 1, signed: false, order: .big, constant: nil, isPadding: false,
                                offset: 0, nameBytes: Array("id".utf8))]
        s.idField = 0
        s.length = LengthRule(terms: [], countsWholeFrame: true)
        s.body = .protobuf
        s.maxFrame = 1 << 16
        let tables = ProtoTables.attach(reg, to: &s)
        s.proto = tables
        s.messages.append(MessageDef(name: "M", title: nil, id: 1, direction: nil, fields: [], nameBytes: Array("M".utf8),
                                     line: 0, protoType: tables.byName["f.M"]))
        s.byID[.c2s]?[1] = s.messages.count - 1
        s.byID[.s2c]?[1] = s.messages.count - 1
        return s
    }()

    nonisolated(unsafe) static var wireDecoders: [MessageDecoder] = []
    nonisolated(unsafe) static let message = DecodedMessage()

    /// `protobuf-wire`: the first byte picks typed (odd) or schema-less (even) decoding and
    /// whether defaults are added; the rest is the body.
    public static func protobufWire(_ data: UnsafeRawBufferPointer) {
        if wireDecoders.isEmpty {
            var withDefaults = wireSchema
            withDefaults.protoAddDefaults = true
            wireDecoders = [MessageDecoder(schema: wireSchema), MessageDecoder(schema: withDefaults)]
        }
        guard let first = data.first else { return }
        var frame = [UInt8](data)
        frame[0] = first & 1
        let d = wireDecoders[Int(first >> 1) & 1]
        frame.withUnsafeBytes { b in
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            d.decode(Frame(bytes: b, offset: 0, firstPacket: p, lastPacket: p, coalesced: 1), .c2s, into: message)
            for f in message.fields {
                precondition(f.offset >= 0 && Int(f.offset) + Int(f.width) <= b.count, "field outside the body")
            }
        }
    }
}
