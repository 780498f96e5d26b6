import ArgumentParser
import FramedumpCore

struct Dissectors: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the dissectors loaded (protocols, ports, messages).")
    @Option(name: .customShort("d"), help: "Dissector file or folder (repeatable).")
    var paths: [String] = []
    func run() throws {}
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check dissector files and report errors as file:line:column.")
    @Argument(help: "Dissector files or folders.")
    var paths: [String] = []
    func run() throws {}
}
