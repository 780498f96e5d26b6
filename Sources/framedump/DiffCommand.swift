import ArgumentParser
import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--ignore PATH` values, checked.
func ignorePatterns(_ texts: [String]) throws -> [IgnorePattern] {
    try texts.map { t in
        guard let p = IgnorePattern(t) else {
            throw ValidationError("--ignore \(t): not a field path (names joined by dots, * for any name: Cs_10002.ClientTime, game.*.Timestamp).")
        }
        return p
    }
}

/// `framedump diff A B`: the protocol differences between two runs of one scenario.
struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare two captures (or NDJSON exports) message by message; exit 0 when equal, 1 when different, 2 on error.")

    @Argument(help: ArgumentHelp("The old capture (pcap/pcapng) or NDJSON export; a folder or a quoted glob names a set of captures, merged in time order as -r merges them.", valueName: "old"))
    var old: String?

    @Argument(help: ArgumentHelp("The new capture (pcap/pcapng) or NDJSON export; a folder or a quoted glob as for old.", valueName: "new"))
    var new: String?

    @Option(name: .customLong("old"), help: ArgumentHelp("In place of the positional arguments: a file, folder or glob of the old side (repeatable: the files are merged).", valueName: "file"))
    var oldFiles: [String] = []

    @Option(name: .customLong("new"), help: ArgumentHelp("In place of the positional arguments: a file, folder or glob of the new side (repeatable: the files are merged).", valueName: "file"))
    var newFiles: [String] = []

    @Option(name: .long, help: ArgumentHelp("Leave out this field (repeatable; ClientTime, Cs_10002.ClientTime, game.*.Timestamp).", valueName: "path"))
    var ignore: [String] = []

    @Flag(name: .long, help: "One JSON object per difference instead of the report.")
    var json = false

    @Option(name: .long, help: "Colour: auto (when stdout is a terminal), always or never.")
    var color: ColorChoice = .auto

    @OptionGroup
    var dissectorOptions: DissectorOptions

    @OptionGroup
    var tls: TLSOptions

    @Flag(name: .long, help: "Run even with no dissector loaded (only connections and byte counts are compared).")
    var allowUndecoded = false

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    /// Each side's arguments: the two positionals, or the --old and --new lists.
    func sides() throws -> (old: [String], new: [String]) {
        if oldFiles.isEmpty && newFiles.isEmpty {
            guard let old, let new else { throw ValidationError("Give the two sides: framedump diff OLD NEW (each a capture, an NDJSON export, a folder or a quoted glob), or --old FILE... --new FILE....") }
            return ([old], [new])
        }
        if old != nil || new != nil {
            throw ValidationError("Give the sides either as the two arguments OLD NEW or with --old and --new, not both (a lone argument after --old is not taken as the new side: write --new).")
        }
        if oldFiles.isEmpty || newFiles.isEmpty { throw ValidationError("--old and --new each name at least one input.") }
        return (oldFiles, newFiles)
    }

    func validate() throws {
        _ = try sides()
        _ = try ignorePatterns(ignore)
    }

    func run() throws {
        let (oldArgs, newArgs) = try sides()
        let a: DiffInput, b: DiffInput
        do {
            a = try DiffInput.at(CaptureFiles.expand(oldArgs))
            b = try DiffInput.at(CaptureFiles.expand(newArgs))
        } catch {
            FileHandleErr.write("framedump diff: \(error)\n")
            throw ExitCode(2)
        }
        // NDJSON exports were decoded when they were made; captures need dissectors now.
        if case .captures = a {
            try NoDissectors.refuse("diff", explicit: dissectorOptions.paths, allowUndecoded: allowUndecoded)
        } else if case .captures = b {
            try NoDissectors.refuse("diff", explicit: dissectorOptions.paths, allowUndecoded: allowUndecoded)
        }
        var options = PipelineOptions()
        try dissectorOptions.apply(to: &options)
        options.limits = limits.limits
        options.tlsKeyLogs = tls.keyLogs
        let differ = CaptureDiff(options: options, ignore: try ignorePatterns(ignore))
        let result: DiffResult
        do {
            result = try differ.run(a, b)
        } catch let e as DissectorError {
            FileHandleErr.write("\(e.description)\n")
            throw ExitCode(2)
        } catch let e as DecodeAsError {
            FileHandleErr.write("framedump diff: \(e.description)\n")
            throw ExitCode(2)
        } catch {
            FileHandleErr.write("framedump diff: \(error)\n")
            throw ExitCode(2)
        }
        for cut in differ.cutInputs {
            FileHandleErr.write("framedump diff: \(cut): compared up to its last whole record\n")
        }
        let out = OutputBuffer(fd: 1)
        if json {
            out.write(DiffReport.json(result))
            out.flush()
            FileHandleErr.write(DiffReport.summaryLine(result) + "\n")
        } else {
            let paint = color == .always || (color == .auto && isatty(1) != 0)
            out.write(DiffReport.text(result, old: oldArgs.joined(separator: " "), new: newArgs.joined(separator: " "), color: paint))
            out.flush()
        }
        // A pattern that matched nothing anywhere is most likely misspelt: the report above was
        // made without it, which the user did not ask for.
        let unmatched = differ.unmatchedIgnores
        if !unmatched.isEmpty {
            for u in unmatched {
                FileHandleErr.write("framedump diff: --ignore \(u) matched no field in either input (misspelt? paths are protocol.message.field, * for any name)\n")
            }
            throw ExitCode(2)
        }
        if !result.differences.isEmpty { throw ExitCode(1) }
        // Equal as far as it goes: a cut input still exits as a run on it does (5).
        if !differ.cutInputs.isEmpty { throw ExitCode(5) }
    }
}
