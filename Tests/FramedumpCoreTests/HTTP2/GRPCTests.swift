import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// What the gRPC layer hands to an output: each message's call, bytes and schema message, and
/// each call's record.
final class GRPCCollector: MessageSink {
    struct Message: Equatable {
        var dir: Direction
        var method: String
        var stream: UInt32
        var sequence: UInt32
        var compressed: Bool
        var name: String?
        var bytes: [UInt8]
        var warnings: [String]
        /// The connection's place among the run's (in the order their first message came).
        var connection = 0
    }
    var connections: [ObjectIdentifier: Int] = [:]
    var callConnections: [Int] = []
    func place(_ c: Connection) -> Int {
        if let n = connections[ObjectIdentifier(c)] { return n }
        connections[ObjectIdentifier(c)] = connections.count
        return connections.count - 1
    }
    var messages: [Message] = []
    var calls: [GRPCCallEvent] = []
    var malformed: [(Direction, UInt64, UInt64, MalformedReason)] = []

    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        guard let g = m.layerNotes.note(of: GRPCLayer.layer).map(GRPCLayer.info) else { return XCTFail("a message without its gRPC note") }
        messages.append(Message(dir: m.direction, method: GRPCMethodNames.name(g.method), stream: g.stream, sequence: g.sequence,
                                compressed: g.compressed, name: m.message.map { p.schema.messages[$0].name },
                                bytes: Array(m.frame.bytes), warnings: m.warnings.map(\.text), connection: place(c)))
    }
    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) { malformed.append((d, offset, length, reason)) }
    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {}
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    func finish() {}
    func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {
        if let call = e as? GRPCCallEvent { calls.append(call); callConnections.append(place(c)) }
    }
}

/// gRPC over HTTP/2 (`grpc;`): samples/grpc.pcap is grpcio's server and client (every call
/// shape, gzip, a failed call, two connections); samples/grpc.messages.json every message each
/// peer serialized, by call. Crafted edges (CONTINUATION, padding, a message across DATA
/// frames, trailers-only, a reset, an unknown method, a message past max_frame) come from
/// scripts/make_grpc_fixtures.py.
final class GRPCTests: XCTestCase {
    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    static func schemas(_ file: String) throws -> [ProtocolSchema] {
        try DissectorLoader.load(paths: [file])
    }

    /// A capture through the pipeline, in packet order, with `dissector`.
    static func decoded(_ pcap: String, _ dissector: String, keyLog: String? = nil) throws -> GRPCCollector {
        let sink = GRPCCollector()
        var o = PipelineOptions()
        o.dissectorPaths = [dissector]
        o.load.protoPaths = [TestSupport.dissectors]
        if let keyLog { o.tlsKeyLogs = [keyLog] }
        let p = try Pipeline(options: o, output: OutputBuffer(fd: nil), messageSink: sink)
        try p.run(try PacketSource(.file(pcap)), limit: nil, dumper: nil, lineBuffered: false)
        p.finish()
        return sink
    }

