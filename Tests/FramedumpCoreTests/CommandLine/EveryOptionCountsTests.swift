import Foundation
import XCTest
@testable import FramedumpCore

/// The class behind "-tttt accepted and ignored": every option `framedump --help` lists either
/// changes what a run prints (shown here on a sample), or is refused where it cannot act, or
/// is in this table with the reason its effect is not on a sample's output and the test that
/// shows it. An option added without an entry fails here.
final class EveryOptionCountsTests: XCTestCase {
    enum Effect {
        /// `base` and `base + with` differ in exit status, stdout or stderr.
        case changes(base: [String], with: [String])
        /// Its effect is elsewhere (files written, a live capture, a limit a sample never
        /// reaches): this test shows it.
        case shownBy(String)
        /// Prints the same by design, for this reason.
        case same(String)
    }

    static let game = ["-r", "samples/game.pcap"]
    static let table: [String: Effect] = [
        "-r": .changes(base: ["-r", "samples/svc.pcap"], with: ["-r", "samples/game.pcap"]),
        "--each": .changes(base: ["-r", "samples/game.pcap", "-r", "samples/svc.pcap"], with: ["--each"]),
        "-i": .shownBy("testLiveCaptureOnLoopbackThenReadBack"),
        "-D": .changes(base: game, with: ["-D"]),
        "-w": .changes(base: game, with: ["-w", "/dev/null"]),
        "--print": .changes(base: game + ["-w", "/dev/null"], with: ["--print"]),
        "-C": .shownBy("testSizeRotationMatchesTcpdump"),
        "-G": .shownBy("testTimeRotationNamesFilesByPacketTime"),
        "-W": .shownBy("testRotatedFilesReadBackAsTheOriginal"),
        "-c": .changes(base: game, with: ["-c", "5"]),
        "-s": .shownBy("testLiveCaptureOnLoopbackThenReadBack"),
        "-B": .shownBy("testLiveCaptureOnLoopbackThenReadBack"),
        "-p": .shownBy("testLiveCaptureOnLoopbackThenReadBack"),
        "-l": .shownBy("testClosedPipeEndsTheRunQuietly"),
        "-Z": .shownBy("testPrivilegeDropThenSIGTERMFlushesEverything"),
        "-n": .same("tcpdump's habit: framedump never resolves addresses or ports, so -n is what it always does"),
        "-t": .changes(base: game, with: ["-t"]),
        "-x": .changes(base: game, with: ["-x"]),
        "-A": .changes(base: game, with: ["-A"]),
        "-V": .changes(base: game, with: ["-V"]),
        "-O": .changes(base: game, with: ["-O", "svc"]),
        "-v": .changes(base: game, with: ["-v"]),
        "-q": .changes(base: game, with: ["-q"]),
        "-T": .changes(base: game, with: ["-T", "json"]),
        "-e": .changes(base: game + ["-T", "fields", "-e", "msg.name"], with: ["-e", "msg.id"]),
        "-E": .changes(base: game + ["-T", "fields", "-e", "msg.name"], with: ["-E", "header=y"]),
        "--json": .changes(base: game, with: ["--json"]),
        "--diffable": .changes(base: game + ["--json"], with: ["--diffable"]),
        "--ignore": .changes(base: game + ["--diffable"], with: ["--ignore", "Cs_10002.ClientTime"]),
        "--color": .changes(base: game, with: ["--color", "always"]),
        "--segments": .changes(base: game, with: ["--segments"]),
        "--streams": .shownBy("testStreamsAndFollowTakeUDPFlows"),
        "--follow": .changes(base: game, with: ["--follow"]),
        "-d": .changes(base: game, with: ["-d", "Dissectors/svc.dissector"]),
        "--decode-as": .changes(base: game + ["-d", "Dissectors/svc.dissector"], with: ["--decode-as", "8000=svc"]),
        // (LONE: a folder holding im.dissector without the im.proto it names.)
        "--proto-path": .changes(base: ["-r", "samples/im.pcap", "-d", "LONE/im.dissector"], with: ["--proto-path", "Dissectors"]),
        "--key": .changes(base: ["-r", "samples/im.pcap"], with: ["--key", "im_session=00000000000000000000000000000000"]),
        "--proto-defaults": .changes(base: ["-r", "samples/im.pcap"], with: ["--proto-defaults"]),
        "--tls-keylog": .changes(base: ["-r", "samples/tls13.pcap"], with: ["--tls-keylog", "samples/tls13.keys"]),
        "--idle-timeout": .shownBy("testIdleTimeoutAndEviction"),
        "-Y": .changes(base: game, with: ["-Y", "msg.dir == c2s"]),
        "--filter": .changes(base: game, with: ["--filter", "msg.dir == c2s"]),
        "-z": .changes(base: game, with: ["-z", "msgs"]),
        "--no-progress": .same("the progress line is drawn only on a terminal's stderr, never into a pipe or file"),
        "-j": .same("threads decode and print the same lines in the same order (ShardPoolTests compares every shard count)"),
        "--one-thread": .same("the same as -j 1"),
        "--max-frame": .changes(base: game, with: ["--max-frame", "20"]),
        "--max-ws-message": .changes(base: ["-r", "samples/bridge.pcap"], with: ["--max-ws-message", "10"]),
        "--ws-max-message": .changes(base: ["-r", "samples/bridge.pcap"], with: ["--ws-max-message", "10"]),
        "--max-inflate": .changes(base: ["-r", "samples/zgame.pcap"], with: ["--max-inflate", "10"]),
        "--max-buffer": .shownBy("testOutOfOrderBytesPerStreamAreBounded"),
        "--max-buffer-total": .shownBy("testOutOfOrderBytesInTotalAreBounded"),
        "--max-connections": .changes(base: game, with: ["--max-connections", "1"]),
        "--max-ip-fragments": .shownBy("testIPFragmentsHeldAreBounded"),
        "--max-depth": .shownBy("testNestingDepthIsBounded"),
        "--max-array": .shownBy("testArrayElementsAreBounded"),
        "--max-string": .changes(base: game, with: ["--max-string", "3"]),
        "--max-protocols": .changes(base: game, with: ["--max-protocols", "1"]),
        "--max-messages": .changes(base: game, with: ["--max-messages", "1"]),
        "--version": .changes(base: game, with: ["--version"]),
        "-h": .changes(base: game, with: ["-h"]),
        "--help": .changes(base: game, with: ["--help"]),
    ]

