import ArgumentParser
import FramedumpCore

/// `diff` and `check -r` answer about decoded messages: with no dissector there are none, and
/// "no differences" or "no problems" would be an empty success. They refuse, unless asked.
enum NoDissectors {
    /// Throws exit 2 with a sentence when `paths` (or the default places) hold no dissector file.
    static func refuse(_ command: String, explicit: [String], allowUndecoded: Bool,
                       why: String = "nothing would be decoded, so nothing could differ or fail; give -d PATH, or --allow-undecoded to compare connections and bytes only") throws {
        guard !allowUndecoded,
              DissectorLoader.files(in: DissectorLoader.defaultPaths(explicit: explicit)).isEmpty else { return }
        FileHandleErr.write("framedump \(command): no dissector loaded (\(DissectorLoader.searchDescription(explicit: explicit))): \(why)\n")
        throw ExitCode(2)
    }
}
