import Foundation
import XCTest
@testable import FramedumpCore

/// The stack of layers (docs/architecture.md, "The stack of layers"): every layer is known through the one
/// registry, and what it says about a message reaches every output through the same interfaces.
final class LayerStackTests: XCTestCase {
    func testEveryRegisteredLayerHasItsOwnNamesAndProblemClass() {
        let names = LayerRegistry.kinds.map { $0.name }, keys = LayerRegistry.kinds.map { "\($0.key)" }
        XCTAssertEqual(Set(names).count, names.count)
        XCTAssertEqual(Set(keys).count, keys.count)
        for (i, k) in LayerRegistry.kinds.enumerated() {
            XCTAssertEqual(Int(k.index), i)
            XCTAssertNotNil(ProblemClass(rawValue: k.name), "check -r --allow \(k.name)")
            XCTAssertTrue(k.keywords.contains(k.name), "the dissector keyword that stacks \(k.name)")
        }
        XCTAssertNil(ProblemClass(rawValue: "nonsense"))
    }

    /// A layer writes its NDJSON object without building its fields (the per-message path):
    /// it must say the same as the fields `-Y` reads.
    func testTheNDJSONObjectIsTheFields() throws {
        var infos: [WebSocketInfo] = []
        for op: UInt8 in [0, 1, 2, 3, 8, 9, 10, 11] {
            for bits in 0..<8 {
                infos.append(WebSocketInfo(opcode: WebSocketOpcode(rawValue: op), fin: bits & 1 != 0, masked: bits & 2 != 0,
                                           compressed: bits & 4 != 0, frames: bits + 1, wireLength: UInt64(bits) * 1000))
            }
        }
        for info in infos {
            let n = WebSocketLayer.note(info)
            XCTAssertEqual(WebSocketLayer.info(n), info, "a note gives back what was put in")
            let out = OutputBuffer(fd: nil)
            var k = out.cursor(reserving: 512)
            n.kind.writeJSON(n, &k)
            out.commit(k)
            let written = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(out.bytes)) as? [String: Any])
            let fields = n.kind.fields(n)
            XCTAssertEqual(written.count, fields.count)
            for f in fields {
                switch f.value {
                case .text(let t): XCTAssertEqual(written[f.name] as? String, t)
                case .bool(let b): XCTAssertEqual((written[f.name] as? NSNumber)?.boolValue, b, f.name)
                case .unsigned(let u): XCTAssertEqual((written[f.name] as? NSNumber)?.uint64Value, u, f.name)
                }
            }
        }
    }

    /// `-Y` names a layer's fields by its key (`ws.opcode`); a bare one is true for the
    /// messages that came through the layer; an unknown one is an error with a suggestion.
    func testDisplayFilterReadsALayersFields() throws {
        func matched(_ filter: String) throws -> String {
            let r = try TestSupport.framedump(["-r", "samples/websocket-deflate.pcap", "-q", "-Y", filter])
            XCTAssertEqual(r.status, 0, r.stderr)
            return (r.stdout + r.stderr).split(separator: "\n").first { $0.hasPrefix("filter ") }.map(String.init) ?? ""
        }
        XCTAssertTrue(try matched("ws.opcode == \"text\"").hasSuffix(": 14 messages matched"))
        XCTAssertTrue(try matched("ws.opcode == \"binary\" && ws.masked == true").hasSuffix(": 3 messages matched"))
        XCTAssertTrue(try matched("ws.compressed == false").hasSuffix(": 4 messages matched"))
        XCTAssertTrue(try matched("ws.wire_length > 100000").hasSuffix(": 0 messages matched"))
        XCTAssertTrue(try matched("ws.frames").hasSuffix(": 24 messages matched"))
        XCTAssertTrue(try matched("ws.frames && ws.opcode == \"ping\"").hasSuffix(": 1 messages matched"))
        let bad = try TestSupport.framedump(["-r", "samples/websocket-deflate.pcap", "-q", "-Y", "ws.opcod == 1"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("did you mean ws.opcode?"), bad.stderr)
    }
}
