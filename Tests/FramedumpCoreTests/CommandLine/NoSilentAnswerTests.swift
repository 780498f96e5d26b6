import Foundation
import XCTest
@testable import FramedumpCore

/// Each answer that used to be empty or wrong without a word (issue "no silent wrong answers"):
/// it is now right, or the command fails with a sentence and a non-zero exit.
final class NoSilentAnswerTests: XCTestCase {
    func sample(_ name: String) -> String { TestSupport.sample(name) }

    /// `diff` and `check -r` with no dissector compared and checked nothing, and said
    /// "no differences" / "no problems" with exit 0.
    func testDiffAndCheckCaptureRefuseToRunWithoutDissectors() throws {
        let empty = TestSupport.tempDir()   // no ./Dissectors here
        let env = ["FRAMEDUMP_DISSECTORS": ""]
        func run(_ args: [String]) throws -> TestSupport.Result {
            try TestSupport.run(TestSupport.binary, args, cwd: empty, environment: env)
        }
        for args in [["diff", sample("scenario-a.pcap"), sample("scenario-b.pcap")],
                     ["check", "-r", sample("game.pcap")],
                     ["diff", "-d", empty, sample("scenario-a.pcap"), sample("scenario-b.pcap")]] {
            let r = try run(args)
            XCTAssertEqual(r.status, 2, args.joined(separator: " ") + "\n" + r.stdout + r.stderr)
            XCTAssertTrue(r.stderr.contains("no dissector loaded"), r.stderr)
            XCTAssertFalse(r.stdout.contains("no differences"), r.stdout)
        }
        // Asked for, it runs: only connections are compared.
        let allowed = try run(["diff", "--allow-undecoded", sample("scenario-a.pcap"), sample("scenario-a.pcap")])
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        // Two exports were decoded when they were made: no dissector is needed to compare them.
        let export = empty + "/a.ndjson"
        try TestSupport.framedump(["-r", sample("game.pcap"), "--diffable"]).stdout.write(toFile: export, atomically: true, encoding: .utf8)
        XCTAssertEqual(try run(["diff", export, export]).status, 0)
    }

    /// Values that can never match the field they are compared with are errors with a caret.
    func testFilterValuesAreCheckedAgainstTheLoadedSchemas() throws {
        let cases: [(String, String)] = [
            ("game.Level == \"abc\"", "game.Level is a number and has no labels"),
            ("game.message > 5", "game.message is a string"),
            ("game.Res == \"sucess\"", "\"sucess\" is not a label of game.Res (did you mean success?)"),
            ("msg.name == \"Cs_99999\"", "no loaded dissector has a message named \"Cs_99999\""),
            ("msg.dir == \"c2x\"", "msg.dir is \"c2s\" or \"s2c\""),
            ("game.Res = 1", "unexpected character '=' (to compare, write ==)"),
            ("game.Res in {1 \"nope\"}", "\"nope\" is not a label of game.Res"),
        ]
        for (filter, message) in cases {
            let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-q", "-Y", filter])
            XCTAssertEqual(r.status, 2, filter + "\n" + r.stdout)
            XCTAssertTrue(r.stderr.contains(message), filter + ": " + r.stderr)
            XCTAssertTrue(r.stderr.contains("^"), r.stderr)
        }
        for good in ["game.Res == \"success\"", "game.Res == 1", "msg.name == \"SC_20001\"", "game.message contains \"wel\"",
                     "svc.device.os == \"ios\"", "msg.dir == s2c"] {
            let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-q", "-Y", good])
            XCTAssertEqual(r.status, 0, good + ": " + r.stderr)
        }
    }

