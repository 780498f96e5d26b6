import ArgumentParser
import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct Framedump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "framedump",
        abstract: "A tcpdump for custom binary protocols: capture, reassemble, deframe and decode.",
        version: "framedump \(FramedumpVersion.number)",
        subcommands: [Dump.self, Dissectors.self, Check.self, Diff.self, Guess.self, UI.self],
        defaultSubcommand: Dump.self
    )

    /// As docs/command-line.md says: usage errors exit with 2 (swift-argument-parser's own is 64).
    static func main() {
        // `framedump --help` shows the dump options first, as tcpdump's does.
        if ["--help", "-h", "help"].contains(CommandLine.arguments.dropFirst().first ?? ""), CommandLine.arguments.count == 2 {
            print(topLevelHelp())
            return
        }
        // Bash completion as the parser writes it completes only subcommands at the top level;
        // dump is the default subcommand, so its options complete there too.
        if Array(CommandLine.arguments.dropFirst()) == ["--generate-completion-script", "bash"] {
            print(BashCompletion.withDefaultSubcommand(completionScript(for: .bash)), terminator: "")
            return
        }
        if let misplaced = subcommandAfterOptions(Array(CommandLine.arguments.dropFirst())) {
            FileHandleErr.write("framedump: '\(misplaced)' is a subcommand: it comes first, before its options (framedump \(misplaced) …)\n")
            Platform.exit(2)
        }
        do {
            // The raw argv: file names that are not UTF-8 reach the system byte for byte.
            var command = try parseAsRoot(RawPath.arguments)
            try command.run()
        } catch {
            let code = exitCode(for: error)
            // dump is the default: a line that did not say `dump` hears of no `dump` either.
            let saidDump = CommandLine.arguments.dropFirst().first == "dump"
            let named = subcommandNames.contains(CommandLine.arguments.dropFirst().first ?? "") || CommandLine.arguments.dropFirst().first == "help"
            let asksHelp = CommandLine.arguments.contains("-h") || CommandLine.arguments.contains("--help")
            if code == .success && !saidDump && !named && asksHelp {
                print(topLevelHelp())
                return
            }
            // Every command's limits, rarely changed, come after its other options.
            if code == .success && asksHelp, let first = CommandLine.arguments.dropFirst().first,
               let sub = configuration.subcommands.first(where: { $0._commandName == first }) {
                print(limitsLast(helpMessage(for: sub)))
                return
            }
            if code == .validationFailure {
                let text = fullMessage(for: error)
                FileHandleErr.write((saidDump ? text : text.replacingOccurrences(of: "framedump dump ", with: "framedump ")) + "\n")
                Platform.exit(2)
            }
            Framedump.exit(withError: error)
        }
    }

    /// The subcommands other than the default one, as the configuration lists them.
    static let subcommandNames = Set(configuration.subcommands.map { $0._commandName }).subtracting(["dump"])

    /// A subcommand named after options (`framedump -d X check -r F`): the default command
    /// would take it for a filter expression or a stray word. Nil when the line is fine; a word
    /// that is an option's value (`-r check`) is not one.
    static func subcommandAfterOptions(_ args: [String]) -> String? {
        guard let first = args.first, first.hasPrefix("-") else { return nil }
        // A subcommand's name is a bare lowercase word: most lines have none after the first
        // argument, and then the names (the parser's reflection) are not worked out.
        guard args.dropFirst().contains(where: { $0.first.map { ("a"..."z").contains($0) } ?? false && $0.allSatisfy { ("a"..."z").contains($0) || $0 == "-" } }) else { return nil }
        let names = subcommandNames.union(["dump"])
        let takesValue: Set<String> = ["-r", "-w", "-i", "-c", "-C", "-G", "-W", "--old", "--new", "-s", "-B", "-Z", "-T", "-d", "-Y", "-z", "--filter", "--ignore",
                                       "--color", "--streams", "--proto-path", "--key", "--decode-as", "--idle-timeout", "--tls-keylog",
                                       "-e", "-E", "-O", "-j", "--allow", "--diff", "--listen", "--port", "--keep"]
        for (i, a) in args.enumerated() where i > 0 && names.contains(a) {
            if !takesValue.contains(args[i - 1]) && !args[i - 1].hasPrefix("--max") { return a }
        }
        return nil
    }

    /// Capture and output options first, as tcpdump's; the limits, rarely changed, last.
    static func limitsLast(_ help: String) -> String {
        let sections = help.components(separatedBy: "\n\n")
        let ordered = sections.filter { !$0.hasPrefix("LIMITS:") } + sections.filter { $0.hasPrefix("LIMITS:") }
        return ordered.map { $0.trimmingSuffixNewlines }.joined(separator: "\n\n")
    }

    /// The dump command's arguments and options under the root's overview, then the subcommands.
    static func topLevelHelp() -> String {
        let dump = helpMessage(for: Dump.self)
        let root = helpMessage()
        let dumpOptions = dump.range(of: "ARGUMENTS:").map { String(dump[$0.lowerBound...]) } ?? dump
        let subcommands = root.range(of: "SUBCOMMANDS:").map { String(root[$0.lowerBound...]) } ?? ""
        let overview = root.range(of: "USAGE:").map { String(root[..<$0.lowerBound]) } ?? ""
        let options = limitsLast(dumpOptions)
        return overview + """
            USAGE: framedump -r <file> [<options>] [<filter> ...]
                   framedump -i <iface> [<options>] [<filter> ...]
                   framedump -D
                   framedump <subcommand> [<options>]


            """ + options.trimmingSuffixNewlines + "\n\n" + subcommands.trimmingSuffixNewlines
    }
}

extension String {
    var trimmingSuffixNewlines: String {
        var s = Substring(self)
        while s.last == "\n" { s.removeLast() }
        return String(s)
    }
}
