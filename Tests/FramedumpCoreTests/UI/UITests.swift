import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import FramedumpCore
@testable import FramedumpUI

/// `framedump ui`'s index and API, in-process: what the page is told is what NDJSON says.
final class UITests: XCTestCase {
    static let samples: [(String, [String])] = [
        ("game.pcap", []), ("svc.pcap", []), ("bridge.pcap", []), ("websocket-deflate.pcap", []), ("im.pcap", []),
        ("zgame.pcap", []), ("kcp.pcap", []), ("udp.pcap", []), ("game-latency.pcap", []),
        ("tls13.pcap", ["tls13.keys"]), ("tls12.pcap", ["tls12.keys"]), ("wss.pcap", ["wss.keys"]),
        ("grpc.pcap", []), ("socketio.pcap", []), ("msgpack.pcap", []), ("wsgame.pcap", []), ("mysql.pcap", []),
    ]

    /// Captures with losses of every kind the list shows as rows (gaps, malformed stretches,
    /// resyncs, conflicts, late data, an ignored RST, bytes after close, TLS without its keys).
    static let lossCaptures = ["lost_segment.pcap", "conflict.pcap", "late_data.pcap", "check_problems.pcap", "ws_loss.pcap",
                               "rst_out_of_window.pcap", "after_fin.pcap"].map(TestSupport.fixture) + [TestSupport.sample("tls13.pcap")]

    /// A sample's name, or a path.
    static func path(_ capture: String) -> String { capture.contains("/") ? capture : TestSupport.sample(capture) }

    func indexer(_ sample: String, keys: [String] = [], diff: String? = nil, count: UInt64? = nil,
                 maxConnections: Int? = nil) throws -> CaptureIndexer {
        var o = PipelineOptions()
        if let m = maxConnections { o.limits.maxConnections = m }
        o.dissectorPaths = [TestSupport.dissectors]
        o.tlsKeyLogs = keys.map(TestSupport.sample)
        var c = UIConfiguration(input: .file(Self.path(sample)), options: o)
        c.diffWith = diff.map(TestSupport.sample)
        c.count = count
        let i = try CaptureIndexer(c)
        i.start()
        _ = i.waitForIndex()
        return i
    }

