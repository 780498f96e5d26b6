import Foundation
import XCTest
@testable import FramedumpCore

/// Running as tcpdump runs: privileges dropped after the handle opens (and `-w` still written),
/// SIGTERM flushing everything, a closed pipe ending the run quietly, a capture read while
/// another process still writes it, and file names that are not UTF-8.
final class LiveOperationTests: XCTestCase {
    /// The `Uid:`/`Gid:`/`Groups:` lines of a running process.
    static func ids(_ pid: pid_t) -> [String: [String]] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return [:] }
        var out: [String: [String]] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == "\t" || $0 == " " }).map(String.init)
            if let key = parts.first, ["Uid:", "Gid:", "Groups:", "CapEff:"].contains(key) { out[key] = Array(parts.dropFirst()) }
        }
        return out
    }

    /// Game frames: `[u32 total length][u16 id][body]`.
    static func frames(_ n: Int) -> [UInt8] {
        var out: [UInt8] = []
        for i in 0..<n {
            let body = Array("message \(i)".utf8)
            out += .be32(UInt32(6 + body.count)) + .be16(7) + body
        }
        return out
    }

    /// `-Z nobody`: once the handle is open the process has no uid, gid, group or capability
    /// of root left, and the `-w` file, opened before, is still written (in a folder nobody
    /// cannot write to). Then SIGTERM: NDJSON flushed to the last message, the summary printed.
    func testPrivilegeDropThenSIGTERMFlushesEverything() throws {
        guard TestSupport.isRoot else { throw XCTSkip("live capture needs root") }
        let dir = TestSupport.tempDir()
        chmod(dir, 0o755)
        let saved = dir + "/live.pcap"
        let port = UInt16.random(in: 30000...39999)
        let dissectors = dir + "/d"
        try FileManager.default.createDirectory(atPath: dissectors, withIntermediateDirectories: true)
        try "protocol t { port \(port); header { uint32 length; uint16 id; } frame_length = length; message_id = id; body text; }\n"
            .write(toFile: dissectors + "/t.dissector", atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestSupport.binary)
        // No -l: the output sits in framedump's buffer until SIGTERM makes it flush.
        p.arguments = ["-i", "lo", "-Z", "nobody", "-w", saved, "--print", "-T", "json", "-d", dissectors, "tcp", "port", String(port)]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        // Both pipes are drained while it runs (the NDJSON is larger than a pipe holds).
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let drained = DispatchGroup()
        drained.enter()
        DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); drained.leave() }
        drained.enter()
        DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); drained.leave() }
        // The drop comes right after the handle opens: wait for it (bounded, 10 s).
        var ids: [String: [String]] = [:]
        for _ in 0..<100 {
            ids = Self.ids(p.processIdentifier)
            if ids["Uid:"]?.first == "65534" { break }
            usleep(100_000)
        }
        XCTAssertEqual(ids["Uid:"], ["65534", "65534", "65534", "65534"], "real, effective, saved and file-system uid")
        XCTAssertEqual(ids["Gid:"], ["65534", "65534", "65534", "65534"])
        XCTAssertFalse(ids["Groups:"]?.contains("0") ?? true, "no supplementary root group: \(ids)")
        XCTAssertEqual(ids["CapEff:"], ["0000000000000000"], "no capability left")

        let sent = Self.frames(200)
        try LiveCaptureTests.exchange(port: port, messages: [Array(sent[..<1000]), Array(sent[1000...])])
        usleep(500_000)
        kill(p.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(p.isRunning, "framedump did not stop on SIGTERM")
        XCTAssertEqual(drained.wait(timeout: .now() + 10), .success)
        let stdout = String(decoding: outData, as: UTF8.self)
        let stderr = String(decoding: errData, as: UTF8.self)
        XCTAssertEqual(p.terminationStatus, 0, stderr)
        let lines = stdout.split(separator: "\n")
        for l in lines { XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(l.utf8)), String(l)) }
        // The server echoes every frame: 200 each way, none lost in a buffer.
        XCTAssertEqual(lines.filter { $0.contains(#""dir":"c2s""#) && $0.contains(#""id":7"#) }.count, 200, stdout)
        XCTAssertEqual(lines.filter { $0.contains(#""dir":"s2c""#) && $0.contains(#""id":7"#) }.count, 200)
        XCTAssertTrue(stderr.contains("packets received by filter"), stderr)
        XCTAssertTrue(stderr.contains("t: 1 connections, 400 messages"), stderr)
        // The -w file, written after the drop, holds the whole exchange.
        let back = try TestSupport.framedump(["-r", saved, "-q", "-d", dissectors])
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertTrue(back.stdout.contains("t: 1 connections, 400 messages"), back.stdout)
    }

    /// SIGTERM while the run cannot look at its stop flag (here a read from a pipe that sends
    /// nothing more, which the kernel restarts after the handler): the process ends within a
    /// second of it anyway, with 128 + 15. (It once waited for the pipe's next byte.)
    func testSIGTERMEndsARunThatCannotStopWithinASecond() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestSupport.binary)
        p.arguments = ["-r", "-", "-q"]
        let input = Pipe()
        p.standardInput = input
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        // A whole capture's first packets, and the pipe left open.
        input.fileHandleForWriting.write(try Data(contentsOf: TestSupport.root.appendingPathComponent("samples/game.pcap")))
        usleep(500_000)
        XCTAssertTrue(p.isRunning, "framedump ended before its input did")
        kill(p.processIdentifier, SIGTERM)
        let sent = Date()
        while p.isRunning && Date().timeIntervalSince(sent) < 10 { usleep(10_000) }
        XCTAssertFalse(p.isRunning, "framedump did not end on SIGTERM")
        XCTAssertLessThan(Date().timeIntervalSince(sent), 5)
        XCTAssertEqual(p.terminationStatus, 128 + SIGTERM)
        try? input.fileHandleForWriting.close()
    }

    /// `framedump -r ... | head -1`: the first line, then a quiet end (no error text, exit 0),
    /// without reading the rest of a large capture (tcpdump dies of SIGPIPE at that point;
    /// framedump ignores the signal, sees EPIPE, completes its files and stops).
    func testClosedPipeEndsTheRunQuietly() throws {
        let path = TestSupport.tempDir() + "/many.pcap"
        let b = try CaptureBuilder(path)
        for i in 0..<20_000 { CaptureBuilder.Connection(b, index: i, serverPort: 9999).send([1, 2, 3]) }
        b.finish()
        for args in [["-r", path], ["-r", path, "-T", "json"], ["-r", path, "-w", "-", "-q"], ["-r", TestSupport.sample("game.pcap")]] {
            let r = try TestSupport.run("/bin/bash", ["-c", #"set -o pipefail; "$0" "$@" 2>"$TMPERR" | head -c 10 >/dev/null; echo "status $?"; cat "$TMPERR""#, TestSupport.binary] + args,
                                        environment: ["TMPERR": TestSupport.tempDir() + "/err"])
            XCTAssertEqual(r.stdout, "status 0\n", "\(args): \(r.stdout)")
        }
        // It stopped reading once the reader was gone: the -w copy is complete up to there,
        // and short of the 80,000 packets.
        let copy = TestSupport.tempDir() + "/copy.pcap"
        _ = try TestSupport.run("/bin/bash", ["-c", #""$0" -r "$1" -w "$2" --print | head -c 10 >/dev/null"#, TestSupport.binary, path, copy])
        let back = try TestSupport.framedump(["-r", copy, "-q", "-d", TestSupport.tempDir()])
        XCTAssertEqual(back.status, 0, back.stderr)
        let packets = Int(back.stdout.dropFirst("packets: ".count).prefix { $0.isNumber }) ?? -1
        XCTAssertGreaterThan(packets, 0, back.stdout)
        XCTAssertLessThan(packets, 80_000, back.stdout)
    }

    /// A capture another process still has open for writing, ending inside a record: read up
    /// to the last whole record, exit 0, and a note. Once the writer is gone the same file is
    /// a capture cut off mid-record (exit 5), as before.
    func testCaptureStillBeingWrittenIsReadToItsEnd() throws {
        let whole = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("game.pcap")))
        let path = TestSupport.tempDir() + "/growing.pcap"
        try whole.prefix(3000).write(to: URL(fileURLWithPath: path))
        let writer = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        let r = try TestSupport.framedump(["-r", path, "-q"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr, "framedump: \(path) is still being written: read up to its last whole record\n")
        XCTAssertTrue(r.stdout.hasPrefix("packets: 29 "), r.stdout)
        // The writer adds the rest: the next read sees all of it.
        writer.seekToEndOfFile()
        writer.write(whole.dropFirst(3000))
        let all = try TestSupport.framedump(["-r", path, "-q"])
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertTrue(all.stdout.hasPrefix("packets: 60 "), all.stdout)
        writer.truncateFile(atOffset: 3000)
        writer.closeFile()
        let cut = try TestSupport.framedump(["-r", path, "-q"])
        XCTAssertEqual(cut.status, 5, cut.stderr)
        XCTAssertTrue(cut.stderr.contains("capture is cut off mid-record"), cut.stderr)
    }

    /// `-r $'\xff.pcap'` opens that file; `--streams $'s\xff'` writes into the folder of that
    /// exact name; `-w` too. Errors show the byte as `\xFF`.
    func testFileNamesThatAreNotUTF8() throws {
        let dir = TestSupport.tempDir()
        let game = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("game.pcap")))
        func raw(_ name: [UInt8]) -> String { dir + "/" + name.withUnsafeBytes { RawPath.decodeSlow($0) } }
        let input = raw([0xff] + Array(".pcap".utf8))
        RawPath.withCString(input) { p in
            let f = fopen(p, "wb")!
            game.withUnsafeBytes { _ = fwrite($0.baseAddress, 1, $0.count, f) }
            fclose(f)
        }
        let streams = raw(Array("s".utf8) + [0xff])
        let written = raw(Array("w".utf8) + [0xfe, 0x80])
        // Through bash, so the arguments are exactly these bytes.
        let script = #"cd "$0" && "$1" -r $'\xff.pcap' --streams $'s\xff' -w $'w\xfe\x80' -q -d "$2"; echo "status $?"; ls | od -An -c | tr -s ' '; "$1" -r $'\xfe.pcap' 2>&1"#
        let r = try TestSupport.run("/bin/bash", ["-c", script, dir, TestSupport.binary, TestSupport.dissectors])
        XCTAssertTrue(r.stdout.contains("game: 3 connections, 39 messages"), r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("status 0"), r.stdout)
        XCTAssertTrue(r.stdout.contains(#"framedump: \xFE.pcap: no such file"#), r.stdout)
        // Exactly the three names, byte for byte: no U+FFFD folder beside them.
        let listing = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertEqual(listing.count, 3, "\(listing)")
        var st = stat()
        XCTAssertEqual(RawPath.withCString(streams + "/index.json") { stat($0, &st) }, 0, "the streams index is in s\\xff")
        XCTAssertEqual(RawPath.withCString(written) { stat($0, &st) }, 0)
        XCTAssertEqual(Int(st.st_size), game.count, "the -w copy holds every packet")
        XCTAssertEqual(RawPath.bytes(input).suffix(6), [0xff] + Array(".pcap".utf8))
    }
}
