import ArgumentParser
import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case tree, json, fields
}

enum ColorChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never
}

/// The default command: read packets (file or live) and print what they carry.
struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Capture or read packets and print decoded messages (the default command).")

    @Option(name: .customShort("r"), help: ArgumentHelp("Read packets from a pcap/pcapng file ('-' for stdin). Repeatable; a folder (its .pcap, .pcapng, .cap files) or a quoted glob ('caps/*.pcap') too: the files are merged in time order into one run, as mergecap merges them.", valueName: "file"))
    var readFiles: [String] = []

    @Flag(name: .long, help: "With several -r files: one run per file, each under a header line (NDJSON: a {\"type\":\"file\"} line), instead of one merged run.")
    var each = false

    @Option(name: .customShort("i"), help: ArgumentHelp("Capture live on an interface.", valueName: "iface"))
    var interface: String?

    @Flag(name: .customShort("D"), help: "List the interfaces available for capture and exit.")
    var listInterfaces = false

    @Option(name: .customShort("w"), help: ArgumentHelp("Write the packets that pass the filter to a pcap file (and print no message, as tcpdump; see --print).", valueName: "file"))
    var writeFile: String?

    @Flag(name: .customLong("print"), help: "With -w: print the messages too (to stderr with -w -), as tcpdump's --print.")
    var printToo = false

    @Option(name: .customShort("C"), help: ArgumentHelp("-w: start a new file when the current one is larger than this many millions of bytes (as tcpdump; a k, m or g suffix: KiB, MiB, GiB); files file, file1, file2...", valueName: "size"))
    var fileSize: String?

    @Option(name: .customShort("G"), help: ArgumentHelp("-w: start a new file every this many seconds of packet time; the -w name goes through strftime (-w 'cap-%H%M%S.pcap'), as tcpdump's.", valueName: "seconds"))
    var rotateSeconds: Int64?

    @Option(name: .customShort("W"), help: ArgumentHelp("With -C: a ring of this many files (the oldest overwritten, numbers zero-padded); with -G alone: stop after this many files.", valueName: "count"))
    var fileCount: Int?

    @Option(name: .customShort("c"), help: ArgumentHelp("Stop after this many packets.", valueName: "count"))
    var count: UInt64?

    @Option(name: .customShort("s"), help: ArgumentHelp("Live capture: bytes to keep of each packet (default 262144).", valueName: "snaplen"))
    var snaplen: Int32?

    @Option(name: .customShort("B"), help: ArgumentHelp("Live capture: kernel buffer size in KiB (default 32768; tcpdump's is 2048).", valueName: "kib"))
    var bufferKiB: Int32?

    @Flag(name: .customShort("p"), help: "Live capture: do not put the interface in promiscuous mode.")
    var noPromiscuous = false

    @Flag(name: .customShort("l"), help: "Line-buffered output (and immediate mode for live capture).")
    var lineBuffered = false

    @Option(name: .customShort("Z"), help: ArgumentHelp("After opening a live interface, run as this user (default 'nobody' when root).", valueName: "user"))
    var user: String?

    @Flag(name: .customShort("n"), help: "Accepted for tcpdump habits: addresses and ports are never resolved.")
    var numeric: Int

    @Flag(name: .customShort("t"), help: "Times as tcpdump's: -t none, -tt seconds since the epoch (the default), -ttt since the line before, -tttt date and local time, -ttttt since the first line (the tree; NDJSON's ts is always the epoch's).")
    var timestampStyle: Int

    @Flag(name: .customShort("x"), help: "Add a hex dump of each frame (or segment payload).")
    var hex = false

    @Flag(name: .customShort("A"), help: "Add each frame's bytes as ASCII text, as tcpdump's -A (non-printable bytes as dots).")
    var ascii = false

    @Flag(name: .customShort("V"), help: "As tshark's -V: the tree with each field's description from the dissector (as -v, without -v's longer summary).")
    var details = false

    @Option(name: .customShort("O"), help: ArgumentHelp("As tshark's -O: the fields of these protocols' messages only (comma-separated); others one line each.", valueName: "protocols"))
    var detailsOf: String?

    @Flag(name: .customShort("v"), help: "Verbose: field descriptions from the schema, more detail in the summary.")
    var verbose: Int

    @Flag(name: .customShort("q"), help: "Print only the summary.")
    var quiet = false

    @Option(name: .customShort("T"), help: ArgumentHelp("Output format: tree, json (NDJSON) or fields (the -e fields of each message on a line, as tshark's).", valueName: "format"))
    var format: OutputFormat = .tree

    @Option(name: .customShort("e"), help: ArgumentHelp("-T fields: a field to print, by its -Y name (game.Level, msg.name, ip.src; msg.time, frame.number), repeatable, in order.", valueName: "field"))
    var fieldNames: [String] = []

    @Option(name: .customShort("E"), help: ArgumentHelp("-T fields, as tshark's: header=y|n, separator=/t|/s|C, aggregator=/s|C, quote=d|s|n, occurrence=f|l|a (repeatable).", valueName: "key=value"))
    var fieldSettings: [String] = []

    @Flag(name: .long, help: "Same as -T json.")
    var json = false

    @Flag(name: .long, help: "JSON: leave out what changes between two runs (timestamps, ephemeral ports, packet numbers); connections by stable keys, their lines grouped.")
    var diffable = false

    @Option(name: .long, help: ArgumentHelp("--diffable: leave out this field (repeatable; Cs_10002.ClientTime, game.*.Timestamp; see docs/diff-and-check.md).", valueName: "path"))
    var ignore: [String] = []

    @Option(name: .long, help: "Colour: auto (when stdout is a terminal), always or never.")
    var color: ColorChoice = .auto

    @Flag(name: .long, help: "Print one line per TCP segment, like tcpdump -nn -tt -S, instead of messages.")
    var segments = false

    @Option(name: .long, help: ArgumentHelp("Write each connection's reassembled byte streams into this folder.", valueName: "dir"))
    var streams: String?

    @Flag(name: .long, help: "Print the reassembled streams as a hex+ASCII dump with gap markers.")
    var follow = false

    @OptionGroup
    var dissectorOptions: DissectorOptions

    @Flag(name: .long, help: "Protobuf: also show fields that are not on the wire, at their default value.")
    var protoDefaults = false

    @OptionGroup
    var tls: TLSOptions

    @Option(name: .long, help: ArgumentHelp("Reassembly: seconds without packets before a connection is closed.", valueName: "seconds"))
    var idleTimeout: Int = 300

    @Option(name: [.customShort("Y"), .customLong("filter")], help: ArgumentHelp("Show only the messages this display filter selects (Wireshark's syntax: game.Res == 1 and msg.dir == \"s2c\").", valueName: "filter"))
    var displayFilter: String?

    @Option(name: .customShort("z"), help: ArgumentHelp("Statistics at the end (repeatable): msgs (per protocol, message and direction), conv (per connection), rtt (request/response latency, where a dissector says pair_by), kcp (per KCP conversation: retransmission rate, lost segments, round trips), grpc (per gRPC method: calls, statuses, messages, durations), rate[,SECONDS] (messages per interval; SECONDS from 0.001 to 86400, default 1: rate,0.02 for 20 ms ticks).", valueName: "stat"))
    var stats: [String] = []

    @Flag(name: .long, help: "No progress line on stderr while a file is read (it is shown only when stderr is a terminal).")
    var noProgress = false

    @Option(name: .customShort("j"), help: ArgumentHelp("Threads that decode and print, beside the one that reads and reassembles (default: one per core; 1: everything on one thread). Connections are shared out among them; the output is the same as on one thread. Live captures always use one.", valueName: "n"))
    var jobs: Int?

    @Flag(name: .long, help: "The same as -j 1.")
    var oneThread = false

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    @Argument(help: ArgumentHelp("A BPF filter expression, compiled by libpcap.", valueName: "filter"))
    var filter: [String] = []

    func validate() throws {
        if listInterfaces { return }
        // Reading files they would change nothing: accepted, they would be ignored.
        if interface == nil && (snaplen != nil || bufferKiB != nil || noPromiscuous || user != nil) {
            throw ValidationError("-s, -B, -p and -Z are for a live capture (-i INTERFACE): a file is read as it was captured.")
        }
        if (ascii || details || detailsOf != nil) && (format != .tree || json || diffable) {
            throw ValidationError("-A, -V and -O shape the tree: they do not go with -T json, -T fields or --diffable.")
        }
        if let o = detailsOf, o.split(separator: ",").isEmpty { throw ValidationError("-O takes protocol names, comma-separated (-O game,im).") }
        if format == .fields {
            if fieldNames.isEmpty { throw ValidationError("-T fields prints the fields named with -e: give -e FIELD (as -Y names them: -e msg.name -e game.Level).") }
            if json || diffable { throw ValidationError("-T fields is one output and --json/--diffable another: choose one.") }
        } else if !fieldNames.isEmpty || !fieldSettings.isEmpty {
            throw ValidationError("-e and -E shape the lines of -T fields: add -T fields.")
        }
        _ = try fieldsOptions()
        if !readFiles.isEmpty && interface != nil {
            throw ValidationError("Give either -r FILE or -i INTERFACE, not both.")
        }
        if each && readFiles.isEmpty { throw ValidationError("--each runs once per -r file: give -r.") }
        if each && writeFile != nil { throw ValidationError("--each with -w: the runs would write one file in turn; merge the inputs (leave out --each) or run once per file.") }
        if each && streams != nil { throw ValidationError("--each with --streams: each run would write the same folder; run once per file with its own --streams folder.") }
        _ = try rotation()
        if idleTimeout < 1 { throw ValidationError("--idle-timeout must be at least 1.") }
        if count == 0 { throw ValidationError("-c must be at least 1.") }
        if let j = jobs, j < 1 || j > 64 { throw ValidationError("-j must be from 1 to 64.") }
        if (json || format == .json || diffable) && ![0, 2].contains(timestampStyle) {
            throw ValidationError("-t, -ttt, -tttt and -ttttt set the tree's times; NDJSON's ts is always seconds since the epoch (leave them out, or leave out -T json).")
        }
        if timestampStyle > 5 { throw ValidationError("-t can be given at most five times (-ttttt: the time since the first line).") }
        if hex && (json || format == .json || diffable) {
            throw ValidationError("-x adds a hex dump to the tree output; NDJSON has no place for it (leave out -x or -T json).")
        }
        for z in stats where StatisticsKind(argument: z) == nil {
            throw ValidationError("-z \(z): not a statistic (msgs, conv, rtt, kcp, grpc, rate or rate,SECONDS with SECONDS from 0.001 to 86400).")
        }
        _ = try ignorePatterns(ignore)
        if !ignore.isEmpty && !diffable { throw ValidationError("--ignore leaves fields out of --diffable output: add --diffable.") }
        if displayFilter != nil && writeFile != nil && (interface != nil || readFiles == ["-"]) {
            throw ValidationError("-Y with -w writes the packets of the matching messages, which are known only once they are decoded: the capture is read twice, so it must be a file (-r FILE); live, write everything with -w and filter the file afterwards.")
        }
    }

    /// `-C`, `-G`, `-W` as tcpdump takes them (nil when none is given).
    func rotation() throws -> Rotation? {
        if fileSize == nil && rotateSeconds == nil {
            if fileCount != nil { throw ValidationError("-W counts the files of -C or -G: give one of them.") }
            return nil
        }
        guard let w = writeFile else { throw ValidationError("-C and -G start new -w files: give -w FILE.") }
        if w == "-" { throw ValidationError("-C and -G start new files: -w - (standard output) is one stream.") }
        var r = Rotation()
        if let text = fileSize {
            let units: [Character: UInt64] = ["k": 1024, "K": 1024, "m": 1 << 20, "M": 1 << 20, "g": 1 << 30, "G": 1 << 30]
            var digits = Substring(text), unit: UInt64 = 1_000_000
            if let last = text.last, let u = units[last] { digits = digits.dropLast(); unit = u }
            guard let n = UInt64(digits), n > 0, n <= UInt64.max / unit else {
                throw ValidationError("-C \(text): a size in millions of bytes (a whole number above 0), or with a k, m or g suffix (KiB, MiB, GiB).")
            }
            r.fileSize = n * unit
        }
        if let g = rotateSeconds {
            guard g > 0 else { throw ValidationError("-G must be at least 1 (seconds).") }
            r.seconds = g
        }
        if let n = fileCount {
            guard n > 0 else { throw ValidationError("-W must be at least 1.") }
            r.files = n
        }
        return r
    }

    /// `-T fields`'s -e names and -E settings.
    func fieldsOptions() throws -> FieldsOptions? {
        guard format == .fields else { return nil }
        var f = FieldsOptions()
        f.names = fieldNames
        for e in fieldSettings { if let why = f.set(e) { throw ValidationError(why) } }
        return f
    }

    func run() throws {
        // Checked here rather than in validate(): the parser reports an unknown option only
        // after validate(), and `framedump --bogus` must name `--bogus`.
        if readFiles.isEmpty && interface == nil && !listInterfaces {
            throw ValidationError("Nothing to read: give -r FILE (a pcap/pcapng capture) or -i INTERFACE (live).")
        }
        if listInterfaces {
            do {
                for d in try PacketSource.interfaces() { print(d.line) }
            } catch { fail(error) }
            return
        }
        var options = PipelineOptions()
        options.segments = segments
        options.hexDump = hex
        options.asciiDump = ascii
        options.fieldDescriptions = details
        options.detailsOf = detailsOf.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }) }
        options.quiet = quiet
        // -w: the packets go to the file; the messages are printed only when asked (tcpdump).
        options.printsMessages = writeFile == nil || printToo
        options.verbose = verbose
        // --diffable is a property of the NDJSON output: asking for it asks for NDJSON.
        options.format = (json || format == .json || diffable) ? .json : .tree
        options.fields = try fieldsOptions()
        options.diffable = diffable
        options.timeFormat = TimeFormat(tFlags: timestampStyle)
        options.ignore = (try? ignorePatterns(ignore)) ?? []
        options.color = color == .always || (color == .auto && isatty(1) != 0)
        options.streamsDir = streams
        options.follow = follow
        options.reassembly.idleTimeoutSeconds = Int64(idleTimeout)
        try dissectorOptions.apply(to: &options)
        options.limits = limits.limits
        options.displayFilter = displayFilter
        options.statistics = stats.compactMap(StatisticsKind.init(argument:))
        options.protoDefaults = protoDefaults
        options.tlsKeyLogs = tls.keyLogs

        // -r's arguments as files: one is read as ever, several are merged (or, with --each,
        // read one run after another).
        var files: [String] = []
        if interface == nil {
            do { files = try CaptureFiles.expand(readFiles) } catch { fail(error) }
        }
        var runs: [RunInput]
        if let iface = interface {
            var live: LiveOptions
            do { live = LiveOptions(interface: try PacketSource.interfaceName(iface)) } catch { fail(error) }
            live.snaplen = snaplen ?? 262_144
            live.bufferKiB = bufferKiB ?? LiveOptions.defaultBufferKiB
            live.promiscuous = !noPromiscuous
            live.immediate = lineBuffered
            runs = [.capture(.live(live))]
        } else {
            runs = each || files.count == 1 ? files.map { RunInput.capture(.file($0)) } : [RunInput.merged(files)]
            options.jobs = oneThread || lineBuffered ? 1 : jobs ?? max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        }
        // --each: every file is opened first, so a bad one is said before any output.
        if runs.count > 1 {
            for f in files { do { _ = try PacketSource(.file(f)) } catch { fail(error) } }
        }
        // `-w -`: stdout is the capture and nothing else (as with tcpdump); text goes to stderr.
        let out = OutputBuffer(fd: writeFile == "-" ? 2 : 1)
        out.lineBuffered = lineBuffered
        for (i, input) in runs.enumerated() {
            if runs.count > 1, case .capture(.file(let path)) = input { fileHeader(path, first: i == 0, options: options, out: out) }
            let readError: Error?
            do {
                readError = try capture(input: input, options: options, out: out)
            } catch let e as DissectorError {
                out.flush()
                FileHandleErr.write("\(e.description)\n")
                throw ExitCode(2)
            } catch let e as FilterError {
                out.flush()
                FileHandleErr.write("\(e.description)\n")
                throw ExitCode(2)
            } catch let e as DecodeAsError {
                out.flush()
                FileHandleErr.write("framedump: \(e.description)\n")
                throw ExitCode(2)
            } catch let e as NameError {
                out.flush()
                FileHandleErr.write("framedump: \(e.description)\n")
                throw ExitCode(2)
            } catch let e as TLSKeyLogError {
                out.flush()
                FileHandleErr.write("framedump: \(e.message)\n")
                throw ExitCode(2)
            } catch {
                out.flush()
                fail(error)
            }
            if let readError { fail(readError) }
        }
    }

    /// --each: the line that says whose output follows. NDJSON: a line of its own type, so
    /// each file's lines are those a run on that file alone prints.
    func fileHeader(_ path: String, first: Bool, options: PipelineOptions, out: OutputBuffer) {
        if options.format == .json {
            out.write("{\"type\":\"file\",\"file\":")
            JSONText.string(RawPath.display(path), to: out)
            out.write("}\n")
        } else {
            out.write((first ? "" : "\n") + "==> \(RawPath.display(path)) <==\n")
        }
        // A summary that goes to stderr is said under the same name.
        if (quiet || verbose > 0) && (options.format == .json || writeFile == "-") {
            out.flush()
            FileHandleErr.write("==> \(RawPath.display(path)) <==\n")
        }
    }

    /// Runs the capture; returns a read error that came after some packets were processed
    /// (a capture cut off mid-record), so what came before is still reported.
    func capture(input: RunInput, options: PipelineOptions, out: OutputBuffer) throws -> Error? {
        let pipeline = try Pipeline(options: options, output: out)
        if let f = options.fields, f.header, options.printsMessages { out.write(FieldsPrinter.header(f)) }
        let source = try input.open()
        let live = source as? PacketSource
        let isLive = live?.isLive ?? false
        if let line = live?.listeningLine { FileHandleErr.write("framedump: \(line)\n") }
        if pipeline.dissectorCount == 0 && !segments && !follow {
            FileHandleErr.write("framedump: warning: no dissector loaded (\(DissectorLoader.searchDescription(explicit: dissectorOptions.paths))): messages will not be decoded, only WebSocket is shown; give -d PATH\n")
        }
        // A progress line for files, on a terminal's stderr, unless stdout is that terminal too
        // with the messages being printed to it.
        if !input.files.isEmpty, !noProgress, isatty(2) != 0,
           !(isatty(1) != 0 && writeFile != "-" && !quiet) {
            var total: UInt64 = 0
            for path in input.files {
                var st = stat()
                if RawPath.withCString(path, { stat($0, &st) }) == 0 { total += UInt64(st.st_size) }
            }
            let p = pipeline
            pipeline.progress = Progress(fileSize: total) { p.messageCount }
        }
        if !LinkDecoder(linkType: source.linkType).isSupported {
            FileHandleErr.write("framedump: warning: link type \(source.linkType) is not decoded; its packets are counted and skipped\n")
        }
        if !filter.isEmpty { try source.setFilter(filter.joined(separator: " ")) }
        if displayFilter != nil && writeFile != nil {
            pipeline.writeOnly = try matchingPackets(input: input, options: options)
        }
        let rotating = (try? rotation()) ?? nil
        let dumper = try writeFile.map { path throws -> CaptureWriter in
            try CaptureWriter(path: path, rotation: rotating) { p throws(CaptureError) in try source.openDumper(p) }
        }
        if isLive {
            let target = user ?? (Privileges.isRoot ? "nobody" : nil)
            if let target, target != "root" { try Privileges.drop(to: target, handOver: streams.map { [$0] } ?? []) }
        }
        StopSignal.install(source)
        defer { StopSignal.clear() }
        var readError: Error?
        do {
            try pipeline.run(source, limit: count, dumper: dumper, lineBuffered: lineBuffered, dumperToStdout: writeFile == "-")
        } catch {
            readError = error
        }
        pipeline.finish()
        do { try dumper?.finish() } catch { readError = readError ?? error }
        // A `matches` that gave up on messages: the run's answer is incomplete, and says so.
        if let gaveUp = pipeline.filtering?.regexesGaveUp, let first = gaveUp.first {
            for g in gaveUp.dropFirst() { FileHandleErr.write("framedump: \(g)\n") }
            readError = readError ?? first
        }
        if let dumper, !printToo, !out.closed, readError == nil, !dumper.failed {
            // What tcpdump says when it writes: how much, so an empty file is no surprise.
            let n = dumper.written
            FileHandleErr.write("framedump: \(n) packet\(n == 1 ? "" : "s") written to \(dumper.opened.count > 1 ? "\(dumper.opened.count) files" : (writeFile == "-" ? "standard output" : RawPath.display(dumper.opened.last ?? writeFile ?? "")))\n")
        }
        if let dumper, dumper.reachedFileLimit, let n = rotating?.files {
            FileHandleErr.write("framedump: -W \(n): the last of \(n) files is written (\(RawPath.display(dumper.opened.last ?? ""))): stopped\n")
        }
        // A pcapng file with interfaces of several link types: those not decoded are said too.
        for t in source.linkTypesSeen where t != source.linkType && !LinkDecoder(linkType: t).isSupported {
            FileHandleErr.write("framedump: warning: link type \(t) is not decoded; its packets are counted and skipped\n")
        }
        if verbose > 0 {
            var refused: [(file: String, why: String)] = []
            if let live, let why = live.handedOver, case .capture(.file(let path)) = input { refused = [(path, why)] }
            if let merged = source as? MergedSource { refused = merged.handedOver }
            for (path, why) in refused {
                FileHandleErr.write("framedump: \(RawPath.display(path)): libpcap refused or cut part of it (\(why)): read by framedump's own reader\n")
            }
        }
        // The reader closed the pipe (`framedump ... | head`): files are complete, and nothing
        // more is said; a closed pipe is how such a run ends, not an error.
        if out.closed || (writeFile == "-" && dumper?.failed == true) { return nil }
        var growing: [String] = []
        if let live, live.endedWhileBeingWritten, case .capture(.file(let path)) = input { growing = [path] }
        if let merged = source as? MergedSource { growing = merged.endedWhileBeingWritten }
        for path in growing {
            FileHandleErr.write("framedump: \(RawPath.display(path)) is still being written: read up to its last whole record\n")
        }
        // With NDJSON (or -w -) stdout holds the data and nothing else: the summary goes to stderr.
        let summaryToStderr = options.format == .json || options.fields != nil || writeFile == "-"
        if isLive && !quiet {
            pipeline.printSummary(live: live?.statistics(), to: OutputBuffer(fd: 2))
        } else if quiet || verbose > 0 {
            pipeline.printSummary(live: live?.statistics(), to: summaryToStderr ? OutputBuffer(fd: 2) : nil)
        }
        out.flush()
        return readError
    }

    /// `-Y … -w`: a first pass over the file finds the matching messages' packets.
    func matchingPackets(input: RunInput, options: PipelineOptions) throws -> MatchedPackets {
        var o = options
        o.statistics = []
        o.jobs = 1
        o.streamsDir = nil
        let matched = MatchedPackets()
        let first = try Pipeline(options: o, output: OutputBuffer(fd: nil), messageSink: matched)
        let source = try input.open()
        if !filter.isEmpty { try source.setFilter(filter.joined(separator: " ")) }
        try first.run(source, limit: count, dumper: nil, lineBuffered: false)
        first.finish()
        return matched
    }

    func fail(_ e: Error) -> Never {
        let code = (e as? CaptureError)?.exitCode ?? 1
        FileHandleErr.write("framedump: \(e)\n")
        Platform.exit(code)
    }
}

