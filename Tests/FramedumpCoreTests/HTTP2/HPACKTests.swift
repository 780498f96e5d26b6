import Foundation
import XCTest
@testable import FramedumpCore

/// The HPACK decoder: RFC 7541's own examples (Appendix C), header blocks an independent encoder
/// wrote (PyPI's hpack, `scripts/make_hpack_fixtures.py`), and blocks that break the rules.
final class HPACKTests: XCTestCase {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = [], digits = Array(hex.utf8)
        digits.removeAll { $0 == 0x20 }
        for i in stride(from: 0, to: digits.count, by: 2) { out.append(UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16)!) }
        return out
    }

    func decode(_ d: HPACKDecoder, _ hex: String) -> (headers: [[String]], failure: HPACKDecoder.Failure?) {
        let b = Self.bytes(hex)
        let failure = b.withUnsafeBytes { d.decode($0) }
        let text = d.text
        return (d.headers.map { [String(decoding: text[$0.name], as: UTF8.self), String(decoding: text[$0.value], as: UTF8.self)] }, failure)
    }

    /// Appendix C: each example's blocks in order, what each decodes to, and the table after
    /// the last (its entries newest first, its size as §4.1 counts it).
    func check(_ blocks: [(String, [[String]])], tableSize: Int = 4096, table: [[String]], size: Int,
               file: StaticString = #filePath, line: UInt = #line) {
        let d = HPACKDecoder()
        d.allowedSize = tableSize
        if tableSize != 4096 { _ = decode(d, "3f e1 01") }  // a size update to 256 (§6.3)
        for (hex, want) in blocks {
            let (got, failure) = decode(d, hex)
            XCTAssertNil(failure, file: file, line: line)
            XCTAssertEqual(got, want, file: file, line: line)
        }
        XCTAssertEqual(d.tableSize, size, "table size", file: file, line: line)
        XCTAssertEqual(d.dynamicCount, table.count, file: file, line: line)
        for (i, e) in table.enumerated() {
            XCTAssertEqual(decode(d, String(0x80 | (62 + i), radix: 16)).headers, [e], "entry \(62 + i)", file: file, line: line)
        }
    }

    func testLiteralsOfAppendixC2() {
        check([("400a637573746f6d2d6b65790d637573746f6d2d686561646572", [["custom-key", "custom-header"]])],
              table: [["custom-key", "custom-header"]], size: 55)
        check([("040c2f73616d706c652f70617468", [[":path", "/sample/path"]])], table: [], size: 0)
        check([("100870617373776f726406736563726574", [["password", "secret"]])], table: [], size: 0)
        check([("82", [[":method", "GET"]])], table: [], size: 0)
    }

    static let requests: [[[String]]] = [
        [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"]],
        [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"], ["cache-control", "no-cache"]],
        [[":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [":authority", "www.example.com"], ["custom-key", "custom-value"]],
    ]
    static let requestTable = [["custom-key", "custom-value"], ["cache-control", "no-cache"], [":authority", "www.example.com"]]

    func testRequestsWithoutHuffmanOfAppendixC3() {
        check(zip(["828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865",
                   "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"], Self.requests).map { ($0, $1) },
              table: Self.requestTable, size: 164)
    }

    func testRequestsWithHuffmanOfAppendixC4() {
        check(zip(["828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
                   "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"], Self.requests).map { ($0, $1) },
              table: Self.requestTable, size: 164)
    }

    static let responses: [[[String]]] = [
        [[":status", "302"], ["cache-control", "private"], ["date", "Mon, 21 Oct 2013 20:13:21 GMT"], ["location", "https://www.example.com"]],
        [[":status", "307"], ["cache-control", "private"], ["date", "Mon, 21 Oct 2013 20:13:21 GMT"], ["location", "https://www.example.com"]],
        [[":status", "200"], ["cache-control", "private"], ["date", "Mon, 21 Oct 2013 20:13:22 GMT"], ["location", "https://www.example.com"],
         ["content-encoding", "gzip"], ["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"]],
    ]
    static let responseTable = [["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"], ["content-encoding", "gzip"],
                                ["date", "Mon, 21 Oct 2013 20:13:22 GMT"]]

    /// A 256-byte table: entries evicted as the responses come.
    func testResponsesWithoutHuffmanOfAppendixC5() {
        check(zip(["4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
                   "4803333037c1c0bf",
                   "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31"],
                  Self.responses).map { ($0, $1) }, tableSize: 256, table: Self.responseTable, size: 215)
    }

    func testResponsesWithHuffmanOfAppendixC6() {
        check(zip(["488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
                   "4883640effc1c0bf",
                   "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007"],
                  Self.responses).map { ($0, $1) }, tableSize: 256, table: Self.responseTable, size: 215)
    }

    /// Every block of 24 sessions an independent encoder wrote decodes to the headers it was given.
    func testBlocksAnotherEncoderWroteDecodeToTheirHeaders() throws {
        let url = URL(fileURLWithPath: TestSupport.fixture("hpack/sessions.json"))
        let fixture = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        var blocks = 0, updates = 0, indexed = 0
        for session in fixture["sessions"] as! [[[String: Any]]] {
            let d = HPACKDecoder()
            d.allowedSize = fixture["allowed_table_size"] as! Int
            for block in session {
                let hex = block["hex"] as! String
                let (got, failure) = decode(d, hex)
                XCTAssertNil(failure, hex)
                XCTAssertEqual(got, block["headers"] as! [[String]], hex)
                if hex.hasPrefix("2") || hex.hasPrefix("3") { updates += 1 }
                indexed += d.headers.filter { $0.how == .indexed && $0.index > 61 }.count
                blocks += 1
            }
        }
        XCTAssertEqual(blocks, 24 * 30)
        XCTAssertGreaterThan(updates, 20, "table size updates")
        XCTAssertGreaterThan(indexed, 30, "headers found in the dynamic table")
    }

    /// Blocks no encoder may write: each refused with where and why, and the decoder broken for
    /// the blocks after it (its table no longer follows the peer's).
    func testBlocksThatBreakTheRulesAreRefusedAndLaterOnesToo() {
        for (hex, why) in [
            ("80", "index 0"), ("be", "the table has 61 entries"), ("41 05 61 62", "a string of 5 bytes, 2 left"),
            ("41 ff ff ff ff ff 0f", "past 2³¹"), ("41 ff", "cut by the block's end"), ("3f e2 1f", "over the 4096 allowed"),
            ("82 20", "a table size update after a header"), ("00 81 ff", "padded with more than 7 bits"),
            ("00 81 18", "padded with other bits than EOS's"), ("00 84 ff ff ff ff", "holds EOS"), ("40", "a string missing"),
        ] {
            let d = HPACKDecoder()
            let (_, failure) = decode(d, hex)
            XCTAssertTrue(failure?.text.contains(why) ?? false, "\(hex): \(String(describing: failure))")
            XCTAssertTrue(decode(d, "82").failure?.text.contains("lost since an earlier block") ?? false, hex)
        }
    }

    /// An entry larger than the whole table empties it and is not added (§4.4).
    func testAnEntryLargerThanTheTableEmptiesIt() {
        let d = HPACKDecoder()
        d.allowedSize = 64
        XCTAssertNil(decode(d, "3f 21 40 01 61 01 62").failure)           // size 64; a: b (34 bytes)
        XCTAssertEqual(d.dynamicCount, 1)
        let long = "40 01 63 28" + String(repeating: " 78", count: 40)    // c: 40 x's (73 bytes)
        XCTAssertNil(decode(d, long).failure)
        XCTAssertEqual(d.dynamicCount, 0)
        XCTAssertEqual(d.tableSize, 0)
    }

    /// A block of one-byte indices of a large table entry expands no further than `maxText`
    /// (it did: 64,000 references to a 4,000-byte entry made 256 MB of text).
    func testIndexedEntriesCountAgainstTheBlocksTextBound() {
        let d = HPACKDecoder()
        let value = [UInt8](repeating: 0x78, count: 4000)
        // x: 4000 x's, added to the table (literal with incremental indexing, new name).
        let add: [UInt8] = [0x40, 0x01, 0x78, 0x7f, 0xa1, 0x1e] + value
        XCTAssertNil(add.withUnsafeBytes { d.decode($0) })
        XCTAssertEqual(d.dynamicCount, 1)
        let refs = [UInt8](repeating: 0xbe, count: 300)             // 300 x 4001 bytes: past 1 MiB
        let failure = refs.withUnsafeBytes { d.decode($0) }
        XCTAssertTrue(failure?.text.contains("run past 1 MiB") ?? false, String(describing: failure))
        XCTAssertLessThanOrEqual(d.text.count, HPACKDecoder.maxText)
    }
}
