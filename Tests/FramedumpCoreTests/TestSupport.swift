import Foundation
import XCTest
@testable import FramedumpCore

/// Paths, subprocesses and oracles shared by the tests.
enum TestSupport {
    static let testsDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let root = testsDir.deletingLastPathComponent().deletingLastPathComponent()

    static func fixture(_ name: String) -> String { testsDir.appendingPathComponent("Fixtures/\(name)").path }
    static func sample(_ name: String) -> String { root.appendingPathComponent("samples/\(name)").path }
    static var dissectors: String { root.appendingPathComponent("Dissectors").path }

    /// Each dissector text is refused, with an error that begins with its `want`
    /// (`FILE:LINE:COLUMN: error: ...`).
    static func assertRefused(_ cases: [(text: String, want: String)], file name: String,
                              file: StaticString = #filePath, line: UInt = #line) {
        for (text, want) in cases {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: name), text, file: file, line: line) { e in
                let d = (e as? DissectorError)?.description ?? "\(e)"
                XCTAssertTrue(d.hasPrefix(want), "\(text): \(d)", file: file, line: line)
            }
        }
    }

    /// The framedump binary `swift test` built next to the test bundle.
    static var binary: String {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("framedump").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return root.appendingPathComponent(".build/debug/framedump").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a command to completion (bounded by `timeout` seconds: then it is killed).
    @discardableResult
    static func run(_ exe: String, _ args: [String], cwd: String? = nil, timeout: TimeInterval = 120,
                    environment: [String: String]? = nil, stdin: String? = nil) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        if let environment {
            p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let stdin { p.standardInput = FileHandle(forReadingAtPath: stdin) }
        if let cwd { p.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Read both pipes while the process runs, so a large output cannot block it.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        group.wait()
        return Result(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    static func framedump(_ args: [String], cwd: String? = nil) throws -> Result {
        try run(binary, args, cwd: cwd ?? root.path)
    }

    /// A sample's NDJSON messages by flow, "SRCPORT>DSTPORT" in their stream order, and its other
    /// lines (gaps, malformed frames, opens and closes).
    static func messagesByFlow(_ sample: String) throws -> (flows: [String: [[String: Any]]], events: [[String: Any]]) {
        let r = try framedump(["-r", self.sample(sample), "-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var flows: [String: [[String: Any]]] = [:], events: [[String: Any]] = []
        for l in r.stdout.split(separator: "\n") {
            let o = try JSONSerialization.jsonObject(with: Data(l.utf8)) as! [String: Any]
            guard o["type"] == nil, let conn = o["conn"] as? String, let dir = o["dir"] as? String else { events.append(o); continue }
            let ends = conn.split(separator: "-").map { $0.split(separator: ":").last! }
            flows[dir == "c2s" ? "\(ends[0])>\(ends[1])" : "\(ends[1])>\(ends[0])", default: []].append(o)
        }
        return (flows, events)
    }

    /// tshark's follow of TCP stream `stream` of a sample: its client's port and the bytes each
    /// way (client, server).
    static func tsharkFollow(_ sample: String, stream: Int) throws -> (clientPort: String, bytes: [Int]) {
        let r = try run(try oracle("tshark"), ["-r", self.sample(sample), "-q", "-z", "follow,tcp,raw,\(stream)"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var bytes = [0, 0]
        var port = ""
        for l in r.stdout.split(separator: "\n") {
            if l.hasPrefix("Node 0: ") { port = String(l.split(separator: ":").last!) }
            guard let c = l.first, c == "\t" || c.isHexDigit else { continue }
            let hex = l.trimmingCharacters(in: .whitespaces)
            guard hex.allSatisfy(\.isHexDigit) else { continue }
            bytes[c == "\t" ? 1 : 0] += hex.count / 2
        }
        return (port, bytes)
    }

    static func which(_ tool: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// An independent tool the test compares against. CI installs them all, so there a
    /// missing one fails the test; on a developer machine it is skipped with a reason.
    static func oracle(_ tool: String) throws -> String {
        if let p = which(tool) { return p }
        if ProcessInfo.processInfo.environment["CI"] != nil {
            XCTFail("\(tool) is required in CI (installed by .ci/run)")
        }
        throw XCTSkip("\(tool) not installed")
    }

    static var isRoot: Bool { geteuid() == 0 }

    /// Set by scripts/sanitize.sh. There the long shard properties take a fixed sample of their
    /// cases: every case hands buffers between the threads alike, and each costs about four times
    /// as much under ThreadSanitizer (the whole set runs in the plain `swift test`).
    static let sanitized = ProcessInfo.processInfo.environment["FRAMEDUMP_SANITIZED"] != nil

    /// A test of minutes in a debug build: skipped (and said so) unless FRAMEDUMP_LONG_TESTS is
    /// set, as scripts/long_tests.sh sets it for a release build of the tests.
    static func long() throws {
        if ProcessInfo.processInfo.environment["FRAMEDUMP_LONG_TESTS"] == nil {
            throw XCTSkip("a long test: scripts/long_tests.sh runs it")
        }
    }

    /// Runs the pipeline in-process over a capture file and returns what it printed.
    static func pipeline(_ file: String, configure: (inout PipelineOptions) -> Void = { _ in }) throws -> String {
        var o = PipelineOptions()
        o.dissectorPaths = [dissectors]
        configure(&o)
        let out = OutputBuffer(fd: nil)
        let p = try Pipeline(options: o, output: out)
        let src = try PacketSource(.file(file))
        try p.run(src, limit: nil, dumper: nil, lineBuffered: false)
        p.finish()
        return out.text
    }

    static func tempDir() -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("framedump-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d.path
    }
}

/// A small seeded generator, so property tests are repeatable.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
