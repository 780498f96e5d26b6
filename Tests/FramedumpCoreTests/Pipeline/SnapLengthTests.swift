import XCTest
@testable import FramedumpCore

/// A capture taken with a small snap length (`tcpdump -s 90`): every frame whose header was
/// captured is shown as far as it was (header and the fields that fit), marked cut; the next
/// frame is found where the cut one's header says it ends.
final class SnapLengthTests: XCTestCase {
    /// samples/game.pcap as `-s SNAP` would have captured it, written through libpcap.
    func cut(to snap: Int) throws -> String {
        let path = TestSupport.tempDir() + "/s\(snap).pcap"
        let source = try PacketSource(.file(TestSupport.sample("game.pcap")))
        let dumper = try source.openDumper(path)
        try source.forEach { p in
            var q = p
            q.data = UnsafeRawBufferPointer(rebasing: p.data.prefix(snap))
            dumper.write(q)
            return true
        }
        dumper.flush()
        return path
    }

    func testFramesCutByTheSnapLengthAreShownAsFarAsCaptured() throws {
        let whole = try TestSupport.framedump(["-r", "samples/game.pcap", "-T", "json"])
        let wholeMessages = whole.stdout.split(separator: "\n").filter { $0.contains("\"message\":\"") }
        let path = try cut(to: 90)
        let r = try TestSupport.framedump(["-r", path, "-T", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let messages = r.stdout.split(separator: "\n").filter { $0.contains("\"message\":\"") }
        // 90 bytes hold the link, IP and TCP headers (66) and 24 of payload: every frame's
        // 6-byte header: every message is there, in order, the long ones cut.
        func names(_ l: [Substring]) -> [String] {
            l.map { String($0[$0.range(of: "\"message\":\"")!.upperBound...].prefix { $0 != "\"" }) }
        }
        // (A frame that lies wholly past the snap length, behind another in its packet, is
        // in the gap: the messages are the original's, in order, less those.)
        var rest = names(wholeMessages)[...]
        for n in names(messages) {
            guard let i = rest.firstIndex(of: n) else { return XCTFail("\(n) out of order or invented:\n\(r.stdout)") }
            rest = rest[(i + 1)...]
        }
        XCTAssertGreaterThanOrEqual(messages.count, 25, r.stdout)
        let cut = messages.filter { $0.contains("\"captured\":") }
        XCTAssertFalse(cut.isEmpty)
        for m in cut {
            XCTAssertTrue(m.contains("frame cut: "), String(m))
            XCTAssertFalse(m.contains("body ends inside"), String(m))
        }
        // The tree: the frame's length, how much was captured, and the fields that fit.
        let tree = try TestSupport.framedump(["-r", path])
        XCTAssertTrue(tree.stdout.contains("SC_20001 (id 20001), 34 bytes [cut: 24 captured]"), tree.stdout)
        XCTAssertTrue(tree.stdout.contains("    [7+4]     SceneId: 1\n"), tree.stdout)
        XCTAssertFalse(tree.stdout.contains("resynchronising"), tree.stdout)
        // check -r reports the gaps, not each cut message again.
        let check = try TestSupport.framedump(["check", "-r", path])
        XCTAssertFalse(check.stdout.contains("body-short"), check.stdout)
        XCTAssertTrue(check.stdout.contains("gap "), check.stdout)
    }
}
