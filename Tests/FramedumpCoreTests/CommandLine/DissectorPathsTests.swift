import Foundation
import XCTest
@testable import FramedumpCore

/// Where a run finds its dissectors without `-d`: the same folder named twice is one folder,
/// and an installed binary finds the examples installed beside it.
final class DissectorPathsTests: XCTestCase {
    /// `FRAMEDUMP_DISSECTORS` naming `./Dissectors` by its full path, run from the project: the
    /// folder is loaded once (it once refused to start, every protocol "also defined").
    func testTheSameFolderTwiceIsLoadedOnce() throws {
        let alone = try TestSupport.framedump(["-r", "samples/game.pcap", "-q"])
        let full = TestSupport.root.appendingPathComponent("Dissectors").path
        let twice = try TestSupport.run(TestSupport.binary, ["-r", "samples/game.pcap", "-q"], cwd: TestSupport.root.path,
                                        environment: ["FRAMEDUMP_DISSECTORS": full + ":" + "./Dissectors/"])
        XCTAssertEqual(twice.status, 0, twice.stderr)
        XCTAssertEqual(twice.stdout, alone.stdout)
        XCTAssertTrue(twice.stdout.contains("game: 3 connections, 39 messages"), twice.stdout)
    }

    /// A binary at PREFIX/bin with the examples at PREFIX/share/framedump/Dissectors decodes a
    /// capture from any folder with no option (as the .deb and scripts/install.sh lay it out).
    func testAnInstalledBinaryFindsTheInstalledExamples() throws {
        let prefix = TestSupport.tempDir()
        let fm = FileManager.default
        try fm.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: prefix + "/share/framedump", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: prefix + "/elsewhere", withIntermediateDirectories: true)
        try fm.copyItem(atPath: TestSupport.binary, toPath: prefix + "/bin/framedump")
        try fm.copyItem(atPath: TestSupport.dissectors, toPath: prefix + "/share/framedump/Dissectors")
        let r = try TestSupport.run(prefix + "/bin/framedump", ["-r", TestSupport.sample("game.pcap"), "-q"],
                                    cwd: prefix + "/elsewhere", environment: ["FRAMEDUMP_DISSECTORS": ""])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("game: 3 connections, 39 messages"), r.stdout)
        // Without the examples it says where it looked, the installed folder's place included.
        try fm.removeItem(atPath: prefix + "/share/framedump/Dissectors")
        let none = try TestSupport.run(prefix + "/bin/framedump", ["-r", TestSupport.sample("game.pcap"), "-q"],
                                       cwd: prefix + "/elsewhere", environment: ["FRAMEDUMP_DISSECTORS": ""])
        XCTAssertTrue(none.stderr.contains("no dissector loaded"), none.stderr)
    }
}