/// stderr, unbuffered.
enum FileHandleErr {
    static func write(_ s: String) {
        var s = s
        s.withUTF8 { b in _ = Platform.write(2, b.baseAddress, b.count) }
    }
}

/// What one run reads: a capture as before (a file, stdin, an interface), or files merged.
enum RunInput {
    case capture(CaptureInput)
    case merged([String])

    func open() throws(CaptureError) -> any PacketInput {
        switch self {
        case .capture(let c): return try PacketSource(c)
        case .merged(let files): return try MergedSource.open(files)
        }
    }

    /// The files read (none for stdin or an interface), for the progress line's total.
    var files: [String] {
        switch self {
        case .capture(.file(let path)): return path == "-" ? [] : [path]
        case .capture: return []
        case .merged(let files): return files
        }
    }
}

/// Ctrl-C / SIGTERM: ask libpcap to leave its loop, so outputs are flushed and the summary printed.
/// A run that does not stop by then (a read blocked on a pipe that sends nothing, a phase that
/// does not look at the loop's flag) ends at once: SIGTERM after a second, either signal when it
/// comes a second time, with the shell's status for the signal (128 + its number).
enum StopSignal {
    nonisolated(unsafe) static var source: (any PacketInput)?
    /// The signal that asked to stop (0: none yet).
    nonisolated(unsafe) static var received: sig_atomic_t = 0

    static func install(_ s: any PacketInput) {
        source = s
        signal(SIGINT) { StopSignal.ask($0) }
        signal(SIGTERM) { StopSignal.ask($0) }
        signal(SIGALRM) { _ in _exit(128 + StopSignal.received) }
        signal(SIGPIPE, SIG_IGN)
    }

    /// In the signal handler: only async-signal-safe calls (a flag, pcap_breakloop, alarm, _exit).
    static func ask(_ sig: Int32) {
        if received != 0 { _exit(128 + sig) }
        received = sig
        source?.stop()
        if sig == SIGTERM { alarm(1) }
    }

    static func clear() { source = nil }
}
