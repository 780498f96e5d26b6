import CZlib
import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// What the WebSocket layer hands to an output: each message's layer info and bytes.
final class WebSocketCollector: MessageSink {
    struct Message: Equatable {
        var dir: Direction
        var opcode: UInt8
        var payload: [UInt8]
        var frames: Int
        var compressed: Bool
        var violations: [WebSocketViolation]
        var protocolName: String
    }
    /// `[coalesced N ...]` per message, apart: it depends on how the stream was cut.
    var coalesced: [(Direction, Int)] = []
    var messages: [Message] = []
    var malformed: [(Direction, UInt64, UInt64, MalformedReason)] = []
    var handshakes: [(Direction, HTTPHandshake, DeflateParameters?)] = []
    /// Per direction (how the two interleave depends on how the streams were cut).
    var byDirection: [[Message]] { [messages.filter { $0.dir == .c2s }, messages.filter { $0.dir == .s2c }] }

    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    /// Messages of a protocol tunnelled as a stream inside binary messages: (direction, id).
    var tunnelled: [(Direction, UInt64?, String)] = []

    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        guard let ws = m.layerNotes.note(of: WebSocketLayer.layer).map(WebSocketLayer.info) else {
            tunnelled.append((m.direction, m.id, p.schema.name))
            return
        }
        messages.append(Message(dir: m.direction, opcode: ws.opcode.rawValue, payload: Array(m.frame.bytes),
                                frames: ws.frames, compressed: ws.compressed, violations: ws.violations,
                                protocolName: p.schema.name))
        coalesced.append((m.direction, m.frame.coalesced))
    }
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) { malformed.append((d, offset, length, reason)) }
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {}
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    func finish() {}
    func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {
        guard let h = e as? WebSocketHandshakeEvent else { return }
        handshakes.append((d, h.handshake, h.deflate))
    }
}

/// Feeds two directions' bytes through the reassembler and the session stage, cut into segments.
struct StreamFeeder {
    static let client = Endpoint(IPAddress(v4: 0x7F00_0001), 41000)

    /// `c2s` and `s2c` are cut at the given offsets; the pieces are sent alternately, client
    /// first. Without `syn` the connection is picked up mid-stream.
    static func run(c2s: [UInt8], s2c: [UInt8], c2sCuts: [Int] = [], s2cCuts: [Int] = [], port: UInt16 = 12345,
                    syn: Bool = true, protocols: [ProtocolSchema] = [], maxMessage: Int = 16 << 20,
                    dropS2C: Range<Int>? = nil, dropS2CAt: Set<Int> = []) -> (WebSocketCollector, SessionManager) {
        let server = Endpoint(IPAddress(v4: 0x7F00_0001), port)
        let sink = WebSocketCollector()
        let sessions = SessionManager(protocols: protocols, sink: sink)
        sessions.maxWebSocketMessage = maxMessage
        var options = ReassemblyOptions()
        options.maxConnections = 8  // one connection: no need for the default table
        let r = Reassembler(options: options, consumer: sessions, isServerPort: sessions.isServerPort)
        var n: UInt64 = 0
        func packet() -> PacketRef { n += 1; return PacketRef(number: n, ts: Timestamp(seconds: 1, nanos: UInt32(n))) }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        func seg(_ c2s: Bool, _ seq: UInt32, _ ack: UInt32, _ flags: TCPFlags, _ data: UnsafeRawBufferPointer) -> TCPSegment {
            TCPSegment(src: c2s ? client : server, dst: c2s ? server : client, seq: seq, ack: ack, flags: flags,
                       window: 65535, payload: data, payloadLength: data.count)
        }
        if syn {
            r.add(seg(true, 1000, 0, .syn, empty), packet: packet())
            r.add(seg(false, 5000, 1001, [.syn, .ack], empty), packet: packet())
        }
        func pieces(_ b: [UInt8], _ cuts: [Int]) -> [(Int, ArraySlice<UInt8>)] {
            var out: [(Int, ArraySlice<UInt8>)] = []
            var last = 0
            for c in (cuts.filter { $0 > 0 && $0 < b.count }.sorted()) + [b.count] where c > last {
                out.append((last, b[last..<c]))
                last = c
            }
            return out
        }
        // The request alone first, as on the wire: the client waits for the 101 before it
        // sends a frame, so the negotiation is known when the first frame is read.
        var cuts = c2sCuts
        if let end = c2s.indices.first(where: { $0 + 3 < c2s.count && c2s[$0..<($0 + 4)] == [13, 10, 13, 10] }) {
            cuts.append(end + 4)
        }
        let a = pieces(c2s, cuts), b = pieces(s2c, s2cCuts)
        for i in 0..<max(a.count, b.count) {
            if i < a.count {
                Array(a[i].1).withUnsafeBytes {
                    r.add(seg(true, 1001 &+ UInt32(a[i].0), 5001, [.psh, .ack], $0), packet: packet())
                }
            }
            if i < b.count, !(dropS2C.map { $0.contains(b[i].0) } ?? false), !dropS2CAt.contains(b[i].0) {
                Array(b[i].1).withUnsafeBytes {
                    r.add(seg(false, 5001 &+ UInt32(b[i].0), 1001, [.psh, .ack], $0), packet: packet())
                }
            }
        }
        r.finish()
        return (sink, sessions)
    }
}

