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

    /// Forks (a real fork, from a small process) and execs the command, then reports the
    /// child's peak from wait4. The test process cannot spawn it itself: a child started with
    /// vfork/posix_spawn inherits the spawning process's resident size as its starting peak.
    static let wrapper = """
        import os, signal, sys
        out, err, ru, timeout = sys.argv[1:5]
        argv = sys.argv[5:]
        pid = os.fork()
        if pid == 0:
            os.dup2(os.open('/dev/null', os.O_RDONLY), 0)
            os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
            os.execv(argv[0], argv)
        signal.signal(signal.SIGALRM, lambda *a: os.kill(pid, signal.SIGKILL))
        signal.alarm(int(timeout))
        _, status, usage = os.wait4(pid, 0)
        open(ru, 'w').write(str(usage.ru_maxrss))
        sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
        """

    /// Runs framedump with `args` (stdout and stderr to files, so nothing can block it),
    /// killed after `timeout` seconds.
    static func framedump(_ args: [String], timeout: Int = 120) throws -> Run {
        let python = try TestSupport.oracle("python3")
        let dir = TestSupport.tempDir()
        let outPath = dir + "/stdout", errPath = dir + "/stderr", ruPath = dir + "/rusage"
        let r = try TestSupport.run(python, ["-c", wrapper, outPath, errPath, ruPath, String(timeout), TestSupport.binary] + args,
                                    cwd: TestSupport.root.path, timeout: TimeInterval(timeout + 10))
        let kib = Int(((try? String(contentsOfFile: ruPath, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        XCTAssertGreaterThan(kib, 0, "no rusage: \(r.stderr)")
        return Run(status: r.status,
                   stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                   stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
                   peakMiB: kib / 1024)
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
    /// `ipLengthExtra`: the IP header announces that many bytes more than the frame holds.
    func segment(src: UInt32, sport: UInt16, dst: UInt32, dport: UInt16, seq: UInt32, ack: UInt32,
                 flags: UInt8, payload: UnsafeRawBufferPointer, ipLengthExtra: Int = 0) {
        let total = 40 + payload.count
        let announced = min(total + ipLengthExtra, 65_535)
        scratch.withUnsafeMutableBytes { p in
            for i in 0..<40 { p[i] = 0 }
            p[0] = 0x45; p[2] = UInt8(announced >> 8); p[3] = UInt8(announced & 0xff); p[8] = 64; p[9] = 6
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

        /// `syn` false: picked up mid-connection, no handshake.
        init(_ b: CaptureBuilder, index: Int, serverPort: UInt16, syn: Bool = true) {
            self.b = b
            client = 0x0A01_0000 | UInt32(index & 0xffff)
            cport = UInt16(20_000 + index % 40_000)
            sport = serverPort
            guard syn else { return }
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