    /// Each connection's two reassembled streams (`--streams`), by client port.
    static func streams(_ pcap: String) throws -> [(c2s: [UInt8], s2c: [UInt8])] {
        let dir = NSTemporaryDirectory() + "framedump-grpc-streams-\(getpid())-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try TestSupport.framedump(["-r", pcap, "--streams", dir, "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".c2s") }.sorted()
        return try names.map { n in
            let base = dir + "/" + String(n.dropLast(4))
            return (Array(try Data(contentsOf: URL(fileURLWithPath: base + ".c2s"))), Array(try Data(contentsOf: URL(fileURLWithPath: base + ".s2c"))))
        }
    }

    /// One connection's streams through the session stage, the client's first (a server never
    /// answers before it is asked), each cut at `cuts`.
    static func run(_ c2s: [UInt8], _ s2c: [UInt8], port: UInt16, protocols: [ProtocolSchema],
                    c2sCuts: [Int] = [], s2cCuts: [Int] = []) -> GRPCCollector {
        let sink = GRPCCollector()
        let sessions = SessionManager(protocols: protocols, sink: sink)
        var runs: [(client: Bool, bytes: [UInt8])] = []
        func cut(_ b: [UInt8], _ cuts: [Int], client: Bool) {
            var last = 0
            for c in (cuts.filter { $0 > 0 && $0 < b.count }.sorted()) + [b.count] where c > last {
                runs.append((client, Array(b[last..<c])))
                last = c
            }
        }
        cut(c2s, c2sCuts, client: true)
        cut(s2c, s2cCuts, client: false)
        FuzzStreams.feed(sessions, runs: runs, piece: 1 << 30, port: port)
        return sink
    }

    func testEveryMessageOfTheSampleDecodesAsThePeersSerializedIt() throws {
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("grpc.messages.json")))) as! [String: Any]
        let connections = log["connections"] as! [[String: Any]]
        let all = try Self.decoded(TestSupport.sample("grpc.pcap"), TestSupport.dissectors + "/grpcchat.dissector")
        XCTAssertTrue(all.malformed.isEmpty, "\(all.malformed)")
        XCTAssertEqual(all.connections.count, connections.count)
        var checked = 0, compressed = 0
        for (n, c) in connections.enumerated() {
            let got = GRPCCollector()
            got.messages = all.messages.filter { $0.connection == n }
            got.calls = zip(all.calls, all.callConnections).filter { $0.1 == n }.map(\.0)
            let calls = c["calls"] as! [[String: Any]]
            // Calls in the order they were made: their streams in increasing order.
            let ids = Array(Set(got.calls.map(\.stream))).sorted()
            XCTAssertEqual(ids.count, calls.count)
            for (id, call) in zip(ids, calls) {
                let method = call["method"] as! String
                let shortName = method.split(separator: "/").map(String.init).joined(separator: ".")
                    .split(separator: ".").suffix(2).joined(separator: ".")
                for (dir, key, role) in [(Direction.c2s, "requests", "request"), (.s2c, "responses", "response")] {
                    let want = (call[key] as! [String]).map { GRPCTests.hex($0) }
                    let mine = got.messages.filter { $0.stream == id && $0.dir == dir }
                    XCTAssertEqual(mine.map(\.bytes), want, "\(method) stream \(id) \(key)")
                    for m in mine {
                        XCTAssertEqual(m.method, method)
                        XCTAssertEqual(m.name, shortName + " " + role)
                        XCTAssertEqual(m.warnings, [])
                        if m.compressed { compressed += 1 }
                        checked += 1
                    }
                    XCTAssertEqual(mine.map(\.sequence), Array(1...UInt32(max(1, mine.count))).prefix(mine.count).map { $0 })
                }
                let event = got.calls.first { $0.stream == id }!
                XCTAssertEqual(event.path, method)
                XCTAssertEqual(event.status, call["status"] as? Int)
                XCTAssertEqual(event.statusMessage ?? "", call["details"] as? String ?? "")
                XCTAssertTrue(event.finished)
            }
        }
        XCTAssertEqual(checked, 23)
        XCTAssertGreaterThan(compressed, 0, "the sample's gzip call")
    }

    /// Every cut of the client's stream, and a sweep of cuts of both, give the same messages
    /// and calls as the stream in one piece.
    func testEverySplitOfTheStreamsGivesTheSameMessages() throws {
        let streams = try Self.streams(TestSupport.sample("grpc.pcap"))
        let schemas = try Self.schemas(TestSupport.dissectors + "/grpcchat.dissector")
        let s = streams[0]
        let whole = Self.run(s.c2s, s.s2c, port: 50051, protocols: schemas)
        XCTAssertGreaterThan(whole.messages.count, 20)
        func same(_ got: GRPCCollector, _ what: String) {
            XCTAssertEqual(got.messages, whole.messages, what)
            XCTAssertEqual(got.calls.map(\.stream), whole.calls.map(\.stream), what)
            XCTAssertEqual(got.calls.map(\.status), whole.calls.map(\.status), what)
            XCTAssertTrue(got.malformed.isEmpty, what)
        }
        for cut in 1..<s.c2s.count { same(Self.run(s.c2s, s.s2c, port: 50051, protocols: schemas, c2sCuts: [cut]), "c2s cut at \(cut)") }
        for cut in 1..<s.s2c.count { same(Self.run(s.c2s, s.s2c, port: 50051, protocols: schemas, s2cCuts: [cut]), "s2c cut at \(cut)") }
        // Every byte its own segment.
        same(Self.run(s.c2s, s.s2c, port: 50051, protocols: schemas, c2sCuts: Array(1..<s.c2s.count), s2cCuts: Array(1..<s.s2c.count)), "byte by byte")
    }

    /// The crafted edges, one stream each (scripts/make_grpc_fixtures.py).
    func testCraftedEdges() throws {
        let fixtures = TestSupport.testsDir.appendingPathComponent("Fixtures").path
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: fixtures + "/grpc_edges.json"))) as! [String: Any]
        let want = log["streams"] as! [String: [String: [String]]]
        let got = try Self.decoded(fixtures + "/grpc_edges.pcap", fixtures + "/proto/grpc_edges.dissector")
        for (id, w) in want {
            let stream = UInt32(id)!
            XCTAssertEqual(got.messages.filter { $0.stream == stream && $0.dir == .c2s }.map(\.bytes), w["requests"]!.map { GRPCTests.hex($0) }, "stream \(id)")
            XCTAssertEqual(got.messages.filter { $0.stream == stream && $0.dir == .s2c }.map(\.bytes), w["responses"]!.map { GRPCTests.hex($0) }, "stream \(id)")
        }
        let byStream = Dictionary(uniqueKeysWithValues: got.calls.map { ($0.stream, $0) })
        XCTAssertEqual(byStream[1]?.status, 0)
        XCTAssertEqual(got.messages.filter { $0.stream == 3 }.map(\.compressed), [true, true])
        XCTAssertEqual(byStream[5]?.status, 5)
        XCTAssertEqual(byStream[5]?.statusMessage, "no such room: 房间")
        XCTAssertEqual(byStream[7]?.reset, 8)
        XCTAssertEqual(byStream[7]?.problems.map(\.kind), ["reset"])
        XCTAssertEqual(byStream[9]?.status, 12)
        XCTAssertEqual(got.messages.filter { $0.stream == 9 }.map(\.name), [nil, nil])
        XCTAssertEqual(got.messages.filter { $0.stream == 9 }.map(\.method), ["/other.Service/Missing", "/other.Service/Missing"])
        XCTAssertEqual(byStream[11]?.status, 8)
        XCTAssertEqual(got.malformed.count, 1)
        if case .lengthTooLong(let l, _)? = got.malformed.first?.3 { XCTAssertEqual(l, 1 << 30) } else { XCTFail("\(got.malformed)") }
        XCTAssertEqual(got.calls.count, 6)
    }

    /// A connection the capture joined mid-way, a gap, a broken preface and a broken header
    /// block are each said, and nothing is decoded from what cannot be followed.
    func testWhatCannotBeFollowedIsSaid() throws {
        let s = try Self.streams(TestSupport.sample("grpc.pcap"))[0]
        let schemas = try Self.schemas(TestSupport.dissectors + "/grpcchat.dissector")
        // Not a preface: said once, nothing decoded.
        var bad = s.c2s
        bad[0] = 0x47
        let b = Self.run(bad, s.s2c, port: 50051, protocols: schemas)
        XCTAssertEqual(b.malformed.count, 1)
        if case .layer(let p)? = b.malformed.first?.3 { XCTAssertEqual(p.kind, "preface") } else { XCTFail("\(b.malformed)") }
        XCTAssertTrue(b.messages.filter { $0.dir == .c2s }.isEmpty)
        // A header block the table cannot read: reported, and the calls after it in that
        // direction are not typed by a method they may not have.
        var broken = s.c2s
        var firstHeaders = 24
        while broken[firstHeaders + 3] != 1 {
            firstHeaders += 9 + (Int(broken[firstHeaders]) << 16 | Int(broken[firstHeaders + 1]) << 8 | Int(broken[firstHeaders + 2]))
        }
        // (An indexed field, index 127 + a long continuation: past the table.)
        broken[firstHeaders + 9] = 0xff
        broken[firstHeaders + 10] = 0xff
        broken[firstHeaders + 11] = 0x7f
        let h = Self.run(broken, s.s2c, port: 50051, protocols: schemas)
        XCTAssertTrue(h.malformed.contains { if case .layer(let p) = $0.3 { return p.kind == "hpack" }; return false }, "\(h.malformed)")
        XCTAssertFalse(h.messages.contains { $0.dir == .c2s && $0.method == "/grpcchat.Chat/Send" && $0.stream == 1 })
    }
}