/// RFC 6455 frames for the tests, built by hand with the layout of §5.2.
enum WS {
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0, mask: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
        let m: UInt8 = mask == nil ? 0 : 0x80
        if payload.count < 126 {
            out.append(m | UInt8(payload.count))
        } else if payload.count <= 0xffff {
            out += [m | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        } else {
            out.append(m | 127)
            for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(payload.count) >> UInt64(s)) & 0xff)) }
        }
        guard let mask else { return out + payload }
        out += mask
        return out + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    static let key: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]
    static func client(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        frame(opcode, payload, fin: fin, rsv: rsv, mask: key)
    }

    static func request(path: String = "/service", extensions: String? = nil, protocols: String? = nil) -> [UInt8] {
        var s = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:12345\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let extensions { s += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        if let protocols { s += "Sec-WebSocket-Protocol: \(protocols)\r\n" }
        return Array((s + "\r\n").utf8)
    }

    static func response(extensions: String? = nil, protocol chosen: String? = nil) -> [UInt8] {
        // The accept value of RFC 6455 §1.3's own example key.
        var s = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
        if let extensions { s += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        if let chosen { s += "Sec-WebSocket-Protocol: \(chosen)\r\n" }
        return Array((s + "\r\n").utf8)
    }

    /// Messages compressed one after another in one deflate stream, each flushed and with its
    /// trailing 00 00 ff ff removed; without context takeover the window starts empty each time.
    static func deflateStream(_ messages: [[UInt8]], contextTakeover: Bool = true) -> [[UInt8]] {
        var z = z_stream()
        precondition(deflateInit2_(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        defer { deflateEnd(&z) }
        return messages.map { m in
            var input = m
            var out = [UInt8](repeating: 0, count: m.count + 256)
            let n = input.withUnsafeMutableBufferPointer { i in
                out.withUnsafeMutableBufferPointer { o in
                    z.next_in = i.baseAddress; z.avail_in = UInt32(i.count)
                    z.next_out = o.baseAddress; z.avail_out = UInt32(o.count)
                    _ = CZlib.deflate(&z, Z_SYNC_FLUSH)
                    return o.count - Int(z.avail_out)
                }
            }
            if !contextTakeover { deflateReset(&z) }
            return Array(out[0..<(n - 4)])
        }
    }

    /// Raw DEFLATE with the trailing 00 00 ff ff removed (RFC 7692 §7.2.1), from zlib itself.
    static func deflate(_ data: [UInt8]) -> [UInt8] {
        var s = z_stream()
        precondition(deflateInit2_(&s, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&s, UInt(data.count))) + 64)
        var input = data
        let produced = input.withUnsafeMutableBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                s.next_in = inp.baseAddress
                s.avail_in = UInt32(inp.count)
                s.next_out = o.baseAddress
                s.avail_out = UInt32(o.count)
                _ = CZlib.deflate(&s, Z_SYNC_FLUSH)
                return o.count - Int(s.avail_out)
            }
        }
        deflateEnd(&s)
        let d = Array(out[0..<produced])
        return d.suffix(4) == [0, 0, 0xff, 0xff] ? Array(d.dropLast(4)) : d
    }
}

final class WebSocketTests: XCTestCase {
    // MARK: - The samples against the peers' own log and against tshark

