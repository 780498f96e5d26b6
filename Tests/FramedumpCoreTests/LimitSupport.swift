import Foundation
import XCTest
@testable import FramedumpCore

/// A child framedump whose peak memory is read from the kernel (wait4's rusage), not from the
/// process's own report, and captures written through libpcap by the test itself.
enum Measured {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        /// Peak resident memory of the child, MiB.
        var peakMiB: Int
    }

    /// Runs framedump with `args` (stdout and stderr to files, so nothing can block it),
    /// killed after `timeout` seconds.
    static func framedump(_ args: [String], timeout: TimeInterval = 120) throws -> Run {
        let dir = TestSupport.tempDir()
        let outPath = dir + "/stdout", errPath = dir + "/stderr"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([TestSupport.binary] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let cwd = FileManager.default.currentDirectoryPath
        FileManager.default.changeCurrentDirectoryPath(TestSupport.root.path)
        let rc = posix_spawn(&pid, TestSupport.binary, &actions, nil, argv, environ)
        FileManager.default.changeCurrentDirectoryPath(cwd)
        guard rc == 0 else { throw XCTSkip("cannot start framedump: \(rc)") }
        var status: Int32 = 0
        var usage = rusage()
        let deadline = Date().addingTimeInterval(timeout)
        while wait4(pid, &status, WNOHANG, &usage) == 0 {
            if Date() > deadline { kill(pid, SIGKILL) }
            usleep(5_000)
        }
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Run(status: code,
                   stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                   stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
                   peakMiB: Int(usage.ru_maxrss) / 1024)
    }

    /// The floor: what framedump takes to read a small capture (libraries, Foundation).
    nonisolated(unsafe) static var baselineCache: Int?
    static func baselineMiB() throws -> Int {
        if let b = baselineCache { return b }
        let r = try framedump(["-r", TestSupport.sample("game.pcap"), "-q"])
        baselineCache = r.peakMiB
        return r.peakMiB
    }
}

/// Writes raw-IP TCP captures through libpcap: connections with a handshake, data cut into
/// segments, and holes where the test wants them.
final class CaptureBuilder {
    let dumper: PacketDumper
    var packets: UInt32 = 0
    var scratch = [UInt8](repeating: 0, count: 40 + 65_535)

    init(_ path: String) throws {
        dumper = try PacketDumper.create(path: path, linkType: 12)
    }

    func finish() { dumper.flush() }

    /// One IPv4 TCP segment from `src:sport` to `dst:dport`.
    func segment(src: UInt32, sport: UInt16, dst: UInt32, dport: UInt16, seq: UInt32, ack: UInt32,
                 flags: UInt8, payload: UnsafeRawBufferPointer) {
        let total = 40 + payload.count
        scratch.withUnsafeMutableBytes { p in
            for i in 0..<40 { p[i] = 0 }
            p[0] = 0x45; p[2] = UInt8(total >> 8); p[3] = UInt8(total & 0xff); p[8] = 64; p[9] = 6
            p.storeBytes(of: src.bigEndian, toByteOffset: 12, as: UInt32.self)
            p.storeBytes(of: dst.bigEndian, toByteOffset: 16, as: UInt32.self)
            p.storeBytes(of: sport.bigEndian, toByteOffset: 20, as: UInt16.self)
            p.storeBytes(of: dport.bigEndian, toByteOffset: 22, as: UInt16.self)
            p.storeBytes(of: seq.bigEndian, toByteOffset: 24, as: UInt32.self)
            p.storeBytes(of: ack.bigEndian, toByteOffset: 28, as: UInt32.self)
            p[32] = 0x50; p[33] = flags; p[34] = 0xff; p[35] = 0xff
            if payload.count > 0 { UnsafeMutableRawBufferPointer(rebasing: p[40..<total]).copyMemory(from: payload) }
            packets += 1
            let ts = Timestamp(seconds: 1_700_000_000 + Int64(packets / 1_000_000), nanos: (packets % 1_000_000) * 1000)
            dumper.write(Packet(ref: PacketRef(number: 0, ts: ts),
                                data: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(p)[0..<total]), wireLength: total))
        }
    }

    /// A connection from 10.0.x.y:port to 10.0.0.1:server; `send` writes data in order,
    /// `skip` leaves a hole (bytes never captured).
    final class Connection {
        let b: CaptureBuilder
        let client: UInt32, server: UInt32 = 0x0A00_0001
        let cport: UInt16, sport: UInt16
        var seq: [UInt32] = [1000, 5000]

        init(_ b: CaptureBuilder, index: Int, serverPort: UInt16) {
            self.b = b
            client = 0x0A01_0000 | UInt32(index & 0xffff)
            cport = UInt16(20_000 + index % 40_000)
            sport = serverPort
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            b.segment(src: client, sport: cport, dst: server, dport: sport, seq: seq[0], ack: 0, flags: 0x02, payload: none)
            b.segment(src: server, sport: sport, dst: client, dport: cport, seq: seq[1], ack: seq[0] + 1, flags: 0x12, payload: none)
            seq[0] += 1; seq[1] += 1
            b.segment(src: client, sport: cport, dst: server, dport: sport, seq: seq[0], ack: seq[1], flags: 0x10, payload: none)
        }

        func send(_ bytes: [UInt8], fromClient: Bool = true, segment: Int = 1400) {
            let d = fromClient ? 0 : 1
            bytes.withUnsafeBytes { all in
                var i = 0
                while i < all.count {
                    let n = min(segment, all.count - i)
                    let part = UnsafeRawBufferPointer(rebasing: all[i..<(i + n)])
                    if fromClient {
                        b.segment(src: client, sport: cport, dst: server, dport: sport, seq: seq[d], ack: seq[1 - d], flags: 0x18, payload: part)
                    } else {
                        b.segment(src: server, sport: sport, dst: client, dport: cport, seq: seq[d], ack: seq[1 - d], flags: 0x18, payload: part)
                    }
                    seq[d] &+= UInt32(n)
                    i += n
                }
            }
        }

        func skip(_ n: Int, fromClient: Bool = true) { seq[fromClient ? 0 : 1] &+= UInt32(truncatingIfNeeded: n) }
    }
}

extension Array where Element == UInt8 {
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }
    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
}
