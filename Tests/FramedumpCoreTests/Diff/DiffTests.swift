import Foundation
import XCTest
@testable import FramedumpCore

/// `--diffable` grouping and stable keys, `--ignore`, and `framedump diff`, on the scenario
/// recorded by samples/make_diff_samples.py (six game connections; recorded twice, and in a
/// variant with one field changed and one with a message removed and another inserted).
final class DiffTests: XCTestCase {
    let ignore = ["--ignore", "ClientTime"]

    func scenario(_ name: String) -> String { TestSupport.sample("scenario-\(name).pcap") }

    /// Two recordings of one scenario: other ports, another interleaving, other heartbeat
    /// times. With the heartbeat time ignored the exports are byte-identical and diff says equal.
    func testTwoRecordingsOfOneScenarioAreEqual() throws {
        let a = try TestSupport.framedump(["-r", scenario("a"), "--diffable"] + ignore)
        let b = try TestSupport.framedump(["-r", scenario("b"), "--diffable"] + ignore)
        XCTAssertEqual(a.status, 0, a.stderr)
        XCTAssertEqual(a.stdout.split(separator: "\n").count, 6 * 2 + 66, "open, close and 11 items per connection")
        XCTAssertEqual(a.stdout, b.stdout)
        // The recordings do differ: the plain exports (ports, interleaving), and the heartbeat times.
        let pa = try TestSupport.framedump(["-r", scenario("a"), "-T", "json"])
        let pb = try TestSupport.framedump(["-r", scenario("b"), "-T", "json"])
        XCTAssertNotEqual(pa.stdout, pb.stdout)
        let plainA = try TestSupport.framedump(["-r", scenario("a"), "--diffable"])
        let plainB = try TestSupport.framedump(["-r", scenario("b"), "--diffable"])
        XCTAssertNotEqual(plainA.stdout, plainB.stdout)

        let d = try TestSupport.framedump(["diff", scenario("a"), scenario("b")] + ignore)
        XCTAssertEqual(d.status, 0, d.stdout + d.stderr)
        XCTAssertEqual(d.stdout, "no differences (old: 66 items in 6 connections, new: 66 in 6)\n")
        // Without --ignore, the twelve heartbeats are the only differences, each by ClientTime alone.
        let t = try TestSupport.framedump(["diff", "--json", scenario("a"), scenario("b")])
        XCTAssertEqual(t.status, 1, t.stderr)
        let lines = try t.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        XCTAssertEqual(lines.count, 12)
        for l in lines {
            XCTAssertEqual(l["change"], .string("changed"))
            XCTAssertEqual(l["message"], .string("Cs_10002"))
            guard case .array(let fs)? = l["fields"], fs.count == 1 else { return XCTFail(l.text) }
            XCTAssertEqual(fs[0]["path"], .string("ClientTime"))
        }
    }

    /// The export's lines wait in a temporary file; where none can be made they stay in memory,
    /// and the output is the same.
    func testExportWithoutATemporaryFile() throws {
        let normal = try TestSupport.framedump(["-r", scenario("a"), "--diffable"])
        let inMemory = try TestSupport.run(TestSupport.binary, ["-r", scenario("a"), "--diffable"], cwd: TestSupport.root.path,
                                           environment: ["TMPDIR": "/nonexistent/dir"])
        XCTAssertEqual(inMemory.status, 0, inMemory.stderr)
        XCTAssertEqual(inMemory.stdout, normal.stdout)
        XCTAssertEqual(normal.stdout.split(separator: "\n").count, 78)
        // bridge.pcap's 70,010-byte message makes its connection's lines go out in blocks mid-stream.
        let big = try TestSupport.framedump(["-r", "samples/bridge.pcap", "--diffable"])
        let bigInMemory = try TestSupport.run(TestSupport.binary, ["-r", "samples/bridge.pcap", "--diffable"],
                                              cwd: TestSupport.root.path, environment: ["TMPDIR": "/nonexistent/dir"])
        XCTAssertGreaterThan(big.stdout.utf8.count, 3 * ConnectionCollector.block)
        XCTAssertEqual(bigInMemory.stdout, big.stdout)
        XCTAssertEqual(try TestSupport.framedump(["diff", "samples/bridge.pcap", "samples/bridge.pcap"]).status, 0)
    }