    func testEveryOptionChangesTheOutputOrSaysWhereItActs() throws {
        let help = try TestSupport.framedump(["dump", "--help"])
        XCTAssertEqual(help.status, 0)
        var listed: [String] = []
        for line in help.stdout.split(separator: "\n") where line.hasPrefix("  -") {
            let flags = line.dropFirst(2).prefix { $0 != "<" }.components(separatedBy: "  ")[0]
            for f in flags.split(separator: ",") { listed.append(f.trimmingCharacters(in: .whitespaces)) }
        }
        XCTAssertGreaterThan(listed.count, 50)
        let tests = try testSources()
        let lone = TestSupport.tempDir()
        try FileManager.default.copyItem(atPath: TestSupport.dissectors + "/im.dissector", toPath: lone + "/im.dissector")
        func placed(_ args: [String]) -> [String] { args.map { $0.replacingOccurrences(of: "LONE", with: lone) } }
        for option in listed {
            guard let effect = Self.table[option] else {
                XCTFail("\(option): not in EveryOptionCountsTests.table: say how it changes the output, or where it acts")
                continue
            }
            switch effect {
            case .changes(let base, let with):
                let a = try TestSupport.framedump(placed(base)), b = try TestSupport.framedump(placed(base + with))
                XCTAssertTrue(a.status != b.status || a.stdout != b.stdout || a.stderr != b.stderr,
                              "\(option): \(base + with) prints exactly what \(base) prints")
            case .shownBy(let test):
                XCTAssertTrue(tests.contains("func \(test)("), "\(option): no test \(test)")
            case .same(let why):
                XCTAssertFalse(why.isEmpty)
            }
        }
        XCTAssertEqual(Set(Self.table.keys).subtracting(listed).sorted(), [], "options in the table the command no longer has")
    }

    /// Live-capture options on a file would be accepted and ignored: refused, saying why.
    func testLiveOnlyOptionsAreRefusedWithAFile() throws {
        for args in [["-s", "80"], ["-B", "1024"], ["-p"], ["-Z", "nobody"]] {
            let r = try TestSupport.framedump(Self.game + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("live capture"), "\(args): \(r.stderr)")
        }
    }

    func testSources() throws -> String {
        var all = ""
        let root = TestSupport.testsDir.path
        for case let f as String in FileManager.default.enumerator(atPath: root)! where f.hasSuffix(".swift") {
            all += try String(contentsOfFile: root + "/" + f, encoding: .utf8)
        }
        return all
    }
}
