import Foundation
import XCTest
@testable import FramedumpCore

/// `framedump -i lo` captures a real exchange; `-w` writes it; `-r` reads back the same lines.
final class LiveCaptureTests: XCTestCase {
    /// A loopback server and client on an ephemeral port exchanging a few messages.
    /// Everything has a timeout; the server thread ends by itself.
    static func exchange(port: UInt16, messages: [[UInt8]]) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, 4)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, UInt32(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(listener, 1) == 0 else { throw XCTSkip("cannot listen on 127.0.0.1:\(port)") }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &tv, UInt32(MemoryLayout<timeval>.size))
            let c = accept(listener, nil, nil)
            if c >= 0 {
                setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, UInt32(MemoryLayout<timeval>.size))
                var buf = [UInt8](repeating: 0, count: 4096)
                // Echo every read back, until the client closes.
                while true {
                    let n = read(c, &buf, buf.count)
                    if n <= 0 { break }
                    _ = write(c, buf, n)
                }
                close(c)
            }
            done.signal()
        }
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, UInt32(MemoryLayout<timeval>.size))
        setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, 4)
        let connected = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, UInt32(MemoryLayout<sockaddr_in>.size)) } }
        XCTAssertEqual(connected, 0)
        var buf = [UInt8](repeating: 0, count: 4096)
        for m in messages {
            _ = write(s, m, m.count)
            var got = 0
            while got < m.count {
                let n = read(s, &buf, buf.count)
                if n <= 0 { break }
                got += n
            }
            usleep(20_000)
        }
        close(s)
        _ = done.wait(timeout: .now() + 5)
    }

    /// A connection attempt to a port nobody listens on: a SYN and a RST on lo.
    static func knock(port: UInt16) {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(s) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, UInt32(MemoryLayout<sockaddr_in>.size)) } }
    }

    /// A live framedump printing segments on lo (a subprocess, bounded by `-c 200`), once it
    /// is seen to capture: the (still closed) port is knocked on until framedump prints the
    /// SYN it saw (100 tries, 0.1 s apart). Returns the process, its pipes and what it printed.
    static func startCapture(_ args: [String], port: UInt16) throws -> (Process, Pipe, Pipe, Data) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestSupport.binary)
        p.arguments = ["-i", "lo", "-l", "--segments", "-c", "200"] + args + ["tcp", "port", String(port)]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        var early = Data()
        var ready = false
        for _ in 0..<100 where !ready {
            Self.knock(port: port)
            var pfd = pollfd(fd: out.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 100) > 0 {
                early.append(out.fileHandleForReading.availableData)
                ready = !early.isEmpty
            }
        }
        XCTAssertTrue(ready, "framedump never saw traffic on lo")
        return (p, out, err, early)
    }

    /// Ctrl-C equivalent: the capture must stop cleanly; returns (stdout, stderr).
    static func stop(_ p: Process, _ out: Pipe, _ err: Pipe, _ early: Data) -> (String, String) {
        usleep(500_000)
        kill(p.processIdentifier, SIGINT)
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(p.isRunning, "framedump did not stop on SIGINT")
        return (String(decoding: early + out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    func testLiveCaptureOnLoopbackThenReadBack() throws {
        guard TestSupport.isRoot else { throw XCTSkip("live capture needs root or CAP_NET_RAW") }
        let dir = TestSupport.tempDir()
        let saved = dir + "/live.pcap"
        let port = UInt16.random(in: 20000...29999)
        // No -Z: as root it drops to 'nobody' once the handle is open, as tcpdump does.
        let (p, out, err, early) = try Self.startCapture(["-w", saved], port: port)
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        let messages: [[UInt8]] = [Array("hello".utf8), Array("sticky and split".utf8), [UInt8](repeating: 0x41, count: 300)]
        try Self.exchange(port: port, messages: messages)
        // Ctrl-C equivalent: the capture must stop cleanly and print its summary.
        let (live, summary) = Self.stop(p, out, err, early)
        XCTAssertEqual(p.terminationStatus, 0, summary)

        let segs = live.split(separator: "\n").compactMap(CaptureTests.parse)
        // Each message goes out and is echoed back: payload bytes both ways.
        let total = messages.map(\.count).reduce(0, +)
        let c2s = segs.filter { $0.dst.hasSuffix(".\(port)") }.map(\.length).reduce(0, +)
        let s2c = segs.filter { $0.src.hasSuffix(".\(port)") }.map(\.length).reduce(0, +)
        XCTAssertEqual(c2s, total, live)
        XCTAssertEqual(s2c, total, live)
        XCTAssertTrue(segs.contains { $0.flags == "S" }, "the SYN was captured")
        XCTAssertTrue(live.contains("packets received by filter") || summary.contains("packets received by filter"),
                      "live summary with kernel counts: \(live) \(summary)")
        // tcpdump's first line, on stderr: the interface, libpcap's link type, the snap length.
        XCTAssertTrue(summary.hasPrefix("framedump: listening on lo, link-type EN10MB (Ethernet), snapshot length 262144 bytes\n"), summary)

        // What -w saved, read back with -r, gives the same segment lines.
        let back = try TestSupport.framedump(["-r", saved, "--segments"])
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertEqual(back.stdout.split(separator: "\n").compactMap(CaptureTests.parse), segs)
        let liveLines = live.split(separator: "\n").filter { $0.contains(" IP ") }
        XCTAssertEqual(back.stdout.split(separator: "\n").map(String.init), liveLines.map(String.init))
    }

    /// Live with -C: the files rotate while the segments are printed, and read back as a set
    /// (a folder: live.pcap, live.pcap1…) they give the same lines, the connection whole.
    func testLiveRotationReadsBackAsOneRun() throws {
        guard TestSupport.isRoot else { throw XCTSkip("live capture needs root or CAP_NET_RAW") }
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = UInt16.random(in: 30000...39999)
        // -Z root: the files after the first are made after the handle is open (as tcpdump's).
        let (p, out, err, early) = try Self.startCapture(["-w", dir + "/live.pcap", "-C", "1k", "-Z", "root"], port: port)
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        try Self.exchange(port: port, messages: (0..<8).map { [UInt8](repeating: UInt8(0x41 + $0), count: 400) })
        let (live, summary) = Self.stop(p, out, err, early)
        XCTAssertEqual(p.terminationStatus, 0, summary)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertGreaterThan(files.count, 3, "\(files)")
        let back = try TestSupport.framedump(["-r", dir, "--segments"])
        XCTAssertEqual(back.status, 0, back.stderr)
        let liveLines = live.split(separator: "\n").filter { $0.contains(" IP ") }
        XCTAssertEqual(back.stdout.split(separator: "\n").map(String.init), liveLines.map(String.init))
        XCTAssertEqual(back.stdout.split(separator: "\n").compactMap(CaptureTests.parse).filter { $0.dst.hasSuffix(".\(port)") }.map(\.length).reduce(0, +), 3200)
    }
}
