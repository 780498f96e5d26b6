import ArgumentParser
import Dispatch
import Foundation
import FramedumpCore
import FramedumpUI

/// `framedump ui`: the decoded messages in a web page (connections, messages, the field
/// tree over the bytes, sequence diagrams, plots, diff), from a file or live.
struct UI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Browse the decoded messages in a web page, from a capture file or live (see docs/ui.md).")

    @Option(name: .customShort("r"), help: ArgumentHelp("Read packets from a pcap/pcapng file. Repeatable; a folder or a quoted glob too: the files are merged in time order, as dump's -r.", valueName: "file"))
    var readFiles: [String] = []

    @Option(name: .customShort("i"), help: ArgumentHelp("Capture live on an interface; messages stream into the page.", valueName: "iface"))
    var interface: String?

    @Option(name: .customShort("w"), help: ArgumentHelp("Live: keep the captured packets in this pcap file (default: a temporary file, removed at exit).", valueName: "file"))
    var writeFile: String?

    @Option(name: .customShort("c"), help: ArgumentHelp("Stop after this many packets.", valueName: "count"))
    var count: UInt64?

    @Option(name: .customShort("s"), help: ArgumentHelp("Live capture: bytes to keep of each packet.", valueName: "snaplen"))
    var snaplen: Int32 = 262_144

    @Flag(name: .customShort("p"), help: "Live capture: do not put the interface in promiscuous mode.")
    var noPromiscuous = false

    @Option(name: .customShort("Z"), help: ArgumentHelp("Live: after opening the interface, run as this user (default 'nobody' when root).", valueName: "user"))
    var user: String?

    @OptionGroup
    var dissectorOptions: DissectorOptions

    @Flag(name: .long, help: "Protobuf: also show fields that are not on the wire, at their default value.")
    var protoDefaults = false

    @OptionGroup
    var tls: TLSOptions

    @Option(name: .long, help: ArgumentHelp("Reassembly: seconds without packets before a connection is closed.", valueName: "seconds"))
    var idleTimeout: Int = 300

    @Option(name: .long, help: ArgumentHelp("Compare with this capture (or NDJSON export) in the diff view.", valueName: "capture"))
    var diff: String?

    @Option(name: .long, help: ArgumentHelp("The diff view: leave out this field (repeatable; as diff's --ignore).", valueName: "path"))
    var ignore: [String] = []

    @Option(name: .long, help: ArgumentHelp("The address to listen on (default 127.0.0.1); any other needs the token the printed URL carries.", valueName: "addr"))
    var listen: String = "127.0.0.1"

    @Option(name: .long, help: ArgumentHelp("The port to listen on (0: any free port).", valueName: "port"))
    var port: UInt16 = 8800

    @Flag(name: .long, help: "Open the page in the desktop's browser (xdg-open).")
    var open = false

    @Option(name: .long, help: ArgumentHelp("Live: messages the page keeps; older ones are dropped from it, said so.", valueName: "n"))
    var keep: Int = 1_000_000

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    @Argument(help: ArgumentHelp("A BPF filter expression, compiled by libpcap.", valueName: "filter"))
    var filter: [String] = []

    func validate() throws {
        if readFiles.isEmpty == (interface == nil) {
            throw ValidationError("Give -r FILE (a pcap/pcapng capture) or -i INTERFACE (live), one of them.")
        }
        if writeFile != nil && interface == nil { throw ValidationError("-w keeps a live capture's packets: it needs -i.") }
        if keep < 1 { throw ValidationError("--keep must be at least 1.") }
        if count == 0 { throw ValidationError("-c must be at least 1.") }
        if idleTimeout < 1 { throw ValidationError("--idle-timeout must be at least 1.") }
        if !ignore.isEmpty && diff == nil { throw ValidationError("--ignore applies to the diff view: add --diff CAPTURE.") }
        _ = try ignorePatterns(ignore)
    }

    func run() throws {
        try NoDissectors.refuse("ui", explicit: dissectorOptions.paths, allowUndecoded: false,
                                why: "the page would show WebSocket messages at most; give -d PATH (a dissector file or folder)")
        var options = PipelineOptions()
        try dissectorOptions.apply(to: &options)
        options.limits = limits.limits
        options.protoDefaults = protoDefaults
        options.reassembly.idleTimeoutSeconds = Int64(idleTimeout)
        options.tlsKeyLogs = tls.keyLogs
        let input: CaptureInput
        var files: [String] = []
        if let iface = interface {
            var live: LiveOptions
            do { live = LiveOptions(interface: try PacketSource.interfaceName(iface)) } catch { fail(error) }
            live.snaplen = snaplen
            live.promiscuous = !noPromiscuous
            live.immediate = true
            input = .live(live)
        } else {
            do { files = try CaptureFiles.expand(readFiles) } catch { fail(error) }
            if files.contains("-") {
                // Filters decode the capture again: standard input cannot be read twice.
                FileHandleErr.write("framedump ui: -r -: filters read the capture again; give a file\n")
                throw ExitCode(1)
            }
            input = .file(files[0])
        }
        var config = UIConfiguration(input: input, options: options)
        config.files = files
        config.bpf = filter.isEmpty ? nil : filter.joined(separator: " ")
        config.writeFile = writeFile
        config.diffWith = diff
        config.ignore = try ignorePatterns(ignore)
        config.keep = keep
        config.count = count

        let indexer: CaptureIndexer
        let server: UIServer
        do {
            indexer = try CaptureIndexer(config)
            server = try UIServer(indexer: indexer, listen: listen, port: port)
        } catch let e as DissectorError {
            FileHandleErr.write("\(e.description)\n")
            throw ExitCode(2)
        } catch let e as DecodeAsError {
            FileHandleErr.write("framedump ui: \(e.description)\n")
            throw ExitCode(2)
        } catch let e as TLSKeyLogError {
            FileHandleErr.write("framedump ui: \(e.message)\n")
            throw ExitCode(2)
        } catch {
            fail(error)
        }
        // Live: the handle, the capture file and the spill are open; the decoders, the filters'
        // regular expressions and the web server then run on packets from the network, not
        // as root (as `framedump -i` does). The files written or read again are handed over.
        if indexer.isLive {
            let target = user ?? (Privileges.isRoot ? "nobody" : nil)
            if let target, target != "root" {
                do { try Privileges.drop(to: target, handOver: indexer.handOverPaths) } catch { fail(error) }
            }
        }
        indexer.start()
        let done = DispatchSemaphore(value: 0)
        let openPage = open
        // The socket was bound by UIServer's init (a port in use is said there, exit 1).
        let serving = Task {
            await server.run { url in
                // Unbuffered: a script waiting for the URL reads it at once.
                var line = "framedump ui: serving \(url)  (Ctrl-C to stop)\n"
                line.withUTF8 { b in _ = Platform.write(1, b.baseAddress, b.count) }
                if openPage { UI.openInBrowser(url) }
            }
            done.signal()
        }
        // Ctrl-C and SIGTERM: stop capturing, stop serving; the temporary files go with the process.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        // A browser that goes away mid-answer is a failed send, not the end of the process.
        signal(SIGPIPE, SIG_IGN)
        let stop: @Sendable () -> Void = {
            indexer.stop()
            serving.cancel()
        }
        let sources = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler(handler: stop)
            s.resume()
            return s
        }
        done.wait()
        sources.forEach { $0.cancel() }
        indexer.stop()
        indexer.removeTemporaryFiles()
    }

    static func openInBrowser(_ url: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["xdg-open", url]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch {
            FileHandleErr.write("framedump ui: could not open a browser (xdg-open): open \(url) yourself\n")
        }
    }

    func fail(_ e: Error) -> Never {
        let code = (e as? CaptureError)?.exitCode ?? 1
        FileHandleErr.write("framedump ui: \(e)\n")
        Platform.exit(code)
    }
}
