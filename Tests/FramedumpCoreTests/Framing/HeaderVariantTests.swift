import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Headers that differ by direction (`header c2s { }`, `header s2c { }`) and a direction's first
/// frame laid out on its own (`first c2s { ... }`), issue #39 item 3: frames written here by hand
/// in ZooKeeper's and PostgreSQL's layouts, cut the same way under every piece size.
final class HeaderVariantTests: XCTestCase {
    /// ZooKeeper's shape: requests `[len][xid][type]`, replies `[len][xid][zxid][err]` typed by
    /// the request's xid; each direction's first frame a connect message with no xid at all.
    static let zk = """
    protocol zk {
        port 2181;
        header c2s { int32 length; int32 xid; int32 type; }
        header s2c { int32 length; int32 xid; int64 zxid; int32 err; }
        frame_length = length + 4;
        message_id = type;
        first c2s { header { int32 length; } message Connect; }
        first s2c { header { int32 length; } message Connected; }
    }
    Message Connect { Int32 version; Int64 lastZxid; Int32 timeout; Int64 session; Bytes(u32) password; }
    Message Connected { Int32 version; Int32 timeout; Int64 session; Bytes(u32) password; }
    Message GetData = 4 c2s { String(u32) path; Bool watch; }
    Message GetDataReply answers GetData by xid { Bytes(u32) data; }
    Message Ping = 11 c2s { }
    """

    func be32(_ v: Int32) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
    func be64(_ v: Int64) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
    func framed(_ payload: [UInt8]) -> [UInt8] { be32(Int32(payload.count)) + payload }
    func text(_ s: String) -> [UInt8] { be32(Int32(s.utf8.count)) + Array(s.utf8) }

    var zkClient: [UInt8] {
        framed(be32(0) + be64(0) + be32(30000) + be64(0) + be32(16) + [UInt8](repeating: 0, count: 16))
            + framed(be32(1) + be32(4) + text("/app/config") + [1])
            + framed(be32(-2) + be32(11))
    }
    var zkServer: [UInt8] {
        framed(be32(0) + be32(30000) + be64(0x1_0000_0001) + be32(16) + [UInt8](repeating: 7, count: 16))
            + framed(be32(1) + be64(42) + be32(0) + text("v=1"))
    }

    func messages(_ dissector: String, _ c2s: [UInt8], _ s2c: [UInt8], port: UInt16, piece: Int) throws -> [[String: Any]] {
        let schemas = try DissectorLoader.parse(text: dissector, file: "t.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        FuzzStreams.feed(sessions, runs: [(true, c2s), (false, s2c)], piece: piece, port: port)
        return try out.text.split(separator: "\n")
            .map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            .filter { $0["dir"] != nil }
    }

    func testEachDirectionAndFirstFrameHasItsLayout() throws {
        for piece in [1, 2, 3, 5, 7, 13, 1000] {
            let ms = try messages(Self.zk, zkClient, zkServer, port: 2181, piece: piece)
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Connect", "GetData", "Ping", "Connected", "GetDataReply"], "piece \(piece)")
            XCTAssertEqual(ms.compactMap { $0["type"] as? String }, [], "no malformed frame, piece \(piece)")
            let f = ms.map { $0["fields"] as? [String: Any] ?? [:] }
            XCTAssertEqual(f[0]["timeout"] as? Int, 30000)
            XCTAssertEqual(f[1]["path"] as? String, "/app/config")
            XCTAssertEqual(f[3]["session"] as? Int, 0x1_0000_0001)
            XCTAssertEqual(f[4]["data"] as? String, "763d31", "the reply's body starts after its longer header")
            let h = ms.map { $0["header"] as? [String: Any] ?? [:] }
            XCTAssertEqual(h[1]["xid"] as? Int, 1)
            XCTAssertEqual(h[2]["xid"] as? Int, -2)
            XCTAssertEqual(h[4]["zxid"] as? Int, 42)
            XCTAssertEqual(h[4]["err"] as? Int, 0)
            XCTAssertNil(h[0]["xid"], "the connect message's header has no xid")
        }
    }

    /// A capture that starts after the connect messages: no frame is taken for a first one.
    func testAStreamJoinedLateHasNoFirstFrame() throws {
        let schemas = try DissectorLoader.parse(text: Self.zk, file: "t.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        let rest = framed(be32(1) + be32(4) + text("/a") + [0]) + framed(be32(2) + be32(4) + text("/b") + [0])
        FuzzStreams.feed(sessions, c2s: rest, s2c: [], piece: 1000, syn: false, port: 2181)
        let names = out.text.split(separator: "\n").compactMap { line -> String? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], o["dir"] != nil else { return nil }
            return o["message"] as? String ?? "-"
        }
        XCTAssertFalse(names.contains("Connect"), "\(names)")
        XCTAssertEqual(names.suffix(1), ["GetData"])
    }

    /// PostgreSQL's shape: `[type][int32 length]` (the length counts itself, not the type byte),
    /// the client's first message `[int32 length][int32 protocol][...]` with no type byte.
    static let pg = """
    protocol pg {
        port 5432;
        header { uint8 type; int32 length; }
        frame_length = length + 1;
        message_id = type;
        first c2s { header { int32 length; } frame_length = length; message Startup; }
    }
    Message Startup { Int32 protocol; String(nul) user; String(nul) name; }
    Message Query = 81 c2s { String(nul) sql; }
    Message ReadyForQuery = 90 s2c { Uint8 status; }
    """

    func testAFirstFrameWithItsOwnLength() throws {
        let startup = be32(4 + 4 + 5 + 4) + be32(196608) + Array("user\0".utf8) + Array("ann\0".utf8)
        let query = [UInt8(81)] + be32(4 + 9) + Array("SELECT 1\0".utf8)
        let ready = [UInt8(90)] + be32(5) + [73]
        for piece in [1, 2, 3, 4, 6, 1000] {
            let ms = try messages(Self.pg, startup + query, ready + ready, port: 5432, piece: piece)
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Startup", "Query", "ReadyForQuery", "ReadyForQuery"], "piece \(piece)")
            let f = ms.map { $0["fields"] as? [String: Any] ?? [:] }
            XCTAssertEqual(f[0]["protocol"] as? Int, 196608)
            XCTAssertEqual(f[0]["name"] as? String, "ann")
            XCTAssertEqual(f[1]["sql"] as? String, "SELECT 1")
        }
    }

    /// A first frame that cannot be (its length shorter than its header): said, and the main
    /// layout is looked for after it.
    func testABadFirstFrameIsSaidAndTheStreamReadOn() throws {
        let query = [UInt8(81)] + be32(4 + 9) + Array("SELECT 1\0".utf8)
        for piece in [1, 2, 5, 1000] {
            let schemas = try DissectorLoader.parse(text: Self.pg, file: "t.dissector")
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            FuzzStreams.feed(sessions, runs: [(true, be32(2) + [0xee] + query + query)], piece: piece, port: 5432)
            let lines = out.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let ms = lines.filter { $0["dir"] != nil && $0["type"] == nil }
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["Query", "Query"], "piece \(piece)")
            XCTAssertEqual(lines.first { ($0["type"] as? String) == "malformed" }?["reason"] as? String, "length-too-short", "piece \(piece)")
            XCTAssertEqual(lines.filter { ($0["type"] as? String) == "malformed" }.reduce(0) { $0 + ($1["length"] as! Int) }, 5, "the bad startup's 5 bytes, piece \(piece)")
        }
    }

