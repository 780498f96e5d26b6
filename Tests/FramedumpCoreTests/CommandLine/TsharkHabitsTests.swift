import XCTest
@testable import FramedumpCore

/// tcpdump's -A and tshark's -V and -O, as their users type them: each changes the output as
/// it says, or is refused.
final class TsharkHabitsTests: XCTestCase {
    func lines(_ args: [String]) throws -> [Substring] {
        let r = try TestSupport.framedump(["-r", "samples/game.pcap"] + args)
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.split(separator: "\n")
    }

    func testAsciiDump() throws {
        let plain = try lines(["-c", "4"]), ascii = try lines(["-c", "4", "-A"])
        // Cs_20001's 25 bytes: the length, the id 0x4e21 ("N!"), binary fields, then the text.
        XCTAssertEqual(ascii.filter { !plain.contains($0) }, ["    ....N!.......hello from 1"])
    }

    func testDetailsAndDetailsOfSomeProtocols() throws {
        let plain = try lines([]), v = try lines(["-V"])
        XCTAssertEqual(plain.count, v.count)
        XCTAssertTrue(v.contains { $0.contains("SceneId: 1  // enter the scenario ID") })
        XCTAssertFalse(plain.contains { $0.contains("//") })
        // -O of another protocol: every game message is its line alone.
        let other = try lines(["-O", "svc"])
        XCTAssertEqual(other, plain.filter { !$0.hasPrefix(" ") })
        XCTAssertEqual(try lines(["-O", "svc,game"]), plain)
        let wrong = try TestSupport.framedump(["-r", "samples/game.pcap", "-O", "gam"])
        XCTAssertEqual(wrong.status, 2)
        XCTAssertTrue(wrong.stderr.contains("-O: no loaded dissector is named 'gam'") && wrong.stderr.contains("did you mean game"), wrong.stderr)
        for bad in [["-A", "-T", "json"], ["-V", "--diffable"], ["-O", "game", "-T", "fields", "-e", "msg.name"], ["-O", ","]] {
            XCTAssertEqual(try TestSupport.framedump(["-r", "samples/game.pcap"] + bad).status, 2, "\(bad)")
        }
    }
}