    func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    /// Every connection, page after page.
    func connections(_ v: Views) throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        while true {
            let page = try json(v.connections(from: all.count, count: Views.maxConnections))
            let rows = try XCTUnwrap(page["connections"] as? [[String: Any]])
            all += rows
            if rows.isEmpty || all.count >= page["total"] as! Int { return all }
        }
    }

    func ndjsonMessages(_ sample: String, keys: [String] = [], filter: String? = nil) throws -> [[String: Any]] {
        try ndjsonLines(sample, keys: keys, filter: filter).filter { $0["type"] == nil }
    }

    func ndjsonLines(_ sample: String, keys: [String] = [], filter: String? = nil, count: UInt64? = nil) throws -> [[String: Any]] {
        if let count {  // (-c is the command's: the pipeline alone reads to the end)
            let r = try TestSupport.framedump(["-r", Self.path(sample), "-c", String(count), "-T", "json"] + (filter.map { ["-Y", $0] } ?? []))
            XCTAssertEqual(r.status, 0, r.stderr)
            return try r.stdout.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        }
        let text = try TestSupport.pipeline(Self.path(sample)) { o in
            o.format = .json
            o.tlsKeyLogs = keys.map(TestSupport.sample)
            o.displayFilter = filter
        }
        return try text.split(separator: "\n").map { line in
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    /// A connection evicted by `--max-connections` is a loss row (`LIMIT`), as `-Y event.limit`
    /// prints its close, and the bound is in the status for the top bar.
    func testEvictionsAreLimitRows() throws {
        let r = try TestSupport.framedump(["-r", "samples/mqtt.pcap", "--max-connections", "2", "-T", "json", "-Y", "event.limit"])
        // (NDJSON ends with its `limit` line, filter or not.)
        let want = r.stdout.split(separator: "\n").filter { $0.contains("\"type\":\"close\"") && $0.contains("evicted") }.count
        XCTAssertGreaterThan(want, 0, r.stderr)
        let i = try indexer("mqtt.pcap", maxConnections: 2)
        let views = Views(indexer: i)
        let rows = try XCTUnwrap(try json(views.rows(nil, from: 0, count: 1000))["rows"] as? [[String: Any]])
        let limits = rows.filter { $0["event"] as? String == "limit" }
        XCTAssertEqual(limits.count, want)
        XCTAssertTrue(limits.allSatisfy { $0["name"] as? String == "LIMIT" && ($0["summary"] as? String)?.contains("--max-connections") == true })
        XCTAssertEqual(try i.filter("event.limit"), limits.map { $0["n"] as! Int })
        let status = try json(views.status())
        let hit = try XCTUnwrap((status["limits"] as? [[String: Any]])?.first { $0["flag"] as? String == "--max-connections" })
        XCTAssertEqual(hit["value"] as? Int, 2)
        XCTAssertEqual(hit["hits"] as? Int, want)
        XCTAssertEqual((status["losses"] as? [String: Int])?["limit"], want)
    }

    /// The list's rows are NDJSON's messages and losses, in NDJSON's order: `-Y 'event or not
    /// event'` keeps exactly those lines (every message, every loss; no opening or closing).
    /// A filter selects the same rows as `-Y` on the command line, losses included.
    func testLossesAreRowsAsNDJSONHasThem() throws {
        var kinds = Set<String>()
        // (game.pcap's first 50 packets end in the middle of a frame: a cut.)
        for (capture, count) in Self.lossCaptures.map({ ($0, UInt64?.none) }) + [("game.pcap", 50)] {
            let name = (capture as NSString).lastPathComponent
            let want = try ndjsonLines(capture, filter: "event or not event", count: count)
            let i = try indexer(capture, count: count)
            let views = Views(indexer: i)
            let rows = try json(views.rows(nil, from: 0, count: 1000))
            XCTAssertEqual(rows["total"] as? Int, want.count, name)
            let got = try XCTUnwrap(rows["rows"] as? [[String: Any]])
            let conns = try connections(views)
            var losses = 0
            for (k, (g, w)) in zip(got, want).enumerated() {
                XCTAssertEqual(conns[g["c"] as! Int]["conn"] as? String, w["conn"] as? String, "\(name) #\(k)")
                XCTAssertEqual(g["dir"] as? String, w["dir"] as? String, "\(name) #\(k)")
                guard let type = w["type"] as? String else {
                    XCTAssertNil(g["event"], "\(name) #\(k) is a message")
                    XCTAssertEqual(g["len"] as? Int, w["length"] as? Int, "\(name) #\(k)")
                    continue
                }
                losses += 1
                let kind = try XCTUnwrap(g["event"] as? String, "\(name) #\(k) is a \(type)")
                kinds.insert(kind)
                switch type {
                case "gap", "conflict", "cut": XCTAssertEqual(kind, type, "\(name) #\(k)")
                case "malformed": XCTAssertEqual(kind, w["reason"] as? String == "skipped" ? "resync" : "malformed", "\(name) #\(k)")
                case "late", "reset-ignored", "after-close": XCTAssertEqual(kind, "notice", "\(name) #\(k)")
                default: XCTAssertEqual(kind, "layer", "\(name) #\(k) \(type)")
                }
                if let length = w["length"] as? Int { XCTAssertEqual(g["len"] as? Int, length, "\(name) #\(k)") }
                // Its detail says what the terminal says.
                let detail = try json(try XCTUnwrap(views.message(g["n"] as! Int)))
                XCTAssertEqual(detail["event"] as? String, kind)
                XCTAssertTrue((detail["summary"] as? String)?.contains(" \(g["name"] as? String == "RESYNC" ? "MALFORMED" : g["name"] as! String) ") ?? false
                              || kind == "layer", "\(name) #\(k): \(detail["summary"] ?? "")")
            }
            let status = try json(views.status())
            let counted = (status["losses"] as? [String: Int])?.values.reduce(0, +)
            XCTAssertEqual(counted, losses, name)
            XCTAssertEqual(status["messages"] as? Int, want.count - losses, name)
            XCTAssertGreaterThan(losses, 0, "\(name): a capture without losses proves nothing here")
            // The filter box: `event` lists the losses, `event.gap` the gaps, as -Y does.
            for filter in ["event", "event.gap", "event.len > 8 and tcp.port == 8000", "not event"] {
                let wantRows = try ndjsonLines(capture, filter: filter, count: count)
                let ordinals = try i.filter(filter)
                XCTAssertEqual(ordinals.count, wantRows.count, "\(name) \(filter)")
                for (o, w) in zip(ordinals, wantRows) {
                    XCTAssertEqual(got[o]["event"] == nil, w["type"] == nil, "\(name) \(filter) row \(o)")
                }
            }
        }
        XCTAssertEqual(kinds, Set(LossEvent.Kind.allCases.map(\.rawValue)).subtracting(["limit"]), "(limit: testEvictionsAreLimitRows)")
    }

    /// Every message of every sample, in order: connection, direction, name, id and length as
    /// NDJSON gives them; the connections are NDJSON's.
    func testIndexIsTheNDJSONOnEverySample() throws {
        for (sample, keys) in Self.samples {
            let want = try ndjsonMessages(sample, keys: keys)
            let i = try indexer(sample, keys: keys)
            let views = Views(indexer: i)
            let rows = try json(views.rows(nil, from: 0, count: 1000))
            XCTAssertEqual(try json(views.status())["messages"] as? Int, want.count, sample)
            // (The losses among them: testLossesAreRowsAsNDJSONHasThem.)
            let got = try XCTUnwrap(rows["rows"] as? [[String: Any]]).filter { $0["event"] == nil }
            XCTAssertEqual(got.count, want.count, sample)
            let conns = try connections(views)
            for (k, (g, w)) in zip(got, want).enumerated() {
                let conn = conns[g["c"] as! Int]["conn"] as? String
                XCTAssertEqual(conn, w["conn"] as? String, "\(sample) #\(k)")
                XCTAssertEqual(g["dir"] as? String, w["dir"] as? String, "\(sample) #\(k)")
                XCTAssertEqual(g["id"] as? UInt64, w["id"] as? UInt64, "\(sample) #\(k)")
                if let name = w["message"] as? String { XCTAssertEqual(g["name"] as? String, name, "\(sample) #\(k)") }
                XCTAssertEqual(g["len"] as? Int, w["length"] as? Int, "\(sample) #\(k)")
                let detail = try json(try XCTUnwrap(views.message(g["n"] as! Int)))
                XCTAssertEqual(detail["pkts"] as? [Int], w["pkts"] as? [Int], "\(sample) #\(k)")
            }
            let wantConns = Set(want.compactMap { $0["conn"] as? String })
            XCTAssertTrue(wantConns.isSubset(of: Set(conns.compactMap { $0["conn"] as? String })), sample)
        }
    }

    /// The detail of every message: each field's byte range lies in the bytes the page shows,
    /// and on game.pcap a string field's bytes are the string NDJSON gives.
    func testFieldRangesAreInTheBytes() throws {
        for (sample, keys) in Self.samples {
            let i = try indexer(sample, keys: keys)
            let views = Views(indexer: i)
            for n in i.index.range {
                let m = try json(try XCTUnwrap(views.message(n)))
                let hex = (m["fieldBytes"] as? String) ?? (m["bytes"] as! String)
                let count = hex.count / 2
                for case let l as [String: Any] in m["lines"] as! [Any] {
                    guard let o = l["offset"] as? Int, let w = l["width"] as? Int else { continue }
                    XCTAssertTrue(o >= 0 && w >= 0 && o + w <= count, "\(sample) #\(n): [\(o)+\(w)] beyond \(count) bytes")
                }
            }
        }
        let views = Views(indexer: try indexer("game.pcap"))
        let want = try ndjsonMessages("game.pcap")
        for (n, w) in want.enumerated() {
            guard let text = (w["fields"] as? [String: Any])?["message"] as? String else { continue }
            let m = try json(try XCTUnwrap(views.message(n)))
            let line = try XCTUnwrap((m["lines"] as! [[String: Any]]).first { ($0["text"] as? String)?.hasPrefix("message: ") == true })
            let bytes = Self.bytes(m["bytes"] as! String)
            let o = line["offset"] as! Int, width = line["width"] as! Int
            XCTAssertEqual(String(decoding: bytes[o..<(o + width)], as: UTF8.self), text, "#\(n)")
        }
    }

    static func bytes(_ hex: String) -> [UInt8] {
        let u = Array(hex.utf8)
        return stride(from: 0, to: u.count, by: 2).map { UInt8(String(decoding: u[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    /// The page shows what the layers and text headers add: a gRPC message's method and stream,
    /// its pair, a failed call on its connection; a text header's fields with their bytes.
    func testLayersAndTextHeadersOnThePage() throws {
        let g = Views(indexer: try indexer("grpc.pcap"))
        let m = try json(try XCTUnwrap(g.message(1)))
        XCTAssertEqual(m["name"] as? String, "Chat.Send response")
        let notes = (m["lines"] as! [[String: Any]]).compactMap { $0["note"] as? String }
        XCTAssertTrue(notes.contains("grpc: /grpcchat.Chat/Send, stream 1, message 1"), "\(notes)")
        XCTAssertNotNil((m["pair"] as? [String: Any])?["ms"])
        let conns = try connections(g)
        XCTAssertTrue((conns[0]["notes"] as? [String] ?? []).contains { $0.contains("NOT_FOUND") }, "\(conns[0])")
        let w = Views(indexer: try indexer("wsgame.pcap"))
        let rows = try json(w.rows(nil, from: 0, count: 100))["rows"] as! [[String: Any]]
        let login = try XCTUnwrap(rows.first { $0["name"] as? String == "Login" })
        let d = try json(try XCTUnwrap(w.message(login["n"] as! Int)))
        let lines = d["lines"] as! [[String: Any]]
        let cmd = try XCTUnwrap(lines.first { $0["text"] as? String == "cmd: 1001" })
        let bytes = Self.bytes(d["bytes"] as! String)
        let o = cmd["offset"] as! Int, width = cmd["width"] as! Int
        XCTAssertEqual(String(decoding: bytes[o..<(o + width)], as: UTF8.self), "1001|")
    }

    /// A filter answers with the messages `-Y` selects; a wrong one is refused at its column.
    func testFilterSelectsWhatDashYDoes() throws {
        for (sample, filter) in [("game.pcap", "game.Res == 1"), ("im.pcap", "msg.dir == \"s2c\""), ("zgame.pcap", "msg.id == 3")] {
            let i = try indexer(sample)
            let want = try ndjsonMessages(sample, filter: filter)
            let got = try i.filter(filter)
            XCTAssertEqual(got.count, want.count, "\(sample) \(filter)")
            XCTAssertFalse(got.isEmpty, "\(sample) \(filter): a test filter that selects nothing proves nothing")
            let all = try ndjsonMessages(sample)
            for (o, w) in zip(got, want) {
                XCTAssertEqual(all[o]["length"] as? Int, w["length"] as? Int)
                XCTAssertEqual(all[o]["message"] as? String, w["message"] as? String)
            }
        }
        let i = try indexer("game.pcap")
        XCTAssertThrowsError(try i.filter("game.Res == \"x\"")) { e in
            XCTAssertEqual((e as? FilterError)?.column, 13)
        }
        // A pattern that reaches PCRE2's bound on some messages is refused as a bad filter is
        // (the page keeps its list), at the pattern.
        let v = try indexer("varint.pcap")
        XCTAssertThrowsError(try v.filter(#"chat.say.text matches "(.*)*o\\d""#)) { e in
            XCTAssertEqual((e as? FilterError)?.column, 23)
            XCTAssertTrue((e as? FilterError)?.message.contains("reached its bound of 1000000 backtracking steps") ?? false, "\(e)")
        }
        XCTAssertEqual(try v.filter(#"chat.say.text matches "^h""#).count, 9)
    }

    /// A WebSocket on a port no dissector names is known by its handshake, after the connection
    /// opened: its row is named by the protocol then (it was listed as "tcp").
    func testAWebSocketOnAnyPortIsNamedByItsProtocol() throws {
        // samples/websocket-deflate.pcap (Ethernet, IPv4) with the server's port 12346 made 45678.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("websocket-deflate.pcap"))))
        var at = 24
        while at + 16 <= bytes.count {
            let length = Int(bytes[at + 8]) | Int(bytes[at + 9]) << 8 | Int(bytes[at + 10]) << 16 | Int(bytes[at + 11]) << 24
            let tcp = at + 16 + 14 + Int(bytes[at + 16 + 14] & 15) * 4
            for p in [tcp, tcp + 2] where bytes[p] == 0x30 && bytes[p + 1] == 0x3a { (bytes[p], bytes[p + 1]) = (0xb2, 0x6e) }
            at += 16 + length
        }
        let path = TestSupport.tempDir() + "/ws-any-port.pcap"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        let i = try CaptureIndexer(UIConfiguration(input: .file(path), options: o))
        i.start()
        _ = i.waitForIndex()
        let rows = try connections(Views(indexer: i))
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows.first?["server"] as? String, "127.0.0.1:45678")
        XCTAssertEqual(rows.first?["protocol"] as? String, "bridge")
    }

    /// Filters decode one at a time, and a filter of other text stops the one decoding: the
    /// stopped one answers `FilterSuperseded` (never a part of its answer), the new one its
    /// whole answer; the same filter asked twice at once is decoded once.
    func testANewFilterStopsTheOneDecoding() throws {
        let dir = TestSupport.tempDir()
        let dissector = dir + "/d/t.dissector"
        try FileManager.default.createDirectory(atPath: dir + "/d", withIntermediateDirectories: true)
        try "protocol t { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id; }\nMessage A = 1 { uint32 n; }\n"
            .write(toFile: dissector, atomically: true, encoding: .utf8)
        let capture = dir + "/many.pcap"
        let b = try CaptureBuilder(capture)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        // 200,000 messages: a second of decoding in a debug build, so the second filter comes first.
        for chunk in 0..<2000 {
            var bytes: [UInt8] = []
            for k in 0..<100 { bytes += .be32(10) + .be16(1) + .be32(UInt32(chunk * 100 + k)) }
            c.send(bytes, segment: 1400)
        }
        b.finish()
        var o = PipelineOptions()
        o.dissectorPaths = [dir + "/d"]
        let i = try CaptureIndexer(UIConfiguration(input: .file(capture), options: o))
        i.start()
        _ = i.waitForIndex()
        let first = Locked<Result<[Int], Error>>()
        let started = DispatchSemaphore(value: 0)
        Thread {
            started.signal()
            first.set(Result { try i.filter("t.n >= 0") })
        }.start()
        started.wait()
        let running = Date().addingTimeInterval(30)
        while i.runningFilter == nil && first.value == nil && Date() < running { usleep(1_000) }
        let second = try i.filter("t.n < 10")
        XCTAssertEqual(second, Array(0..<10))
        let deadline = Date().addingTimeInterval(60)
        while first.value == nil && Date() < deadline { usleep(10_000) }
        switch try XCTUnwrap(first.value) {
        case .success(let all): XCTFail("the first filter was not stopped (\(all.count) matches)")
        case .failure(let e): XCTAssertTrue(e is FilterSuperseded, "\(e)")
        }
        // Asked again, it is decoded whole.
        XCTAssertEqual(try i.filter("t.n >= 0").count, 200_000)
    }

    /// The API's answer to `path?query`, from the head alone, as the server gives it.
    func answer(_ i: CaptureIndexer, _ path: String, _ query: [String: String]) throws -> (Int, [String: Any]) {
        let head = HTTPHead(method: "GET", path: path, query: query, version: "HTTP/1.1", fields: ["host": "127.0.0.1"])
        guard case .response(let status, _, let body) = UIServer.answer(head, views: Views(indexer: i), indexer: i, token: nil) else {
            throw XCTSkip("not a JSON answer")
        }
        return (status, try json(String(decoding: body, as: UTF8.self)))
    }

    /// 3,000 connections (scripts/gen_many_connections.py): pages of at most 500 with the
    /// total; together they are NDJSON's connections, each once; a connection is found by its
    /// key (its record read back from the connections' file); garbage is a 400.
    func testConnectionsComeInPages() throws {
        let python = try TestSupport.oracle("python3")
        let capture = TestSupport.tempDir() + "/many.pcap"
        let made = try TestSupport.run(python, [TestSupport.root.appendingPathComponent("scripts/gen_many_connections.py").path, capture, "3000"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let want = try TestSupport.pipeline(capture) { $0.format = .json }.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["conn"] as? String
        }
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        let i = try CaptureIndexer(UIConfiguration(input: .file(capture), options: o))
        i.start()
        _ = i.waitForIndex()
        var seen: [Int: String] = [:]
        var from = 0
        while true {
            let (status, page) = try answer(i, "/api/connections", ["from": String(from), "count": "10000"])
            XCTAssertEqual(status, 200)
            XCTAssertEqual(page["total"] as? Int, 3000)
            XCTAssertEqual(page["from"] as? Int, from)
            let rows = try XCTUnwrap(page["connections"] as? [[String: Any]])
            XCTAssertEqual(rows.count, min(Views.maxConnections, 3000 - from), "from \(from)")
            for r in rows {
                let n = try XCTUnwrap(r["index"] as? Int)
                XCTAssertNil(seen[n], "connection \(n) twice")
                seen[n] = r["conn"] as? String
                XCTAssertEqual(r["messages"] as? [Int], [1, 1])
                XCTAssertEqual(r["closed"] as? String, "fin")
            }
            if rows.isEmpty { break }
            from += rows.count
        }
        XCTAssertEqual(Set(seen.keys), Set(0..<3000))
        // What a message and a connection cost in memory (docs/performance.md counts on them).
        XCTAssertEqual(MemoryLayout<IndexEntry>.stride, 56)
        XCTAssertEqual(Set(seen.values), Set(want))
        XCTAssertEqual(Set(want).count, 3000)
        // Past the end: none, from the end; a page inside: what the whole list had there.
        let past = try answer(i, "/api/connections", ["from": "5000", "count": "3"]).1
        XCTAssertEqual(past["from"] as? Int, 3000)
        XCTAssertEqual((past["connections"] as? [Any])?.count, 0)
        let inside = try answer(i, "/api/connections", ["from": "1234", "count": "2"]).1
        XCTAssertEqual((inside["connections"] as? [[String: Any]])?.map { $0["conn"] as? String }, [seen[1234], seen[1235]])
        // The default page, and a connection by its key.
        XCTAssertEqual((try answer(i, "/api/connections", [:]).1["connections"] as? [Any])?.count, 200)
        XCTAssertNil(try answer(i, "/api/messages", ["filter": "game.Res == 1", "count": "1"]).1["note"])
        XCTAssertEqual(i.index.connectionIndex(try XCTUnwrap(seen[2718])), 2718)
        XCTAssertEqual(i.index.connectionIndex("10.9.9.9:1-10.0.0.1:8000"), nil)
        let seq = try answer(i, "/api/sequence", ["conn": try XCTUnwrap(seen[2718])]).1
        XCTAssertEqual((seq["arrows"] as? [Any])?.count, 2)
        for q in [["count": "ten"], ["from": "-1"], ["count": "99999999999999999999"], ["from": "1e3"]] {
            XCTAssertEqual(try answer(i, "/api/connections", q).0, 400, "\(q)")
            XCTAssertEqual(try answer(i, "/api/messages", q).0, 400, "\(q)")
        }
    }

    /// `-r` with two files: one run over both, merged in time order, as `framedump -r A -r B`
    /// gives it; filters and the diff view read the same set.
    func testTwoCapturesTogether() throws {
        let files = [TestSupport.sample("game.pcap"), TestSupport.sample("game-latency.pcap")]
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        var want = o
        want.format = .json
        let out = OutputBuffer(fd: nil)
        let p = try Pipeline(options: want, output: out)
        try p.run(try MergedSource.open(files), limit: nil, dumper: nil, lineBuffered: false)
        p.finish()
        let ndjson = try out.text.split(separator: "\n").compactMap { line -> [String: Any]? in
            let j = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return j["type"] == nil ? j : nil
        }
        var c = UIConfiguration(input: .file(files[0]), options: o)
        c.files = files
        c.diffWith = files[0]
        let i = try CaptureIndexer(c)
        i.start()
        let status = try json(i.waitForIndex())
        XCTAssertEqual(status["messages"] as? Int, ndjson.count)
        XCTAssertGreaterThan(ndjson.count, try ndjsonMessages("game.pcap").count)
        XCTAssertEqual(status["capture"] as? String, files[0] + " + " + files[1])
        let views = Views(indexer: i)
        let rows = try XCTUnwrap(try json(views.rows(nil, from: 0, count: 1000))["rows"] as? [[String: Any]])
        let conns = try connections(views)
        XCTAssertEqual(status["connections"] as? Int, Set(ndjson.compactMap { $0["conn"] as? String }).count)
        for (k, (g, w)) in zip(rows, ndjson).enumerated() {
            XCTAssertEqual(conns[g["c"] as! Int]["conn"] as? String, w["conn"] as? String, "#\(k)")
            XCTAssertEqual(g["name"] as? String, w["message"] as? String, "#\(k)")
        }
        // A filter decodes the same two files again.
        let filtered = try ndjsonOf(files, o, filter: "game.Res == 1")
        XCTAssertFalse(filtered.isEmpty)
        XCTAssertEqual(try i.filter("game.Res == 1").count, filtered.count)
        // The diff view: the set against one of its files: game-latency.pcap's connection
        // removed, nothing else.
        let d = try json(try i.diff())
        XCTAssertEqual(d["old"] as? String, files[0] + " + " + files[1])
        let differences = try XCTUnwrap(d["differences"] as? [[String: Any]])
        let latency = Set(try ndjsonMessages("game-latency.pcap").compactMap { $0["conn"] as? String })
        XCTAssertEqual(differences.map { $0["change"] as? String }, latency.map { _ in "removed" })
    }

    func ndjsonOf(_ files: [String], _ options: PipelineOptions, filter: String) throws -> [Substring] {
        var o = options
        o.format = .json
        o.displayFilter = filter
        let out = OutputBuffer(fd: nil)
        let p = try Pipeline(options: o, output: out)
        try p.run(try MergedSource.open(files), limit: nil, dumper: nil, lineBuffered: false)
        p.finish()
        return out.text.split(separator: "\n").filter { !$0.contains("\"type\"") }
    }

    /// The live ring on disk (a file indexed as a live capture is, with segments of 256 KiB):
    /// connection A sends 140,000 messages, then B opens and sends 60,000. The index keeps the
    /// last 65,536 and up to a chunk more; the spill's and the temporary capture's segments
    /// before the oldest held message are gone, those after it still serve every held message;
    /// a filter re-decodes the capture files still held and finds its messages at their
    /// ordinals, A's (picked up mid-stream there) as B's.
    func testTheLiveRingIsBoundedOnDisk() throws {
        let dir = TestSupport.tempDir()
        try Self.writeRingDissector(dir)
        let capture = dir + "/two.pcap"
        let b = try CaptureBuilder(capture)
        // 140 messages of 10 bytes a packet: every packet starts with a frame.
        func send(_ c: CaptureBuilder.Connection, _ first: Int, _ count: Int) {
            for chunk in stride(from: 0, to: count, by: 140) {
                var bytes: [UInt8] = []
                for k in chunk..<min(count, chunk + 140) { bytes += .be32(10) + .be16(1) + .be32(UInt32(first + k)) }
                c.send(bytes, segment: 1400)
            }
        }
        send(CaptureBuilder.Connection(b, index: 1, serverPort: 8000), 0, 140_000)
        send(CaptureBuilder.Connection(b, index: 2, serverPort: 8000), 1_000_000, 60_000)
        b.finish()
        let c = Self.ringConfiguration(dir, capture)
        let i = try CaptureIndexer(c)
        i.start()
        _ = i.waitForIndex()
        let held = i.index.range
        XCTAssertEqual(held, 131_072..<200_000)
        let oldest = try XCTUnwrap(i.index.entry(held.lowerBound))
        // The spill: what is held starts at most a segment before the oldest held message.
        XCTAssertLessThanOrEqual(i.spill.bytesHeld, i.spill.position - oldest.spillOffset + c.segmentBytes)
        XCTAssertLessThan(i.spill.bytesHeld, i.spill.position / 2)
        let views = Views(indexer: i)
        XCTAssertNotNil(views.message(held.lowerBound))
        XCTAssertNotNil(views.message(held.upperBound - 1))
        XCTAssertNil(views.message(held.lowerBound - 1))
        // The capture: the files still held begin at most one file before the oldest held
        // message's first packet, and take less than half of what was written.
        let files = try XCTUnwrap(i.segments.held)
        XCTAssertGreaterThan(files.count, 1)
        XCTAssertLessThan(files[0].packetsBefore, UInt64(oldest.firstPacket))
        XCTAssertGreaterThanOrEqual(files[1].packetsBefore, UInt64(oldest.firstPacket))
        let written = try FileManager.default.contentsOfDirectory(atPath: i.temporaryDirectory!)
        XCTAssertEqual(Set(written), Set(files.map { ($0.path as NSString).lastPathComponent }))
        let onDisk = try files.reduce(0) { $0 + (try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as! Int) }
        let whole = try FileManager.default.attributesOfItem(atPath: capture)[.size] as! Int
        XCTAssertLessThan(onDisk, whole / 2)
        // Filters: ordinals as the index numbers them.
        for (filter, want) in [("t.n >= 1000000", 140_000..<200_000), ("t.n >= 135000 and t.n < 1000000", 135_000..<140_000),
                               ("t.n >= 0", held)] {
            let got = try i.filter(filter)
            XCTAssertTrue(got == Array(want), "\(filter): \(got.count) from \(got.first ?? -1) to \(got.last ?? -1), not \(want)")
        }
        // The answer says from which packet the filter decoded.
        let answered = try answer(i, "/api/messages", ["filter": "t.n >= 1000000", "count": "1"]).1
        XCTAssertEqual(answered["total"] as? Int, 60_000)
        XCTAssertTrue((answered["note"] as? String)?.contains("from packet \(files[0].packetsBefore + 1)") ?? false, "\(answered)")
        i.removeTemporaryFiles()
        XCTAssertFalse(FileManager.default.fileExists(atPath: i.temporaryDirectory!))
    }

    /// A protocol of 10-byte frames (`t.n`, a counter) on port 8000, in `dir/d`.
    static func writeRingDissector(_ dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir + "/d", withIntermediateDirectories: true)
        try "protocol t { port 8000; header { uint32 length; uint16 id; } frame_length = length; message_id = id; }\nMessage A = 1 { uint32 n; }\n"
            .write(toFile: dir + "/d/t.dissector", atomically: true, encoding: .utf8)
    }

    /// `capture` indexed as a live capture is (a ring of one chunk, 256 KiB segments on disk).
    static func ringConfiguration(_ dir: String, _ capture: String) -> UIConfiguration {
        var o = PipelineOptions()
        o.dissectorPaths = [dir + "/d"]
        var c = UIConfiguration(input: .file(capture), options: o)
        c.ringOnFile = true
        c.keep = MessageIndex.chunkSize
        c.segmentBytes = 256 << 10
        return c
    }

    /// The ring read while it turns: the server's threads read rows, messages and connections
    /// while the decoding thread writes the spill and drops its oldest segments (the sanitizers
    /// run this: scripts/sanitize.sh). Every answer is whole: a message is read entire or, once
    /// dropped, not at all.
    func testTheRingIsReadWhileItTurns() throws {
        let dir = TestSupport.tempDir()
        try Self.writeRingDissector(dir)
        let capture = dir + "/one.pcap"
        let b = try CaptureBuilder(capture)
        let conn = CaptureBuilder.Connection(b, index: 1, serverPort: 8000)
        for chunk in stride(from: 0, to: 150_000, by: 140) {
            var bytes: [UInt8] = []
            for k in chunk..<(chunk + 140) { bytes += .be32(10) + .be16(1) + .be32(UInt32(k)) }
            conn.send(bytes, segment: 1400)
        }
        b.finish()
        let c = Self.ringConfiguration(dir, capture)
        let i = try CaptureIndexer(c)
        i.start()
        let readers = (0..<2).map { k in
            let done = Locked<Int>()
            let t = Thread {
                let views = Views(indexer: i)
                var reads = 0
                while i.index.snapshot.state != .done || reads < 50 {
                    let held = i.index.range
                    if !held.isEmpty, let m = views.message(k == 0 ? held.lowerBound : held.upperBound - 1) {
                        // (Whole: the frame's 10 bytes, its length field first.)
                        XCTAssertTrue(m.contains("\"bytes\":\"0000000a0001"), m)
                    }
                    XCTAssertTrue(views.rows(nil, from: 0, count: 20).hasPrefix("{\"total\":"))
                    _ = views.connections(from: 0, count: 5)
                    reads += 1
                }
                done.set(reads)
            }
            t.start()
            return done
        }
        _ = i.waitForIndex()
        let deadline = Date().addingTimeInterval(120)
        while readers.contains(where: { $0.value == nil }) && Date() < deadline { usleep(10_000) }
        XCTAssertTrue(readers.allSatisfy { ($0.value ?? 0) >= 50 }, "both readers read to the end")
        XCTAssertGreaterThan(i.index.range.lowerBound, 0, "the ring turned: older messages were dropped while being read")
        // What the spill holds starts at most a segment before the oldest held message.
        let oldest = try XCTUnwrap(i.index.entry(i.index.range.lowerBound))
        XCTAssertLessThanOrEqual(i.spill.bytesHeld, i.spill.position - oldest.spillOffset + c.segmentBytes)
        i.removeTemporaryFiles()
    }

    /// pair_by pairs each scene reply with its request: the 20 ms and 50 ms the server waited.
    func testPairsGiveTheServersDelays() throws {
        let i = try indexer("game-latency.pcap")
        let plots = try json(Views(indexer: i).plots(nil, buckets: 10))
        let latency = try XCTUnwrap(plots["latency"] as? [String: Any])
        XCTAssertEqual(latency["count"] as? Int, 5)
        XCTAssertEqual(try XCTUnwrap(latency["min"] as? Double), 20, accuracy: 5)
        XCTAssertEqual(try XCTUnwrap(latency["max"] as? Double), 50, accuracy: 5)
        let seq = try json(Views(indexer: i).sequence(connection: 0, from: 0, count: 100))
        XCTAssertEqual((seq["arrows"] as? [Any])?.count, 20)
    }

    func testDiffViewGivesTheKnownChange() throws {
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        var c = UIConfiguration(input: .file(TestSupport.sample("scenario-a.pcap")), options: o)
        c.diffWith = TestSupport.sample("scenario-changed.pcap")
        c.ignore = [try XCTUnwrap(IgnorePattern("Cs_10002.ClientTime"))]
        let i = try CaptureIndexer(c)
        let d = try json(try i.diff())
        let diffs = try XCTUnwrap(d["differences"] as? [[String: Any]])
        XCTAssertEqual(diffs.count, 1)
        let field = try XCTUnwrap((diffs.first?["fields"] as? [[String: Any]])?.first)
        XCTAssertEqual(field["path"] as? String, "Line")
        XCTAssertEqual(field["old"] as? Int, 2)
        XCTAssertEqual(field["new"] as? Int, 3)
    }

    /// The tree as stored: the text and the printer's table of its lines, read back; a table
    /// that does not fit its bytes is refused, not read past.
    func testStoredTreeLines() throws {
        let text = Array("ts a > b p M, 3 bytes\n    websocket: binary\n    [0+4]     length: 3\n      [2+1]     x: \"a\"\n    warning: no\n".utf8)
        var t = TreeLineTable()
        t.removeAll(startingAt: 100)
        t.line(.summary, depth: 0, offset: 0, width: 0, text: 100, end: 121)
        t.line(.note, depth: 0, offset: 0, width: 0, text: 126, end: 143)
        t.line(.header, depth: 0, offset: 0, width: 4, text: 158, end: 167)
        t.line(.field, depth: 1, offset: 2, width: 1, text: 184, end: 190)
        t.line(.warning, depth: 0, offset: 0, width: 0, text: 204, end: 206)
        let tree = try XCTUnwrap(StoredTree(text + t.encoded()))
        XCTAssertEqual(tree.summary, "ts a > b p M, 3 bytes")
        XCTAssertEqual(tree.lines, [.note("websocket: binary"), .field(depth: 0, offset: 0, width: 4, text: "length: 3"),
                                    .field(depth: 1, offset: 2, width: 1, text: "x: \"a\""), .warning("no")])
        // The header's field is left out of the list's line; a body field at depth 1 too.
        XCTAssertEqual(tree.oneLine(), "")
        var bad = text + t.encoded()
        bad[bad.count - 4] = 200  // more lines than the bytes hold
        XCTAssertNil(StoredTree(bad))
        var past = TreeLineTable()
        past.line(.field, depth: 0, offset: 0, width: 1, text: 0, end: UInt64(text.count + 1))
        XCTAssertNil(StoredTree(text + past.encoded()))
        XCTAssertNil(StoredTree([1, 2]))
    }

    /// A delimited protocol's message on the page: every line a field with its byte range
    /// inside the message (JSON lines: the body's keys at depth 0 and below).
    func testPageFieldRangesFitTheirMessage() throws {
        let i = try indexer("lines.pcap")
        let v = Views(indexer: i)
        let m = try json(try XCTUnwrap(v.message(0)))
        let lines = try XCTUnwrap(m["lines"] as? [[String: Any]])
        XCTAssertFalse(lines.isEmpty)
        let fields = lines.filter { $0["offset"] != nil }
        XCTAssertEqual(fields.count, lines.filter { $0["note"] == nil && $0["warning"] == nil }.count)
        let len = try XCTUnwrap(m["len"] as? Int)
        for f in fields {
            let o = try XCTUnwrap(f["offset"] as? Int), w = try XCTUnwrap(f["width"] as? Int)
            XCTAssert(o >= 0 && o + w <= len, "\(f)")
        }
    }

    /// On loopback, a page of another name is refused (DNS rebinding); elsewhere, a token; and
    /// anywhere, a request a page of another origin makes (Sec-Fetch-Site, Origin).
    func testServerAnswersOnlyItsOwnPage() async throws {
        let i = try indexer("game.pcap")
        for (listen, needsToken) in [("127.0.0.1", false), ("127.0.0.2", true)] {
            let server = try UIServer(indexer: i, listen: listen, port: 0)
            let url = Locked<String>()
            let task = Task { await server.run { url.set($0) } }
            defer { task.cancel() }
            let deadline = Date().addingTimeInterval(20)
            while url.value == nil && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
            let page = try XCTUnwrap(url.value)
            XCTAssertEqual(page.contains("?token="), needsToken)
            let base = String(page.prefix { $0 != "?" })
            let status = try await get(base + "api/status" + (needsToken ? "?" + page.split(separator: "?")[1] : ""))
            XCTAssertEqual(status.0, 200)
            XCTAssertTrue(status.1.contains("\"messages\":39"))
            if needsToken {
                let none = try await get(base + "api/status"), wrong = try await get(base + "api/status?token=wrong")
                XCTAssertEqual(none.0, 403)
                XCTAssertEqual(wrong.0, 403)
            } else {
                let rebound = try await get(base + "api/status", host: "attacker.example")
                XCTAssertEqual(rebound.0, 403)
                let index = try await get(base)
                XCTAssertTrue(index.1.contains("<script src=\"app.js\">"))
                let file = try await get(base + "etc/passwd")
                XCTAssertEqual(file.0, 404)
                // A page of another origin: refused, by what the browser says of it.
                let own = String(base.dropLast())
                for (name, value) in [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Site", "same-site"),
                                      ("Origin", "http://attacker.example"), ("Origin", "null"), ("Origin", own + "0")] {
                    let r = try await get(base + "api/messages?filter=game.Res%20%3D%3D%201", headers: [name: value])
                    XCTAssertEqual(r.0, 403, "\(name): \(value)")
                }
                for (name, value) in [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Site", "none"), ("Origin", own)] {
                    let r = try await get(base + "api/status", headers: [name: value])
                    XCTAssertEqual(r.0, 200, "\(name): \(value)")
                }
                // What every answer says to the browser.
                let (_, response) = try await URLSession.shared.data(from: URL(string: base + "api/status")!)
                let h = try XCTUnwrap(response as? HTTPURLResponse)
                XCTAssertEqual(h.value(forHTTPHeaderField: "X-Content-Type-Options"), "nosniff")
                XCTAssertEqual(h.value(forHTTPHeaderField: "X-Frame-Options"), "DENY")
                XCTAssertTrue(h.value(forHTTPHeaderField: "Content-Security-Policy")?.contains("default-src 'self'") ?? false)
            }
            await server.stop()
        }
    }

    func get(_ url: String, host: String? = nil, headers: [String: String] = [:]) async throws -> (Int, String) {
        var r = URLRequest(url: URL(string: url)!)
        if let host { r.setValue(host, forHTTPHeaderField: "Host") }
        for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await URLSession.shared.data(for: r)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// The page in a real browser: scripts/ui_browser_test.py on every sample and live on lo.
    func testPageInABrowser() throws {
        let python = try TestSupport.oracle("python3")
        _ = try TestSupport.oracle("chromedriver")
        let probe = try TestSupport.run(python, ["-c", "import selenium"])
        if probe.status != 0 {
            if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail("selenium is required in CI (installed by .ci/run)") }
            throw XCTSkip("selenium not installed")
        }
        var args = [TestSupport.root.appendingPathComponent("scripts/ui_browser_test.py").path, "--framedump", TestSupport.binary]
        // FRAMEDUMP_UI_SCREENSHOTS=1 writes docs/ui/*.png, the README's pictures.
        let shots = ProcessInfo.processInfo.environment["FRAMEDUMP_UI_SCREENSHOTS"] == "1"
            ? TestSupport.root.appendingPathComponent("docs/ui").path : TestSupport.tempDir()
        args += ["--screenshots", shots]
        if !TestSupport.isRoot { args.append("--no-live") }
        let r = try TestSupport.run(python, args, cwd: TestSupport.root.path, timeout: 900)
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains(" passed, 0 failed"), r.stdout)
        for view in ["messages-1280x800", "messages-1920x1080", "follow-1280x800", "sequence-1280x800", "plots-1280x800", "diff-1280x800"] {
            let size = (try? FileManager.default.attributesOfItem(atPath: shots + "/\(view).png")[.size] as? Int) ?? 0
            XCTAssertGreaterThan(size, 10_000, "no screenshot of the \(view) view")
        }
    }
}

/// A value set once by another task.
final class Locked<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var v: T?
    func set(_ x: T) { lock.lock(); v = x; lock.unlock() }
    var value: T? { lock.lock(); defer { lock.unlock() }; return v }
}

/// The list sorted by a column, the follow-stream answer and the colouring rules' matches,
/// asked of the server's routes as the page asks them.
final class UISortFollowTests: XCTestCase {
    func indexer(_ sample: String) throws -> CaptureIndexer {
        var o = PipelineOptions()
        o.dissectorPaths = [TestSupport.dissectors]
        let i = try CaptureIndexer(UIConfiguration(input: .file(UITests.path(sample)), options: o))
        i.start()
        _ = i.waitForIndex()
        return i
    }

    /// The status and body `target` is answered with.
    func ask(_ target: String, _ i: CaptureIndexer) throws -> (Int, [String: Any]) {
        let text = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        let head = try Array(text.utf8).withUnsafeBytes { try HTTPHead.parse($0).head }
        guard case .response(let status, _, let body) = UIServer.answer(head, views: Views(indexer: i), indexer: i, token: nil) else {
            XCTFail("\(target): not a response"); return (0, [:])
        }
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any], String(decoding: body, as: UTF8.self))
        return (status, o)
    }

    func rows(_ target: String, _ i: CaptureIndexer) throws -> [[String: Any]] {
        let (status, o) = try ask(target, i)
        XCTAssertEqual(status, 200, "\(target): \(o)")
        return try XCTUnwrap(o["rows"] as? [[String: Any]])
    }

    /// Every column, both ways: the rows are every message once, in the column's order, ties in
    /// message order; the page asked again (another page of it) is not sorted again.
    func testSortedListIsInTheColumnsOrder() throws {
        let i = try indexer("game.pcap")
        let all = try rows("/api/messages?count=1000", i)
        let total = all.count
        XCTAssertEqual(total, 39)
        func key(_ r: [String: Any], _ column: String) -> String {
            switch column {
            case "time": return String(format: "%020.9f", r["t"] as! Double)
            case "len": return String(format: "%010d", r["len"] as! Int)
            case "id": return r["id"] is NSNull ? "" : String(format: "%020d", r["id"] as! Int)
            case "conn": return String(format: "%010d", r["c"] as! Int)
            default: return r[column] as! String
            }
        }
        for column in ["time", "name", "id", "len", "dir", "conn"] {
            for desc in [false, true] {
                let got = try rows("/api/messages?count=1000&sort=\(column)&desc=\(desc ? 1 : 0)", i)
                let want = all.sorted { a, b in
                    let (ka, kb) = (key(a, column), key(b, column))
                    if ka != kb { return desc ? ka > kb : ka < kb }
                    return desc ? (a["n"] as! Int) > (b["n"] as! Int) : (a["n"] as! Int) < (b["n"] as! Int)
                }
                XCTAssertEqual(got.map { $0["n"] as! Int }, want.map { $0["n"] as! Int }, "sort=\(column) desc=\(desc)")
            }
        }
        // Not the message order: the test would pass on an unsorted answer otherwise.
        let byLength = try rows("/api/messages?count=1000&sort=len", i).map { $0["n"] as! Int }
        XCTAssertNotEqual(byLength, Array(0..<total))
        // Pages of one order: sorted once.
        let page1 = try rows("/api/messages?from=0&count=10&sort=len&desc=1", i)
        let made = i.sorts.sortsMade
        let page2 = try rows("/api/messages?from=10&count=10&sort=len&desc=1", i)
        XCTAssertEqual(i.sorts.sortsMade, made)
        _ = try rows("/api/messages?from=0&count=10&sort=len&conn=0", i)
        XCTAssertEqual(i.sorts.sortsMade, made + 1, "another selection is sorted")
        XCTAssertEqual((page1 + page2).map { $0["n"] as! Int }, Array(try rows("/api/messages?count=1000&sort=len&desc=1", i).map { $0["n"] as! Int }.prefix(20)))
        // A filter, sorted: its messages, in the column's order.
        let filtered = try rows("/api/messages?count=1000&filter=game.Res%20%3D%3D%201", i).map { $0["n"] as! Int }
        let filteredByName = try rows("/api/messages?count=1000&sort=name&desc=1&filter=game.Res%20%3D%3D%201", i)
        XCTAssertFalse(filtered.isEmpty)
        XCTAssertEqual(Set(filteredByName.map { $0["n"] as! Int }), Set(filtered))
        XCTAssertEqual(filteredByName.map { $0["name"] as! String }, filteredByName.map { $0["name"] as! String }.sorted(by: >))
        // A connection, sorted: its messages alone, in the column's order (an order per connection).
        for c in [1, 2] {
            let mine = try rows("/api/messages?count=1000&sort=len&desc=1&conn=\(c)", i)
            XCTAssertEqual(Set(mine.map { $0["n"] as! Int }), Set(all.filter { $0["c"] as? Int == c }.map { $0["n"] as! Int }))
            XCTAssertEqual(mine.map { $0["len"] as! Int }, mine.map { $0["len"] as! Int }.sorted(by: >))
        }
        // The delta column's reference: the time of the row before the page, in the page's order.
        let (_, second) = try ask("/api/messages?from=5&count=5&sort=len", i)
        XCTAssertEqual(second["before"] as? Double, byLength.count > 4 ? all[byLength[4]]["t"] as? Double : nil)
        XCTAssertEqual(second["first"] as? Double, all[0]["t"] as? Double)
    }

    func testBadParametersAreRefused() throws {
        let i = try indexer("game.pcap")
        for target in ["/api/messages?sort=summary", "/api/messages?sort=len&desc=2",
                       "/api/follow?conn=0&count=0", "/api/follow?conn=0&count=501", "/api/follow?conn=0&count=x",
                       "/api/follow?conn=0&from=-1", "/api/follow?conn=0&from=1e3",
                       "/api/matches?filter=game.Res%20%3D%3D%201&n=1,x", "/api/matches?filter=game.Res%20%3D%3D%201",
                       "/api/matches?n=1", "/api/matches?filter=game.Res%20%3D%3D%20%22x%22&n=1",
                       // (Read as 0 or 100 these once answered rows nobody asked for.)
                       "/api/messages?from=x", "/api/messages?from=-5", "/api/messages?count=1001", "/api/messages?count=ten",
                       "/api/sequence?conn=0&from=x", "/api/sequence?conn=0&count=2001", "/api/plots?buckets=0",
                       "/api/plots?buckets=many"] {
            let (status, o) = try ask(target, i)
            XCTAssertEqual(status, 400, target)
            XCTAssertNotNil(o["error"] as? String, target)
        }
        let many = (0..<1001).map(String.init).joined(separator: ",")
        XCTAssertEqual(try ask("/api/matches?filter=game.Res%20%3D%3D%201&n=\(many)", i).0, 400)
        XCTAssertEqual(try ask("/api/follow?conn=99", i).0, 404)
        XCTAssertEqual(try ask("/api/plots?conn=99", i).0, 404, "an unknown connection is not every connection's plots")
        XCTAssertEqual(try ask("/api/messages?count=1000", i).0, 200)
        XCTAssertEqual(try ask("/api/follow", i).0, 400)
    }

    /// Each connection, paged three messages at a time: its messages in order, their direction,
    /// and bytes that are their frames' (`/api/message`'s), one after another.
    func testFollowIsTheConnectionsMessagesBytesInOrder() throws {
        let i = try indexer("game.pcap")
        let conns = i.index.connectionCount
        XCTAssertGreaterThan(conns, 1)
        var seen = 0
        for c in 0..<conns {
            var from: Int? = 0, got: [(Int, String, String)] = []
            while let f = from {
                let (status, o) = try ask("/api/follow?conn=\(c)&from=\(f)&count=3", i)
                XCTAssertEqual(status, 200)
                let messages = try XCTUnwrap(o["messages"] as? [[String: Any]])
                XCTAssertLessThanOrEqual(messages.count, 3)
                got += messages.map { ($0["n"] as! Int, $0["dir"] as! String, $0["bytes"] as! String) }
                from = o["next"] as? Int
                XCTAssertTrue(from == nil || from! == f + messages.count)
            }
            let ordinals = i.index.ordinals(ofConnection: c)
            XCTAssertEqual(got.map(\.0), ordinals, "connection \(c)")
            for (n, dir, bytes) in got {
                let (_, m) = try ask("/api/message?n=\(n)", i)
                XCTAssertEqual(dir, m["dir"] as? String)
                XCTAssertEqual(bytes, m["bytes"] as? String)
                XCTAssertFalse(bytes.isEmpty)
            }
            seen += got.count
        }
        XCTAssertEqual(seen, 39, "every message is in its connection's stream")
        // Bounded by bytes: each answer within the bound but for one message cut to it, said so.
        let small = try JSONSerialization.jsonObject(with: Data(Views(indexer: i).follow(connection: 0, from: 0, count: 500, maxBytes: 10).utf8)) as! [String: Any]
        let cut = small["messages"] as! [[String: Any]]
        XCTAssertEqual(cut.count, 1)
        XCTAssertEqual((cut[0]["bytes"] as! String).count, 20)
        XCTAssertEqual(cut[0]["cut"] as? Bool, (cut[0]["len"] as! Int) > 10)
        XCTAssertEqual(small["next"] as? Int, 1)
        // Past the end: nothing, and no next.
        let (_, end) = try ask("/api/follow?conn=0&from=1000", i)
        XCTAssertEqual((end["messages"] as? [Any])?.count, 0)
        XCTAssertTrue(end["next"] is NSNull)
    }

    /// With losses: each loss of a connection is a marker in its stream (its kind and length, no
    /// bytes), in its place among the messages; sorted by bytes, a loss counts the bytes it shows.
    func testFollowMarksLossesAndSortsByTheLengthShown() throws {
        var markers = 0
        for capture in [TestSupport.fixture("lost_segment.pcap"), TestSupport.fixture("check_problems.pcap")] {
            let i = try indexer(capture)
            let all = try rows("/api/messages?count=1000", i)
            for c in 0..<i.index.connectionCount {
                let (status, o) = try ask("/api/follow?conn=\(c)&count=500", i)
                XCTAssertEqual(status, 200)
                let items = try XCTUnwrap(o["messages"] as? [[String: Any]])
                let mine = all.filter { $0["c"] as? Int == c }
                XCTAssertEqual(items.map { $0["n"] as! Int }, mine.map { $0["n"] as! Int }, "\(capture) connection \(c)")
                for (item, row) in zip(items, mine) {
                    XCTAssertEqual(item["event"] as? String, row["event"] as? String)
                    XCTAssertEqual(item["len"] as? Int, row["len"] as? Int)
                    if item["event"] != nil {
                        XCTAssertNil(item["bytes"], "a loss has no bytes in the stream")
                        markers += 1
                    } else {
                        XCTAssertEqual(item["bytes"] as? String, try ask("/api/message?n=\(item["n"]!)", i).1["bytes"] as? String)
                    }
                }
            }
            let byLength = try rows("/api/messages?count=1000&sort=len", i).map { $0["len"] as! Int }
            XCTAssertEqual(byLength, all.map { $0["len"] as! Int }.sorted())
        }
        XCTAssertGreaterThan(markers, 0, "captures without losses prove nothing here")
    }

    /// A colouring rule's answer: of the rows listed, exactly those the filter selects.
    func testMatchesAreTheFiltersAmongTheRowsListed() throws {
        let i = try indexer("game.pcap")
        let selected = Set(try i.filter("game.Res == 1"))
        XCTAssertFalse(selected.isEmpty)
        let listed = Array(stride(from: 38, through: 0, by: -2))
        let (status, o) = try ask("/api/matches?filter=game.Res%20%3D%3D%201&n=" + listed.map(String.init).joined(separator: ","), i)
        XCTAssertEqual(status, 200)
        XCTAssertEqual(o["matches"] as? [Int], listed.filter(selected.contains))
        XCTAssertFalse((o["matches"] as? [Int] ?? []).isEmpty)
    }
}

/// Live, the list's sorted order follows the capture: the messages that came are merged in and
/// the dropped ones left out, without sorting the whole order again.
final class UISortedOrdersTests: XCTestCase {
    func entry(_ length: UInt32, name: UInt32) -> IndexEntry {
        IndexEntry(spillOffset: 0, treeLength: 0, frameLength: length, transformedLength: 0, nanos: 0, seconds: 0,
                   firstPacket: 1, lastPacket: 1, id: 0, connection: 0, name: name, pair: IndexEntry.noPair,
                   direction: 0, flags: 0)
    }

    func testAGrowingCaptureIsMergedNotSortedAgain() throws {
        let index = try MessageIndex(keep: 0)
        let orders = SortedOrders()
        var g = SystemRandomNumberGenerator()
        var lengths: [UInt32] = []
        func add(_ n: Int) {
            let new = (0..<n).map { _ in UInt32.random(in: 0..<50, using: &g) }
            lengths += new
            index.publish(entries: new.map { entry($0, name: $0 % 3) }, pairs: [], connections: [:], newNames: [], packets: 0,
                          losses: [Int](repeating: 0, count: LossEvent.Kind.allCases.count), lostBytes: 0)
        }
        func want(_ column: SortColumn, _ desc: Bool) -> [Int] {
            let r = index.range
            return r.sorted { a, b in
                let (ka, kb) = column == .len ? (Int(lengths[a]), Int(lengths[b])) : (a, b)
                if ka != kb { return desc ? ka > kb : ka < kb }
                return desc ? a > b : a < b
            }
        }
        add(500)
        for desc in [false, true] {
            XCTAssertEqual(orders.order(.len, descending: desc, scope: "", selection: nil, index: index), want(.len, desc))
        }
        let sorted = orders.sortsMade
        XCTAssertEqual(sorted, 2)
        for _ in 0..<5 {
            add(Int.random(in: 1...200, using: &g))
            for desc in [false, true] {
                XCTAssertEqual(orders.order(.len, descending: desc, scope: "", selection: nil, index: index), want(.len, desc))
            }
        }
        XCTAssertEqual(orders.sortsMade, sorted, "the grown orders were merged, not sorted again")
        // A selection (every third message) grows the same way.
        let third = { index.range.filter { $0 % 3 == 0 } }
        XCTAssertEqual(orders.order(.len, descending: false, scope: "third", selection: third(), index: index), want(.len, false).filter { $0 % 3 == 0 })
        add(77)
        XCTAssertEqual(orders.order(.len, descending: false, scope: "third", selection: third(), index: index), want(.len, false).filter { $0 % 3 == 0 })
        XCTAssertEqual(orders.sortsMade, sorted + 1)
    }
}