    /// Three `rate` tables used to share one array: each counted every message three times.
    func testEachRateTableCountsEveryMessageOnce() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "json", "-z", "rate,1", "-z", "rate,2", "-z", "rate,0.25",
                                           "-z", "rate"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let messages = lines.filter { $0?["type"] == nil && $0?["message"] != nil }.count
        let tables = lines.compactMap { $0 }.filter { ($0["stat"] as? String) == "rate" }
        XCTAssertEqual(tables.count, 4)
        XCTAssertEqual(messages, 39)
        for t in tables {
            let rows = try XCTUnwrap(t["rows"] as? [[String: Any]])
            XCTAssertEqual(rows.map { $0["messages"] as! Int }.reduce(0, +), 39, "\(t)")
        }
        XCTAssertEqual(tables.map { "\($0["interval"]!)" }, ["1", "2", "0.25", "1"])
        // Quarter seconds from the whole second; NDJSON lists the intervals that had messages.
        let quarters = try XCTUnwrap(tables[2]["rows"] as? [[String: Any]])
        XCTAssertEqual(quarters.map { "\($0["start"]!)" }, ["1795291173.5", "1795291173.75"])
        for bad in ["rate,0", "rate,0.0001", "rate,x", "rate,1.5.2", "rate,86401"] {
            XCTAssertEqual(try TestSupport.framedump(["-r", "samples/game.pcap", "-q", "-z", bad]).status, 2, bad)
        }
    }

    /// A constant the field cannot hold made every frame malformed at run time.
    func testHeaderConstantsMustFitTheirField() throws {
        func load(_ header: String) throws -> [ProtocolSchema] {
            try DissectorLoader.parse(text: "protocol p { port 1; header { uint16 len; \(header) } frame_length = len; }",
                                      file: "t.dissector")
        }
        for bad in ["uint8 magic == 0x1A5;", "uint8 bogus == 300;", "uint8 m == -1;", "int8 m == 128;", "int8 m == -129;",
                    "uint24 m == 0x1000000;", "int64 m == 9223372036854775808;"] {
            XCTAssertThrowsError(try load(bad), bad) { e in
                XCTAssertTrue("\(e)".contains("does not fit") || "\(e)".contains("cannot be negative"), "\(e)")
            }
        }
        for good in ["uint8 m == 0xFF;", "int8 m == -128;", "int8 m == 127;", "uint64 m == 18446744073709551615;",
                     "int64 m == -9223372036854775808;", "uint24 m == 0xFFFFFF;"] {
            XCTAssertNoThrow(try load(good), good)
        }
        // A mismatch on a [hex] field is shown in hex, a signed one with its sign.
        let s = try load("uint16 magic == 0xBEEF [hex]; int8 k == -2;")[0]
        var texts: [String] = []
        for frame: [UInt8] in [[0, 5, 0xCA, 0xFE, 0xFE], [0, 5, 0xBE, 0xEF, 0xFD]] {
            let col = FrameCollector()
            let d = Deframer(layout: FrameLayout(s), direction: .c2s, consumer: col, startsAtBoundary: true)
            let p = PacketRef(number: 1, ts: Timestamp(seconds: 0, nanos: 0))
            frame.withUnsafeBytes { d.data($0, offset: 0, packet: p) }
            d.finish(packet: p, captureEnded: false)
            texts += col.malformed.map { $0.2.text }
        }
        XCTAssertTrue(texts.contains("header field magic is 0xcafe, expected 0xbeef"), "\(texts)")
        XCTAssertTrue(texts.contains("header field k is -3, expected -2"), "\(texts)")
    }

    /// A capture where the answer carries the request's number in another field.
    func makePairCapture() throws -> (dir: String, pcap: String) {
        let dir = TestSupport.tempDir()
        let pcap = dir + "/pairs.pcap"
        let b = try CaptureBuilder(pcap)
        let c = CaptureBuilder.Connection(b, index: 1, serverPort: 7100)
        func msg(_ id: UInt16, _ seq: UInt32, _ acked: UInt32) -> [UInt8] { .be32(14) + .be16(id) + .be32(seq) + .be32(acked) }
        // Requests 1, 2, 3; the server numbers its answers 1, 2, 3 too, but answers 3, 1, 2.
        c.send(msg(1, 1, 0) + msg(1, 2, 0) + msg(1, 3, 0))
        c.send(msg(2, 1, 3), fromClient: false)
        c.send(msg(2, 2, 1), fromClient: false)
        c.send(msg(2, 3, 2), fromClient: false)
        b.finish()
        return (dir, pcap)
    }

    func pairing(_ rule: String, _ pcap: String, _ dir: String) throws -> (answered: Int, warning: String?) {
        try """
            protocol q { port 7100; header { uint32 len; uint16 id; uint32 seq; uint32 acked; }
                         frame_length = len; message_id = id; \(rule) }
            Message Cs_1 { }
            Message Sc_2 { }
            """.write(toFile: dir + "/q.dissector", atomically: true, encoding: .utf8)
        let r = try TestSupport.framedump(["-r", pcap, "-d", dir + "/q.dissector", "-T", "json", "-z", "rtt"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var answered = 0
        var warning: String?
        for line in r.stdout.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if (o["stat"] as? String) == "rtt", o["type"] as? String == "stats" {
                answered = (o["rows"] as? [[String: Any]] ?? []).map { $0["answered"] as? Int ?? 0 }.reduce(0, +)
            }
            if (o["stat"] as? String) == "rtt", o["type"] as? String == "warning" { warning = o["text"] as? String }
        }
        return (answered, warning)
    }

    func testPairByRequestFieldAndResponseField() throws {
        let (dir, pcap) = try makePairCapture()
        // The answer's own seq pairs each request with an unrelated answer: 3 "answered".
        XCTAssertEqual(try pairing("pair_by seq;", pcap, dir).answered, 3)
        // The answer's acked carries the request's seq.
        let right = try pairing("pair_by seq = acked;", pcap, dir)
        XCTAssertEqual(right.answered, 3)
        XCTAssertNil(right.warning)
        // A rule that pairs nothing says why.
        let none = try pairing("pair_by acked;", pcap, dir)
        XCTAssertEqual(none.answered, 0)
        let why = try XCTUnwrap(none.warning)
        XCTAssertTrue(why.contains("3 requests and 3 responses carried the pair_by key") && why.contains("pair_by REQUEST_FIELD = RESPONSE_FIELD"), why)
        let noRule = try pairing("", pcap, dir)
        XCTAssertTrue(noRule.warning?.contains("says pair_by") ?? false, "\(String(describing: noRule.warning))")
    }

    /// The latencies of `pair_by seq = acked` are those of the right answers: request 3 was
    /// answered first, so it has the shortest wait.
    func testPairedLatenciesFollowTheAnsweringField() throws {
        let (dir, pcap) = try makePairCapture()
        try """
            protocol q { port 7100; header { uint32 len; uint16 id; uint32 seq; uint32 acked; }
                         frame_length = len; message_id = id; pair_by seq = acked; }
            Message Cs_1 { }
            Message Sc_2 { }
            """.write(toFile: dir + "/q.dissector", atomically: true, encoding: .utf8)
        let r = try TestSupport.framedump(["-r", pcap, "-d", dir + "/q.dissector", "-q", "-z", "rtt"])
        XCTAssertEqual(r.status, 0, r.stderr)
        // Packets are 1 µs apart: requests in packet 4, answers in 5, 6, 7 → 0.001 ms apart.
        let row = try XCTUnwrap(r.stdout.split(separator: "\n").first { $0.hasPrefix("Cs_1") })
        XCTAssertEqual(row.split(separator: " ").map(String.init), ["Cs_1", "3", "0.001", "0.002", "0.003", "0.003", "0.003", "0"], String(row))
    }

    /// Two files claiming one port: no "ok" line contradicts the error.
    func testCheckPrintsNoOkForFilesThatClash() throws {
        let dir = TestSupport.tempDir()
        for name in ["a", "b"] {
            try "protocol \(name) { port 7200; header { uint16 len; } frame_length = len; }"
                .write(toFile: "\(dir)/\(name).dissector", atomically: true, encoding: .utf8)
        }
        try "protocol c { port 7201; header { uint16 len; } frame_length = len; }"
            .write(toFile: "\(dir)/c.dissector", atomically: true, encoding: .utf8)
        let r = try TestSupport.framedump(["check", "\(dir)/a.dissector", "\(dir)/b.dissector", "\(dir)/c.dissector"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("port 7200 is also claimed"), r.stderr)
        XCTAssertFalse(r.stdout.contains("a.dissector: ok") || r.stdout.contains("b.dissector: ok"), r.stdout)
        XCTAssertTrue(r.stdout.contains("c.dissector: ok"), r.stdout)
    }

    /// A file with nothing to decode with (only comments, or a message without a protocol) is
    /// no "ok": a run with it warns that no dissector is loaded.
    func testCheckRefusesAFileWithNoProtocol() throws {
        let dir = TestSupport.tempDir()
        try "// nothing here yet\n// the server team's document comes later\n"
            .write(toFile: "\(dir)/empty.dissector", atomically: true, encoding: .utf8)
        try "Message Login = 1 { String(u8) name; }\n"
            .write(toFile: "\(dir)/messages.dissector", atomically: true, encoding: .utf8)
        for name in ["empty", "messages"] {
            let r = try TestSupport.framedump(["check", "\(dir)/\(name).dissector"])
            XCTAssertEqual(r.status, 2, r.stdout)
            XCTAssertFalse(r.stdout.contains("ok"), r.stdout)
            XCTAssertTrue(r.stderr.contains("\(name).dissector:1:1: error: "), r.stderr)
            if name == "empty" { XCTAssertTrue(r.stderr.contains("no protocol defined"), r.stderr) }
        }
    }

    /// `key K;` without a value is given with `--key` when a capture is read (layers.md):
    /// `check` of the file accepts it, and `check` and `check -r` take `--key` as a run does.
    func testCheckTakesKeysGivenLater() throws {
        let dir = TestSupport.tempDir()
        let im = try String(contentsOfFile: TestSupport.dissectors + "/im.dissector", encoding: .utf8)
            .replacingOccurrences(of: "key im_session = \"8d2d0c7a5b1e4f3a9c6b2e1d0f4a7c3b\";", with: "key im_session;")
        XCTAssertTrue(im.contains("key im_session;"))
        try im.write(toFile: dir + "/im.dissector", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: TestSupport.dissectors + "/im.proto", toPath: dir + "/im.proto")
        let alone = try TestSupport.framedump(["check", dir + "/im.dissector"])
        XCTAssertEqual(alone.status, 0, alone.stderr)
        XCTAssertTrue(alone.stdout.contains("im.dissector: ok (im:"), alone.stdout)
        let short = try TestSupport.framedump(["check", dir + "/im.dissector", "--key", "im_session=0011"])
        XCTAssertEqual(short.status, 2)
        XCTAssertTrue(short.stderr.contains("key 'im_session' is 2 bytes: AES needs 16, 24 or 32"), short.stderr)
        // A capture needs the value: refused without it, checked with it.
        let without = try TestSupport.framedump(["check", "-r", "samples/im.pcap", "-d", dir, "--allow", "unknown-message"])
        XCTAssertEqual(without.status, 2)
        XCTAssertTrue(without.stderr.contains("give it with --key im_session=HEX"), without.stderr)
        let with = try TestSupport.framedump(["check", "-r", "samples/im.pcap", "-d", dir, "--allow", "unknown-message",
                                              "--key", "im_session=8d2d0c7a5b1e4f3a9c6b2e1d0f4a7c3b"])
        XCTAssertEqual(with.status, 0, with.stdout + with.stderr)
        let wrong = try TestSupport.framedump(["check", "-r", "samples/im.pcap", "-d", dir, "--allow", "unknown-message",
                                               "--key", "im_session=00000000000000000000000000000000"])
        XCTAssertEqual(wrong.status, 1, "a wrong key is a transform problem: " + wrong.stdout)
    }

    /// A capture cut off mid-record (a tcpdump killed while writing): `diff` and `check -r`
    /// work on it up to its last whole record, as `-r` does, say so, and exit as `-r` does (5)
    /// unless they found something (1).
    func testDiffAndCheckTakeACutCapture() throws {
        let cut = TestSupport.tempDir() + "/cut.pcap"
        try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("game.pcap"))).prefix(5000).write(to: URL(fileURLWithPath: cut))
        let run = try TestSupport.framedump(["-r", cut, "-q"])
        XCTAssertEqual(run.status, 5)
        let check = try TestSupport.framedump(["check", "-r", cut])
        XCTAssertEqual(check.status, 5, check.stderr)
        XCTAssertTrue(check.stderr.contains("no problems (36 messages)"), check.stderr)
        XCTAssertTrue(check.stderr.contains("cut off mid-record") && check.stderr.contains("checked up to its last whole record"), check.stderr)
        let same = try TestSupport.framedump(["diff", cut, cut])
        XCTAssertEqual(same.status, 5, same.stderr)
        XCTAssertTrue(same.stdout.contains("no differences (old: 36 items"), same.stdout)
        XCTAssertTrue(same.stderr.contains("compared up to its last whole record"), same.stderr)
        let other = try TestSupport.framedump(["diff", cut, "samples/game.pcap"])
        XCTAssertEqual(other.status, 1, other.stderr)
        XCTAssertTrue(other.stdout.contains("3 differences: 0 changed, 3 added"), other.stdout)
    }

    /// A misspelt name is refused with what was probably meant: a type, a header field in
    /// the length and id rules, a filter field; Wireshark's `frame.len` points to `msg.len`.
    func testDidYouMean() throws {
        let dir = TestSupport.tempDir()
        try """
            protocol kx { port 7777; header { uint32 bodyLength; uint16 id; } body_length = bodyLenn; message_id = idd; }
            Message M = 1 { Unit16 a; Strng b; Pos c; }
            Message Pos = 2 { uint8 x; }
            """.write(toFile: dir + "/kx.dissector", atomically: true, encoding: .utf8)
        let r = try TestSupport.framedump(["check", dir + "/kx.dissector"])
        XCTAssertEqual(r.status, 2)
        for hint in ["kx.dissector:1:81: error: 'bodyLenn' is not a header field (did you mean bodyLength?)",
                     "kx.dissector:1:104: error: 'idd' is not a header field (did you mean id?)",
                     "kx.dissector:2:17: error: unknown type 'Unit16' (did you mean Int16, Uint16?)",
                     "kx.dissector:2:27: error: unknown type 'Strng' (did you mean String?)"] {
            XCTAssertTrue(r.stderr.contains(hint), "\(hint)\n\(r.stderr)")
        }
        let frame = try TestSupport.framedump(["-r", "samples/game.pcap", "-Y", "frame.len > 30"])
        XCTAssertEqual(frame.status, 2)
        XCTAssertTrue(frame.stderr.contains("unknown field 'frame.len'") && frame.stderr.contains("msg.len"), frame.stderr)
        let field = try TestSupport.framedump(["-r", "samples/game.pcap", "-Y", "game.Lvel > 3"])
        XCTAssertTrue(field.stderr.contains("(did you mean game.Level?)"), field.stderr)
    }

    /// `-Y … -w` writes the packets of the matching messages, not every packet.
    func testFilterWithWriteKeepsTheMatchingMessagesPackets() throws {
        let out = TestSupport.tempDir() + "/matched.pcap"
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-q", "-Y", "msg.name == \"SC_20001\"", "-w", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        let again = try TestSupport.framedump(["-r", out, "-T", "json"])
        let msgs = again.stdout.split(separator: "\n").filter { $0.contains("\"message\":") && !$0.contains("\"type\"") }
        XCTAssertEqual(msgs.filter { $0.contains("\"message\":\"SC_20001\"") }.count, 9, again.stdout)
        XCTAssertFalse(msgs.contains { $0.contains("\"dir\":\"c2s\"") }, "no client message was written")
        // Every written packet is one of the original's (compared with tcpdump's own reading).
        let tcpdump = try TestSupport.oracle("tcpdump")
        let written = try TestSupport.run(tcpdump, ["-nn", "-tt", "-r", out]).stdout.split(separator: "\n")
        let all = Set(try TestSupport.run(tcpdump, ["-nn", "-tt", "-r", TestSupport.sample("game.pcap")]).stdout.split(separator: "\n"))
        XCTAssertTrue(written.count > 0 && written.count < all.count, "\(written.count) of \(all.count)")
        XCTAssertTrue(written.allSatisfy { all.contains($0) })
        // Live, the messages are not known before the packets are written: refused.
        let live = try TestSupport.framedump(["-i", "lo", "-Y", "msg.dir == s2c", "-w", out])
        XCTAssertEqual(live.status, 2)
        XCTAssertTrue(live.stderr.contains("-r FILE"), live.stderr)
    }

    /// tshark's `-d tcp.port==N,proto`.
    func testDecodeAsMovesAPortToAProtocol() throws {
        let dir = TestSupport.tempDir()
        let game = try String(contentsOfFile: TestSupport.dissectors + "/game.dissector", encoding: .utf8)
            .replacingOccurrences(of: "port 8000;", with: "port 9000;")
        try game.write(toFile: dir + "/game.dissector", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: TestSupport.dissectors + "/game_messages.txt", toPath: dir + "/game_messages.txt")
        func count(_ extra: [String]) throws -> Int {
            let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-d", dir, "-T", "json"] + extra)
            XCTAssertEqual(r.status, 0, r.stderr)
            return r.stdout.split(separator: "\n").filter { $0.contains("\"protocol\":\"game\"") && $0.contains("\"message\":\"") }.count
        }
        XCTAssertEqual(try count([]), 0)
        XCTAssertEqual(try count(["--decode-as", "8000=game"]), 39)
        let unknown = try TestSupport.framedump(["-r", "samples/game.pcap", "-d", dir, "--decode-as", "8000=gam"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("no loaded dissector is named 'gam' (loaded: game)"), unknown.stderr)
        XCTAssertEqual(try TestSupport.framedump(["-r", "samples/game.pcap", "--decode-as", "x=game"]).status, 2)
        // check -r takes it too.
        let check = try TestSupport.framedump(["check", "-r", "samples/game.pcap", "-d", dir, "--decode-as", "8000=game"])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
    }

    /// `framedump --fo<TAB>` completed nothing: dump is the default subcommand, and its
    /// options complete at the top level.
    func testBashCompletesTheDefaultSubcommandsOptionsAtTheTopLevel() throws {
        let bash = try TestSupport.oracle("bash")
        let dir = TestSupport.tempDir()
        let script = try TestSupport.framedump(["--generate-completion-script", "bash"]).stdout
        XCTAssertTrue(script.contains("No subcommand: `dump` is the default"), "the parser's script changed shape")
        try script.write(toFile: dir + "/c.bash", atomically: true, encoding: .utf8)
        try """
            source \(dir)/c.bash
            comp() { COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$COMP_LINE"
              [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=()
              _framedump framedump "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; echo "${COMPREPLY[*]}"; }
            comp "framedump --fo"
            comp "framedump -T "
            comp "framedump di"
            comp "framedump diff --ign"
            """.write(toFile: dir + "/t.sh", atomically: true, encoding: .utf8)
        let r = try TestSupport.run(bash, [dir + "/t.sh"])
        XCTAssertEqual(r.stdout.split(separator: "\n", omittingEmptySubsequences: false).prefix(4).map(String.init),
                       ["--follow", "tree json fields", "dissectors diff", "--ignore"], r.stdout + r.stderr)
    }

    /// The man page has what a man page is read for: examples, exit codes, files, environment.
    func testManPageHasExamplesExitCodesAndFiles() throws {
        let page = try String(contentsOfFile: TestSupport.root.appendingPathComponent("man/framedump.1").path, encoding: .utf8)
        for section in [".Sh \"EXIT STATUS\"", ".Sh EXAMPLES", ".Sh FILES", ".Sh ENVIRONMENT", "FRAMEDUMP_DISSECTORS", "--decode-as 9001=game"] {
            XCTAssertTrue(page.contains(section), section)
        }
        XCTAssertFalse(page.contains(".Ex -std"), "the generic exit status is replaced")
        // Every exit code docs/command-line.md lists is in the page.
        for code in 0...12 { XCTAssertTrue(page.contains(".It \(code)\n"), "exit code \(code)") }
    }

    /// A nested type's field named from the top never matched ("0 messages matched"): it is an
    /// error that names the path that works.
    func testNestedFieldsAreNamedThroughTheirParent() throws {
        let schema = try DissectorLoader.parse(text: """
            protocol q { port 7300; header { uint16 len; uint8 id; } frame_length = len; message_id = id; }
            Message Item { Uint16 count; }
            Message Cs_1 { Item[u8] items; Uint8 level; }
            """, file: "q.dissector")
        XCTAssertThrowsError(try FilterParser.parse("q.count > 1", protocols: schema)) { e in
            XCTAssertTrue("\(e)".contains("'count' is not a field of q (it is a field of a nested message: q.items.count)"), "\(e)")
        }
        XCTAssertNoThrow(try FilterParser.parse("q.items.count > 1 and q.level == 2", protocols: schema))
    }

    /// `check -r` that decoded nothing checked nothing: not a pass.
    func testCheckCaptureThatDecodesNothingFails() throws {
        let dir = TestSupport.tempDir()
        try "protocol z { port 7400; header { uint16 len; } frame_length = len; }"
            .write(toFile: dir + "/z.dissector", atomically: true, encoding: .utf8)
        let r = try TestSupport.framedump(["check", "-r", "samples/game.pcap", "-d", dir + "/z.dissector"])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stderr.contains("nothing checked: no message was decoded"), r.stderr)
    }
}