extension GRPCTests {
    /// tshark's HTTP/2 and gRPC dissectors read the same messages from the sample, each
    /// direction of each connection in the same order (its `grpc.message_data`: inflated).
    func testMessagesMatchTshark() throws {
        let tshark = try TestSupport.oracle("tshark")
        let r = try TestSupport.run(tshark, ["-r", TestSupport.sample("grpc.pcap"), "-d", "tcp.port==50051,http2", "-Y", "grpc",
                                             "-T", "fields", "-E", "separator=/t", "-e", "tcp.srcport", "-e", "tcp.dstport",
                                             "-e", "grpc.message_data"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var theirs: [String: [[UInt8]]] = [:]
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 3 else { continue }
            for m in f[2].split(separator: ",", omittingEmptySubsequences: false) { theirs[f[0] + ">" + f[1], default: []].append(Self.hex(String(m))) }
        }
        let all = try Self.decoded(TestSupport.sample("grpc.pcap"), TestSupport.dissectors + "/grpcchat.dissector")
        // framedump's connections by client port: from tshark's keys (the side that is not 50051).
        let ports = Set(theirs.keys.flatMap { $0.split(separator: ">").map(String.init) }).subtracting(["50051"]).sorted()
        XCTAssertEqual(ports.count, all.connections.count)
        var compared = 0
        for (n, port) in ports.enumerated() {
            for (dir, key) in [(Direction.c2s, "\(port)>50051"), (.s2c, "50051>\(port)")] {
                let mine = all.messages.filter { $0.connection == n && $0.dir == dir }.map(\.bytes)
                XCTAssertEqual(mine, theirs[key] ?? [], key)
                compared += mine.count
            }
        }
        XCTAssertEqual(compared, 23)
    }

    /// A connection's HTTP/2 state goes with its connection (its frames and decoder held each
    /// other: every connection, its tables and calls, and the sink stayed until the run's end).
    func testAConnectionsStateIsFreedWithIt() throws {
        let s = try Self.streams(TestSupport.sample("grpc.pcap"))[0]
        let schemas = try Self.schemas(TestSupport.dissectors + "/grpcchat.dissector")
        weak var gone: GRPCCollector?
        do {
            let sink = Self.run(s.c2s, s.s2c, port: 50051, protocols: schemas)
            XCTAssertGreaterThan(sink.messages.count, 20)
            gone = sink
        }
        XCTAssertNil(gone, "the sink (and the connection's stack) outlived the run")
    }

    /// HTTP/1.1's `Upgrade: h2c` (scripts/make_h2c_upgrade_fixture.py, PyPI's h2 on both sides):
    /// the upgrade request, with its message as an HTTP/1.1 body, is stream 1; the server's 101,
    /// then HTTP/2. A server that declines is said, and the request stays a call without answer.
    func testAnUpgradeFromHTTP1IsStreamOne() throws {
        let pcap = TestSupport.testsDir.appendingPathComponent("Fixtures/grpc_upgrade.pcap").path
        let dissector = TestSupport.testsDir.appendingPathComponent("Fixtures/proto/grpc_edges.dissector").path
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: pcap.replacingOccurrences(of: ".pcap", with: ".json")))) as! [String: [String: [String]]]
        func check(_ got: GRPCCollector, declined: Bool, _ what: String) {
            let first = got.messages.filter { $0.connection == 0 }
            XCTAssertEqual(first.count, 4, what)
            for m in first {
                let want = log[String(m.stream)]![m.dir == .c2s ? "requests" : "responses"]![0]
                XCTAssertEqual(m.bytes, Array(Self.hex(want).dropFirst(5)), "\(what): stream \(m.stream) \(m.dir)")
                XCTAssertEqual(m.method, "/test.kinds.Calls/Unary")
                XCTAssertEqual(m.name, m.dir == .c2s ? "Calls.Unary request" : "Calls.Unary response")
                XCTAssertEqual(m.warnings, [], what)
            }
            XCTAssertEqual(got.calls.filter { $0.finished && $0.status == 0 }.map(\.stream), [1, 3], what)
            XCTAssertEqual(got.malformed.isEmpty, !declined, what)
            if declined {
                let m = got.malformed.first!
                XCTAssertEqual(m.0, .s2c)
                XCTAssertTrue(m.3.text.contains("the server answered the h2c upgrade with HTTP/1.1 200"), m.3.text)
                XCTAssertEqual(got.calls.filter { !$0.finished }.count, 1, "the declined request: unfinished")
            }
        }
        check(try Self.decoded(pcap, dissector), declined: true, "the capture")
        // Every cut of the upgraded connection's two streams (inside the head, the body, the preface).
        let (c2s, s2c) = try Self.streams(pcap)[0]
        let protocols = try Self.schemas(dissector)
        for k in 1..<c2s.count { check(Self.run(c2s, s2c, port: 50061, protocols: protocols, c2sCuts: [k]), declined: false, "c2s cut at \(k)") }
        for k in 1..<s2c.count { check(Self.run(c2s, s2c, port: 50061, protocols: protocols, s2cCuts: [k]), declined: false, "s2c cut at \(k)") }
        let byte = Self.run(c2s, s2c, port: 50061, protocols: protocols, c2sCuts: Array(1..<c2s.count), s2cCuts: Array(1..<s2c.count))
        check(byte, declined: false, "one byte at a time")
        // A request that does not ask for h2c is said.
        let plain = Self.run(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), [], port: 50061, protocols: protocols)
        XCTAssertTrue(plain.malformed.first?.3.text.contains("does not ask for h2c") == true, "\(plain.malformed)")
    }

    /// `-z conv` lists each connection's streams under it, by number and method; each agrees
    /// with its call's record (messages each way), in one thread and sharded.
    func testConversationsListEachStreamWithItsCall() throws {
        let calls = try TestSupport.framedump(["-r", TestSupport.sample("grpc.pcap"), "-T", "json"]).stdout.split(separator: "\n")
            .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }.filter { $0["type"] as? String == "grpc_call" }
        XCTAssertEqual(calls.count, 8)
        for extra in [[], ["-j", "2"]] {
            let r = try TestSupport.framedump(["-r", TestSupport.sample("grpc.pcap"), "-q", "-z", "conv", "-T", "json"] + extra)
            XCTAssertEqual(r.status, 0, r.stderr)
            let line = try XCTUnwrap(r.stdout.split(separator: "\n").first { $0.contains("\"stat\":\"conv\"") })
            let rows = (try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any])["rows"] as! [[String: Any]]
            var seen = 0
            for row in rows {
                for s in row["streams"] as! [[String: Any]] {
                    let call = try XCTUnwrap(calls.first { $0["conn"] as? String == row["conn"] as? String && $0["stream"] as? Int == s["stream"] as? Int })
                    XCTAssertEqual(s["method"] as? String, call["method"] as? String)
                    let m = s["messages"] as! [String: Int]
                    XCTAssertEqual(m["c2s"], call["requests"] as? Int, "\(s)")
                    XCTAssertEqual(m["s2c"], call["responses"] as? Int, "\(s)")
                    seen += 1
                }
                let m = row["messages"] as! [String: Int]
                let sum = (row["streams"] as! [[String: Any]]).reduce(0) { $0 + ($1["messages"] as! [String: Int])["c2s"]! }
                XCTAssertEqual(sum, m["c2s"], "every message of the connection is on one of its streams")
            }
            XCTAssertEqual(seen, 8, "\(extra)")
        }
        let plain = try TestSupport.framedump(["-r", TestSupport.sample("grpc.pcap"), "-q", "-z", "conv"])
        XCTAssertTrue(plain.stdout.contains("  stream 11"), plain.stdout)
        XCTAssertTrue(plain.stdout.contains("/grpcchat.Chat/Talk"), plain.stdout)
        // A protocol without streams has no such rows.
        let game = try TestSupport.framedump(["-r", TestSupport.sample("game.pcap"), "-q", "-z", "conv", "-T", "json"])
        XCTAssertFalse(game.stdout.contains("\"streams\""))
    }

    /// Request trailers on one stream, again and again, are kept only up to the header bound.
    func testRepeatedRequestTrailersAreBounded() throws {
        func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ p: [UInt8]) -> [UInt8] {
            [UInt8(p.count >> 16 & 0xff), UInt8(p.count >> 8 & 0xff), UInt8(p.count & 0xff), type, flags,
             UInt8(stream >> 24), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + p
        }
        var c2s = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(4, 0, 0, [])
        let path = Array("/test.kinds.Calls/Unary".utf8)
        c2s += frame(1, 4, 1, [0x83, 0x86, 0x04, UInt8(path.count)] + path + [0x40, 0x01, 0x78, 0x7f, 0xa1, 0x1e] + [UInt8](repeating: 0x78, count: 4000))
        for _ in 0..<300 { c2s += frame(1, 4, 1, [UInt8](repeating: 0xbe, count: 2)) }
        let got = Self.run(c2s, [], port: 50061, protocols: try Self.schemas(TestSupport.testsDir.appendingPathComponent("Fixtures/proto/grpc_edges.dissector").path))
        let kinds = got.malformed.compactMap { m -> String? in if case .layer(let p) = m.3 { return p.kind }; return nil }
        XCTAssertFalse(kinds.isEmpty, "past the bound, a problem is said")
        XCTAssertTrue(kinds.allSatisfy { $0 == "headers" }, "\(kinds)")
        XCTAssertEqual(got.calls.count, 1, "the call is said, unfinished")
        XCTAssertEqual(got.calls.first?.finished, false)
    }

    /// gRPC inside TLS (ALPN h2, decrypted with a key log): the plaintext of the sample's first
    /// connection, replayed over TLS 1.3 by scripts/make_grpc_tls_fixture.py, decodes to the
    /// same messages and calls as the sample's.
    func testInsideTLSTheSameMessagesAndCalls() throws {
        let fixtures = TestSupport.testsDir.appendingPathComponent("Fixtures").path
        let tls = try Self.decoded(fixtures + "/grpc_tls.pcap", fixtures + "/grpc_tls.dissector", keyLog: fixtures + "/grpc_tls.keys")
        let plain = try Self.decoded(TestSupport.sample("grpc.pcap"), TestSupport.dissectors + "/grpcchat.dissector")
        let first = plain.messages.filter { $0.connection == 0 }
        XCTAssertEqual(first.count, 21)
        XCTAssertEqual(tls.messages.map(\.bytes), first.map(\.bytes))
        XCTAssertEqual(tls.messages.map(\.method), first.map(\.method))
        XCTAssertEqual(tls.messages.map(\.name), first.map(\.name))
        XCTAssertEqual(tls.calls.map(\.status), zip(plain.calls, plain.callConnections).filter { $0.1 == 0 }.map(\.0.status))
        XCTAssertTrue(tls.malformed.isEmpty, "\(tls.malformed)")
    }
}
