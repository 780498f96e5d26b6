import ArgumentParser
import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case tree, json
}

enum ColorChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never
}

/// The default command: read packets (file or live) and print what they carry.
struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Capture or read packets and print decoded messages (the default command).")

    @Option(name: .customShort("r"), help: ArgumentHelp("Read packets from a pcap/pcapng file ('-' for stdin).", valueName: "file"))
    var readFile: String?

    @Option(name: .customShort("i"), help: ArgumentHelp("Capture live on an interface.", valueName: "iface"))
    var interface: String?

    @Flag(name: .customShort("D"), help: "List the interfaces available for capture and exit.")
    var listInterfaces = false

    @Option(name: .customShort("w"), help: ArgumentHelp("Write the packets that pass the filter to a pcap file.", valueName: "file"))
    var writeFile: String?

    @Option(name: .customShort("c"), help: ArgumentHelp("Stop after this many packets.", valueName: "count"))
    var count: UInt64?

    @Option(name: .customShort("s"), help: ArgumentHelp("Live capture: bytes to keep of each packet.", valueName: "snaplen"))
    var snaplen: Int32 = 262_144

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

    @Flag(name: .customShort("t"), help: "Accepted for tcpdump habits: timestamps are always seconds since the epoch (-tt).")
    var timestampStyle: Int

    @Flag(name: .customShort("x"), help: "Add a hex dump of each frame (or segment payload).")
    var hex = false

    @Flag(name: .customShort("v"), help: "Verbose: field descriptions from the schema, more detail in the summary.")
    var verbose: Int

    @Flag(name: .customShort("q"), help: "Print only the summary.")
    var quiet = false

    @Option(name: .customShort("T"), help: ArgumentHelp("Output format: tree or json (NDJSON).", valueName: "format"))
    var format: OutputFormat = .tree

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

    @Option(name: .customShort("d"), help: ArgumentHelp("Load a dissector file or folder (repeatable); default ./Dissectors and $FRAMEDUMP_DISSECTORS.", valueName: "path"))
    var dissectors: [String] = []

    @Option(name: .long, help: ArgumentHelp("Decode this TCP port's connections with this protocol (repeatable; like tshark's -d tcp.port==N,proto; the port is taken from any dissector that lists it).", valueName: "port=protocol"))
    var decodeAs: [String] = []

    @Option(name: .long, help: ArgumentHelp("Also look for .proto files and their imports in this folder (repeatable; searched before the dissector file's folder).", valueName: "dir"))
    var protoPath: [String] = []

    @Option(name: .long, help: ArgumentHelp("An AES key a dissector names, as hex (repeatable; overrides the file's value; never printed).", valueName: "name=hex"))
    var key: [String] = []

    @Flag(name: .long, help: "Protobuf: also show fields that are not on the wire, at their default value.")
    var protoDefaults = false

    @Option(name: .long, help: ArgumentHelp("Decrypt TLS with this NSS key log (SSLKEYLOGFILE; repeatable; also $FRAMEDUMP_TLS_KEYLOG; re-read as it grows).", valueName: "file"))
    var tlsKeylog: [String] = []

    @Option(name: .long, help: ArgumentHelp("Reassembly: seconds without packets before a connection is closed.", valueName: "seconds"))
    var idleTimeout: Int = 300

    @Option(name: [.customShort("Y"), .customLong("filter")], help: ArgumentHelp("Show only the messages this display filter selects (Wireshark's syntax: game.Res == 1 and msg.dir == \"s2c\").", valueName: "filter"))
    var displayFilter: String?

    @Option(name: .customShort("z"), help: ArgumentHelp("Statistics at the end (repeatable): msgs (per protocol, message and direction), conv (per connection), rtt (request/response latency, where a dissector says pair_by), kcp (per KCP conversation: retransmission rate, lost segments, round trips), rate[,SECONDS] (messages per interval; SECONDS from 0.001 to 86400, default 1: rate,0.02 for 20 ms ticks).", valueName: "stat"))
    var stats: [String] = []

    @Flag(name: .long, help: "No progress line on stderr while a file is read (it is shown only when stderr is a terminal).")
    var noProgress = false

    @Flag(name: .long, help: "Read, decode and print on one thread (files are otherwise decoded and printed on a second thread while the first reads; live captures always use one).")
    var oneThread = false

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    @Argument(help: ArgumentHelp("A BPF filter expression, compiled by libpcap.", valueName: "filter"))
    var filter: [String] = []

    func validate() throws {
        if listInterfaces { return }
        if readFile != nil && interface != nil {
            throw ValidationError("Give either -r FILE or -i INTERFACE, not both.")
        }
        if idleTimeout < 1 { throw ValidationError("--idle-timeout must be at least 1.") }
        if count == 0 { throw ValidationError("-c must be at least 1.") }
        if hex && (json || format == .json || diffable) {
            throw ValidationError("-x adds a hex dump to the tree output; NDJSON has no place for it (leave out -x or -T json).")
        }
        for z in stats where StatisticsKind(argument: z) == nil {
            throw ValidationError("-z \(z): not a statistic (msgs, conv, rtt, kcp, rate or rate,SECONDS with SECONDS from 0.001 to 86400).")
        }
        _ = try keys()
        _ = try ignorePatterns(ignore)
        _ = try decodeAsRules(decodeAs)
        if !ignore.isEmpty && !diffable { throw ValidationError("--ignore leaves fields out of --diffable output: add --diffable.") }
        if displayFilter != nil && writeFile != nil && (interface != nil || readFile == "-") {
            throw ValidationError("-Y with -w writes the packets of the matching messages, which are known only once they are decoded: the capture is read twice, so it must be a file (-r FILE); live, write everything with -w and filter the file afterwards.")
        }
    }

    /// `--key NAME=HEX` values; the error never repeats the key.
    func keys() throws -> [String: [UInt8]] { try parsedKeys(key) }

    func run() throws {
        // Checked here rather than in validate(): the parser reports an unknown option only
        // after validate(), and `framedump --bogus` must name `--bogus`.
        if readFile == nil && interface == nil && !listInterfaces {
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
        options.quiet = quiet
        options.verbose = verbose
        // --diffable is a property of the NDJSON output: asking for it asks for NDJSON.
        options.format = (json || format == .json || diffable) ? .json : .tree
        options.diffable = diffable
        options.ignore = (try? ignorePatterns(ignore)) ?? []
        options.color = color == .always || (color == .auto && isatty(1) != 0)
        options.streamsDir = streams
        options.follow = follow
        options.reassembly.idleTimeoutSeconds = Int64(idleTimeout)
        options.dissectorPaths = dissectors
        options.decodeAs = (try? decodeAsRules(decodeAs)) ?? []
        options.limits = limits.limits
        options.displayFilter = displayFilter
        options.statistics = stats.compactMap(StatisticsKind.init(argument:))
        options.load = LoadOptions(protoPaths: protoPath, keys: (try? keys()) ?? [:])
        options.protoDefaults = protoDefaults
        options.tlsKeyLogs = tlsKeylog + ((getenv("FRAMEDUMP_TLS_KEYLOG").map { [String(cString: $0)] }) ?? [])

        let input: CaptureInput
        if let iface = interface {
            var live: LiveOptions
            do { live = LiveOptions(interface: try PacketSource.interfaceName(iface)) } catch { fail(error) }
            live.snaplen = snaplen
            live.bufferKiB = bufferKiB ?? LiveOptions.defaultBufferKiB
            live.promiscuous = !noPromiscuous
            live.immediate = lineBuffered
            input = .live(live)
        } else {
            input = .file(readFile!)
            options.decodeThread = !oneThread && !lineBuffered
        }
        // `-w -`: stdout is the capture and nothing else (as with tcpdump); text goes to stderr.
        let out = OutputBuffer(fd: writeFile == "-" ? 2 : 1)
        out.lineBuffered = lineBuffered
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

    /// Runs the capture; returns a read error that came after some packets were processed
    /// (a capture cut off mid-record), so what came before is still reported.
    func capture(input: CaptureInput, options: PipelineOptions, out: OutputBuffer) throws -> Error? {
        let pipeline = try Pipeline(options: options, output: out)
        let source = try PacketSource(input)
        if pipeline.dissectorCount == 0 && !segments && !follow {
            FileHandleErr.write("framedump: warning: no dissector loaded (\(DissectorLoader.searchDescription(explicit: dissectors))): messages will not be decoded, only WebSocket is shown; give -d PATH\n")
        }
        // A progress line for files, on a terminal's stderr, unless stdout is that terminal too
        // with the messages being printed to it.
        if case .file(let path) = input, path != "-", !noProgress, isatty(2) != 0,
           !(isatty(1) != 0 && writeFile != "-" && !quiet) {
            var st = stat()
            if stat(path, &st) == 0 {
                let p = pipeline
                pipeline.progress = Progress(fileSize: UInt64(st.st_size)) { p.messageCount }
            }
        }
        if !LinkDecoder(linkType: source.linkType).isSupported {
            FileHandleErr.write("framedump: warning: link type \(source.linkType) is not decoded; its packets are counted and skipped\n")
        }
        if !filter.isEmpty { try source.setFilter(filter.joined(separator: " ")) }
        if displayFilter != nil && writeFile != nil {
            pipeline.writeOnly = try matchingPackets(input: input, options: options)
        }
        let dumper = try writeFile.map { path throws -> PacketDumper in try source.openDumper(path) }
        if source.isLive {
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
        dumper?.flush()
        // A pcapng file with interfaces of several link types: those not decoded are said too.
        for t in source.linkTypesSeen where t != source.linkType && !LinkDecoder(linkType: t).isSupported {
            FileHandleErr.write("framedump: warning: link type \(t) is not decoded; its packets are counted and skipped\n")
        }
        if verbose > 0, let why = source.handedOver, case .file(let path) = input {
            FileHandleErr.write("framedump: \(RawPath.display(path)): libpcap refused or cut part of it (\(why)): read by framedump's own reader\n")
        }
        // The reader closed the pipe (`framedump ... | head`): files are complete, and nothing
        // more is said; a closed pipe is how such a run ends, not an error.
        if out.closed || (writeFile == "-" && dumper?.failed == true) { return nil }
        if source.endedWhileBeingWritten, case .file(let path) = input {
            FileHandleErr.write("framedump: \(RawPath.display(path)) is still being written: read up to its last whole record\n")
        }
        // With NDJSON (or -w -) stdout holds the data and nothing else: the summary goes to stderr.
        let summaryToStderr = options.format == .json || writeFile == "-"
        if source.isLive && !quiet {
            pipeline.printSummary(live: source.statistics(), to: OutputBuffer(fd: 2))
        } else if quiet || verbose > 0 {
            pipeline.printSummary(live: source.statistics(), to: summaryToStderr ? OutputBuffer(fd: 2) : nil)
        }
        out.flush()
        return readError
    }

    /// `-Y … -w`: a first pass over the file finds the matching messages' packets.
    func matchingPackets(input: CaptureInput, options: PipelineOptions) throws -> MatchedPackets {
        var o = options
        o.statistics = []
        o.decodeThread = false
        o.streamsDir = nil
        let matched = MatchedPackets()
        let first = try Pipeline(options: o, output: OutputBuffer(fd: nil), messageSink: matched)
        let source = try PacketSource(input)
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

/// Ctrl-C / SIGTERM: ask libpcap to leave its loop, so outputs are flushed and the summary printed.
enum StopSignal {
    nonisolated(unsafe) static var source: PacketSource?

    static func install(_ s: PacketSource) {
        source = s
        signal(SIGINT) { _ in StopSignal.source?.stop() }
        signal(SIGTERM) { _ in StopSignal.source?.stop() }
        signal(SIGPIPE, SIG_IGN)
    }

    static func clear() { source = nil }
}
