import Foundation
import XCTest
@testable import FramedumpCore

/// The command line keeps tcpdump's promises: options named when wrong, help that starts with
/// what a capture needs, `-D` as tcpdump prints it, file errors that say what is wrong.
final class CommandLineTests: XCTestCase {
    func testAnUnknownOptionIsNamed() throws {
        for args in [["--bogus"], ["-r", "samples/game.pcap", "--bogus"]] {
            let r = try TestSupport.framedump(args)
            XCTAssertEqual(r.status, 2, "\(args)")
            XCTAssertTrue(r.stderr.contains("Unknown option '--bogus'"), r.stderr)
            XCTAssertFalse(r.stderr.contains("Nothing to read"), r.stderr)
            // dump is the default: a line that did not say it hears of no `dump` subcommand.
            XCTAssertFalse(r.stderr.contains("framedump dump"), r.stderr)
        }
        let check = try TestSupport.framedump(["check", "--bogus"])
        XCTAssertTrue(check.stderr.contains("framedump check"), check.stderr)
        // With nothing wrong but nothing to read, that is what it says.
        let none = try TestSupport.framedump([])
        XCTAssertEqual(none.status, 2)
        XCTAssertTrue(none.stderr.contains("Nothing to read"), none.stderr)
    }

    /// `framedump --help` starts with the capture options, as tcpdump's does, then the subcommands.
    func testTopLevelHelpShowsTheDumpOptionsFirst() throws {
        for flag in ["--help", "-h"] {
            let r = try TestSupport.framedump([flag])
            XCTAssertEqual(r.status, 0, r.stderr)
            let text = r.stdout
            let options = ["-r <file>", "-i <iface>", "-w <file>", "-c <count>", "--filter <filter>", "-T <format>"]
            for o in options { XCTAssertTrue(text.contains(o), "\(o) missing from\n\(text)") }
            let firstOption = try XCTUnwrap(text.range(of: "-r <file>")).lowerBound
            let subcommands = try XCTUnwrap(text.range(of: "SUBCOMMANDS:")).lowerBound
            XCTAssertLessThan(firstOption, subcommands)
            // The limits, rarely changed, after every capture and output option.
            let limits = try XCTUnwrap(text.range(of: "\nLIMITS:")).lowerBound
            XCTAssertLessThan(try XCTUnwrap(text.range(of: "-T <format>")).lowerBound, limits)
            XCTAssertLessThan(limits, subcommands)
            XCTAssertTrue(text.contains("check"), text)
        }
    }

    /// The man page's SYNOPSIS and DESCRIPTION read like tcpdump's: how to run it, then what it
    /// does and the capture options; --version and --help last.
    func testManPageOpensLikeTcpdumps() throws {
        let page = try String(contentsOfFile: TestSupport.root.path + "/man/framedump.1", encoding: .utf8)
        let synopsis = try XCTUnwrap(page.range(of: ".Sh SYNOPSIS\n.Nm\n.Fl r Ar file\n"))
        let description = try XCTUnwrap(page.range(of: ".Sh DESCRIPTION\n.Nm\nreads packets"))
        XCTAssertLessThan(synopsis.lowerBound, description.lowerBound)
        let firstItem = try XCTUnwrap(page.range(of: ".It ", range: description.upperBound..<page.endIndex))
        XCTAssertTrue(page[firstItem.lowerBound...].hasPrefix(".It Em dump"), String(page[firstItem.lowerBound...].prefix(40)))
        XCTAssertLessThan(try XCTUnwrap(page.range(of: ".It Em ui")).lowerBound, try XCTUnwrap(page.range(of: ".It Fl -version", options: .backwards)).lowerBound)
    }

    /// `-D` prints what `tcpdump -D` prints: numbers, names, descriptions, status flags.
    func testInterfaceListIsTcpdumps() throws {
        let tcpdump = try TestSupport.oracle("tcpdump")
        let ours = try TestSupport.framedump(["-D"])
        let theirs = try TestSupport.run(tcpdump, ["-D"])
        XCTAssertEqual(ours.status, 0, ours.stderr)
        XCTAssertEqual(ours.stdout, theirs.stdout)
        XCTAssertTrue(ours.stdout.contains("["), "status flags shown")
    }

    /// `-i 3` is the third interface `-D` lists; a number past the list is no such interface.
    func testInterfaceByNumber() throws {
        let all = try PacketSource.interfaces()
        guard all.count >= 2 else { throw XCTSkip("fewer than two capture interfaces") }
        XCTAssertEqual(try PacketSource.interfaceName("2"), all[1].name)
        XCTAssertEqual(try PacketSource.interfaceName(all[0].name), all[0].name)
        XCTAssertThrowsError(try PacketSource.interfaceName("\(all.count + 1)")) {
            XCTAssertEqual($0 as? CaptureError, .noSuchInterface("\(all.count + 1)"))
        }
        let r = try TestSupport.framedump(["-i", "\(all.count + 1)"])
        XCTAssertEqual(r.status, 6, r.stderr)
        XCTAssertTrue(r.stderr.contains("no such interface"), r.stderr)
    }