    /// diff(1) of two exports of different runs: one line per message that differs. (A
    /// connection's key follows its content from the first message on, so an edit later in it
    /// does not move the keys.)
    func testLineDiffOfExportsShowsOneMessagePerLine() throws {
        let tool = try TestSupport.oracle("diff")
        let dir = TestSupport.tempDir()
        for name in ["a", "changed", "edited"] {
            let r = try TestSupport.framedump(["-r", scenario(name), "--diffable"] + ignore)
            try r.stdout.write(toFile: "\(dir)/\(name).ndjson", atomically: true, encoding: .utf8)
        }
        // edited: the heartbeat removed, the status inserted, and the connection's close line
        // (its byte counts) changed.
        for (name, removed, added) in [("changed", 1, 1), ("edited", 2, 2)] {
            let d = try TestSupport.run(tool, ["\(dir)/a.ndjson", "\(dir)/\(name).ndjson"])
            XCTAssertEqual(d.status, 1)
            let lines = d.stdout.split(separator: "\n")
            XCTAssertEqual(lines.filter { $0.hasPrefix("< ") }.count, removed, d.stdout)
            XCTAssertEqual(lines.filter { $0.hasPrefix("> ") }.count, added, d.stdout)
        }
    }

    /// The `--diffable` export of a capture, as an input, equals the capture.
    func testExportsAndCapturesCompareAlike() throws {
        let dir = TestSupport.tempDir()
        let a = try TestSupport.framedump(["-r", scenario("a"), "--diffable"] + ignore)
        let path = dir + "/a.ndjson"
        try a.stdout.write(toFile: path, atomically: true, encoding: .utf8)
        var d = try TestSupport.framedump(["diff", path, scenario("b")] + ignore)
        XCTAssertEqual(d.status, 0, d.stdout + d.stderr)
        let plain = try TestSupport.framedump(["-r", scenario("a"), "-T", "json"])
        try plain.stdout.write(toFile: dir + "/p.ndjson", atomically: true, encoding: .utf8)
        d = try TestSupport.framedump(["diff", dir + "/p.ndjson", path] + ignore)
        XCTAssertEqual(d.status, 0, d.stdout + d.stderr)
        // An export against the edited capture: the same two differences as capture to capture.
        d = try TestSupport.framedump(["diff", "--json", path, scenario("edited")] + ignore)
        XCTAssertEqual(d.status, 1, d.stderr)
        XCTAssertEqual(d.stdout.split(separator: "\n").count, 2, d.stdout)
    }

