import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// samples/thrift.pcap (thriftpy2's server and clients; Dissectors/thrift.dissector on the framed
/// transport, port 9090, and thrift-buffered.dissector on the buffered one, port 9091, where a
/// frame is what its message takes): every message, in order on each connection, with tshark's
/// Thrift dissector's type, method and sequence id, and with the peers' own log (its length,
/// bytes and top-level field ids): structs end at their STOP, maps and lists by their types.
final class ThriftSampleTests: XCTestCase {
    struct Message: Equatable, CustomStringConvertible {
        var type: Int
        var method: String
        var seqid: Int
        var description: String { "\(method) type \(type) seq \(seqid)" }
    }

    static let types = ["Call": 1, "Reply": 2, "Exception": 3, "Oneway": 4]

    func ours() throws -> (byStream: [String: [[String: Any]]], events: [[String: Any]]) {
        let r = try TestSupport.framedump(["-r", TestSupport.sample("thrift.pcap"), "-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var by: [String: [[String: Any]]] = [:], events: [[String: Any]] = []
        for l in r.stdout.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any])
            guard o["type"] == nil, let conn = o["conn"] as? String else { events.append(o); continue }
            by[conn, default: []].append(o)
        }
        return (by, events)
    }

    func testEveryMessageAsTsharksThriftDissectorReadsIt() throws {
        let tshark = try TestSupport.oracle("tshark")
        // (-2: tshark's second pass, or it also names each piece of a long buffered message.)
        let r = try TestSupport.run(tshark, ["-2", "-r", TestSupport.sample("thrift.pcap"), "-d", "tcp.port==9090,thrift",
                                             "-d", "tcp.port==9091,thrift", "-Y", "thrift", "-T", "fields", "-e", "tcp.srcport",
                                             "-e", "tcp.dstport", "-e", "thrift.mtype", "-e", "thrift.method", "-e", "thrift.seq_id",
                                             "-E", "occurrence=a", "-E", "aggregator=;"])
        XCTAssertEqual(r.status, 0, r.stderr)
        var theirs: [String: [Message]] = [:]
        for line in r.stdout.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard c.count == 5 else { continue }
            let types = c[2].split(separator: ";").compactMap { Int($0.dropFirst(2), radix: 16) }
            let methods = c[3].split(separator: ";").map(String.init), seqs = c[4].split(separator: ";").compactMap { Int($0) }
            XCTAssertEqual(Set([types.count, methods.count, seqs.count]).count, 1, line.description)
            for i in types.indices { theirs["\(c[0])>\(c[1])", default: []].append(Message(type: types[i], method: methods[i], seqid: seqs[i])) }
        }
        let (by, events) = try ours()
        XCTAssertEqual(events.filter { ($0["type"] as? String) == "malformed" || ($0["type"] as? String) == "gap" }.count, 0, "\(events)")
        var mine: [String: [Message]] = [:]
        for ms in by.values {
            for m in ms {
                XCTAssertNil(m["warnings"], "\(m)")
                let conn = (m["conn"] as! String).split(separator: "-").map { $0.split(separator: ":").last! }
                let key = m["dir"] as? String == "c2s" ? "\(conn[0])>\(conn[1])" : "\(conn[1])>\(conn[0])"
                let f = try XCTUnwrap(m["fields"] as? [String: Any])
                mine[key, default: []].append(Message(type: Self.types[m["message"] as? String ?? ""] ?? -1,
                                                      method: f["method"] as? String ?? "?", seqid: f["seqid"] as? Int ?? -1))
            }
        }
        XCTAssertEqual(mine.values.map(\.count).reduce(0, +), 76)
        XCTAssertEqual(Set(mine.keys), Set(theirs.keys))
        for (k, v) in theirs { XCTAssertEqual(mine[k], v, k) }
    }

    /// The summary line names the method (`[info]`), as tshark's Info column does; binary
    /// values (`[text]` bytes that are no UTF-8) are bytes, with no warning.
    func testTheSummaryLineNamesTheMethod() throws {
        let r = try TestSupport.framedump(["-r", TestSupport.sample("thrift.pcap")])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains(" thrift Call (id 1) \"put_item\", 256 bytes\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains(" thrift_buffered Exception (id 3) \"restock\", 27 bytes\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("string: 16 bytes 00112233445566778899aabbccddeeff\n"), r.stdout)
    }

    /// The peers' log, message by message: the frames tile each stream, each has the logged
    /// length and bytes, and its struct the logged top-level field ids (the STOP ends it).
    func testEveryMessageAsThePeersWroteIt() throws {
        let log = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("thrift.messages.json")))) as? [[String: Any]])
        let (by, _) = try ours()
        // Connections in the order they opened (the log numbers them so), messages in stream order.
        let conns = by.keys.sorted { (by[$0]![0]["ts"] as! String) < (by[$1]![0]["ts"] as! String) }
        XCTAssertEqual(conns.count, 4)
        for (n, conn) in conns.enumerated() {
            let logged = log.filter { $0["connection"] as? Int == n + 1 }
            let ms = by[conn]!
            XCTAssertEqual(ms.count, logged.count, conn)
            var offsets = ["c2s": 0, "s2c": 0]
            for (m, l) in zip(ms, logged) {
                let dir = try XCTUnwrap(m["dir"] as? String)
                XCTAssertEqual(dir, l["direction"] as? String)
                XCTAssertEqual(m["offset"] as? Int, offsets[dir], "frames tile the stream")
                let framed = l["port"] as? Int == 9090
                XCTAssertEqual(m["length"] as? Int, (l["length"] as! Int) + (framed ? 4 : 0), "\(l)")
                offsets[dir]! += m["length"] as! Int
                let f = try XCTUnwrap(m["fields"] as? [String: Any])
                XCTAssertEqual(f["method"] as? String, l["method"] as? String)
                let structName = ["Call": "args", "Oneway": "args", "Reply": "result", "Exception": "error"][m["message"] as? String ?? ""] ?? "?"
                let fields = try XCTUnwrap(f[structName] as? [[String: Any]], "\(m)")
                XCTAssertEqual(fields.last?["type"] as? Int, 0, "the STOP ends the struct")
                XCTAssertEqual(fields.dropLast().compactMap { $0["id"] as? Int }, l["fields"] as? [Int], "\(l["method"] ?? "") \(dir)")
            }
        }
    }

    /// The buffered streams, which have no length, cut alike under every piece size: each frame
    /// is what its message takes, found by decoding it as it arrives.
    func testTheBufferedStreamsUnderEveryPieceSize() throws {
        let log = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("thrift.messages.json")))) as? [[String: Any]])
        let schemas = try DissectorLoader.load(paths: [TestSupport.root.appendingPathComponent("Dissectors/thrift-buffered.dissector").path])
        for conn in [3, 4] {
            let logged = log.filter { $0["connection"] as? Int == conn }
            func bytes(_ d: String) -> [UInt8] { logged.filter { $0["direction"] as? String == d }.flatMap { Array(Data(hex: $0["hex"] as! String)) } }
            let want = logged.filter { $0["direction"] as? String == "c2s" }.map { $0["length"] as! Int }
                + logged.filter { $0["direction"] as? String == "s2c" }.map { $0["length"] as! Int }
            for piece in [1, 2, 3, 5, 8, 13, 100, 1 << 20] {
                let out = OutputBuffer(fd: nil)
                let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
                FuzzStreams.feed(sessions, runs: [(true, bytes("c2s")), (false, bytes("s2c"))], piece: piece, port: 9091)
                let all = out.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                let ms = all.filter { $0["dir"] != nil && $0["type"] == nil }
                XCTAssertEqual(ms.map { $0["length"] as? Int ?? -1 }, want, "connection \(conn) piece \(piece)")
                XCTAssertEqual(ms.filter { $0["warnings"] != nil }.count, 0, "connection \(conn) piece \(piece)")
            }
        }
    }
}
