import ArgumentParser
import Foundation
import FramedumpCore

/// `framedump dissectors`: what was loaded, as a user would want to check it.
struct Dissectors: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the dissectors loaded (protocols, ports, framing, messages).")

    @OptionGroup
    var dissectorOptions: DissectorOptions

    @OptionGroup(title: "Limits")
    var limits: LoadLimitOptions

    func run() throws {
        let load = limits.apply(try dissectorOptions.load())
        let rules = try dissectorOptions.decodeAsRules()
        let loaded: [ProtocolSchema]
        do {
            loaded = try DissectorLoader.load(paths: DissectorLoader.defaultPaths(explicit: dissectorOptions.paths), options: load)
        } catch {
            FileHandleErr.write("\(error.description)\n")
            throw ExitCode(2)
        }
        let schemas: [ProtocolSchema]
        do {
            schemas = rules.isEmpty ? loaded : try DecodeAs.apply(rules, to: loaded)
        } catch {
            FileHandleErr.write("framedump dissectors: \(error.description)\n")
            throw ExitCode(2)
        }
        if schemas.isEmpty { print("no dissectors found (give -d PATH, or run where ./Dissectors exists)") }
        for s in schemas { print(DissectorDescription.text(s)) }
    }
}

/// `framedump check FILE...`: parse dissector files and report every error in each.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check dissector files (errors as file:line:column, exit 2), or with -r a capture against them (exit 1 on a problem).")

    @Argument(help: "Dissector files or folders (default ./Dissectors and $FRAMEDUMP_DISSECTORS).")
    var paths: [String] = []

    @Option(name: .customShort("r"), help: ArgumentHelp("Validate this capture against the dissectors (default ./Dissectors and $FRAMEDUMP_DISSECTORS); repeatable, a folder or a quoted glob too: the files are merged in time order, as dump's -r.", valueName: "file"))
    var capture: [String] = []

    @Option(name: .long, help: ArgumentHelp("With -r: tolerate this problem class (repeatable).", valueName: "class"))
    var allow: [String] = []

    @Flag(name: .long, help: "With -r: report connections no dissector claimed.")
    var unclaimed = false

    @OptionGroup
    var dissectorOptions: DissectorOptions

    @OptionGroup
    var tls: TLSOptions

    @Flag(name: .long, help: "With -r: run even with no dissector loaded (every connection is then unclaimed).")
    var allowUndecoded = false

    func validate() throws {
        _ = try CheckCapture.classes(allow)
        if capture.isEmpty {
            // What only a capture run uses would be taken and ignored: said instead.
            let runOnly = [("--allow", !allow.isEmpty), ("--unclaimed", unclaimed), ("--decode-as", !dissectorOptions.decodeAs.isEmpty),
                           ("--tls-keylog", !tls.tlsKeylog.isEmpty), ("--allow-undecoded", allowUndecoded)]
            if let (name, _) = runOnly.first(where: { $0.1 }) {
                throw ValidationError("\(name) applies to a capture: add -r CAPTURE (without -r, check reads dissector files only).")
            }
            if let name = limits.runOnlyGiven {
                throw ValidationError("\(name) bounds a capture run: add -r CAPTURE (without -r, check reads dissector files only).")
            }
        }
    }

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    func run() throws {
        if !capture.isEmpty {
            let dissectors = paths + dissectorOptions.paths
            try NoDissectors.refuse("check -r", explicit: dissectors, allowUndecoded: allowUndecoded)
            var options = PipelineOptions()
            try dissectorOptions.apply(to: &options)
            options.dissectorPaths = dissectors
            options.limits = limits.limits
            options.tlsKeyLogs = tls.keyLogs
            return try CheckCapture.run(captures: capture, options: options, allow: allow, unclaimed: unclaimed)
        }
        let named = paths + dissectorOptions.paths
        let targets = named.isEmpty ? DissectorLoader.defaultPaths(explicit: []) : named
        guard !targets.isEmpty else {
            FileHandleErr.write("framedump check: nothing to check: give dissector files or folders (there is no ./Dissectors here and FRAMEDUMP_DISSECTORS is not set)\n")
            throw ExitCode(2)
        }
        let keys = try dissectorOptions.keys()
        var failed = false
        var loaded: [ProtocolSchema] = []
        var fine: [(path: String, schemas: [ProtocolSchema])] = []
        for p in targets {
            if DissectorLoader.files(in: [p]).isEmpty {
                FileHandleErr.write("\(p): error: no .dissector files in this folder\n")
                failed = true
                continue
            }
            do {
                var o = LoadOptions(protoPaths: dissectorOptions.protoPath, keys: keys)
                o.keysGivenLater = true
                let s = try DissectorLoader.load(paths: [p], options: limits.apply(o))
                // Nothing to decode with (only comments, or messages without a protocol): a run
                // with it warns that no dissector is loaded, so this is no "ok".
                guard !s.isEmpty else {
                    FileHandleErr.write("\(p):1:1: error: no protocol defined: nothing would be decoded with this (a file needs a `protocol NAME { ... }` block)\n")
                    failed = true
                    continue
                }
                loaded += s
                fine.append((p, s))
            } catch {
                FileHandleErr.write("\(error.description)\n")
                failed = true
            }
        }
        // Files that are fine alone may still clash together (a protocol name, a port).
        let clashes = targets.count > 1 ? DissectorLoader.conflicts(loaded) : []
        // "ok" only for what is fine together with the rest: a file in a clash is not.
        for (p, s) in fine where !s.contains(where: { sc in clashes.contains { $0.file == sc.file || $0.message.contains(sc.file) } }) {
            print("\(p): ok (" + s.map { "\($0.name): \($0.messages.count) messages" }.joined(separator: ", ") + ")")
        }
        if let e = DissectorError.combined(clashes) {
            FileHandleErr.write("\(e.description)\n")
            failed = true
        }
        if failed { throw ExitCode(2) }
    }
}
