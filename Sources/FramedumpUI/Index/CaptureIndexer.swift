import Foundation
import FramedumpCore

/// What `framedump ui` was asked to show.
public struct UIConfiguration: Sendable {
    public var input: CaptureInput
    /// The files `-r` names once its folders and globs are expanded (`CaptureFiles.expand`):
    /// several are merged in time order into one run, as `framedump -r` merges them. Empty:
    /// `input`'s one file.
    public var files: [String] = []
    /// The dissectors, limits, keys: the same as a `framedump -r` run's.
    public var options: PipelineOptions
    /// A BPF filter (libpcap's), as for `framedump`.
    public var bpf: String?
    /// Live: where the captured packets are written (`-w`); a temporary file otherwise.
    public var writeFile: String?
    /// A second capture to compare with (the diff view).
    public var diffWith: String?
    public var ignore: [IgnorePattern] = []
    /// Live: messages held before the oldest are dropped from the page.
    public var keep = 1_000_000
    /// Tests: a file indexed as a live capture is (the ring of `keep` messages, the spill's
    /// and a temporary capture's segments), to check the ring with no interface.
    package var ringOnFile = false
    /// Live: the spill file and the temporary capture are rings of files of about this many
    /// bytes, the oldest removed once the index holds none of its messages.
    public var segmentBytes: UInt64 = 64 << 20
    public var count: UInt64?

    public init(input: CaptureInput, options: PipelineOptions) {
        self.input = input
        self.options = options
    }
}

/// Decodes the capture once, on a thread of its own, into the index and the spill file;
/// answers filters by decoding again; live, writes the packets to a file for that.
public final class CaptureIndexer: @unchecked Sendable {
    public let configuration: UIConfiguration
    package let index: MessageIndex
    let filters = FilterResults()
    let sorts = SortedOrders()
    package let spill: Spill
    /// The capture the index is made from: the files read, or the one live packets go to.
    private(set) var captureFiles: [String]
    let temporaryDirectory: String?
    private var pipeline: Pipeline?
    private var source: (any PacketInput)?
    private var sink: IndexSink?
    private var dumper: CaptureWriter?
    private let diffLock = NSLock()
    private var diffText: String?
    /// The dissectors, loaded once: filters decode with them after a live run gave up root.
    let schemas: [ProtocolSchema]
    /// Filters decode the capture one at a time (`filterGate`), and a filter of other text
    /// stops the one decoding (the page has moved on): requests can neither pile up threads
    /// that each decode the whole capture nor wait behind a filter nobody reads any more.
    private let filterGate = NSLock()
    private let runningLock = NSLock()
    /// The filter asked for last.
    private var latestFilter: String?
    private var running: (text: String, source: any PacketInput)?
    /// The filter decoding now, if one is (tests wait for it).
    package var runningFilter: String? { runningLock.lock(); defer { runningLock.unlock() }; return running?.text }

    /// What the page calls the capture: the file as given (several: the first, the last and
    /// how many), or the interface.
    var shownName: String {
        if case .live(let o) = configuration.input { return o.interface + (configuration.writeFile.map { " → " + $0 } ?? "") }
        guard let first = captureFiles.first, let last = captureFiles.last, captureFiles.count > 1 else { return captureFiles.first ?? "" }
        return captureFiles.count == 2 ? "\(first) + \(last)" : "\(first) … \(last) (\(captureFiles.count) files)"
    }

    /// Live: the temporary capture's files still held.
    let segments: CaptureSegments

    /// The first packet a filter decodes again: 1, or live, the first of the oldest capture
    /// file still held.
    var filterFromPacket: UInt64 {
        guard temporaryDirectory != nil, let first = segments.held?.first else { return 1 }
        return first.packetsBefore + 1
    }

    /// The capture read again (filters): the files merged, as the index read them; live, the
    /// temporary capture's files still held, and the packets before the first of them.
    func openCapture() throws -> (any PacketInput, packetsBefore: UInt64) {
        if temporaryDirectory != nil, let held = segments.held, !held.isEmpty {
            return (try MergedSource.open(held.map(\.path)), held[0].packetsBefore)
        }
        return (try MergedSource.open(captureFiles), 0)
    }

    public var isLive: Bool { if case .live = configuration.input { return true } else { return false } }

