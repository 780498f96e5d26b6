import Foundation
import XCTest
@testable import FramedumpCore

/// samples/mysql.pcap (the MariaDB server and PyMySQL; Dissectors/mysql.dissector: the server's
/// greeting and the client's handshake response with headers of their own, then commands one
/// way and OK/EOF/error packets the other) against tshark's own mysql dissector: every packet,
/// in order on each direction, with the same length and sequence number, each command the same,
/// and in each TCP segment the same OK, EOF and error packets; and a result set's other packets,
/// which only where they come says what they are, typed by the connection's phases as tshark
/// types them.
final class MySQLSampleTests: XCTestCase {
    struct Packet: Equatable {
        var length, seq: Int
        var command: Int?
    }

    /// Per server segment: the OK/EOF/error codes, the column counts, a prepared statement's
    /// counts, the columns' (and parameters') names and types, and how many packets are rows
    /// (every packet none of these), as tshark's mysql dissector reads them; the dissector's
    /// phases must give the same. And every client packet's command.
    func resultSetsTypedByPhase(_ sample: String, rows: Int, phases: Set<String>) throws {
        struct Segment: Equatable {
            var codes: [Int] = [], counts: [Int] = [], prepared: [Int] = [], names: [String] = [], types: [Int] = [], rows = 0
        }
        let tshark = try TestSupport.oracle("tshark")
        let t = try TestSupport.run(tshark, ["-r", TestSupport.sample(sample), "-d", "tcp.port==3306,mysql",
                                             "-Y", "mysql", "-T", "fields", "-e", "frame.number", "-e", "tcp.srcport",
                                             "-e", "mysql.packet_length", "-e", "mysql.response_code", "-e", "mysql.num_fields",
                                             "-e", "mysql.num_params", "-e", "mysql.field.name", "-e", "mysql.field.type",
                                             "-e", "mysql.command", "-E", "occurrence=a", "-E", "aggregator=;"])
        XCTAssertEqual(t.status, 0, t.stderr)
        var want: [Int: Segment] = [:]
        var wantCommands: [Int] = []
        var greeting = true
        for line in t.stdout.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map { $0.split(separator: ";").map(String.init) }
            guard c.count == 9, let frame = Int(c[0][0]) else { continue }
            guard c[1][0] == "3306" else { wantCommands += c[8].map { Int($0)! }; continue }
            if greeting { greeting = false; continue }
            let fields = c[4].map { Int($0)! }, params = c[5].map { Int($0)! }
            // (A prepared statement's OK gives both counts; a result set's first packet, the columns alone.)
            var g = Segment(codes: c[3].map { Int($0.dropFirst(2), radix: 16)! }, counts: Array(fields.dropFirst(params.count)),
                            prepared: zip(fields, params).flatMap { [$0, $1] }, names: c[6], types: c[7].map { Int($0)! })
            g.rows = c[2].count - g.codes.count - g.names.count - g.counts.count
            if !g.counts.isEmpty {
                // (tshark shows a binary row packet with its first byte, 0x00, as a response code.)
                g.rows += g.codes.filter { $0 == 0 }.count
                g.codes.removeAll { $0 == 0 }
            }
            want[frame] = g
        }
        let (flows, events) = try TestSupport.messagesByFlow(sample)
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var got: [Int: Segment] = [:]
        var gotCommands: [Int] = []
        var seen: Set<String> = []
        for (key, ms) in flows {
            for o in ms {
                let name = try XCTUnwrap(o["message"] as? String, "every packet is typed: \(o)")
                XCTAssertNil(o["warnings"], "\(o)")
                if let p = o["phase"] as? String { seen.insert(p) }
                guard key.hasPrefix("3306>") else {
                    if let id = o["id"] as? Int, name != "HandshakeResponse" { gotCommands.append(id) }
                    continue
                }
                guard name != "Handshake" else { continue }
                let frame = (o["pkts"] as! [Int])[1]
                var g = got[frame] ?? Segment()
                let f = o["fields"] as? [String: Any] ?? [:]
                switch name {
                case "OK", "EOF", "Error": g.codes.append(o["id"] as! Int)
                case "PrepareOK": g.codes.append(0); g.prepared += [f["columns"] as! Int, f["params"] as! Int]
                case "ColumnCount": g.counts.append(o["id"] as! Int)
                case "ColumnDefinition": g.names.append(f["name"] as! String); g.types.append(Int((f["type"] as! String).dropFirst(2), radix: 16)!)
                case "Row": g.rows += 1
                default: XCTFail("a server packet of no result set: \(o)")
                }
                got[frame] = g
            }
        }
        XCTAssertEqual(got, want)
        XCTAssertEqual(gotCommands, wantCommands)
        XCTAssertEqual(want.values.reduce(0) { $0 + $1.rows }, rows, "the sample's rows")
        XCTAssertEqual(seen, phases)
    }

    /// Text result sets (COM_QUERY).
    func testResultSetsTypedByPhaseAsTsharkTypesThem() throws {
        try resultSetsTypedByPhase("mysql.pcap", rows: 11, phases: ["auth", "command", "columns", "columnsEnd", "rows"])
    }

    /// CLIENT_DEPRECATE_EOF (mysql-connector-python's C extension): no EOF after the column
    /// definitions, so the switch to rows counts them; rows end with an OK whose first byte is
    /// 0xfe, which tshark names an OK with code 0xfe; a result set with no rows is that OK right
    /// after the definitions; a prepared statement's answer has no EOFs either.
    func testResultSetsWithoutEOFsCountedByPhaseAsTsharkTypesThem() throws {
        try resultSetsTypedByPhase("mysql-deprecate-eof.pcap", rows: 9, phases: ["auth", "command", "columns", "columnsEnd", "rows", "prepare"])
        let (flows, _) = try TestSupport.messagesByFlow("mysql-deprecate-eof.pcap")
        let server = try XCTUnwrap(flows.first { $0.key.hasPrefix("3306>") }?.value)
        // Each result set's end: the long 0xfe packet (an OK), with its bytes, not an EOF's fields.
        let ends = server.filter { $0["message"] as? String == "EOF" }
        XCTAssertEqual(ends.count, 7)
        for e in ends {
            XCTAssertEqual((e["header"] as? [String: Any])?["length"] as? Int, 7, "\(e)")
            XCTAssertNotNil((e["fields"] as? [String: Any])?["ok"], "\(e)")
        }
    }

    /// Prepared statements (mysql-connector-python: COM_STMT_PREPARE's counts and parameter and
    /// column definitions; COM_STMT_EXECUTE's binary result sets, whose rows start with 0x00).
    func testPreparedStatementsTypedByPhaseAsTsharkTypesThem() throws {
        try resultSetsTypedByPhase("mysql-prepared.pcap", rows: 4, phases: ["auth", "command", "columns", "columnsEnd", "rows", "prepare"])
    }

    func testEveryPacketAsTsharksMysqlDissectorReadsIt() throws {
        let tshark = try TestSupport.oracle("tshark")
        let t = try TestSupport.run(tshark, ["-r", TestSupport.sample("mysql.pcap"), "-d", "tcp.port==3306,mysql", "-Y", "mysql",
                                             "-T", "fields", "-e", "frame.number", "-e", "tcp.srcport", "-e", "mysql.packet_length",
                                             "-e", "mysql.packet_number", "-e", "mysql.command", "-e", "mysql.response_code",
                                             "-E", "occurrence=a", "-E", "aggregator=;"])
        XCTAssertEqual(t.status, 0, t.stderr)
        var want: [String: [Packet]] = [:]
        var wantCodes: [Int: [Int]] = [:]  // per frame: the OK/EOF/error codes of its packets
        for line in t.stdout.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map { $0.split(separator: ";").map(String.init) }
            guard c.count == 6 else { continue }
            let toServer = c[1][0] != "3306"
            var commands = c[4].compactMap { Int($0) }
            for (l, s) in zip(c[2], c[3]) {
                // (The handshake response, sequence 1, carries no command.)
                let command = toServer && Int(s)! == 0 ? commands.removeFirst() : nil
                want[toServer ? "c2s" : "s2c", default: []].append(Packet(length: Int(l)!, seq: Int(s)!, command: command))
            }
            wantCodes[Int(c[0][0])!] = c[5].map { Int($0.dropFirst(2), radix: 16)! }
        }
        let (flows, events) = try TestSupport.messagesByFlow("mysql.pcap")
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var got: [String: [Packet]] = [:]
        var gotCodes: [Int: [Int]] = [:]
        for (key, ms) in flows {
            let dir = key.hasPrefix("3306>") ? "s2c" : "c2s"
            var offset = 0
            for o in ms {
                XCTAssertEqual(o["offset"] as? Int, offset, "frames tile the stream")
                offset += o["length"] as! Int
                let h = o["header"] as! [String: Any]
                let id = o["id"] as? Int
                got[dir, default: []].append(Packet(length: h["length"] as! Int, seq: h["seq"] as! Int, command: dir == "c2s" ? id : nil))
                if dir == "c2s" { XCTAssertNotNil(o["message"] as? String, "every command of the capture is declared: \(o)") }
                let frame = (o["pkts"] as! [Int])[1]
                if ["OK", "EOF", "Error"].contains(o["message"] as? String) { gotCodes[frame, default: []].append(id!) }
                if o["message"] is String { XCTAssertNil(o["warnings"], "\(o)") }
            }
        }
        XCTAssertEqual(got["c2s"], want["c2s"])
        XCTAssertEqual(got["s2c"], want["s2c"])
        XCTAssertEqual(gotCodes.filter { !$0.value.isEmpty }, wantCodes.filter { !$0.value.isEmpty })
        XCTAssertEqual((want["c2s"]?.count ?? 0) + (want["s2c"]?.count ?? 0), 86)
        XCTAssertTrue(wantCodes.values.joined().contains(0xff), "an error packet")
        // The greeting and the handshake response: their own layouts.
        let all = flows.values.joined()
        let greeting = try XCTUnwrap(all.first { $0["message"] as? String == "Handshake" })
        XCTAssertEqual((greeting["fields"] as? [String: Any])?["protocolVersion"] as? Int, 10)
        let response = try XCTUnwrap(all.first { $0["message"] as? String == "HandshakeResponse" })
        XCTAssertEqual((response["fields"] as? [String: Any])?["user"] as? String, "framedump")
        XCTAssertEqual((response["fields"] as? [String: Any])?["database"] as? String, "game")
        XCTAssertEqual((response["fields"] as? [String: Any])?["authPlugin"] as? String, "mysql_native_password")
    }
}
