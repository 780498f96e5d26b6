import FramedumpCore
/// Fuzz entries for the dissector language together with traffic (`dissector`), and for the
/// display-filter language (`display-filter`). Each takes arbitrary bytes and must return,
/// whatever they are, without a trap, a hang or an allocation the input announces.
public enum FuzzDissector {
    /// The bytes up to the first NUL are a dissector file (its protocol is put on port 8000 if it
    /// names none); the rest is a connection's traffic, cut between the two directions by its
    /// first byte. The messages go through the tree and NDJSON printers (every NDJSON line strict JSON).
    public static func fileAndTraffic(_ data: UnsafeRawBufferPointer) {
        let cut = data.firstIndex(of: 0) ?? data.count
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: data[0..<cut]), as: UTF8.self)
        guard var protocols = try? DissectorLoader.parse(text: text, file: "fuzz.dissector"), !protocols.isEmpty else { return }
        for i in protocols.indices where protocols[i].ports.isEmpty { protocols[i].ports = [8000] }
        let traffic = cut < data.count ? Array(UnsafeRawBufferPointer(rebasing: data[(cut + 1)...])) : []
        let split = traffic.isEmpty ? 0 : Int(traffic[0]) % traffic.count
        let c2s = Array(traffic.dropFirst().prefix(split)), s2c = Array(traffic.dropFirst().dropFirst(split))
        for json in [false, true] {
            let out = OutputBuffer(fd: nil)
            let sink: MessageSink = json ? JSONPrinter(output: out, diffable: false)
                : TreePrinter(output: out, hexDump: true, verbose: true, color: false)
            let sessions = SessionManager(protocols: protocols, sink: sink)
            // (The tree's pass in one-byte pieces: frames measured by decoding them are then
            // measured late, past 64 times their bytes.)
            FuzzStreams.feed(sessions, c2s: c2s, s2c: s2c, piece: json ? 7 : 1, syn: true, port: protocols[0].ports.first ?? 8000)
            if json { FuzzDeframer.checkNDJSON(out.bytes) }
        }
    }

    /// The bytes as a `-Y` filter, parsed against the shipped protocols' shapes and evaluated on
    /// a decoded game message.
    public static func displayFilter(_ data: UnsafeRawBufferPointer) {
        let text = String(decoding: data, as: UTF8.self)
        guard let expr = try? FilterParser.parse(text, protocols: schemas) else { return }
        let sink = FilteringSink(NullSink(), filter: expr)
        let sessions = SessionManager(protocols: schemas, sink: sink)
        // Sc_20001 with every field, then a JSON body.
        let game: [UInt8] = [0, 0, 0, 22, 0x4e, 0x21, 1, 0, 0, 0, 7, 3, 10, 7, 0, 0, 0x10, 0x68, 0, 2, 0x68, 0x69]
        FuzzStreams.feed(sessions, c2s: [], s2c: game, piece: 64, syn: true, port: 8000)
        let body = Array("{\"user\":\"u\",\"device\":{\"os\":\"ios\",\"ver\":[1,2.5,true,null]}}".utf8)
        FuzzStreams.feed(sessions, c2s: [0, 0, 0, 1, 0, 0, 0, UInt8(body.count)] + body, s2c: [], piece: 64, syn: true, port: 7000)
    }

    static let schemas: [ProtocolSchema] = (try? DissectorLoader.parse(text: """
        protocol game { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id; labels_from_comments; }
        Message Sc_20001 { Uint8 Res = 1; // 1 success 0 exception
        Uint32 SceneId = 2; Uint8 Pos = 3; Uint8 Status = 4; Uint8 Type = 5; Uint32 DefaultCombat = 6; String message = 7; }
        protocol svc { port 7000; header { uint32 serviceId; uint32 bodyLength; } body_length = bodyLength; message_id = serviceId; body json; }
        """, file: "fuzz")) ?? []
}