    /// Loads the dissectors and opens the capture, so what is wrong with either is said
    /// before the server starts.
    public init(_ configuration: UIConfiguration) throws {
        self.configuration = configuration
        var options = configuration.options
        options.jobs = 1
        options.displayFilter = nil
        options.statistics = []
        let live: Bool
        if case .live = configuration.input { live = true } else { live = false }
        let ring = live || configuration.ringOnFile
        index = try MessageIndex(keep: ring ? configuration.keep : Int.max / 2)
        let spill = try Spill(segmentBytes: ring ? configuration.segmentBytes : nil)
        self.spill = spill
        let segments = CaptureSegments()
        self.segments = segments
        let sink = IndexSink(spill: spill, index: index, filters: filters, live: live)
        schemas = try Pipeline.loadSchemas(options)
        let pipeline = try Pipeline(options: options, output: OutputBuffer(fd: nil), messageSink: sink, schemas: schemas)
        let source: any PacketInput
        switch configuration.input {
        case .file(let path):
            captureFiles = configuration.files.isEmpty ? [path] : configuration.files
            source = try MergedSource.open(captureFiles)
        case .live:
            source = try PacketSource(configuration.input)
            captureFiles = [configuration.writeFile ?? ""]
        }
        if ring {
            // Live, the packets are written as they come, for the filters to decode again: to
            // `-w`'s file (the user's, one file as asked), or to a temporary capture in files
            // of about `segmentBytes` (live.pcap, live.pcap1…, as tcpdump -C names them), each
            // noted with the packets before it and removed with the spill's segments once the
            // index holds none of their messages.
            let capturePath: String
            if live, let w = configuration.writeFile {
                capturePath = w
                temporaryDirectory = nil
            } else {
                let dir = try Self.makeTemporaryDirectory()
                temporaryDirectory = dir
                capturePath = dir + "/live.pcap"
                if live { captureFiles = [capturePath] }
            }
            let rotation = temporaryDirectory == nil ? nil : Rotation(fileSize: configuration.segmentBytes)
            dumper = try CaptureWriter(path: capturePath, rotation: rotation) { [unowned pipeline] p throws(CaptureError) in
                let d = try source.openDumper(p)
                segments.opened(p, packetsBefore: pipeline.capture.packets)
                return d
            }
            let temporary = temporaryDirectory != nil
            sink.dropped = { oldest in
                spill.drop(before: oldest.spillOffset)
                if temporary { segments.drop(before: UInt64(oldest.firstPacket)) }
            }
        } else {
            temporaryDirectory = nil
        }
        if let f = configuration.bpf, !f.isEmpty { try source.setFilter(f) }
        sink.packets = { [unowned pipeline] in pipeline.capture.packets }
        sink.limits = { [unowned pipeline] in pipeline.limitsHit }
        self.pipeline = pipeline
        self.source = source
        self.sink = sink
    }

    deinit { removeTemporaryFiles() }

    /// Live: what the run reads, writes and removes again after giving up root
    /// (`Privileges.drop`'s `handOver`): the temporary folder and the capture in it, which the
    /// filters decode again. A `-w` file stays its owner's (created with the umask, as
    /// tcpdump's, it is readable).
    public var handOverPaths: [String] {
        guard isLive, let d = temporaryDirectory else { return [] }
        return [d] + captureFiles
    }

    /// Live: the temporary pcap and its folder (not `-w`'s file). Called when the server
    /// stops: the process may end before this object is released.
    public func removeTemporaryFiles() {
        if let d = temporaryDirectory {
            segments.removeAll()
            unlink(d + "/live.pcap")
            rmdir(d)
        }
    }