/// Options before a subcommand (`framedump -d X check -r F`) were read by the default command:
/// "bad filter expression 'check'".
final class SubcommandOrderTests: XCTestCase {
    func testASubcommandAfterOptionsIsNamed() throws {
        let r = try TestSupport.framedump(["-d", "Dissectors", "check", "-r", "samples/game.pcap"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("'check' is a subcommand: it comes first"), r.stderr)
        // A file that happens to be called like a subcommand is a file.
        let f = try TestSupport.framedump(["-r", "check"])
        XCTAssertFalse(f.stderr.contains("is a subcommand"), f.stderr)
    }
}

/// Values a dissector declares that can never be on the wire are errors, not messages or
/// labels that silently never match (a newcomer's finding).
final class ImpossibleValueTests: XCTestCase {
    func testIdsAndEnumValuesMustFitTheirFields() {
        let head = "protocol p { port 1; header { uint16 len; uint16 id; } frame_length = len; message_id = id; }\n"
        for bad in ["Message Cs_70000 { }", "Message X = 65536 { }", "Enum E : Uint8 { A = 300; }", "Enum E { A = 256; }",
                    "Enum E : Int8 { A = -129; }", "Enum E : Uint16 { A = -1; }", "Enum E : Uint64 { A = -1; }"] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: head + bad, file: "t.dissector"), bad)
        }
        for good in ["Message Cs_65535 { }", "Enum E : Int8 { A = -128; B = 127; }", "Enum E : Uint64 { A = 18446744073709551615; }"] {
            XCTAssertNoThrow(try DissectorLoader.parse(text: head + good, file: "t.dissector"), good)
        }
    }
}

