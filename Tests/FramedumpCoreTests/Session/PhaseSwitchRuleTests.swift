import Foundation
import XCTest
@testable import FramedumpCore
import FramedumpFuzz

/// Phase switches with a test (`after End when length == 2`) and with a count (`after Col *
/// Count.n`): a result set's column definitions end after as many as its count says, and what
/// follows them is told apart by its length (MySQL with CLIENT_DEPRECATE_EOF, where no EOF
/// follows the definitions and an OK that starts like one ends the rows), written here by hand.
final class PhaseSwitchRuleTests: XCTestCase {
    static let text = """
    protocol t {
        port 7100;
        header { uint8 length; uint8 type [hex]; }
        frame_length = length + 1;
        message_id = type;
        phase idle; phase cols; phase colsEnd; phase rows;
        phase idle -> cols after Count;
        phase cols -> colsEnd after Col * Count.n;
        phase colsEnd -> rows after End when length == 2;
        phase colsEnd -> rows after Row;
        phase colsEnd -> idle after End;
        phase rows -> idle after End;
    }
    Message Count = 1 s2c in idle { Uint8 n; }
    Message Col = * s2c in cols { Bytes(rest) name; }
    Message Row = * s2c in rows, colsEnd { Bytes(rest) v; }
    Message End = 0xfe s2c in colsEnd, rows { Bytes(rest) x; }
    """

    func testCountedAndTestedSwitchesUnderEveryPieceSize() throws {
        let s2c: [UInt8] = [2, 1, 2] + [2, 3, 0x61] + [2, 3, 0x62]   // two columns, no end marker
            + [2, 3, 0x63] + [3, 0xfe, 0, 0]                              // a row; the long end: idle
            + [2, 1, 1] + [2, 3, 0x64] + [2, 0xfe, 0]                      // one column, the short end
            + [2, 3, 0x65] + [2, 0xfe, 0]                                  // a row; the end: idle
            + [2, 1, 1] + [2, 3, 0x66] + [3, 0xfe, 0, 0]                   // no rows: the long end, idle
            + [2, 1, 3]                                                    // a count again: idle it was
        let schemas = try DissectorLoader.parse(text: Self.text, file: "t.dissector")
        for piece in [1, 2, 3, 1000] {
            let out = OutputBuffer(fd: nil)
            let sessions = SessionManager(protocols: schemas, sink: JSONPrinter(output: out, diffable: true))
            FuzzStreams.feed(sessions, runs: [(false, s2c)], piece: piece, port: 7100)
            let ms = out.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["dir"] != nil && $0["type"] == nil }
            XCTAssertEqual(ms.map { $0["message"] as? String ?? "-" },
                           ["Count", "Col", "Col", "Row", "End", "Count", "Col", "End", "Row", "End", "Count", "Col", "End", "Count"], "piece \(piece)")
            XCTAssertEqual(ms.map { $0["phase"] as? String ?? "-" },
                           ["idle", "cols", "cols", "colsEnd", "rows", "idle", "cols", "colsEnd", "rows", "rows", "idle", "cols", "colsEnd", "idle"], "piece \(piece)")
        }
    }

    func testTheDescriptionSaysIt() throws {
        let text = DissectorDescription.text(try DissectorLoader.parse(text: Self.text, file: "t.dissector")[0])
        XCTAssertTrue(text.contains("    cols -> colsEnd after Col * Count.n\n    colsEnd -> rows after End when length == 2\n    colsEnd -> rows after Row\n"), text)
    }

    func testMisuseIsSaid() {
        let head = "protocol t { port 1; header { uint8 length; uint8 type; } frame_length = length + 1; message_id = type;\nphase a; phase b;\n"
        let msgs = "}\nMessage C = 1 { Uint8 n; String(u8) s; } Message D = 2 { }"
        TestSupport.assertRefused([
            (head + "phase a -> b after D * C;" + msgs, "t.dissector:3:24: error: expected MESSAGE.FIELD after '*'"),
            (head + "phase a -> b after D * X.n;" + msgs, "t.dissector:3:24: error: unknown message 'X'"),
            (head + "phase a -> b after D * C.s;" + msgs, "t.dissector:3:24: error: 's' is not a single integer field of 'C'"),
            (head + "phase a -> b after D * C.z;" + msgs, "t.dissector:3:24: error: 'z' is neither a header field nor a field of 'C'"),
            (head + "phase a -> b after C when nope == 1;" + msgs, "t.dissector:3:27: error: 'nope' is neither a header field nor a field of 'C'"),
            (head + "phase a -> b after C; phase a -> a after C;" + msgs, "t.dissector:3:42: error: 'C' already switches the phase in 'a' (give one of them a 'when')"),
        ], file: "t.dissector")
        XCTAssertNoThrow(try DissectorLoader.parse(text: head + "phase a -> b after C when n == 1; phase a -> a after C;" + msgs, file: "t.dissector"))
    }
}
