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
    ]

    struct Message: Equatable {
        var kind: String
        var length: Int
    }

    func testEveryMessageAsTsharksPgsqlDissectorReadsIt() throws {
        let tshark = try TestSupport.oracle("tshark")
        let t = try TestSupport.run(tshark, ["-r", TestSupport.sample("postgresql.pcap"), "-d", "tcp.port==5432,pgsql", "-Y", "pgsql",
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
        let (flows, events) = try TestSupport.messagesByFlow("postgresql.pcap")
        for e in events { XCTAssertFalse(["malformed", "gap"].contains(e["type"] as? String), "\(e)") }
        var got: [String: [Message]] = [:]
        for (key, ms) in flows {
            var offset = 0
            for o in ms {
                XCTAssertEqual(o["offset"] as? Int, offset, "frames tile the stream")
                offset += o["length"] as! Int
                XCTAssertNil(o["warnings"], "\(o)")
                let name = try XCTUnwrap(o["message"] as? String, "every type of the capture is declared: \(o)")
                let kind = name == "PasswordMessage" ? "Password message" : try XCTUnwrap(Self.tsharkName[name], name)
                // The startup message's length is its whole; the others' leave the type byte out.
                let length = (o["header"] as? [String: Any])?["length"] as? Int ?? (o["length"] as! Int)
                got[key, default: []].append(Message(kind: kind, length: name == "StartupMessage" ? o["length"] as! Int : length))
            }
        }
        XCTAssertEqual(Set(got.keys), Set(want.keys))
        var count = 0
        for (k, messages) in want {
            XCTAssertEqual(got[k] ?? [], messages, k)
            count += messages.count
        }
        XCTAssertEqual(count, 233)
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
}