    /// A changed value inside what a layer or a text header carries (a gRPC message's protobuf
    /// field, a WebSocket text header's seq) is that field of those messages, and nothing else.
    func testLayeredMessagesDiffByTheirFields() throws {
        let dir = NSTemporaryDirectory() + "framedump-diff-layers-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (sample, from, to, want, count) in [("grpc.pcap", "\"text\":\"hello\"", "\"text\":\"hullo\"", "    text: \"hello\" → \"hullo\"", 1),
                                                ("wsgame.pcap", "\"seq\":3}", "\"seq\":33}", "    header.seq: 3 → 33", 4)] {
            let export = try TestSupport.framedump(["-r", TestSupport.sample(sample), "--json", "--diffable"])
            XCTAssertEqual(export.status, 0, export.stderr)
            XCTAssertTrue(export.stdout.contains(from), sample)
            let edited = dir + "/" + sample + ".ndjson"
            try export.stdout.replacingOccurrences(of: from, with: to).write(toFile: edited, atomically: true, encoding: .utf8)
            let same = try TestSupport.framedump(["diff", TestSupport.sample(sample), TestSupport.sample(sample)])
            XCTAssertEqual(same.status, 0, same.stdout)
            let d = try TestSupport.framedump(["diff", "--color", "never", TestSupport.sample(sample), edited])
            XCTAssertEqual(d.status, 1, d.stderr)
            let lines = d.stdout.split(separator: "\n")
            XCTAssertEqual(lines.filter { $0.hasPrefix("    ") }, Array(repeating: Substring(want), count: count), d.stdout)
            XCTAssertTrue(d.stdout.contains("\(count) difference\(count == 1 ? "" : "s"): \(count) changed, 0 added, 0 removed"), d.stdout)
        }
    }

    /// One field changed: exactly that field of that message, as text and as JSON.
    func testOneFieldChanged() throws {
        let t = try TestSupport.framedump(["diff", scenario("a"), scenario("changed")] + ignore)
        XCTAssertEqual(t.status, 1, t.stderr)
        let (old, new) = try packets("Cs_20001", "\"Line\":3", in: "changed", otherSide: "\"SceneId\":14,")
        let four = try key(ofClient: 4, in: "a")
        XCTAssertEqual(try key(ofClient: 4, in: "changed"), four, "the changed connection is still the same content order")
        let clients = "\(try client(ofClient: 4, in: "a")) → \(try client(ofClient: 4, in: "changed"))"
        XCTAssertEqual(t.stdout, """
            --- \(scenario("a"))
            +++ \(scenario("changed"))
            @@ \(four) c2s @@ client \(clients)
            ~Cs_20001 (pkt \(old) → pkt \(new))
                Line: 2 → 3
            1 difference: 1 changed, 0 added, 0 removed (old: 66 items in 6 connections, new: 66 in 6)

            """)
        let j = try TestSupport.framedump(["diff", "--json", scenario("a"), scenario("changed")] + ignore)
        XCTAssertEqual(j.status, 1)
        XCTAssertEqual(j.stdout, """
            {"change":"changed","conn":"\(four)","dir":"c2s","message":"Cs_20001","pkts_old":[\(old),\(old)],"pkts_new":[\(new),\(new)],"fields":[{"path":"Line","old":2,"new":3}]}

            """)
        XCTAssertEqual(j.stderr, "1 difference: 1 changed, 0 added, 0 removed (old: 66 items in 6 connections, new: 66 in 6)\n")
    }

    /// A c2s message removed and an s2c message inserted in one connection: one removal and
    /// one insertion, nothing else (no later message reported as changed).
    func testMessageRemovedAndAnotherInserted() throws {
        let t = try TestSupport.framedump(["diff", "--color", "never", scenario("a"), scenario("edited")] + ignore)
        XCTAssertEqual(t.status, 1, t.stderr)
        // Client 5's second heartbeat in the recording, and the extra status in the variant.
        let a = try plain("a"), edited = try plain("edited")
        let five = connection(ofClient: 5, a)
        let removed = try firstPacket(a.filter { $0["conn"] == five && $0["message"] == .string("Cs_10002") }[1])
        let added = try firstPacket(edited.first { $0["fields"]?["name"] == .string("bonus") })
        let key5 = try key(ofClient: 5, in: "a")
        let clients = " client \(try client(ofClient: 5, in: "a")) → \(try client(ofClient: 5, in: "edited"))"
        let lines = t.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.count, 8, t.stdout)
        // The removed heartbeat is shown without the ignored field.
        XCTAssertEqual(Array(lines[2...3]), ["@@ \(key5) c2s @@" + clients, "-Cs_10002 (pkt \(removed)) {}"])
        XCTAssertEqual(Array(lines[4...6]), [
            "@@ \(key5) s2c @@" + clients,
            "+Sc_30005 (pkt \(added)) {\"Hp\":1,\"Level\":1,\"name\":\"bonus\"}",
            "2 differences: 0 changed, 1 added, 1 removed (old: 66 items in 6 connections, new: 66 in 6)",
        ])
        let j = try TestSupport.framedump(["diff", "--json", scenario("a"), scenario("edited")] + ignore)
        XCTAssertEqual(j.status, 1)
        XCTAssertEqual(j.stdout, """
            {"change":"removed","conn":"\(key5)","dir":"c2s","message":"Cs_10002","pkts_old":[\(removed),\(removed)],"pkts_new":null}
            {"change":"added","conn":"\(key5)","dir":"s2c","message":"Sc_30005","pkts_old":null,"pkts_new":[\(added),\(added)]}

            """)
    }

    /// Colour only when asked for or on a terminal: piped output has none.
    func testReportColour() throws {
        let piped = try TestSupport.framedump(["diff", scenario("a"), scenario("changed")] + ignore)
        XCTAssertFalse(piped.stdout.contains("\u{1b}["), piped.stdout)
        let coloured = try TestSupport.framedump(["diff", "--color", "always", scenario("a"), scenario("changed")] + ignore)
        XCTAssertTrue(coloured.stdout.contains("\u{1b}[33m~Cs_20001"), coloured.stdout)
        XCTAssertTrue(coloured.stdout.contains("Line: \u{1b}[31m2\u{1b}[0m → \u{1b}[32m3\u{1b}[0m"), coloured.stdout)
    }

    /// A connection only one side has is one difference; other protocols are other servers.
    func testUnpairedConnectionsAndErrors() throws {
        let d = try TestSupport.framedump(["diff", "--json", "samples/game.pcap", "samples/svc.pcap"])
        XCTAssertEqual(d.status, 1)
        let lines = try d.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        XCTAssertEqual(lines.filter { $0["change"] == .string("removed") && $0["dir"] == .null }.count, 3)
        XCTAssertEqual(lines.filter { $0["change"] == .string("added") && $0["dir"] == .null }.count, 3)
        XCTAssertEqual(lines.count, 6)
        XCTAssertEqual(try TestSupport.framedump(["diff", "samples/game.pcap", "no/such.pcap"]).status, 2)
        let dir = TestSupport.tempDir()
        try "{\"conn\":\"x\",\"dir\":\"c2s\",\"v\":NaN}\n".write(toFile: dir + "/bad.ndjson", atomically: true, encoding: .utf8)
        let bad = try TestSupport.framedump(["diff", dir + "/bad.ndjson", "samples/game.pcap"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("bad.ndjson:1: not strict JSON"), bad.stderr)
        XCTAssertEqual(try TestSupport.framedump(["diff", "--ignore", "a..b", "samples/game.pcap", "samples/game.pcap"]).status, 2)
        // A misspelt --ignore matches nothing: said, exit 2 (the report is still printed), for
        // captures and exports alike; a right one next to it is not named.
        let typo = try TestSupport.framedump(["diff", scenario("a"), scenario("b"), "--ignore", "ClientTmie", "--ignore", "ClientTime"])
        XCTAssertEqual(typo.status, 2, typo.stdout + typo.stderr)
        XCTAssertEqual(typo.stderr, "framedump diff: --ignore ClientTmie matched no field in either input (misspelt? paths are protocol.message.field, * for any name)\n")
        XCTAssertTrue(typo.stdout.hasPrefix("no differences"), typo.stdout)
        let export = try TestSupport.framedump(["-r", scenario("a"), "--diffable"])
        try export.stdout.write(toFile: dir + "/a.ndjson", atomically: true, encoding: .utf8)
        let typoJSON = try TestSupport.framedump(["diff", dir + "/a.ndjson", dir + "/a.ndjson", "--ignore", "game.Cs_10002.Nope"])
        XCTAssertEqual(typoJSON.status, 2, typoJSON.stderr)
        XCTAssertTrue(typoJSON.stderr.contains("--ignore game.Cs_10002.Nope matched no field"), typoJSON.stderr)
    }

    // MARK: support

    /// The stable key of client `n`'s connection in a capture's `--diffable` export.
    func key(ofClient n: Int, in name: String) throws -> String {
        let lines = try TestSupport.framedump(["-r", scenario(name), "--diffable"] + ignore).stdout.split(separator: "\n")
            .map { try JSONValue.parse(String($0)) }
        return try XCTUnwrap(connection(ofClient: n, lines)?.stringValue)
    }

    /// The client endpoint of that connection in a capture (the report names it beside the key).
    func client(ofClient n: Int, in name: String) throws -> String {
        let conn = try XCTUnwrap(connection(ofClient: n, try plain(name))?.stringValue)
        return String(conn.split(separator: "-")[0])
    }

    /// A capture's plain NDJSON, parsed.
    func plain(_ name: String) throws -> [JSONValue] {
        try TestSupport.framedump(["-r", scenario(name), "-T", "json"]).stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }

    /// The first packet of a line.
    func firstPacket(_ l: JSONValue?) throws -> UInt64 {
        guard case .array(let p)? = l?["pkts"], case .number(let n) = p[0] else { throw XCTSkip("no packets") }
        return UInt64(n)!
    }

    /// The connection of client `n` (its first scene request asks for scene n).
    func connection(ofClient n: Int, _ lines: [JSONValue]) -> JSONValue? {
        lines.first { $0["message"] == .string("Cs_20001") && $0["fields"]?["SceneId"] == .number(String(n)) }?["conn"]
    }

    /// The packets of the message changed between `a` and a variant (found by its text).
    func packets(_ message: String, _ text: String, in name: String, otherSide: String) throws -> (UInt64, UInt64) {
        func find(_ capture: String, _ needle: String) throws -> UInt64 {
            let plain = try TestSupport.framedump(["-r", capture, "-T", "json"]).stdout.split(separator: "\n")
            let line = try XCTUnwrap(plain.first { $0.contains("\"message\":\"\(message)\"") && $0.contains(needle) })
            guard case .array(let p)? = try JSONValue.parse(String(line))["pkts"], case .number(let n) = p[0] else { return 0 }
            return UInt64(n)!
        }
        return (try find(scenario("a"), otherSide), try find(scenario(name), text))
    }
}

