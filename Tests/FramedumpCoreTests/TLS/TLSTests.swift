import Crypto
import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// The TLS layer on real peers' captures (samples/make_tls_samples.py: Python's ssl on both
/// sides, every listed suite of TLS 1.3 and 1.2, a KeyUpdate, wss:// with permessage-deflate),
/// against what the peers logged and against tshark's own decryption with the same key log.
final class TLSTests: XCTestCase {
    /// The NDJSON of a run, one object a line.
    func lines(_ args: [String]) throws -> [[String: Any]] {
        let r = try TestSupport.framedump(args)
        XCTAssertEqual(r.status, 0, r.stderr)
        return try r.stdout.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static func clientPort(_ o: [String: Any]) -> Int {
        let conn = o["conn"] as! String
        return Int(conn.split(separator: "-")[0].split(separator: ":").last!)!
    }

    /// Every svc message of the sample, per connection and direction, is the one the peer
    /// wrote: id, body length and body (the JSON decoded by framedump equals the JSON written).
    func checkSVC(_ pcap: String, keys: String, log: String, onlyPort: Int? = nil) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample(log)))
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        var connections = obj["connections"] as! [[String: Any]]
        if let p = onlyPort { connections = connections.filter { $0["client_port"] as! Int == p } }
        XCTAssertFalse(connections.isEmpty)
        for threads in [["--one-thread"], []] {
            let all = try lines(["-r", pcap, "--tls-keylog", keys, "-T", "json"] + threads)
            for c in connections {
                let port = c["client_port"] as! Int
                let mine = all.filter { Self.clientPort($0) == port }
                let tls = c["tls"] as! [String: Any]
                let hs = try XCTUnwrap(mine.first { $0["type"] as? String == "tls-handshake" }, "\(pcap) \(port)")
                XCTAssertEqual(hs["decrypted"] as? Bool, true, "\(pcap) \(port)")
                XCTAssertEqual(hs["sni"] as? String, tls["sni"] as? String)
                XCTAssertEqual(hs["alpn"] as? String, tls["alpn"] as? String)
                XCTAssertEqual(hs["suite"] as? String, (tls["suite"] as? String).map(Self.ianaName), "\(pcap) \(port)")
                XCTAssertEqual(hs["client_random"] as? String, tls["client_random"] as? String)
                for d in ["c2s", "s2c"] {
                    let sent = c[d] as! [[String: Any]]
                    let got = mine.filter { $0["dir"] as? String == d && $0["id"] != nil }
                    XCTAssertEqual(got.count, sent.count, "\(pcap) \(port) \(d) \(threads)")
                    for (g, s) in zip(got, sent) {
                        XCTAssertEqual(g["id"] as? Int, s["serviceId"] as? Int)
                        XCTAssertEqual(g["length"] as? Int, 8 + (s["bodyLength"] as! Int))
                        let body = try JSONSerialization.jsonObject(with: Data((s["body"] as! String).utf8), options: .fragmentsAllowed)
                        if let fields = g["fields"] as? NSDictionary, let b = body as? NSDictionary {
                            XCTAssertEqual(fields, b, "\(pcap) \(port) \(d)")
                        }
                    }
                }
            }
        }
    }

    /// OpenSSL's names (the peers' log) as IANA's (framedump's and tshark's).
    static func ianaName(_ openssl: String) -> String {
        let map = ["ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                   "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                   "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                   "ECDHE-RSA-AES128-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
                   "ECDHE-RSA-AES256-SHA": "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"]
        return map[openssl] ?? openssl
    }

    func testTLS13SuitesAndKeyUpdateDecodeAsSent() throws {
        try checkSVC("samples/tls13.pcap", keys: "samples/tls13.keys", log: "tls13.messages.json")
    }

    func testTLS12SuitesDecodeAsSent() throws {
        try checkSVC("samples/tls12.pcap", keys: "samples/tls12.keys", log: "tls12.messages.json")
    }

    /// Records cut inside their headers, several in a segment, segments reordered and one
    /// sent again: the same messages as the connection it was made from.
    func testRecordsSplitEveryWay() throws {
        let f = TestSupport.fixture("tls_split.pcap"), k = TestSupport.fixture("tls_split.keys")
        try checkSVC(f, keys: k, log: "tls13.messages.json", onlyPort: 33372)
    }

    /// wss:// with permessage-deflate on a port no dissector names: the ClientHello is found,
    /// the plaintext is an HTTP upgrade, and every data message is the one the peer sent.
    func testWSSDecodesAsSent() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("wss.messages.json")))
        let c = (try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])["connections"] as! [[String: Any]])[0]
        let empty = TestSupport.tempDir()
        for threads in [["--one-thread"], []] {
            let all = try lines(["-r", "samples/wss.pcap", "--tls-keylog", "samples/wss.keys", "-T", "json", "-d", empty] + threads)
            XCTAssertEqual(all.filter { $0["type"] as? String == "handshake" }.count, 2)
            for d in ["c2s", "s2c"] {
                let sent = (c[d] as! [[String: Any]]).map { ($0["opcode"] as! String, $0["payload"] as! String) }
                var got: [(String, String)] = []
                for o in all where o["dir"] as? String == d {
                    guard let ws = o["ws"] as? [String: Any], let op = ws["opcode"] as? String, op == "text" || op == "binary" else { continue }
                    let fields = try XCTUnwrap(o["fields"] as? [String: Any])
                    got.append((op, op == "text" ? Data((fields["text"] as? String ?? "").utf8).map { String(format: "%02x", $0) }.joined()
                                : fields["body"] as? String ?? ""))
                }
                XCTAssertEqual(got.count, sent.count, d)
                for (a, b) in zip(got, sent) { XCTAssertEqual(a.0, b.0); XCTAssertEqual(a.1, b.1) }
            }
        }
    }

    /// tshark decrypts the same records with the same key log: each direction's plaintext, cut
    /// into svc frames, gives framedump's messages at framedump's offsets.
    func testPlaintextMatchesTshark() throws {
        let tshark = try TestSupport.oracle("tshark")
        for (pcap, keys, streams) in [("samples/tls13.pcap", "samples/tls13.keys", 3), ("samples/tls12.pcap", "samples/tls12.keys", 6),
                                      (TestSupport.fixture("tls_split.pcap"), TestSupport.fixture("tls_split.keys"), 1)] {
            let all = try lines(["-r", pcap, "--tls-keylog", keys, "-T", "json"])
            let opens = all.filter { $0["type"] as? String == "open" }
            XCTAssertEqual(opens.count, streams)
            for n in 0..<streams {
                let follow = try TestSupport.run(tshark, ["-r", pcap, "-o", "tls.keylog_file:\(keys)", "-o", "tcp.reassemble_out_of_order:TRUE",
                                                          "-d", "tcp.port==7000,tls", "-q", "-z", "follow,tls,raw,\(n)"])
                XCTAssertEqual(follow.status, 0, follow.stderr)
                let (nodes, bytes) = ReassemblyTests.parseFollow(follow.stdout)
                // tshark 4.0's TLS follow names only node 0 (the client or the server, by
                // stream); node 1 is the other. Its streams are framedump's connections in order.
                let node0Server = nodes.first.map { $0.hasSuffix(":7000") } ?? false
                let clientPort = Self.clientPort(opens[n])
                for i in 0..<2 {
                    let client = (i == 0) != node0Server
                    var frames: [(offset: Int, id: Int, length: Int)] = []
                    var at = 0
                    let b = bytes[i]
                    while at + 8 <= b.count {
                        let id = b[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }, len = b[(at + 4)..<(at + 8)].reduce(0) { $0 << 8 | Int($1) }
                        frames.append((at, id, 8 + len))
                        at += 8 + len
                    }
                    XCTAssertEqual(at, b.count, "\(pcap) stream \(n): whole frames")
                    XCTAssertFalse(frames.isEmpty)
                    let dir = client ? "c2s" : "s2c"
                    let ours = all.filter { Self.clientPort($0) == clientPort && $0["dir"] as? String == dir && $0["id"] != nil }
                        .map { (offset: $0["offset"] as! Int, id: $0["id"] as! Int, length: $0["length"] as! Int) }
                    XCTAssertEqual(ours.map(\.offset), frames.map(\.offset), "\(pcap) stream \(n) \(dir)")
                    XCTAssertEqual(ours.map(\.id), frames.map(\.id))
                    XCTAssertEqual(ours.map(\.length), frames.map(\.length))
                }
            }
        }
    }

    /// Without the keys: each connection reported once, with its client random, and counted;
    /// nothing decoded from ciphertext.
    func testMissingKeysAreReportedOnce() throws {
        let noLog = try TestSupport.framedump(["-r", "samples/tls13.pcap"])
        XCTAssertEqual(noLog.status, 0)
        XCTAssertEqual(noLog.stdout.components(separatedBy: "not decrypted: no key log given (--tls-keylog FILE)").count - 1, 3)
        XCTAssertFalse(noLog.stdout.contains("MALFORMED"), noLog.stdout)
        let other = try TestSupport.framedump(["-r", TestSupport.fixture("tls_split.pcap"), "--tls-keylog", TestSupport.fixture("tls_nokeys.keys"), "-q"])
        XCTAssertTrue(other.stdout.contains("svc: 1 connections, 0 messages"), other.stdout)
        XCTAssertTrue(other.stdout.contains("1 connections not decrypted"), other.stdout)
        let tree = try TestSupport.framedump(["-r", TestSupport.fixture("tls_split.pcap"), "--tls-keylog", TestSupport.fixture("tls_nokeys.keys")])
        XCTAssertTrue(tree.stdout.contains("not decrypted: no keys for client random 47ca0496b97379f9c5074e79af93e737ebdced65e6e9f68a5662daa817a25b51 in the key log"), tree.stdout)
        let missing = try TestSupport.framedump(["-r", "samples/tls13.pcap", "--tls-keylog", "no-such.keys"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.stderr.contains("no-such.keys: no such TLS key log"), missing.stderr)
    }

    /// A record whose ciphertext was changed fails authentication: reported, its bytes a gap
    /// for the deframer, never decoded; the records after it decrypt.
    func testFailedAuthenticationIsReportedNotDecoded() throws {
        let all = try lines(["-r", TestSupport.fixture("tls_badtag.pcap"), "--tls-keylog", TestSupport.fixture("tls_split.keys"), "-T", "json"])
        let problems = all.filter { $0["type"] as? String == "tls-problem" }
        XCTAssertEqual(problems.count, 1)
        XCTAssertEqual(problems.first?["reason"] as? String, "bad-record-mac")
        XCTAssertEqual(problems.first?["dir"] as? String, "c2s")
        let c2s = all.filter { $0["dir"] as? String == "c2s" && $0["id"] != nil }
        let s2c = all.filter { $0["dir"] as? String == "s2c" && $0["id"] != nil }
        XCTAssertEqual(s2c.count, 10)
        XCTAssertEqual(c2s.count, 9)  // the Login was in the changed record
        XCTAssertNotEqual(c2s.first?["message"] as? String, "Login")
        let check = try TestSupport.framedump(["check", "-r", TestSupport.fixture("tls_badtag.pcap"), "--tls-keylog", TestSupport.fixture("tls_split.keys")])
        XCTAssertTrue(check.stdout.contains("tls"), check.stdout)
    }

    /// A TLS connection the capture joined after its handshake: said once, with why, on its own
    /// port's protocol; its records counted, not decoded as that protocol's frames.
    func testPickedUpMidStreamIsSaidNotDecodedAsGarbage() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.fixture("tls_midstream.pcap"), "--tls-keylog", TestSupport.fixture("tls_split.keys")])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.components(separatedBy: "not decrypted: picked up mid-stream").count - 1, 1, r.stdout)
        XCTAssertFalse(r.stdout.contains("MALFORMED"), r.stdout)
        let q = try TestSupport.framedump(["-r", TestSupport.fixture("tls_midstream.pcap"), "-q"])
        XCTAssertTrue(q.stdout.contains("svc: 1 connections, 0 messages, 0 bytes in frames, 0 malformed"), q.stdout)
        XCTAssertTrue(q.stdout.contains("1 connections not decrypted"), q.stdout)
    }

    /// A data segment lost each way (whole records, `scripts/make_tls_fixtures.py`): the
    /// records after the gap are found again by their headers and a sequence number that
    /// decrypts, and every message decoded is one the peers wrote, in order, the last ones included.
    func testRecordsAreFoundAgainAfterAGap() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("tls13.messages.json")))
        let c = ((try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any]))["connections"] as! [[String: Any]])
            .first { $0["client_port"] as! Int == 33372 }!
        let args = ["-r", TestSupport.fixture("tls_gap.pcap"), "--tls-keylog", TestSupport.fixture("tls_split.keys")]
        let all = try lines(args + ["-T", "json"])
        var total = 0
        for d in ["c2s", "s2c"] {
            let sent = (c[d] as! [[String: Any]]).map { ($0["serviceId"] as! Int, 8 + ($0["bodyLength"] as! Int)) }
            let got = all.filter { $0["dir"] as? String == d && $0["id"] != nil }.map { ($0["id"] as! Int, $0["length"] as! Int) }
            total += got.count
            // In order, each one sent: a subsequence of the log that ends with its last message.
            var j = 0
            for g in got {
                while j < sent.count && (sent[j].0 != g.0 || sent[j].1 != g.1) { j += 1 }
                XCTAssertLessThan(j, sent.count, "\(d): \(g) is not among the messages sent")
                j += 1
            }
            XCTAssertEqual(got.last?.0, sent.last?.0, d)
            XCTAssertGreaterThanOrEqual(got.count, sent.count - 2, d)
        }
        XCTAssertEqual(total, 18)
        let q = try TestSupport.framedump(args + ["-q"])
        XCTAssertTrue(q.stdout.contains("2 times records found again after a gap"), q.stdout)
        XCTAssertFalse(q.stdout.contains("failed authentication"), q.stdout)
    }

    /// Each message names the records it came from (its direction's, from 1, the handshake's
    /// included): the client's Login is its fourth record (after ClientHello, ChangeCipherSpec
    /// and Finished); the 40 KB upload, cut by OpenSSL into 16 KiB records, spans three; the
    /// frame written in two records spans two.
    func testMessagesNameTheirRecords() throws {
        let all = try lines(["-r", "samples/tls13.pcap", "--tls-keylog", "samples/tls13.keys", "-T", "json"])
        let c2s = all.filter { $0["dir"] as? String == "c2s" && $0["id"] != nil }
        XCTAssertEqual(c2s.count, 30)
        for m in c2s {
            let r = try XCTUnwrap((m["tls"] as? [String: Any])?["records"] as? [Int])
            XCTAssertGreaterThanOrEqual(r[1], r[0])
            if m["message"] as? String == "Login" { XCTAssertEqual(r, [4, 4]) }
            if (m["length"] as? Int ?? 0) > 40_000 { XCTAssertEqual(r[1] - r[0], 2, "\(m)") }
        }
        XCTAssertEqual(c2s.filter { m in ((m["tls"] as? [String: Any])?["records"] as? [Int]).map { $0[1] - $0[0] == 1 } ?? false }.count, 3)
        let tree = try TestSupport.framedump(["-r", "samples/tls13.pcap", "--tls-keylog", "samples/tls13.keys", "-Y", "tls.record == 4 and msg.dir == c2s"])
        XCTAssertEqual(tree.stdout.components(separatedBy: "    tls: record 4\n").count - 1, 3, tree.stdout)
    }

    /// `-Y tls.*` reads the connection's TLS facts on each of its messages.
    func testDisplayFilterOnTLSFields() throws {
        let k = ["-r", "samples/tls13.pcap", "--tls-keylog", "samples/tls13.keys", "-T", "json"]
        let bySNI = try lines(k + ["-Y", "tls.sni == \"svc.example\" and msg.id == 1"])
        XCTAssertEqual(bySNI.filter { $0["id"] != nil }.count, 6)
        let bySuite = try lines(k + ["-Y", "tls.suite == \"TLS_CHACHA20_POLY1305_SHA256\""])
        XCTAssertEqual(bySuite.filter { $0["id"] != nil }.count, 20)
        XCTAssertEqual(try lines(k + ["-Y", "tls.sni == \"other.example\""]).filter { $0["id"] != nil }.count, 0)
        let tls12 = try lines(["-r", "samples/tls12.pcap", "--tls-keylog", "samples/tls12.keys", "-T", "json", "-Y", "tls.version == \"TLS 1.2\""])
        XCTAssertEqual(tls12.filter { $0["id"] != nil }.count, 120)
        let wrong = try TestSupport.framedump(k + ["-Y", "tls.snx == \"a\""])
        XCTAssertEqual(wrong.status, 2)
        XCTAssertTrue(wrong.stderr.contains("did you mean tls.sni?"), wrong.stderr)
    }

    /// A TLS 1.2 ServerHello, a TLS 1.3 one with another suite and a HelloRetryRequest in one
    /// record, then ChangeCipherSpec: only the first sets the connection up (a later one once
    /// changed the suite under a key block made for another, and read past its end).
    func testOnlyTheFirstServerHelloCounts() throws {
        func hello(_ random: [UInt8], suite: UInt16, version: UInt16?) -> [UInt8] {
            var ext: [UInt8] = []
            if let v = version { ext = [0, 43, 0, 2, UInt8(v >> 8), UInt8(v & 0xff)] }
            let body: [UInt8] = [3, 3] + random + [0, UInt8(suite >> 8), UInt8(suite & 0xff), 0] + FuzzTLS.be16(ext.count) + ext
            return [2, 0] + FuzzTLS.be16(body.count) + body
        }
        let hs = hello([UInt8](repeating: 0x22, count: 32), suite: 0xC02F, version: nil)
            + hello([UInt8](repeating: 0x23, count: 32), suite: 0x1302, version: 0x0304)
            + hello(TLSHello.helloRetryRandom, suite: 0x1302, version: 0x0303)
        let s2c: [UInt8] = [22, 3, 3] + FuzzTLS.be16(hs.count) + hs + [20, 3, 3, 0, 1, 1] + [23, 3, 3, 0, 40] + [UInt8](repeating: 7, count: 40)
        ([0, 1] + s2c).withUnsafeBytes { FuzzTLS.run($0) }
    }

    // MARK: - The key log

    func testKeyLogLines() throws {
        let r = String(repeating: "ab", count: 32)
        let log = TLSKeyLog(lines: ["# a comment", "", "CLIENT_RANDOM \(r) " + String(repeating: "01", count: 48) + "\r",
                                    "EXPORTER_SECRET \(r) 00", "CLIENT_RANDOM zz 00", "CLIENT_RANDOM \(r)",
                                    "SERVER_TRAFFIC_SECRET_0 \(String(repeating: "cd", count: 32)) " + String(repeating: "02", count: 32)])
        XCTAssertEqual(log.count, 2)
        XCTAssertEqual(log.unreadableLines, 2)
        XCTAssertEqual(log.lookup([UInt8](repeating: 0xab, count: 32))?.master, [UInt8](repeating: 1, count: 48))
        XCTAssertEqual(log.lookup([UInt8](repeating: 0xcd, count: 32))?.serverTraffic, [UInt8](repeating: 2, count: 32))
    }

    /// A live capture's app appends keys as it connects: a miss reads the file on.
    func testKeyLogIsReadOnAsItGrows() throws {
        let path = TestSupport.tempDir() + "/live.keys"
        let r = String(repeating: "ef", count: 32)
        try Data("CLIENT_RANDOM \(String(repeating: "01", count: 32)) \(String(repeating: "02", count: 48))\nCLIENT_RAN".utf8).write(to: URL(fileURLWithPath: path))
        let log = try TLSKeyLog(paths: [path])
        XCTAssertNil(log.lookup([UInt8](repeating: 0xef, count: 32)))
        let h = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        try h.seekToEnd()
        try h.write(contentsOf: Data("DOM \(r) \(String(repeating: "03", count: 48))\n".utf8))
        try h.close()
        XCTAssertEqual(log.lookup([UInt8](repeating: 0xef, count: 32))?.master, [UInt8](repeating: 3, count: 48))
        XCTAssertEqual(log.unreadableLines, 0)
    }

    /// The kept AEAD context opens what swift-crypto's one-shot API sealed, for each AEAD cipher,
    /// every length from empty to past the kept buffer, and refuses a changed byte anywhere.
    func testKeptContextOpensWhatTheOneShotAPISeals() throws {
        var rng = SeededRandom(seed: 1303)
        for code: UInt16 in [0x1301, 0x1302, 0x1303] {
            let suite = try XCTUnwrap(TLSSuite.all[code])
            let key = SymmetricKey(data: (0..<suite.keyLength).map { _ in UInt8.random(in: 0...255, using: &rng) })
            guard let context = TLSAEADContext(suite, key: key) else {
                #if os(Linux)
                XCTFail("no kept context for \(suite.name): records would take the slow one-shot path")
                #endif
                continue
            }
            for length in [0, 1, 13, 16, 44, 1000, 1025, 5000] {
                let plain = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let nonce = (0..<12).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let aad: [UInt8] = [23, 3, 3, UInt8((length + 16) >> 8), UInt8((length + 16) & 0xff)]
                let body: [UInt8]
                if suite.protection == .chaCha20Poly1305 {
                    let box = try ChaChaPoly.seal(plain, using: key, nonce: ChaChaPoly.Nonce(data: nonce), authenticating: aad)
                    body = Array(box.ciphertext) + Array(box.tag)
                } else {
                    let box = try AES.GCM.seal(plain, using: key, nonce: AES.GCM.Nonce(data: nonce), authenticating: aad)
                    body = Array(box.ciphertext) + Array(box.tag)
                }
                let opened = aad.withUnsafeBytes { a in body.withUnsafeBytes { context.open(body: $0, aad: a, nonce: nonce) } }
                XCTAssertEqual(opened.map { Array($0) }, plain, "\(suite.name), \(length) bytes")
                var changed = body
                changed[Int.random(in: 0..<changed.count, using: &rng)] ^= 0x20
                XCTAssertNil(aad.withUnsafeBytes { a in changed.withUnsafeBytes { context.open(body: $0, aad: a, nonce: nonce) } },
                             "\(suite.name), \(length) bytes, one byte changed")
            }
        }
    }

    /// The fuzz entry over the real sample's bytes with bytes changed: it returns.
    func testFuzzEntrySurvivesMutations() throws {
        var rng = SeededRandom(seed: 443)
        let base = [UInt8](try Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("tls13.pcap"))).prefix(4000))
        for _ in 0..<200 {
            var q = base
            for _ in 0..<8 { q[Int.random(in: 0..<q.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            q.withUnsafeBytes { FuzzTLS.run($0) }
        }
    }
}
