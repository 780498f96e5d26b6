import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// The session's pairing table (`PairTable`: FIFO chains per rule and key behind an
/// open-addressing table) against a plain model: requests and responses with ids drawn at
/// random, so chains grow, empty, and their slots move as others are removed; every response
/// must answer the request the model says (the oldest waiting one of its id), or none.
final class PairTableTests: XCTestCase {
    static let dissector = """
    protocol pt { port 8430; header { uint16 length; uint16 id; } frame_length = length; message_id = id; pair_by id; }
    Message Ask = 1 { }
    """

    func testResponsesAnswerTheOldestWaitingRequestOfTheirKeyAsAModelDoes() throws {
        var rng = SystemRandomNumberGenerator()
        var seed = UInt64.random(in: 1...UInt64.max, using: &rng)
        func next() -> UInt64 { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed }
        let startSeed = seed
        var runs: [(client: Bool, bytes: [UInt8])] = []
        // id → its waiting requests (number, which request of the connection), oldest first;
        // a request is forgotten once 1,024 newer ones were made.
        var model: [UInt16: [(n: Int, made: Int)]] = [:]
        var want: [Int?] = []                // per response, the number of the request it answers
        var made = 0, forgotten = 0
        for n in 1...6000 {
            let client = next() % 2 == 0
            let id = UInt16(next() % (n < 1500 ? 40 : n < 4000 ? 400 : 1500))   // (later, many keys: the table grows)
            runs.append((client, [0, 4, UInt8(id >> 8), UInt8(id & 0xff)]))
            if client {
                made += 1
                model[id, default: []].append((n, made))
            } else {
                let before = model[id]?.count ?? 0
                model[id]?.removeAll { $0.made <= made - 1024 }
                if (model[id]?.count ?? 0) < before { forgotten += 1 }
                want.append(model[id]?.isEmpty == false ? model[id]!.removeFirst().n : nil)
            }
        }
        let schemas = try DissectorLoader.parse(text: Self.dissector, file: "pt.dissector")
        let out = OutputBuffer(fd: nil)
        FuzzStreams.feed(SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: false)), runs: runs, piece: 1000, port: 8430)
        var got: [Int?] = []
        for line in out.text.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard o["dir"] as? String == "s2c", o["type"] == nil else { continue }
            got.append((o["answers"] as? [String: Any])?["n"] as? Int)
        }
        XCTAssertEqual(got.count, want.count, "seed \(startSeed)")
        XCTAssertEqual(got, want, "seed \(startSeed)")
        XCTAssertGreaterThan(want.compactMap { $0 }.count, 1000, "most responses answer something")
        XCTAssertGreaterThan(forgotten, 50, "responses came to keys whose requests were forgotten")
    }

    /// A request type the peer never answers: each request is forgotten once 1,024 newer ones
    /// were made, so the other types go on pairing each response with its own request (a table
    /// that refused new requests when full left every later response unmatched).
    func testAFullTableForgetsItsOldestRequestsAndNewOnesStillPair() throws {
        var runs: [(client: Bool, bytes: [UInt8])] = []
        var want: [Int] = []
        var asks: [UInt8] = []
        var n = 0
        for i in 0..<2000 {
            runs.append((true, [0, 4, 0, 1])); n += 1            // never answered
            asks.append(1)
            if i % 10 == 9 {
                runs.append((true, [0, 4, 0, 2])); n += 1
                asks.append(2)
                want.append(n)
                runs.append((false, [0, 4, 0, 2])); n += 1
            }
        }
        let schemas = try DissectorLoader.parse(text: Self.dissector, file: "pt.dissector")
        let out = OutputBuffer(fd: nil)
        let manager = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: false))
        FuzzStreams.feed(manager, runs: runs, piece: 1000, port: 8430)
        var got: [Int?] = []
        for line in out.text.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard o["dir"] as? String == "s2c", o["type"] == nil else { continue }
            got.append((o["answers"] as? [String: Any])?["n"] as? Int)
        }
        XCTAssertEqual(got, want.map { $0 })
        // Forgotten: the requests never answered among all but the last 1,024.
        XCTAssertEqual(manager.protocols[0].pairsForgotten, UInt64(asks.dropLast(1024).filter { $0 == 1 }.count))
    }

    /// A waiting request's entry stays 72 bytes (a connection keeps up to 1,024 of them).
    func testAWaitingRequestTakesSeventyTwoBytes() {
        XCTAssertEqual(MemoryLayout<PairTable.Waiting>.stride, 72)
    }
}
