import ArgumentParser
import FramedumpCore

/// `framedump dissectors`: what was loaded, as a user would want to check it.
struct Dissectors: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the dissectors loaded (protocols, ports, framing, messages).")

    @Option(name: .customShort("d"), help: ArgumentHelp("Dissector file or folder (repeatable); default ./Dissectors and $FRAMEDUMP_DISSECTORS.", valueName: "path"))
    var paths: [String] = []

    @Option(name: .long, help: ArgumentHelp("Also look for .proto files in this folder (repeatable).", valueName: "dir"))
    var protoPath: [String] = []

    @OptionGroup(title: "Limits")
    var limits: LoadLimitOptions

    func run() throws {
        let schemas: [ProtocolSchema]
        do {
            schemas = try DissectorLoader.load(paths: DissectorLoader.defaultPaths(explicit: paths),
                                               options: limits.apply(LoadOptions(protoPaths: protoPath)))
        } catch let e as DissectorError {
            FileHandleErr.write("\(e.description)\n")
            throw ExitCode(2)
        }
        if schemas.isEmpty { print("no dissectors found (give -d PATH, or run where ./Dissectors exists)") }
        for s in schemas { print(DissectorDescription.text(s)) }
    }
}

/// `framedump check FILE...`: parse dissector files and report the first error in each.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check dissector files; errors are reported as file:line:column (exit 2).")

    @Argument(help: "Dissector files or folders.")
    var paths: [String] = []

    @Option(name: .long, help: ArgumentHelp("Also look for .proto files in this folder (repeatable).", valueName: "dir"))
    var protoPath: [String] = []

    @OptionGroup(title: "Limits")
    var limits: LoadLimitOptions

    func run() throws {
        var failed = false
        for p in paths.isEmpty ? DissectorLoader.defaultPaths(explicit: []) : paths {
            do {
                let s = try DissectorLoader.load(paths: [p], options: limits.apply(LoadOptions(protoPaths: protoPath)))
                print("\(p): ok (" + s.map { "\($0.name): \($0.messages.count) messages" }.joined(separator: ", ") + ")")
            } catch let e as DissectorError {
                FileHandleErr.write("\(e.description)\n")
                failed = true
            }
        }
        if failed { throw ExitCode(2) }
    }
}