    func testMisuseIsSaidWhereItIsWritten() {
        let msgs = "\nMessage A = 1 c2s { }\nMessage B { }"
        for (text, want) in [
            ("protocol p { port 1; header c2s { uint32 length; uint8 id; } frame_length = length; message_id = id; }",
             "t.dissector:1:22: error: protocol 'p' has no header for s2c: declare 'header s2c { ... }'"),
            ("protocol p { port 1; header { uint32 length; uint8 id; } header s2c { uint16 n; } frame_length = length; message_id = id; }",
             "t.dissector:1:83: error: the frame length reads 'length', which the s2c header does not have"),
            ("protocol p { port 1; header { uint32 length; uint8 id; } frame_length = length; message_id = id; first c2s { header { uint16 n; } message B; } }",
             "t.dissector:1:58: error: the frame length reads 'length', which the first c2s frame's header does not have (give the first frame its own 'frame_length' or 'body_length')"),
            ("protocol p { port 1; header { uint32 length; uint8 id; } frame_length = length; message_id = id; first c2s { header { uint32 length; } message C; } }",
             "t.dissector:1:144: error: unknown message 'C'"),
            ("protocol p { port 1; header { uint32 length; uint8 id; } frame_length = length; message_id = id; first c2s { header { uint32 length; } } }",
             "t.dissector:1:98: error: the first c2s frame's header has no message id: say which message it is ('message NAME;')"),
            ("protocol p { port 1; header { uint32 length; uint8 id; } frame_length = length; message_id = id; first up { } }",
             "t.dissector:1:104: error: expected c2s or s2c after 'first'"),
            ("protocol p { port 1; header c2s { uint32 length; } header c2s { uint32 length; } header s2c { uint32 length; } frame_length = length; }",
             "t.dissector:1:52: error: the c2s header is already declared at line 1"),
            ("protocol p { port 1; header { uint32 length; uint8 id; } frame_length = length; message_id = id; first c2s { header { uint32 length; } frame_length = size; message B; } }",
             "t.dissector:1:151: error: 'size' is not a field of the first c2s frame's header"),
            // (Found by fuzzing: a direction's own id alone, over a layer, trapped the resolver.)
            ("protocol p { websocket \"/x\"; header { uint32 a; } message_id s2c = a; }",
             "t.dissector:1:68: error: protocol 'p': headers per direction, first frames and a direction's own message id are read on TCP and UDP streams, not yet in websocket messages"),
            ("protocol p { port 1; header { uint32 length; uint8 id; } frame_length = length; message_id = id; first s2c { message A; } }",
             "t.dissector:1:118: error: 'A' is a c2s message: it cannot be the first s2c frame"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text + msgs, file: "t.dissector"), text) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.hasPrefix(want), "\(text):\n got \(d)\nwant \(want)")
            }
        }
    }

    static let zkOwnIDs = """
    protocol zk {
        port 2181;
        header c2s { int32 length; int32 xid; int32 type; }
        header s2c { int32 length; int32 xid; int64 zxid; int32 err; }
        frame_length = length + 4;
        message_id c2s = type;
        message_id s2c = xid;
    }
    Message GetData = 4 c2s { String(u32) path; Bool watch; }
    Message GetDataReply answers GetData by xid { Bytes(u32) data when err == 0; }
    Message WatcherEvent = -1 s2c { Int32 type; Int32 state; String(u32) path; }
    """

    /// `message_id s2c = xid;` with negative ids: ZooKeeper's watch events (-1) among replies
    /// typed by their request's xid.
    func testADirectionsOwnIdAndNegativeIds() throws {
        let dissector = Self.zkOwnIDs
        let c2s = framed(be32(7) + be32(4) + text("/a") + [1])
        let s2c = framed(be32(-1) + be64(-1) + be32(0) + be32(3) + be32(3) + text("/a")) + framed(be32(7) + be64(9) + be32(-101))
        for piece in [1, 3, 1000] {
            let ms = try messages(dissector, c2s, s2c, port: 2181, piece: piece)
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" }, ["GetData", "WatcherEvent", "GetDataReply"], "piece \(piece)")
            XCTAssertEqual(ms.map { $0["id"] as? Int }, [4, -1, 7], "a negative id is written as such; a reply's is its xid")
            XCTAssertEqual((ms[1]["fields"] as? [String: Any])?["path"] as? String, "/a")
            XCTAssertEqual((ms[2]["fields"] as? [String: Any])?.count, 0, "err -101: no data")
        }
        let schemas = try DissectorLoader.parse(text: dissector, file: "t.dissector")
        XCTAssertTrue(DissectorDescription.text(schemas[0]).contains("    WatcherEvent id -1 s2c: 3 fields"), DissectorDescription.text(schemas[0]))
        let head = "protocol p { port 1; header { uint32 length; uint8 id; int8 sid; } frame_length = length; message_id = id; "
        for (text, want) in [
            (head + "}\nMessage A = -1 { }", "t.dissector:2:13: error: message id -1 is negative, but the 8-bit id field 'id' is unsigned"),
            (head + "message_id s2c = sid; }\nMessage A = -129 s2c { }", "t.dissector:2:13: error: message id -129 does not fit in the 8-bit id field 'sid' (at least -128)"),
            (head + "message_id s2c = nope; }", "t.dissector:1:125: error: 'nope' is not a header field"),
            (head + "message_id = sid; }", "t.dissector:1:108: error: the message id is already given"),
        ] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: text, file: "t.dissector"), text) { e in
                let d = (e as! DissectorError).description
                XCTAssertTrue(d.hasPrefix(want), "\(text):\n got \(d)\nwant \(want)")
            }
        }
    }

    /// A reply direction joined mid-stream: any id may be a reply, so the deframer takes a frame
    /// that decodes cleanly as one of the reply types (here after the tail of a cut reply).
    func testRepliesResynchroniseMidStream() throws {
        let schemas = try DissectorLoader.parse(text: Self.zkOwnIDs, file: "t.dissector")
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
        let requests = (1...3).flatMap { framed(be32(Int32($0)) + be32(4) + text("/n\($0)") + [0]) }
        let replies = Array(framed(be32(9) + be64(5) + be32(0) + text("tail")).suffix(7))
            + (1...3).flatMap { framed(be32(Int32($0)) + be64(Int64(40 + $0)) + be32(0) + text("v\($0)")) }
        FuzzStreams.feed(sessions, c2s: requests, s2c: replies, piece: 1000, syn: false, port: 2181)
        let lines = out.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let s2c = lines.filter { ($0["dir"] as? String) == "s2c" && $0["type"] == nil }
        XCTAssertEqual(s2c.map { $0["message"] as? String ?? "-" }, ["GetDataReply", "GetDataReply", "GetDataReply"], "\(lines)")
        XCTAssertEqual(s2c.map { ($0["fields"] as? [String: Any])?["data"] as? String }, ["7631", "7632", "7633"])
        XCTAssertEqual(lines.filter { ($0["type"] as? String) == "malformed" }.map { $0["length"] as? Int }, [7], "the cut reply's tail")
    }

    /// `framedump dissectors` shows each header.
    func testTheListingShowsEachHeader() throws {
        let s = try DissectorLoader.parse(text: Self.zk, file: "zk.dissector")[0]
        let t = DissectorDescription.text(s)
        XCTAssertTrue(t.contains("  header c2s (12 bytes): int32 length; int32 xid; int32 type\n"), t)
        XCTAssertTrue(t.contains("  header s2c (20 bytes): int32 length; int32 xid; int64 zxid; int32 err\n"), t)
        XCTAssertTrue(t.contains("  first c2s frame (4 bytes): int32 length; message Connect\n"), t)
        XCTAssertTrue(t.contains("  frame_length = length + 4;"), t)
    }
}