/// The alignment on its own: random edits to a sequence of messages are reported as an edit
/// script no longer than the edits made, and the script turns the old sequence into the new.
final class AlignmentTests: XCTestCase {
    struct Rng {
        var s: UInt64
        mutating func next() -> UInt64 {
            s &+= 0x9e3779b97f4a7c15
            var z = s
            z = (z ^ (z >> 30)) &* 0xbf58476d1ce4e5b9
            z = (z ^ (z >> 27)) &* 0x94d049bb133111eb
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    func testRandomEditsGiveAScriptNoLongerThanTheEdits() {
        var rng = Rng(s: 42)
        for round in 0..<400 {
            // A few message kinds, contents often repeated (as heartbeats are).
            let kinds = 1 + rng.below(4)
            let a = (0..<rng.below(60)).map { _ -> MessagePrint in
                let k = UInt64(rng.below(kinds))
                return MessagePrint(identity: k, content: k << 32 | UInt64(rng.below(3)))
            }
            var b = a
            let edits = rng.below(8)
            var fresh: UInt64 = 1000
            for _ in 0..<edits {
                fresh += 1
                switch rng.below(3) {
                case 0:
                    let k = UInt64(rng.below(kinds))
                    b.insert(MessagePrint(identity: k, content: k << 32 | fresh), at: rng.below(b.count + 1))
                case 1 where !b.isEmpty: b.remove(at: rng.below(b.count))
                default:
                    guard !b.isEmpty else { continue }
                    let i = rng.below(b.count)
                    b[i].content = b[i].identity << 32 | fresh
                }
            }
            let script = Alignment.script(a, b)
            XCTAssertLessThanOrEqual(script.count, edits, "round \(round)")
            XCTAssertEqual(apply(script, a, b), b, "round \(round)")
        }
    }

    func testOneInsertionInALongSequenceIsOneStep() {
        let a = (0..<100_000).map { MessagePrint(identity: UInt64($0 % 3), content: UInt64($0)) }
        var b = a
        b.insert(MessagePrint(identity: 1, content: 999_999_999), at: 500)
        b[70_000].content = 123_456_789
        b.remove(at: 90_000)
        XCTAssertEqual(Alignment.script(a, b), [.added(500), .changed(69_999, 70_000), .removed(89_999)])
    }

    func testBeyondTheEditLimitTheRestIsComparedByPosition() {
        let a = (0..<50).map { MessagePrint(identity: 1, content: UInt64($0)) }
        let b = (0..<50).map { MessagePrint(identity: 1, content: UInt64($0 + 100)) }
        let s = Alignment.script(a, b, maxEdits: 10)
        XCTAssertEqual(apply(s, a, b), b)
        XCTAssertEqual(s.count, 50)
    }

    /// Applies a script: equal items are kept, removed dropped, added and changed taken from `b`.
    func apply(_ script: [EditStep], _ a: [MessagePrint], _ b: [MessagePrint]) -> [MessagePrint] {
        var out: [MessagePrint] = []
        var i = 0, j = 0
        for s in script + [.changed(a.count, b.count)] {
            let (ti, tj): (Int, Int)
            switch s {
            case .removed(let x): (ti, tj) = (x, -1)
            case .added(let y): (ti, tj) = (-1, y)
            case .changed(let x, let y): (ti, tj) = (x, y)
            }
            // Equal items up to the step.
            while (ti < 0 || i < ti) && (tj < 0 || j < tj) && i < a.count && j < b.count {
                if a[i] != b[j] { return [] }
                out.append(a[i]); i += 1; j += 1
            }
            switch s {
            case .removed: i += 1
            case .added: out.append(b[j]); j += 1
            case .changed(let x, let y) where x < a.count && y < b.count:
                if a[x].identity != b[y].identity { return [] }
                out.append(b[j]); i += 1; j += 1
            default: break
            }
        }
        return out
    }
}

/// The line scanner: strict JSON, identity and content hashes, and the cuts `--ignore` makes.
final class LineScannerTests: XCTestCase {
    func scan(_ s: String, ignore: [String] = []) throws -> (LineFacts, String) {
        let scanner = LineScanner(ignore: ignore.compactMap(IgnorePattern.init))
        let bytes = Array(s.utf8)
        return try bytes.withUnsafeBytes { b in
            let f = try scanner.scan(b)
            var out: [UInt8] = []
            var at = f.tailStart
            for c in scanner.cuts { out += bytes[at..<c.lowerBound]; at = c.upperBound }
            out += bytes[at...]
            return (f, String(decoding: out, as: UTF8.self))
        }
    }

