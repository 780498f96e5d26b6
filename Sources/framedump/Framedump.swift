import ArgumentParser
import FramedumpCore
#if canImport(Glibc)
import Glibc
#endif

@main
struct Framedump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "framedump",
        abstract: "A tcpdump for custom binary protocols: capture, reassemble, deframe and decode.",
        version: "framedump 0.4 (WebSocket, protobuf, filters)",
        subcommands: [Dump.self, Dissectors.self, Check.self, Diff.self],
        defaultSubcommand: Dump.self
    )

    /// As the README says: usage errors exit with 2 (swift-argument-parser's own is 64).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                FileHandleErr.write(fullMessage(for: error) + "\n")
                Glibc.exit(2)
            }
            Framedump.exit(withError: error)
        }
    }
}