    static func makeTemporaryDirectory() throws -> String {
        let dir = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((dir + "/framedump-ui-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw UIError("cannot create a temporary folder in \(dir): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    /// Starts decoding on a thread of its own; returns at once.
    public func start() {
        guard let pipeline, let source, let sink else { return }
        let live = isLive
        if live { index.setLive() }
        let index = self.index, limit = configuration.count
        let work = Unchecked((pipeline, source, sink, dumper))
        self.pipeline = nil
        self.source = nil
        self.sink = nil
        self.dumper = nil
        let thread = Thread {
            let (pipeline, source, sink, dumper) = work.value
            var failure: String?
            do {
                try pipeline.run(source, limit: limit, dumper: dumper, lineBuffered: live)
            } catch {
                failure = "\(error)"
            }
            pipeline.finish()
            dumper?.flush()
            sink.handOver(last: true)
            let summary = OutputBuffer(fd: nil)
            pipeline.printSummary(live: (source as? PacketSource)?.statistics(), to: summary)
            index.finish(state: .done, readError: failure, summary: summary.text)
        }
        thread.stackSize = 8 << 20
        thread.start()
        stopper = Unchecked(source)
    }

    private var stopper: Unchecked<any PacketInput>?

    /// Waits until the capture is read (a file) and says what the index holds, as
    /// `/api/status` does.
    public func waitForIndex() -> String {
        while index.snapshot.state != .done { usleep(10_000) }
        return Views(indexer: self).status()
    }

    /// Live: ends the capture (the index keeps what it has).
    public func stop() { stopper?.value.stop() }

    /// The ordinals of the messages `text` selects, decoding the capture again (on the
    /// caller's thread: the server calls it off its own).
    package func filter(_ text: String) throws -> [Int] {
        if let hit = filters.cached(text) { return hit }
        runningLock.lock()
        latestFilter = text
        if let r = running, r.text != text { r.source.stop() }
        runningLock.unlock()
        filterGate.lock()
        defer { filterGate.unlock() }
        // The same filter may have been answered while this one waited.
        if let hit = filters.cached(text) { return hit }
        var options = configuration.options
        options.jobs = 1
        options.displayFilter = nil
        options.statistics = []
        let expr = try FilterParser.parse(text, protocols: schemas)
        var below = Int.max
        if isLive {
            below = filters.startLive(text, FilterEvaluator(expr))
        }
        let (source, packetsBefore) = try openCapture()
        let collector = FilterMatchSink(FilterEvaluator(expr), below: below, packetsBefore: packetsBefore)
        let again = try Pipeline(options: options, output: OutputBuffer(fd: nil), messageSink: collector, schemas: schemas)
        if let f = configuration.bpf, !f.isEmpty { try source.setFilter(f) }
        runningLock.lock()
        let superseded = latestFilter != text
        if !superseded { running = (text, source) }
        runningLock.unlock()
        if superseded { throw FilterSuperseded() }
        try? again.run(source, limit: configuration.count, dumper: nil, lineBuffered: false)
        again.finish()
        runningLock.lock()
        running = nil
        let stopped = (source as? PacketSource)?.stopped ?? (source as? MergedSource)?.stopped ?? false
        runningLock.unlock()
        if stopped { throw FilterSuperseded() }
        // A pattern that gave up on messages: refused as a bad filter is (the page keeps its list).
        if let g = collector.evaluator.regexesGaveUp.first {
            // The pattern as written in the filter: its backslashes and quotes escaped.
            let written = "\"" + g.pattern.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            let at = text.range(of: written).map { text.distance(from: text.startIndex, to: $0.lowerBound) + 1 } ?? 1
            throw FilterError(column: at, message: g.explanation, filter: text)
        }
        // Re-decoded from a later file, the run's messages are found in the index by their
        // packet, connection, direction and length (what it decoded otherwise is left out).
        let matches = packetsBefore == 0 ? collector.matches : index.ordinals(found: collector.found, below: below)
        filters.store(text, matches)
        return filters.cached(text) ?? matches
    }

    /// The diff view: this capture against `--diff`'s, as `framedump diff --json` reports it
    /// (one JSON object a difference, then the summary line).
    func diff() throws -> String {
        diffLock.lock(); defer { diffLock.unlock() }
        if let d = diffText { return d }
        guard let other = configuration.diffWith else { throw UIError("no second capture: start with --diff CAPTURE") }
        let differ = CaptureDiff(options: configuration.options, ignore: configuration.ignore)
        let r = try differ.run(DiffInput.at(captureFiles), DiffInput.at(other))
        let lines = DiffReport.json(r).split(separator: "\n").joined(separator: ",")
        let text = "{\"old\":\(JSONOut.quoted(shownName)),\"new\":\(JSONOut.quoted(other)),"
            + "\"summary\":\(JSONOut.quoted(DiffReport.summaryLine(r))),\"differences\":[\(lines)]}"
        diffText = text
        return text
    }
}

/// A filter stopped, or not started, because the page asked for another one.
package struct FilterSuperseded: Error, CustomStringConvertible {
    package var description: String { "a newer filter was asked for" }
}

/// A value handed to another thread that is used there alone.
struct Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ v: T) { value = v }
}