    func messagesLog(_ name: String) throws -> [String: [(String, String)]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("\(name).messages.json")))
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: [[String: String]]])
        return obj.mapValues { $0.map { ($0["opcode"]!, $0["payload"]!) } }
    }

    /// The generic `websocket` dissector's NDJSON: every data message's payload, per direction.
    func decodedPayloads(_ name: String) throws -> (data: [String: [(String, String)]], lines: [[String: Any]]) {
        let empty = TestSupport.tempDir()
        let r = try TestSupport.framedump(["-r", "samples/\(name).pcap", "-T", "json", "-d", empty])
        XCTAssertEqual(r.status, 0, r.stderr)
        var out: [String: [(String, String)]] = ["c2s": [], "s2c": []]
        var lines: [[String: Any]] = []
        for line in r.stdout.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            lines.append(o)
            guard let ws = o["ws"] as? [String: Any], let op = ws["opcode"] as? String, op == "text" || op == "binary" else { continue }
            let fields = try XCTUnwrap(o["fields"] as? [String: Any])
            let hex = op == "text" ? Data((fields["text"] as? String ?? "").utf8).map { String(format: "%02x", $0) }.joined()
                : fields["body"] as? String ?? ""
            out[o["dir"] as! String]!.append((op, hex))
        }
        return (out, lines)
    }

    /// Every data message decoded from each sample is, byte for byte and in order, the message
    /// the real `websockets` peer sent (inflated and unmasked, fragments joined).
    func testSamplesEqualWhatThePeersSent() throws {
        for name in ["bridge", "websocket-deflate"] {
            let sent = try messagesLog(name)
            let (got, lines) = try decodedPayloads(name)
            for d in ["c2s", "s2c"] {
                XCTAssertEqual(got[d]!.count, sent[d]!.count, "\(name) \(d)")
                for (a, b) in zip(got[d]!, sent[d]!) {
                    XCTAssertEqual(a.0, b.0, "\(name) \(d) opcode")
                    XCTAssertEqual(a.1, b.1, "\(name) \(d) payload")
                }
            }
            XCTAssertFalse(lines.contains { $0["warnings"] != nil || ($0["type"] as? String) == "malformed" }, name)
            let compressed = lines.filter { (($0["ws"] as? [String: Any])?["compressed"] as? Bool) == true }.count
            XCTAssertEqual(compressed > 0, name == "websocket-deflate", name)
        }
    }

    /// tshark's own WebSocket dissector on the same files: the same frames with the same
    /// opcodes, and the same unmasked payloads where it shows them. (tshark 4.0 shows no payload
    /// for a reassembled fragmented message, and loses the client's inflate window after a
    /// fragmented compressed one; those are compared with the peers' log above instead.)
    func testSamplesAgreeWithTshark() throws {
        let tshark = try TestSupport.oracle("tshark")
        for (name, port) in [("bridge", 12345), ("websocket-deflate", 12346)] {
            let r = try TestSupport.run(tshark, ["-r", TestSupport.sample("\(name).pcap"), "-d", "tcp.port==\(port),http",
                                                 "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
                                                 "-e", "frame.number", "-e", "websocket.opcode", "-e", "websocket.fin",
                                                 "-e", "websocket.payload.text", "-e", "data.data",
                                                 "-e", "websocket.payload.ping", "-e", "websocket.payload.pong"])
            XCTAssertEqual(r.status, 0, r.stderr)
            var tsharkOpcodes: [Int: Int] = [:]
            var tsharkPayloads: [(frame: UInt64, op: Int, hex: String)] = []
            var fragmentedSeen = false
            for line in r.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
                let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard f.count >= 7, !f[1].isEmpty else { continue }
                let ops = f[1].split(separator: "|").compactMap { Int($0) }
                for op in ops { tsharkOpcodes[op, default: 0] += 1 }
                if f[2].contains("0") { fragmentedSeen = true }
                guard ops.count == 1, f[2] == "1", let frame = UInt64(f[0]) else { continue }
                let op = ops[0]
                let hex: String
                switch op {
                case 1: hex = Data(f[3].utf8).map { String(format: "%02x", $0) }.joined()
                case 2: hex = f[4]
                case 9: hex = f[5]
                case 10: hex = f[6]
                default: continue
                }
                if fragmentedSeen && name == "websocket-deflate" && op == 1 { continue }
                if !hex.isEmpty { tsharkPayloads.append((frame, op, hex)) }
            }
            let (_, lines) = try decodedPayloads(name)
            var ours: [Int: Int] = [:]
            var byPacket: [UInt64: [(Int, String)]] = [:]
            let codes = ["continuation": 0, "text": 1, "binary": 2, "close": 8, "ping": 9, "pong": 10]
            for o in lines {
                guard let ws = o["ws"] as? [String: Any], let op = codes[ws["opcode"] as! String] else { continue }
                let frames = ws["frames"] as! Int
                ours[op, default: 0] += 1
                if frames > 1 { ours[0, default: 0] += frames - 1 }
                let fields = o["fields"] as? [String: Any] ?? [:]
                let hex = (fields["body"] as? String) ?? (fields["payload"] as? String)
                    ?? Data((fields["text"] as? String ?? "").utf8).map { String(format: "%02x", $0) }.joined()
                let last = (o["pkts"] as! [Any]).last as! NSNumber
                if frames == 1 { byPacket[last.uint64Value, default: []].append((op, hex)) }
            }
            XCTAssertEqual(ours, tsharkOpcodes, "\(name): frames per opcode")
            XCTAssertFalse(tsharkPayloads.isEmpty)
            for t in tsharkPayloads {
                XCTAssertTrue(byPacket[t.frame]?.contains { $0.0 == t.op && $0.1 == t.hex } ?? false,
                              "\(name) frame \(t.frame) opcode \(t.op): tshark shows \(t.hex.prefix(80))")
            }
        }
    }

    // MARK: - Every cut of the stream

    /// The deflate sample's two streams, as reassembled (the handshake and every frame).
    func sampleStreams(_ name: String) throws -> (c2s: [UInt8], s2c: [UInt8]) { try Self.streams(name) }

    static func streams(_ name: String) throws -> (c2s: [UInt8], s2c: [UInt8]) {
        let dir = TestSupport.tempDir()
        let r = try TestSupport.framedump(["-r", "samples/\(name).pcap", "--streams", dir, "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir)
        let c = try XCTUnwrap(files.first { $0.hasSuffix(".c2s") })
        let s = try XCTUnwrap(files.first { $0.hasSuffix(".s2c") })
        return (Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + c))),
                Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + s))))
    }

    func testEveryCutOfARealDeflateStreamGivesTheSameMessages() throws {
        let (c2s, s2c) = try sampleStreams("websocket-deflate")
        let (whole, _) = StreamFeeder.run(c2s: c2s, s2c: s2c, port: 12346)
        XCTAssertEqual(whole.messages.count, 24)
        XCTAssertTrue(whole.malformed.isEmpty)
        XCTAssertEqual(whole.handshakes.count, 2)
        for cut in 1..<max(c2s.count, s2c.count) {
            let (s, _) = StreamFeeder.run(c2s: c2s, s2c: s2c, c2sCuts: [cut], s2cCuts: [cut], port: 12346)
            XCTAssertTrue(s.byDirection == whole.byDirection, "cut at \(cut): \(s.messages.count) messages")
            XCTAssertTrue(s.malformed.isEmpty, "cut at \(cut)")
            if s.byDirection != whole.byDirection { break }
        }
        // One byte at a time, both ways.
        let (bytes, _) = StreamFeeder.run(c2s: c2s, s2c: s2c, c2sCuts: Array(1..<c2s.count), s2cCuts: Array(1..<s2c.count), port: 12346)
        XCTAssertTrue(bytes.byDirection == whole.byDirection)
    }

    func testRandomCutsOfTheBridgeStream() throws {
        let (c2s, s2c) = try sampleStreams("bridge")
        let (whole, _) = StreamFeeder.run(c2s: c2s, s2c: s2c)
        XCTAssertEqual(whole.messages.filter { $0.opcode == 2 }.map(\.payload.count).max(), 70010)
        var rng = SeededRandom(seed: 6455)
        for _ in 0..<40 {
            let a = (0..<30).map { _ in Int.random(in: 1..<c2s.count, using: &rng) }
            let b = (0..<10).map { _ in Int.random(in: 1..<s2c.count, using: &rng) }
            let (s, _) = StreamFeeder.run(c2s: c2s, s2c: s2c, c2sCuts: a, s2cCuts: b)
            XCTAssertTrue(s.byDirection == whole.byDirection, "cuts \(a) \(b)")
        }
    }

    // MARK: - Frames by hand

    func testFragmentedMessageWithPingBetweenFragmentsAndCloseReason() {
        let c2s = WS.request() + WS.client(1, Array("{\"a\":".utf8), fin: false) + WS.client(9, Array("hi".utf8))
            + WS.client(0, Array("1}".utf8)) + WS.client(8, [0x03, 0xe8] + Array("bye".utf8))
        let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.response())
        XCTAssertEqual(s.messages.map(\.opcode), [9, 1, 8])
        XCTAssertEqual(s.messages[1].payload, Array("{\"a\":1}".utf8))
        XCTAssertEqual(s.messages[1].frames, 2)
        XCTAssertEqual(s.messages[2].payload, [0x03, 0xe8] + Array("bye".utf8))
        XCTAssertTrue(s.messages.allSatisfy { $0.violations.isEmpty })
        XCTAssertEqual(s.handshakes.count, 2)
        XCTAssertEqual(s.handshakes[1].1.acceptValid, true, "RFC 6455 §1.3's key and accept")
    }

    /// `[coalesced N in pkt P]` as for length-framed protocols: N whole messages began and
    /// ended in packet P; a message split over packets has no count.
    func testMessagesSharingAPacketAreCounted() {
        let one = WS.frame(2, [1, 2, 3]), two = WS.frame(1, Array("hi".utf8)), ping = WS.frame(9, [])
        let fragmented = WS.frame(1, Array("{\"a\":".utf8), fin: false) + ping + WS.frame(0, Array("1}".utf8))
        let long = WS.frame(2, Array(repeating: 7, count: 40))
        let response = WS.response()
        // Packet 1: the 101. Packet 2: three messages, the fragmented one (with its ping), and
        // half of `long`. Packet 3: the rest of `long`, then two more whole messages.
        let p2 = one + two + fragmented + long
        let s2c = response + p2 + two + one
        let cuts = [response.count, response.count + p2.count - 20, response.count + p2.count + 20]
        let (s, _) = StreamFeeder.run(c2s: WS.request(), s2c: s2c, s2cCuts: cuts)
        let got = s.messages.filter { $0.dir == .s2c }
        XCTAssertEqual(got.map(\.opcode), [2, 1, 9, 1, 2, 1, 2])
        XCTAssertEqual(s.coalesced.filter { $0.0 == .s2c }.map(\.1), [4, 4, 4, 4, 1, 2, 2])
    }

    func testViolationsAreFlaggedAndDecodingGoesOn() {
        let c2s = WS.request()
            + WS.frame(2, [1, 2, 3])                                   // unmasked client frame
            + WS.client(2, [4], rsv: 0x40)                             // RSV1 without permessage-deflate
            + WS.client(0, [5])                                        // continuation without a start
            + WS.client(9, [6], fin: false)                            // fragmented control frame
            + WS.client(9, [UInt8](repeating: 7, count: 126))          // control frame over 125 bytes
            + WS.client(1, [0xff, 0xfe])                               // invalid UTF-8 text
            + WS.client(3, [8])                                        // reserved opcode
            + WS.client(2, [9, 9])                                     // a good one at the end
        let s2c = WS.response() + WS.client(2, [1])                    // masked server frame
        let (s, m) = StreamFeeder.run(c2s: c2s, s2c: s2c)
        let c = s.messages.filter { $0.dir == .c2s }
        XCTAssertEqual(c.map(\.opcode), [2, 2, 0, 9, 9, 1, 3, 2])
        // Eight messages with a violation, the text one among them (its check is made where
        // text is decoded, apart from the frames' own).
        XCTAssertEqual(m.protocols.map(\.webSocket.violations).reduce(0, +), 8)
        XCTAssertEqual(c[0].violations, [.unmaskedClientFrame])
        XCTAssertEqual(c[1].violations, [.reservedBits(0x40)])
        XCTAssertEqual(c[2].violations, [.continuationWithoutStart])
        XCTAssertEqual(c[3].violations, [.fragmentedControlFrame])
        XCTAssertEqual(c[4].violations, [.longControlFrame(126)])
        XCTAssertEqual(c[5].violations, [.invalidUTF8])
        XCTAssertEqual(c[6].violations, [.reservedOpcode(3)])
        XCTAssertEqual(c[7].violations, [])
        XCTAssertEqual(c[7].payload, [9, 9])
        XCTAssertEqual(s.messages.first { $0.dir == .s2c }?.violations, [.maskedServerFrame])
        XCTAssertTrue(s.malformed.isEmpty)
    }

    /// A 64-bit length with the top bit set: the header's first byte is reported, the hunt finds
    /// the next frame, and nothing is allocated for the announced 2^63 bytes.
    func testLengthWithTopBitSetIsMalformedAndTheNextFrameIsFound() {
        var bad: [UInt8] = [0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0] + WS.key
        bad += [1, 2, 3]
        let c2s = WS.request() + bad + WS.client(2, [7, 7, 7]) + WS.client(2, [8])
        let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.response())
        XCTAssertEqual(s.messages.map(\.payload), [[7, 7, 7], [8]])
        XCTAssertEqual(s.malformed.first?.3, .layer(WebSocketViolation.lengthTopBit))
        let reported = s.malformed.map(\.2).reduce(0, +)
        XCTAssertEqual(reported, UInt64(bad.count), "every byte of the bad frame is reported")
    }

    /// 2^63 - 1 announced: a legal header whose frame never completes: reported at the end
    /// (of the capture: a frame it cut).
    func testHugeAnnouncedLengthIsNeverAllocated() {
        let c2s = WS.request() + [0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff] + WS.key + [1, 2, 3]
        let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.response(), maxMessage: 1 << 20)
        XCTAssertTrue(s.messages.isEmpty)
        XCTAssertEqual(s.malformed.count, 1)
        if case .cutByCaptureEnd = s.malformed[0].3 {} else { XCTFail("\(s.malformed)") }
    }

    func testPermessageDeflateWithAndWithoutContextTakeover() {
        let text = Array(String(repeating: "{\"messageType\":\"heartBeat\"}", count: 3).utf8)
        for (ext, takeover) in [("permessage-deflate", true), ("permessage-deflate; client_no_context_takeover", false)] {
            // Two messages compressed as one deflate stream, its window kept or not between them.
            let z = WS.deflateStream([text, text], contextTakeover: takeover)
            let first = z[0], second = z[1]
            if takeover { XCTAssertLessThan(second.count, first.count, "the second refers back to the first") }
            let c2s = WS.request(extensions: "permessage-deflate; client_max_window_bits")
                + WS.client(1, first, rsv: 0x40) + WS.client(1, second, rsv: 0x40)
            do {
                let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.response(extensions: ext))
                XCTAssertEqual(s.messages.map(\.payload), [text, text], ext)
                XCTAssertEqual(s.messages.map(\.compressed), [true, true])
                XCTAssertEqual(s.handshakes.last?.2?.clientNoContextTakeover, !takeover)
            }
        }
    }

    /// 64 MiB of zeros deflate to about 64 KiB: inflating stops at the cap, the message is
    /// reported and skipped, and the next message is read.
    func testDeflateBombIsStoppedAtTheCap() {
        let bomb = WS.deflate([UInt8](repeating: 0, count: 64 << 20))
        XCTAssertLessThan(bomb.count, 1 << 17)
        let c2s = WS.request(extensions: "permessage-deflate") + WS.client(2, bomb, rsv: 0x40)
            + WS.client(2, [1, 2, 3])
        do {
            let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.response(extensions: "permessage-deflate; client_no_context_takeover"),
                                          maxMessage: 1 << 20)
            XCTAssertEqual(s.messages.count, 2, "\(s.malformed) \(bomb.count)")
            guard s.messages.count == 2 else { return }
            XCTAssertEqual(s.messages[0].violations, [.inflatedTooLarge(max: 1 << 20)])
            XCTAssertTrue(s.messages[0].payload.isEmpty)
            XCTAssertEqual(s.messages[1].payload, [1, 2, 3])
        }
    }

    /// Announced lengths beyond --ws-max-message: the message is reported, never buffered.
    func testMessageOverTheCapIsSkipped() {
        let c2s = WS.request() + WS.client(2, [UInt8](repeating: 1, count: 5000)) + WS.client(2, [2])
        let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.response(), maxMessage: 4096)
        XCTAssertEqual(s.messages.count, 2)
        XCTAssertEqual(s.messages[0].violations, [.messageTooLarge(5000, max: 4096)])
        XCTAssertTrue(s.messages[0].payload.isEmpty)
        XCTAssertEqual(s.messages[1].payload, [2])
    }

    /// A capture that starts after the handshake, mid-frame: the port's dissector takes the
    /// connection, the hunt skips the partial frame, and every later message is decoded.
    func testMidConnectionPickupWithoutHandshake() throws {
        let bridge = try DissectorLoader.loadFile(TestSupport.dissectors + "/bridge.dissector")
        let frames = WS.client(2, [7, 0, 0, 0] + Array("hello".utf8)) + WS.client(1, Array("{\"messageType\":\"heartBeat\"}".utf8))
            + WS.client(2, [8, 0, 0, 0] + Array("again".utf8))
        let c2s = Array(frames[5...])  // the first frame's header is gone
        let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.frame(1, Array("{}".utf8)), syn: false, protocols: bridge)
        XCTAssertEqual(s.messages.filter { $0.dir == .c2s }.map(\.opcode), [1, 2])
        XCTAssertEqual(s.messages.first?.protocolName, "bridge")
        XCTAssertEqual(s.malformed.map(\.2).reduce(0, +), 10, "the rest of the first frame (15 bytes, 5 not captured)")
    }

    /// HTTP that is not an upgrade is passed over quietly, on any port.
    func testPlainHTTPIsPassedOverQuietly() {
        let c2s = Array("GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n".utf8)
        let s2c = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8)
        let (s, m) = StreamFeeder.run(c2s: c2s, s2c: s2c, port: 8080)
        XCTAssertTrue(s.messages.isEmpty)
        XCTAssertTrue(s.malformed.isEmpty)
        XCTAssertEqual(m.httpPassedOver, 1)
    }

    /// A gap in the middle of a frame: the frame is reported cut, the hunt resumes at the next
    /// frame, and with context takeover the lost window is said to be the cause.
    func testGapCutsTheMessageAndTheHuntResumes() {
        let s2c = WS.response() + WS.frame(2, [UInt8](repeating: 3, count: 300)) + WS.frame(2, [4, 4])
        let head = WS.response().count
        // Cut the server's stream into pieces and drop the one in the middle of the first frame.
        let (s, _) = StreamFeeder.run(c2s: WS.request(), s2c: s2c, s2cCuts: [head, head + 100, head + 200], dropS2C: (head + 100)..<(head + 101))
        XCTAssertEqual(s.messages.map(\.payload), [[4, 4]])
        XCTAssertFalse(s.malformed.isEmpty)
    }

    /// A gap takes a compressed message with context takeover: the next one refers back into
    /// the lost window, cannot be inflated, and says why; a message that needs no window (and
    /// every uncompressed one) is read again.
    func testGapLosesTheInflateWindowAndDecodingGoesOn() {
        let text = Array("{\"messageType\":\"heartBeat\",\"seq\":1}".utf8)
        let z = WS.deflateStream([text, text, text])
        XCTAssertLessThan(z[2].count, z[0].count, "the third refers back to the first two")
        let fresh = WS.deflate(Array("after".utf8))
        let head = WS.response(extensions: "permessage-deflate")
        let frames = [WS.frame(1, z[0], rsv: 0x40), WS.frame(1, z[1], rsv: 0x40), WS.frame(1, z[2], rsv: 0x40),
                      WS.frame(2, [9, 9]), WS.frame(1, fresh, rsv: 0x40)]
        var s2c = head, cuts = [head.count]
        for f in frames { s2c += f; cuts.append(s2c.count) }
        do {
            let (s, m) = StreamFeeder.run(c2s: WS.request(extensions: "permessage-deflate"), s2c: s2c, s2cCuts: cuts,
                                          dropS2C: cuts[1]..<(cuts[1] + 1))
            XCTAssertEqual(s.messages.count, 4, "\(s.messages)")
            guard s.messages.count == 4 else { return }
            XCTAssertEqual(s.messages[0].payload, text)
            XCTAssertTrue(s.messages[0].violations.isEmpty)
            XCTAssertTrue(s.messages[1].violations.contains(.compressionContextLost), "\(s.messages[1].violations)")
            XCTAssertTrue(s.messages[1].violations.contains { if case .inflateFailed = $0 { true } else { false } })
            XCTAssertEqual(s.messages[1].payload, z[2], "the compressed bytes are shown")
            XCTAssertEqual(s.messages[2].payload, [9, 9])
            XCTAssertEqual(s.messages[3].payload, Array("after".utf8))
            XCTAssertTrue(s.messages[3].violations.isEmpty)
            let ws = m.protocols.map(\.webSocket)
            XCTAssertEqual(ws.map(\.compressed).reduce(0, +), 3)
            XCTAssertEqual(ws.map(\.violations).reduce(0, +), 1)
        }
    }

    func testHeaderParserNeverReadsPastTheBytes() {
        var rng = SeededRandom(seed: 7692)
        for _ in 0..<20000 {
            let n = Int.random(in: 0..<16, using: &rng)
            let b = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            b.withUnsafeBytes { p in
                if case .header(let h) = WebSocketFrameHeader.parse(p, at: 0) {
                    XCTAssertLessThanOrEqual(h.headerSize, n)
                }
            }
        }
    }

    func loadDissector(_ text: String) throws -> [ProtocolSchema] {
        let path = TestSupport.tempDir() + "/t.dissector"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try DissectorLoader.loadFile(path)
    }

    /// A length-framed protocol inside binary messages: the payloads are joined into a stream,
    /// so frames cut across messages, and several in one message, all come out.
    func testLengthFramedProtocolTunnelledInBinaryMessages() throws {
        let tun = try loadDissector("""
            protocol tun {
                websocket "/tun";
                header { uint16 len; uint16 id; }
                frame_length = len;
                message_id = id;
            }
            Message A = 1 { Uint16 x = 1; }
            Message B = 2 { Uint8 y = 1; }
            """)
        let stream: [UInt8] = [0, 6, 0, 1, 0, 7] + [0, 5, 0, 2, 9] + [0, 6, 0, 1, 0, 8] + [0, 5, 0, 2, 1]
        let c2s = WS.request(path: "/tun") + WS.client(2, Array(stream[0..<3])) + WS.client(2, Array(stream[3..<14]))
            + WS.client(2, Array(stream[14...]))
        let (s, _) = StreamFeeder.run(c2s: c2s, s2c: WS.response(), protocols: tun)
        XCTAssertEqual(s.tunnelled.map(\.1), [1, 2, 1, 2])
        XCTAssertEqual(s.tunnelled.map(\.2), ["tun", "tun", "tun", "tun"])
        XCTAssertTrue(s.malformed.isEmpty)
    }

    /// The handshake picks the dissector: by subprotocol, by path, else the built-in one.
    func testHandshakeChoosesTheDissector() throws {
        let chat = try loadDissector("""
            protocol chat { websocket; subprotocol "chat.v2"; text json; }
            protocol feed { websocket "/feed"; text text; }
            """)
        let text = WS.client(1, Array("{\"a\":1}".utf8))
        let cases: [([UInt8], [UInt8], String)] = [
            (WS.request(path: "/x", protocols: "chat.v1, chat.v2"), WS.response(protocol: "chat.v2"), "chat"),
            (WS.request(path: "/feed"), WS.response(), "feed"),
            (WS.request(path: "/other"), WS.response(), "websocket"),
        ]
        for (req, resp, name) in cases {
            let (s, _) = StreamFeeder.run(c2s: req + text, s2c: resp, port: 9999, protocols: chat)
            XCTAssertEqual(s.messages.map(\.protocolName), [name])
        }
    }

    /// `subprotocol` alone binds (it says WebSocket as `websocket;` does), and a path or a
    /// subprotocol is enough ("or", as the language doc says); a path counts more.
    func testPathOrSubprotocolBinds() throws {
        let p = try loadDissector("""
            protocol chat { subprotocol "chat.v2"; text json; }
            protocol feed { websocket "/feed"; subprotocol "feed.v1"; text text; }
            """)
        XCTAssertTrue(p.allSatisfy(\.overWebSocket))
        let text = WS.client(1, Array("{\"a\":1}".utf8))
        let cases: [([UInt8], [UInt8], String)] = [
            (WS.request(path: "/x", protocols: "chat.v2"), WS.response(protocol: "chat.v2"), "chat"),
            (WS.request(path: "/feed"), WS.response(), "feed"),
            (WS.request(path: "/elsewhere", protocols: "feed.v1"), WS.response(protocol: "feed.v1"), "feed"),
            (WS.request(path: "/feed", protocols: "chat.v2"), WS.response(protocol: "chat.v2"), "feed"),
            (WS.request(path: "/other"), WS.response(), "websocket"),
        ]
        for (req, resp, name) in cases {
            let (s, _) = StreamFeeder.run(c2s: req + text, s2c: resp, port: 9999, protocols: p)
            XCTAssertEqual(s.messages.map(\.protocolName), [name], String(decoding: req.prefix(30), as: UTF8.self))
        }
    }

    /// A client that does not wait for the 101, whose subprotocol (one the request did not
    /// offer) picks the dissector: the compressed messages before and after it are one
    /// compression context.
    func testCompressionContextOutlivesTheHandshakeChoosingTheDissector() throws {
        let chat = try loadDissector("protocol chat { websocket; subprotocol \"chat.v2\"; text json; }")
        let text = Array("{\"messageType\":\"heartBeat\"}".utf8)
        let z = WS.deflateStream([text, text])
        XCTAssertLessThan(z[1].count, z[0].count, "the second refers back to the first")
        let req = WS.request(path: "/x", extensions: "permessage-deflate")
        let first = WS.client(1, z[0], rsv: 0x40)
        let resp = WS.response(extensions: "permessage-deflate", protocol: "chat.v2")
        do {
            // Request, half the response, the first message, the rest of the response, the second.
            let (s, _) = StreamFeeder.run(c2s: req + first + WS.client(1, z[1], rsv: 0x40), s2c: resp,
                                          c2sCuts: [req.count + first.count], s2cCuts: [resp.count / 2],
                                          port: 9999, protocols: chat)
            XCTAssertEqual(s.messages.map(\.payload), [text, text])
            XCTAssertEqual(s.messages.map(\.protocolName), ["websocket", "chat"])
            XCTAssertTrue(s.messages.allSatisfy { $0.violations.isEmpty }, "\(s.messages.map(\.violations))")
        }
    }

    /// Mutants of a real stream and random bytes, through the fuzz entry: no trap, no hang.
    func testMutatedStreamsNeverTrap() throws {
        let (c2s, s2c) = try sampleStreams("websocket-deflate")
        let frames = Array(c2s[298...]) + Array(s2c[303...])
        var rng = SeededRandom(seed: 7692)
        for round in 0..<400 {
            var b = [UInt8(round & 7), UInt8.random(in: 0...255, using: &rng), UInt8.random(in: 1...64, using: &rng)]
            if round % 4 == 0 {
                b += (0..<Int.random(in: 0..<300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                var m = frames
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
                    m[Int.random(in: 0..<m.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                b += m
            }
            b.withUnsafeBytes { FuzzWebSocket.connection($0); FuzzWebSocket.httpHead($0) }
        }
    }
}
