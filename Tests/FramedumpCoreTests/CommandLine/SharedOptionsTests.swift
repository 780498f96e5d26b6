import Foundation
import XCTest
@testable import FramedumpCore

/// The options every command that loads dissectors shares are declared once (issue #47): the
/// same names and help everywhere, each one used where it is accepted, or refused.
final class SharedOptionsTests: XCTestCase {
    func sample(_ name: String) -> String { TestSupport.sample(name) }

    /// The help lines of `options` in `command --help`, as printed (wrapped lines joined).
    func helpOf(_ command: String, _ options: [String]) throws -> [String: String] {
        let text = try TestSupport.framedump([command, "--help"]).stdout
        var out: [String: String] = [:]
        var current: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("  -") {
                current = options.first { trimmed.hasPrefix($0 + " ") || trimmed == $0 }
                if let c = current { out[c] = trimmed }
            } else if line.hasPrefix("      "), let c = current {
                out[c, default: ""] += " " + trimmed
            } else {
                current = nil
            }
        }
        return out
    }

    func testEveryCommandThatLoadsDissectorsDeclaresTheSameOptions() throws {
        let shared = ["-d", "--decode-as", "--proto-path", "--key", "--max-frame", "--max-protocols", "--max-messages"]
        let reference = try helpOf("dump", shared)
        XCTAssertEqual(Set(reference.keys), Set(shared), "dump --help lists them all")
        for command in ["ui", "diff", "check", "dissectors"] {
            XCTAssertEqual(try helpOf(command, shared), reference, command)
        }
        // And the key log, on every command that reads a capture.
        let tls = try helpOf("dump", ["--tls-keylog"])
        XCTAssertEqual(tls.count, 1)
        for command in ["ui", "diff", "check"] { XCTAssertEqual(try helpOf(command, ["--tls-keylog"]), tls, command) }
    }

    /// `diff` had no `--tls-keylog`: two TLS captures compared their connections only.
    func testDiffDecryptsWithAKeyLog() throws {
        let plain = try TestSupport.framedump(["diff", sample("tls12.pcap"), sample("tls12.pcap")])
        let keyed = try TestSupport.framedump(["diff", sample("tls12.pcap"), sample("tls12.pcap"), "--tls-keylog", sample("tls12.keys")])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(keyed.status, 0, keyed.stderr)
        func items(_ s: String) -> Int? {
            guard let r = s.range(of: #"old: (\d+) items"#, options: .regularExpression) else { return nil }
            return Int(s[r].split(separator: " ")[1])
        }
        let (p, k) = (items(plain.stdout), items(keyed.stdout))
        XCTAssertNotNil(p, plain.stdout)
        XCTAssertNotNil(k, keyed.stdout)
        XCTAssertGreaterThan(k ?? 0, (p ?? 0) + 100, "decrypted messages are compared: " + keyed.stdout)
        // A changed decrypted message is a difference: the other TLS sample differs in its messages.
        let changed = try TestSupport.framedump(["diff", sample("tls12.pcap"), sample("tls13.pcap"),
                                                 "--tls-keylog", sample("tls12.keys"), "--tls-keylog", sample("tls13.keys")])
        XCTAssertEqual(changed.status, 1, changed.stdout + changed.stderr)
    }

    /// `check` without `-r` reads dissector files: what only a capture run uses is refused, not
    /// taken and ignored; `-d` names files to check as the positional paths do.
    func testCheckWithoutACaptureRefusesRunOptionsAndChecksDashD() throws {
        let game = TestSupport.root.appendingPathComponent("Dissectors/game.dissector").path
        for extra in [["--decode-as", "9000=game"], ["--tls-keylog", sample("tls12.keys")], ["--unclaimed"], ["--allow", "transform"],
                      ["--allow-undecoded"], ["--max-depth", "3"], ["--max-buffer", "1000"]] {
            let r = try TestSupport.framedump(["check", game] + extra)
            XCTAssertEqual(r.status, 2, extra.joined(separator: " ") + r.stdout)
            XCTAssertTrue(r.stderr.contains(extra[0]) && r.stderr.contains("add -r CAPTURE"), r.stderr)
        }
        let viaD = try TestSupport.framedump(["check", "-d", game])
        XCTAssertEqual(viaD.status, 0, viaD.stderr)
        XCTAssertEqual(viaD.stdout.split(separator: "\n").count, 1, "only the file named: " + viaD.stdout)
        XCTAssertTrue(viaD.stdout.contains("game.dissector: ok"), viaD.stdout)
        // The load bounds apply without -r too.
        let bounded = try TestSupport.framedump(["check", game, "--max-messages", "1"])
        XCTAssertEqual(bounded.status, 2, bounded.stdout)
    }

    /// `dissectors --decode-as` lists the port it adds (it was not accepted before).
    func testDissectorsShowsDecodeAs() throws {
        let r = try TestSupport.framedump(["dissectors", "-d", TestSupport.root.appendingPathComponent("Dissectors/game.dissector").path,
                                           "--decode-as", "9999=game"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("ports: 8000, 9999"), r.stdout)
        let bad = try TestSupport.framedump(["dissectors", "--decode-as", "9999=nope"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("no loaded dissector is named 'nope'"), bad.stderr)
    }

    /// The key log is read once for the run; a line appended later (a live capture's app) is
    /// found on the next miss, and a miss on a file that did not grow reads nothing.
    func testKeyLogReadsOnOnlyWhenTheFileGrew() throws {
        let path = TestSupport.tempDir() + "/keys.log"
        let first = String(repeating: "11", count: 32), second = String(repeating: "22", count: 32)
        let secret = String(repeating: "ab", count: 48)
        try "CLIENT_RANDOM \(first) \(secret)\n".write(toFile: path, atomically: false, encoding: .utf8)
        let log = try TLSKeyLog(paths: [path])
        XCTAssertEqual(log.count, 1)
        let random2 = TLSKeyLog.hex(ArraySlice(second.utf8))!
        XCTAssertNil(log.lookup(random2))
        let h = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        h.seekToEndOfFile()
        h.write("CLIENT_RANDOM \(second) ".data(using: .utf8)!)
        XCTAssertNil(log.lookup(random2), "half a line is not read as a secret")
        h.write("\(secret)\n".data(using: .utf8)!)
        try h.close()
        XCTAssertEqual(log.lookup(random2)?.master, TLSKeyLog.hex(ArraySlice(secret.utf8)))
        XCTAssertEqual(log.count, 2)
        XCTAssertEqual(log.unreadableLines, 0)
    }
}
