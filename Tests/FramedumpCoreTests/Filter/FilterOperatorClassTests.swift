import Foundation
import XCTest
@testable import FramedumpCore

/// The class behind "`matches` on Bytes found nothing, exit 0": every operator on every kind
/// of field either selects exactly the messages whose decoded value (NDJSON, the oracle here)
/// satisfies it, or is an error that points at its column. Never a quiet empty answer.
final class FilterOperatorClassTests: XCTestCase {
    enum Kind { case integer, text }

    /// Each message of samples/game.pcap: its `ts` and the values NDJSON gives it.
    func messages() throws -> [(ts: String, values: [String: Any])] {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "json"])
        return try r.stdout.split(separator: "\n").compactMap { line in
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            guard o["message"] is String else { return nil }
            var v = o["fields"] as? [String: Any] ?? [:]
            v["msg.len"] = o["length"]; v["msg.name"] = o["message"]; v["msg.id"] = o["id"]
            return (o["ts"] as! String, v)
        }
    }

    func selected(_ filter: String) throws -> (status: Int32, ts: [String], stderr: String) {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap", "-Y", filter, "-T", "fields", "-e", "msg.time"])
        return (r.status, r.stdout.split(separator: "\n").map(String.init), r.stderr)
    }

    func assertRefusedWithCaret(_ filter: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try selected(filter)
        XCTAssertEqual(r.status, 2, "\(filter) was taken: \(r.ts.count) messages", file: file, line: line)
        XCTAssertTrue(r.stderr.contains("^"), "\(filter): no caret in \(r.stderr)", file: file, line: line)
    }

    func testEveryOperatorOnEveryKindSelectsWhatTheValuesSay() throws {
        let all = try messages()
        XCTAssertEqual(all.count, 39)
        let fields: [(filter: String, key: String, kind: Kind)] = [
            ("game.Hp", "Hp", .integer), ("game.Level", "Level", .integer), ("game.SceneId", "SceneId", .integer),
            ("game.ClientTime", "ClientTime", .integer), ("msg.len", "msg.len", .integer), ("msg.id", "msg.id", .integer),
            ("game.message", "message", .text), ("game.name", "name", .text), ("msg.name", "msg.name", .text),
        ]
        for f in fields {
            let present = all.filter { $0.values[f.key] != nil }
            XCTAssertFalse(present.isEmpty, f.filter)
            switch f.kind {
            case .integer:
                let values = present.map { ($0.values[f.key] as! NSNumber).int64Value }.sorted()
                let pivot = values[values.count / 2], other = values.first!
                let ops: [(String, (Int64) -> Bool)] = [("==", { $0 == pivot }), ("!=", { $0 != pivot }), ("<", { $0 < pivot }),
                                                       ("<=", { $0 <= pivot }), (">", { $0 > pivot }), (">=", { $0 >= pivot })]
                for (op, holds) in ops {
                    let want = present.filter { holds(($0.values[f.key] as! NSNumber).int64Value) }.map(\.ts)
                    let got = try selected("\(f.filter) \(op) \(pivot)")
                    XCTAssertEqual(got.status, 0, got.stderr)
                    XCTAssertEqual(got.ts, want, "\(f.filter) \(op) \(pivot)")
                }
                let member = try selected("\(f.filter) in {\(pivot) \(other)}")
                XCTAssertEqual(member.ts, present.filter { [pivot, other].contains(($0.values[f.key] as! NSNumber).int64Value) }.map(\.ts))
                try assertRefusedWithCaret("\(f.filter) contains 1")
                try assertRefusedWithCaret("\(f.filter) matches \"1\"")
                try assertRefusedWithCaret("\(f.filter) == \"abc\"")
            case .text:
                let values = present.map { $0.values[f.key] as! String }
                let pivot = values.sorted()[values.count / 2]
                let part = String(pivot.dropFirst().prefix(3))
                let ops: [(String, (String) -> Bool)] = [("==", { $0 == pivot }), ("!=", { $0 != pivot }), ("<", { $0 < pivot }),
                                                        ("<=", { $0 <= pivot }), (">", { $0 > pivot }), (">=", { $0 >= pivot })]
                for (op, holds) in ops {
                    let want = present.filter { holds($0.values[f.key] as! String) }.map(\.ts)
                    let got = try selected("\(f.filter) \(op) \"\(pivot)\"")
                    XCTAssertEqual(got.status, 0, got.stderr)
                    XCTAssertEqual(got.ts, want, "\(f.filter) \(op) \"\(pivot)\"")
                }
                let contains = try selected("\(f.filter) contains \"\(part)\"")
                XCTAssertEqual(contains.ts, present.filter { ($0.values[f.key] as! String).contains(part) }.map(\.ts), "contains \(part)")
                let matches = try selected("\(f.filter) matches \"^\(pivot.prefix(2))\"")
                XCTAssertEqual(matches.ts, present.filter { ($0.values[f.key] as! String).hasPrefix(String(pivot.prefix(2))) }.map(\.ts))
                let member = try selected("\(f.filter) in {\"\(pivot)\"}")
                XCTAssertEqual(member.ts, present.filter { ($0.values[f.key] as! String) == pivot }.map(\.ts))
                try assertRefusedWithCaret("\(f.filter) > 5")
            }
        }
        // Labels: by name or by number, the same messages; contains and matches see the label.
        let byName = try selected("game.Res == \"success\""), byNumber = try selected("game.Res == 1")
        XCTAssertEqual(byName.ts, byNumber.ts)
        XCTAssertFalse(byName.ts.isEmpty)
        XCTAssertEqual(try selected("game.Res contains \"succ\"").ts, byName.ts)
        XCTAssertEqual(try selected("game.Res matches \"^succ\"").ts, byName.ts)
        try assertRefusedWithCaret("game.Res == \"sucess\"")
        // Directions and addresses are text with a closed or address form.
        XCTAssertEqual(try selected("msg.dir == c2s").ts.count + (try selected("msg.dir == s2c").ts.count), 39)
        try assertRefusedWithCaret("msg.dir > \"c\"")
        try assertRefusedWithCaret("ip.src > 5")
    }
}
