import Foundation
import XCTest
@testable import FramedumpCore

/// samples/postgresql.pcap (the PostgreSQL server and psycopg; Dissectors/postgresql.dissector:
/// a startup message with no type byte and a length of its own rule, then `[type][length]`
/// messages whose type means one message each way) against tshark's own pgsql dissector: every
/// message, in order on each direction, of the same kind and length; and the statements the
/// client ran (samples/postgresql.messages.json) in its queries.
final class PostgreSQLSampleTests: XCTestCase {
    /// tshark's name for each message of ours.
    static let tsharkName = [
        "StartupMessage": "Startup message", "Query": "Simple query", "Parse": "Parse", "Bind": "Bind",
        "Describe": "Describe", "Execute": "Execute", "Sync": "Sync", "Terminate": "Termination",
        "CopyData": "Copy data", "CopyDone": "Copy completion", "Authentication": "Authentication request",
        "ParameterStatus": "Parameter status", "BackendKeyData": "Backend key data", "ReadyForQuery": "Ready for query",
        "RowDescription": "Row description", "DataRow": "Data row", "CommandComplete": "Command completion",
        "EmptyQueryResponse": "Empty query", "ErrorResponse": "Error", "NoticeResponse": "Notice",
        "ParseComplete": "Parse completion", "BindComplete": "Bind completion", "NoData": "No data",
        "NotificationResponse": "Notification", "CopyInResponse": "CopyIn response", "CopyOutResponse": "CopyOut response",
        "SSLRequest": "SSL request", "CancelRequest": "Cancel request",
    ]

    struct Message: Equatable {
        var kind: String
        var length: Int
    }

    /// Every message of `sample` against tshark's: (flow, message count); our messages tshark
    /// shows no item for (the one-byte answer to an SSLRequest) are left out, and returned.
    func compareWithTshark(_ sample: String) throws -> (count: Int, unseen: [[String: Any]]) {
        let tshark = try TestSupport.oracle("tshark")
        let t = try TestSupport.run(tshark, ["-r", TestSupport.sample(sample), "-d", "tcp.port==5432,pgsql", "-Y", "pgsql",
                                             "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "pgsql.type", "-e", "pgsql.length",
                                             "-E", "occurrence=a", "-E", "aggregator=;"])
        XCTAssertEqual(t.status, 0, t.stderr)
        var want: [String: [Message]] = [:]
        for line in t.stdout.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map { $0.split(separator: ";").map(String.init) }
            guard c.count == 4 else { continue }
            for (kind, length) in zip(c[2], c[3]) {
                // (tshark names the two kinds of 'p' by the authentication's step.)
                let k = kind.hasPrefix("SASL") ? "Password message" : kind
                want["\(c[0][0])>\(c[1][0])", default: []].append(Message(kind: k, length: Int(length)!))
            }
        }
        let (flows, events) = try TestSupport.messagesByFlow(sample)
        var unseen: [[String: Any]] = []
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var got: [String: [Message]] = [:]
        for (key, ms) in flows {
            var offset = 0
            for o in ms {
                XCTAssertEqual(o["offset"] as? Int, offset, "frames tile the stream")
                offset += o["length"] as! Int
                XCTAssertNil(o["warnings"], "\(o)")
                let name = try XCTUnwrap(o["message"] as? String, "every type of the capture is declared: \(o)")
                if name == "EncryptionResponse" { unseen.append(o); continue }
                let kind = name == "PasswordMessage" ? "Password message" : try XCTUnwrap(Self.tsharkName[name], name)
                // The startup message's length is its whole; the others' leave the type byte out.
                let length = (o["header"] as? [String: Any])?["length"] as? Int ?? (o["length"] as! Int)
                let untyped = ["StartupMessage", "SSLRequest", "CancelRequest"].contains(name)
                got[key, default: []].append(Message(kind: kind, length: untyped ? o["length"] as! Int : length))
            }
        }
        XCTAssertEqual(Set(got.keys), Set(want.keys))
        var count = 0
        for (k, messages) in want {
            XCTAssertEqual(got[k] ?? [], messages, k)
            count += messages.count
        }
        return (count, unseen)
    }

    func testEveryMessageAsTsharksPgsqlDissectorReadsIt() throws {
        let (count, unseen) = try compareWithTshark("postgresql.pcap")
        XCTAssertEqual(count, 233)
        XCTAssertTrue(unseen.isEmpty)
        let (flows, _) = try TestSupport.messagesByFlow("postgresql.pcap")
        // What the client asked: each simple query's text is one the client ran.
        let log = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("postgresql.messages.json")))) as! [String: Any]
        let statements = (log["statements"] as! [[String: Any]]).compactMap { ($0["wire_sql"] ?? $0["sql"]) as? String }
        let queries = flows.values.joined().filter { ["Query", "Parse"].contains($0["message"] as? String) }
            .compactMap { ($0["fields"] as? [String: Any])?["query"] as? String }
        XCTAssertGreaterThan(queries.count, 20)
        for q in queries where !q.isEmpty && !["BEGIN", "COMMIT", "ROLLBACK", "DEALLOCATE ALL"].contains(q) {
            XCTAssertTrue(statements.contains(q), "a query the client's log has: \(q)")
        }
        let startup = try XCTUnwrap(flows.values.joined().first { $0["message"] as? String == "StartupMessage" })
        XCTAssertEqual((startup["header"] as? [String: Any])?["version"] as? Int, 3 << 16)  // 3.0
    }

    /// samples/postgresql-prefer.pcap: libpq's default sslmode=prefer against a server without
    /// TLS. Each connection's SSLRequest, the server's one-byte 'N' (which tshark consumes without
    /// an item), then the startup message laid out as the first again; a CancelRequest alone on
    /// its connection, with the process id and key of the connection it cancels.
    func testSSLRequestsAnsweredNoAndACancelRequest() throws {
        let (count, unseen) = try compareWithTshark("postgresql-prefer.pcap")
        XCTAssertEqual(count, 72)
        XCTAssertEqual(unseen.count, 2)
        for o in unseen {
            XCTAssertEqual(o["length"] as? Int, 1)
            XCTAssertEqual((o["header"] as? [String: Any])?["answer"] as? String, "0x4e")
        }
        let log = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: TestSupport.sample("postgresql-prefer.messages.json")))) as? [String: Any])
        let (flows, _) = try TestSupport.messagesByFlow("postgresql-prefer.pcap")
        for c in try XCTUnwrap(log["connections"] as? [[String: Any]]) {
            let port = try XCTUnwrap(c["client_port"] as? Int)
            let c2s = flows["\(port)>5432"] ?? [], s2c = flows["5432>\(port)"] ?? []
            let first = try XCTUnwrap(c["first_c2s"] as? [String])
            XCTAssertEqual(c2s.prefix(first.count).map { $0["message"] as? String ?? "-" }, first, "\(port)")
            if c["ssl_answer"] as? String == "N" { XCTAssertEqual(s2c.first?["message"] as? String, "EncryptionResponse") }
            if let cancelled = c["cancel_of"] as? Int {
                let key = try XCTUnwrap((flows["5432>\(cancelled)"] ?? []).first { $0["message"] as? String == "BackendKeyData" }?["fields"] as? [String: Any])
                let cancel = try XCTUnwrap(c2s.first?["fields"] as? [String: Any])
                XCTAssertEqual(cancel["processId"] as? Int, key["processId"] as? Int)
                XCTAssertEqual(cancel["secretKey"] as? Int, key["secretKey"] as? Int)
            }
        }
    }
}