    /// An empty capture says it is empty (exit 12), from a file or from stdin.
    func testAnEmptyCaptureSaysSo() throws {
        let dir = TestSupport.tempDir()
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/empty.pcap", contents: Data()))
        let r = try TestSupport.framedump(["-r", dir + "/empty.pcap"])
        XCTAssertEqual(r.status, 12)
        XCTAssertEqual(r.stderr, "framedump: \(dir)/empty.pcap: the capture is empty (0 bytes, not even a file header)\n")
        let stdin = try TestSupport.run(TestSupport.binary, ["-r", "-"], stdin: dir + "/empty.pcap")
        XCTAssertEqual(stdin.status, 12, stdin.stderr)
        // A capture cut after its header is still "cut off" (5), and a text file "not a capture" (4).
        XCTAssertEqual(try TestSupport.framedump(["-r", TestSupport.fixture("not_a_capture.pcap")]).status, 4)
    }

    /// A capture that cannot be read is a permission error (exit 11), not "not a capture";
    /// a folder is said to be one.
    func testAnUnreadableCaptureIsAPermissionError() throws {
        let dir = TestSupport.tempDir()
        let path = dir + "/secret.pcap"
        try FileManager.default.copyItem(atPath: TestSupport.sample("game.pcap"), toPath: path)
        chmod(path, 0)
        chmod(dir, 0o755)
        // root reads anything: the check runs as nobody then.
        let r: TestSupport.Result
        if TestSupport.isRoot {
            let setpriv = try TestSupport.oracle("setpriv")
            r = try TestSupport.run(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", TestSupport.binary, "-r", path], cwd: "/")
        } else {
            r = try TestSupport.framedump(["-r", path])
        }
        XCTAssertEqual(r.status, 11, r.stderr)
        XCTAssertEqual(r.stderr, "framedump: \(path): cannot read: permission denied\n")
        // A folder is read as the set of its captures: the unreadable one is named.
        let folder = TestSupport.isRoot
            ? try TestSupport.run(try TestSupport.oracle("setpriv"), ["--reuid=65534", "--regid=65534", "--clear-groups", TestSupport.binary, "-r", dir], cwd: "/")
            : try TestSupport.framedump(["-r", dir])
        XCTAssertEqual(folder.status, 11, folder.stderr)
        XCTAssertEqual(folder.stderr, "framedump: \(path): cannot read: permission denied\n")
    }

    /// -q and -v count the same: -q decodes too, so messages with warnings are counted.
    func testQuietAndVerboseReportTheSameCounts() throws {
        let q = try TestSupport.framedump(["-r", "samples/im.pcap", "-q"])
        let v = try TestSupport.framedump(["-r", "samples/im.pcap", "-v"])
        XCTAssertEqual(q.status, 0, q.stderr)
        let summary = try XCTUnwrap(v.stdout.range(of: "packets: ")).lowerBound
        let verbose = String(v.stdout[summary...]).split(separator: "\n").filter { !$0.hasPrefix("peak memory") }
        XCTAssertEqual(q.stdout.split(separator: "\n"), verbose)
        XCTAssertTrue(q.stdout.contains("1 messages with warnings"), q.stdout)
    }

    /// The committed man page (`man/framedump.1`, made by scripts/make_manual.sh) lists every
    /// option and subcommand the help shows: an option added without regenerating it fails here.
    func testManPageListsEveryOption() throws {
        let page = try String(contentsOfFile: TestSupport.root.appendingPathComponent("man/framedump.1").path, encoding: .utf8)
        var inPage = Set<String>()
        for line in page.split(separator: "\n") where line.hasPrefix(".It Fl ") {
            for word in line.split(separator: " ").dropFirst(2) {
                if word == "Ar" { break }
                if word != "," && word != "Fl" { inPage.insert("-" + word) }
            }
        }
        var inHelp = Set<String>()
        for sub in ["dump", "check", "dissectors", "diff", "guess", "ui"] {
            let r = try TestSupport.framedump([sub, "--help"])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(page.contains(".It Em \(sub)"), "subcommand \(sub) missing: run scripts/make_manual.sh")
            for line in r.stdout.split(separator: "\n") where line.hasPrefix("  -") {
                let flags = line.dropFirst(2).prefix { $0 != "<" }.components(separatedBy: "  ")[0]
                for f in flags.split(separator: ",") { inHelp.insert(f.trimmingCharacters(in: .whitespaces)) }
            }
        }
        XCTAssertEqual(inHelp.subtracting(inPage).sorted(), [], "options missing from man/framedump.1: run scripts/make_manual.sh")
        XCTAssertEqual(inPage.subtracting(inHelp).sorted(), [], "man/framedump.1 lists options the command no longer has: run scripts/make_manual.sh")
    }

    /// The language's and the filters' man pages are made from their docs/ pages by
    /// scripts/make_man_pages.py: a docs change without the pages made again fails here.
    func testManPagesAreMadeFromTheDocs() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", TestSupport.root.appendingPathComponent("scripts/make_man_pages.py").path, "--check"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, text)
        for (page, heading) in [("man/framedump-dissector.5", ".SH A DISSECTOR FILE"), ("man/framedump-filters.7", ".SH NAME")] {
            let text = try String(contentsOfFile: TestSupport.root.appendingPathComponent(page).path, encoding: .utf8)
            XCTAssertTrue(text.contains(heading), page)
        }
    }
}
