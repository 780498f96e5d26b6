import Foundation
import XCTest
@testable import FramedumpCore

/// What goes to stdout is one thing only, so pipes work: the capture with `-w -`, NDJSON with
/// `-T json` (the summary goes to stderr), and usage errors exit with 2.
final class OutputPipesTests: XCTestCase {
    /// `-w -` writes the capture to stdout and nothing else: tcpdump reads it back whole.
    func testWriteToStdoutIsACaptureOnly() throws {
        let dir = TestSupport.tempDir()
        let r = try TestSupport.run("/bin/sh", ["-c", "\(TestSupport.binary) -r samples/game.pcap -w - -q > \(dir)/out.pcap"],
                                    cwd: TestSupport.root.path)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("packets: 60"), "the summary went to stderr: \(r.stderr)")
        let tcpdump = try TestSupport.oracle("tcpdump")
        let back = try TestSupport.run(tcpdump, ["-nn", "-r", dir + "/out.pcap"])
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertEqual(back.stdout.split(separator: "\n").count, 60)
    }

    /// With -T json, stdout is NDJSON only, whatever -q and -v add.
    func testJSONOutputHoldsOnlyJSON() throws {
        for extra in [["-q"], ["-v"], ["--diffable", "-v"]] {
            let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "json"] + extra)
            XCTAssertEqual(r.status, 0, r.stderr)
            for line in r.stdout.split(separator: "\n") {
                XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.utf8)), "\(extra): \(line)")
            }
            XCTAssertTrue(r.stderr.contains("connections: 3"), "\(extra): summary on stderr")
        }
    }

    /// --diffable asks for NDJSON: alone it does not print the tree with timestamps and ports.
    func testDiffableImpliesJSON() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "--diffable"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let first = try XCTUnwrap(r.stdout.split(separator: "\n").first)
        XCTAssertTrue(first.hasPrefix("{\"conn\":\"game@127.0.0.1:8000#1\""), String(first))
    }

    func testUsageErrorsExitWithTwo() throws {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-x", "-T", "json"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("-x adds a hex dump"), r.stderr)
        XCTAssertEqual(try TestSupport.framedump(["-c", "0", "-r", "samples/game.pcap"]).status, 2)
    }

    /// What the reassembler notices beside the stream reaches both outputs: late bytes for a
    /// reported gap, an ignored out-of-window RST, payload after close.
    func testReassemblyNoticesAreShown() throws {
        for (fixture, type) in [("late_data", "late"), ("rst_out_of_window", "reset-ignored"), ("after_fin", "after-close")] {
            let json = try TestSupport.framedump(["-r", TestSupport.fixture("\(fixture).pcap"), "-T", "json"])
            XCTAssertEqual(json.status, 0, json.stderr)
            let lines = try json.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
            XCTAssertTrue(lines.contains { ($0["type"] as? String) == type }, fixture)
            let tree = try TestSupport.framedump(["-r", TestSupport.fixture("\(fixture).pcap"), "--color", "never"])
            XCTAssertTrue(tree.stdout.contains(" NOTICE "), fixture)
        }
    }

    /// The progress line: drawn on a terminal's stderr while a large file is read (under a
    /// pseudo-terminal made by script(1)), erased at the end, absent when stderr is not a
    /// terminal and with --no-progress.
    func testProgressLineOnlyOnATerminal() throws {
        let cap = TestSupport.tempDir() + "/big.pcap"
        let gen = try TestSupport.run("/usr/bin/env", ["python3", "bench/gengame.py", cap, "800000"], cwd: TestSupport.root.path)
        XCTAssertEqual(gen.status, 0, gen.stderr)
        let script = try TestSupport.oracle("script")
        let tty = try TestSupport.run(script, ["-qec", "\(TestSupport.binary) -r \(cap) -q", "/dev/null"])
        XCTAssertEqual(tty.status, 0, tty.stderr)
        XCTAssertTrue(tty.stdout.contains(" packets, ") && tty.stdout.contains(" messages, ") && tty.stdout.contains(" s left"), tty.stdout)
        XCTAssertTrue(tty.stdout.contains("\r\u{1b}[Kpackets: "), "the line is erased before the summary")
        let off = try TestSupport.run(script, ["-qec", "\(TestSupport.binary) -r \(cap) -q --no-progress", "/dev/null"])
        XCTAssertFalse(off.stdout.contains(" s left"))
        let pipe = try TestSupport.framedump(["-r", cap, "-q"])
        XCTAssertFalse(pipe.stderr.contains(" s left"), "stderr is not a terminal here")
    }

    func testVersionAndAMissingDissectorFile() throws {
        let v = try TestSupport.framedump(["--version"])
        XCTAssertEqual(v.status, 0)
        XCTAssertTrue(v.stdout.hasPrefix("framedump "), v.stdout)
        let r = try TestSupport.framedump(["check", "no/such.dissector"])
        XCTAssertEqual(r.status, 2)
        XCTAssertEqual(r.stderr, "no/such.dissector: error: dissector file: no such file\n")
    }
}
