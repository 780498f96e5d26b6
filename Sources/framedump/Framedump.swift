import ArgumentParser
import FramedumpCore

@main
struct Framedump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "framedump",
        abstract: "A tcpdump for custom binary protocols: capture, reassemble, deframe and decode.",
        subcommands: [Dump.self, Dissectors.self, Check.self],
        defaultSubcommand: Dump.self
    )
}