    func testIgnoreCutsFirstMiddleLastAllAndNested() throws {
        let line = #"{"conn":"k","dir":"c2s","protocol":"game","message":"M","fields":{"a":1,"b":{"c":2,"d":3},"e":[{"c":4}]}}"#
        XCTAssertEqual(try scan(line, ignore: ["a"]).1, #","protocol":"game","message":"M","fields":{"b":{"c":2,"d":3},"e":[{"c":4}]}}"#)
        XCTAssertEqual(try scan(line, ignore: ["c"]).1, #","protocol":"game","message":"M","fields":{"a":1,"b":{"d":3},"e":[{}]}}"#)
        XCTAssertEqual(try scan(line, ignore: ["d", "e"]).1, #","protocol":"game","message":"M","fields":{"a":1,"b":{"c":2}}}"#)
        XCTAssertEqual(try scan(line, ignore: ["a", "b", "e"]).1, #","protocol":"game","message":"M","fields":{}}"#)
        XCTAssertEqual(try scan(line, ignore: ["M.b.*"]).1, #","protocol":"game","message":"M","fields":{"a":1,"b":{},"e":[{"c":4}]}}"#)
        XCTAssertEqual(try scan(line, ignore: ["other.*.a", "N.a"]).1, String(line.dropFirst(#"{"conn":"k","dir":"c2s""#.count)))
        XCTAssertEqual(try scan(line, ignore: ["game.*.a"]).1, try scan(line, ignore: ["a"]).1)
        // The content hash leaves out per-run keys and ignored fields; the identity is the message.
        let x = try scan(#"{"conn":"x","dir":"s2c","ts":"1.5","pkts":[3,4],"protocol":"game","message":"M","fields":{"a":1,"t":9}}"#, ignore: ["t"]).0
        let y = try scan(#"{"conn":"y","dir":"s2c","protocol":"game","message":"M","fields":{"a":1,"t":8}}"#, ignore: ["t"]).0
        XCTAssertEqual(x.content, y.content)
        XCTAssertEqual(x.identity, y.identity)
        XCTAssertEqual(x.pkts?.0, 3)
        XCTAssertEqual(x.dir, .s2c)
        let z = try scan(#"{"conn":"y","dir":"s2c","protocol":"game","message":"M","fields":{"a":2,"t":8}}"#, ignore: ["t"]).0
        XCTAssertNotEqual(x.content, z.content)
        XCTAssertEqual(x.identity, z.identity)
    }

    func testStrictJSON() {
        for bad in [#"{"a":NaN}"#, #"{"a":1,}"#, #"{"a":01}"#, "{\"a\":\"\u{01}\"}", #"{"a":1} x"#, #"{'a':1}"#,
                    #"{"a":1e}"#, #"{"a":-}"#, #"{"a":"\x"}"#, #"{"a":"\u12"}"#, #"{"a":tru}"#, #"[1]"#,
                    String(repeating: #"{"a":"#, count: 100) + "1" + String(repeating: "}", count: 100)] {
            XCTAssertThrowsError(try scan(bad), bad)
            if bad != "[1]" { XCTAssertThrowsError(try JSONValue.parse(bad), bad) }
        }
        // Invalid UTF-8 inside a string.
        for bytes: [UInt8] in [[0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d], [0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]] {
            XCTAssertThrowsError(try bytes.withUnsafeBytes { try JSONValue.parse($0) })
        }
        XCTAssertEqual(try JSONValue.parse(#" {"a" : [1, -2.5e3, true, null, "\u00e9\ud83d\ude00\n"]} "#).text,
                       "{\"a\":[1,-2.5e3,true,null,\"é😀\\n\"]}")
    }
}