/// any_port detection on a header that came in pieces smaller than itself: the first message
/// was dropped without a word (a newcomer's finding).
final class AnyPortDetectionTests: XCTestCase {
    func testAHeaderInSmallPiecesIsRecognisedAndItsMessageKept() throws {
        let schema = try DissectorLoader.parse(text: """
            protocol orb { any_port; byte_order big;
                header { uint8 magic == 0xA5; uint8 flags; uint16le len; uint32 seq; uint16 id; }
                body_length = len; message_id = id; }
            Message Cs_1 { String(u8) name; }
            Message Sc_2 { Uint8 ok; }
            """, file: "orb.dissector")
        func msg(_ id: UInt16, _ seq: UInt32, _ body: [UInt8]) -> [UInt8] {
            [0xA5, 0, UInt8(body.count), 0] + .be32(seq) + .be16(id) + body
        }
        let c2s = msg(1, 1, [5] + Array("hello".utf8)) + msg(1, 2, [2] + Array("hi".utf8))
        let s2c = msg(2, 1, [1]) + msg(2, 2, [1])
        for piece in [1, 3, 6, 9, 100] {
            let (s, _) = StreamFeeder.run(c2s: c2s, s2c: s2c, c2sCuts: Array(stride(from: piece, to: c2s.count, by: piece)),
                                          s2cCuts: Array(stride(from: piece, to: s2c.count, by: piece)), port: 9100,
                                          protocols: schema)
            XCTAssertEqual(s.tunnelled.filter { $0.0 == .c2s }.map(\.1), [1, 1], "pieces of \(piece)")
            XCTAssertEqual(s.tunnelled.filter { $0.0 == .s2c }.map(\.1), [2, 2], "pieces of \(piece)")
            XCTAssertTrue(s.malformed.isEmpty, "pieces of \(piece): \(s.malformed)")
        }
    }
}
