/// Wires the stages together for one run:
/// PacketSource → LinkDecoder → Reassembler → (stream export, follow, sessions) → output.
public final class Pipeline {
    let options: PipelineOptions
    let out: OutputBuffer
    @exclusivity(unchecked) public private(set) var capture = CaptureStats()
    public let defragmenter: Defragmenter
    @exclusivity(unchecked) var reassembler: Reassembler?
    /// UDP datagrams in flows, when a protocol is carried by UDP (`udp port N;`).
    @exclusivity(unchecked) var flows: UDPFlows?
    @exclusivity(unchecked) var export: StreamExport?
    @exclusivity(unchecked) var consumers: [StreamConsumer] = []
    public let sessions: SessionManager?
    let sink: MessageSink?
    /// The `-Y` filter in front of the output, when one was given.
    package let filtering: FilteringSink?
    /// `--diffable`'s connections held to the end (a sharded run's shards' are merged into it).
    let collector: ConnectionCollector?
    /// The run's TLS secrets, shared by the shards; it learns the capture files at `run`.
    @exclusivity(unchecked) var keyLog: TLSKeyLog?
    /// Set when connections are sharded among threads (`PipelineOptions.jobs`).
    @exclusivity(unchecked) var shardPool: ShardPool?
    /// How many protocols the dissector files declared (none: only WebSocket is decoded, built in).
    public let dissectorCount: Int

    /// The dissectors a run with these options decodes with (`-d`, `--proto-defaults`, `--decode-as`).
    public static func loadSchemas(_ options: PipelineOptions) throws -> [ProtocolSchema] {
        var schemas = try DissectorLoader.load(paths: DissectorLoader.defaultPaths(explicit: options.dissectorPaths),
                                               options: options.load.bounded(by: options.limits))
        if options.protoDefaults { for i in schemas.indices { schemas[i].protoAddDefaults = true } }
        if !options.decodeAs.isEmpty { schemas = try DecodeAs.apply(options.decodeAs, to: schemas) }
        return schemas
    }

    /// Dissector files are loaded here, before any packet is read (and before privileges drop).
    /// `messageSink`, when given, takes the decoded stream in place of the printer (`diff`, `check -r`).
    /// `schemas`, when given, are `loadSchemas(options)`'s, loaded earlier: a run that decodes
    /// again after giving up root (the page's filters) reads no dissector file then.
    public init(options: PipelineOptions, output: OutputBuffer, messageSink: MessageSink? = nil,
                schemas loaded: [ProtocolSchema]? = nil) throws {
        self.options = options
        self.out = output
        let limits = options.limits
        var fragments = Defragmenter.Options()
        fragments.maxBytes = limits.maxFragmentBytes
        defragmenter = Defragmenter(options: fragments)
        let schemas = try loaded ?? Self.loadSchemas(options)
        dissectorCount = schemas.count
        let printsMessages = options.printsMessages && !options.segments && !options.follow && !options.quiet
        // The filter is checked against the loaded dissectors before any packet is read.
        let filter = try options.displayFilter.map { f throws(FilterError) in try FilterParser.parse(f, protocols: schemas) }
        // And -O's protocol names.
        if let names = options.detailsOf {
            let loaded = Set(schemas.map { $0.name.lowercased() })
            for n in names.sorted() where !loaded.contains(n) {
                throw NameError(description: "-O: no loaded dissector is named '\(n)' (loaded: \(schemas.map(\.name).joined(separator: ", ")))"
                                + DidYouMean.hint(n, schemas.map(\.name)))
            }
        }
        // So are -e's names.
        var columns: [FieldColumn]?
        if let f = options.fields {
            var c: [FieldColumn] = []
            for name in f.names { c.append(try FieldColumn.parse(name, protocols: schemas)) }
            columns = c
        }
        if options.segments {
            sink = nil
            sessions = nil
            filtering = nil
            collector = nil
        } else {
            let chain = Self.sinks(options, filter: filter, output: output, messageSink: messageSink,
                                   columns: columns, printsMessages: printsMessages)
            filtering = chain.filtering
            collector = chain.collector
            sink = chain.head
            let m = SessionManager(protocols: schemas, sink: sink, limits: limits)
            // Pairing shows in every output but -q's summary (there only for -z rtt).
            let pairing = !options.quiet || options.statistics.contains(.rtt)
            m.pairing = pairing
            // Read once for the run, shared by the shards (a miss reads on, under its lock).
            // (Always one, with or without files: a pcapng capture may carry its secrets.)
            let keyLog = try TLSKeyLog(paths: options.tlsKeyLogs)
            self.keyLog = keyLog
            m.useTLSKeyLog(keyLog)
            sessions = m
            chain.statistics?.tables?.layerTable = { [unowned m] in LayerRegistry.kind(named: $0)?.statistics(m) }
            // -j: the connections are sharded, each shard with a manager and sinks of its own
            // writing to memory (what `-z` counts and `--diffable` holds is merged: the merge
            // counts the shards' statistics records in the run's order, and the connections
            // held for `--diffable` are put back in the order they appeared).
            // (A time since the line before, or the first, needs every line on one printer.)
            if options.jobs > 1 && messageSink == nil && !options.follow && !options.timeFormat.needsEveryLine {
                var shards: [Shard] = []
                for _ in 0..<min(options.jobs, ShardPool.maxShards) {
                    let shardOut = OutputBuffer(fd: nil, capacity: options.shardSizes.outBytes)
                    let c = Self.sinks(options, filter: filter, output: shardOut, messageSink: nil, columns: columns,
                                       printsMessages: printsMessages, shard: true)
                    let sm = SessionManager(protocols: schemas, sink: c.head, limits: limits)
                    sm.pairing = pairing
                    sm.useTLSKeyLog(keyLog)
                    shards.append(Shard(manager: sm, sinks: c, out: shardOut))
                }
                shardPool = ShardPool(shards: shards, output: output, statistics: chain.statistics?.tables,
                                      sizes: options.shardSizes)
            }
            consumers.append(shardPool ?? m)
        }
        if let dir = options.streamsDir {
            let e = try StreamExport(directory: dir)
            export = e
            consumers.append(e)
        }
        if options.follow && !options.quiet { consumers.append(FollowPrinter(output: output)) }
        var fanOut: StreamConsumer?
        if !consumers.isEmpty {
            let fan: StreamConsumer = consumers.count == 1 ? consumers[0] : FanOut(consumers)
            fanOut = fan
            let sessions = self.sessions
            var r = options.reassembly
            r.maxBufferedBytes = limits.maxBufferPerStream
            r.maxBufferedTotal = limits.maxBufferTotal
            r.maxConnections = limits.maxConnections
            reassembler = Reassembler(options: r, consumer: fan,
                                      isServerPort: { sessions?.isServerPort($0) ?? false })
        }
        if let m = sessions, m.decodesUDP, let r = reassembler {
            var f = UDPFlows.Options()
            f.maxFlows = limits.maxConnections
            // The flows go where the TCP streams go: the sessions, and `--streams`/`--follow`
            // (each direction's datagrams one after another, as tshark's UDP follow shows them).
            flows = UDPFlows(options: f, consumer: fanOut ?? m, isServerPort: { [unowned m] in m.isUDPServerPort($0) },
                             nextNumber: { [unowned r] in r.takeNumber() })
        }
    }

    /// A pipeline dropped without `finish` (its capture would not open) lets its thread go.
    deinit {
        shardPool?.finish()
    }

    /// The sinks messages go through for `output`: the printer (or `messageSink`), `-z`'s
    /// statistics in front of it, and `-Y`'s filter in front of both. A shard's (`shard`) keep
    /// what the run merges: statistics records, and `--diffable`'s connections unwritten.
    static func sinks(_ options: PipelineOptions, filter: FilterExpr?, output: OutputBuffer, messageSink: MessageSink?,
                      columns: [FieldColumn]? = nil, printsMessages: Bool, shard: Bool = false) -> SinkChain {
        var chain = SinkChain()
        // -Y … -w's first pass sees every message: a packet is written for its neighbours too.
        if let all = messageSink as? MatchedPackets {
            all.evaluator = filter.map(FilterEvaluator.init)
            chain.head = all
            return chain
        }
        // --diffable: the lines are held per connection and written grouped at the end.
        var printer: MessageSink?
        if let messageSink {
            printer = messageSink
        } else if printsMessages, let columns, let f = options.fields {
            printer = FieldsPrinter(output: output, columns: columns, options: f)
        } else if printsMessages && options.format == .json && options.diffable {
            let c = ConnectionCollector(.export(output), ignore: options.ignore)
            c.defersExport = shard
            chain.collector = c
            printer = c
        } else if printsMessages {
            printer = options.format == .json ? JSONPrinter(output: output, diffable: false) as MessageSink
                : TreePrinter(output: output, hexDump: options.hexDump, verbose: options.verbose > 0 || options.fieldDescriptions, color: options.color,
                              time: options.timeFormat, asciiDump: options.asciiDump, detailsOf: options.detailsOf)
        }
        // -z counts what reaches the output (after -Y), so it sits between the two.
        if !options.statistics.isEmpty && !options.follow {
            let s = shard ? StatisticsSink(recordingFor: printer, kinds: options.statistics)
                : StatisticsSink(inner: printer, kinds: options.statistics, output: output, json: options.format == .json)
            chain.statistics = s
            printer = s
        }
        // With a filter every message is decoded (even for -q, which then counts the matches).
        chain.filtering = filter.map { FilteringSink(printer ?? NullSink(), filter: $0) }
        chain.head = chain.filtering ?? printer ?? NullSink()
        return chain
    }

    /// `diff` and `check -r`: the whole source; a capture cut off mid-record (a tcpdump killed
    /// while writing) is read up to its last whole record, as a run reads it, and its error
    /// returned for the caller to say (any other error is thrown).
    public func runToLastWholeRecord(_ source: any PacketInput) throws(CaptureError) -> CaptureError? {
        do {
            try run(source, limit: nil, dumper: nil, lineBuffered: false)
            return nil
        } catch {
            guard error.exitCode == 5 else { throw error }
            return error
        }
    }

    /// The progress line on stderr, when the command line asks for one.
    @exclusivity(unchecked) public var progress: Progress?

    /// Messages decoded or counted so far, over every protocol (for the progress line).
    public var messageCount: UInt64 {
        if let p = shardPool { return p.messagesDone }
        return sessions?.protocols.reduce(0) { $0 + $1.messageCounts.reduce(0, +) } ?? 0
    }

    /// With `-Y … -w`: writes only the TCP packets this says (see `MatchedPackets`).
    @exclusivity(unchecked) public var writeOnly: MatchedPackets?

    public func run(_ source: any PacketInput, limit: UInt64?, dumper: CaptureWriter?, lineBuffered: Bool,
                    dumperToStdout: Bool = false) throws(CaptureError) {
        keyLog?.readCaptures(source.captureFiles)
        // Called with its concrete type, the loop is specialized for it: the per-packet closure
        // below is then inlined into the reader's own loop, as it was before there were two.
        if let one = source as? PacketSource {
            try loop(one, limit: limit, dumper: dumper, lineBuffered: lineBuffered, dumperToStdout: dumperToStdout)
        } else if let merged = source as? MergedSource {
            try loop(merged, limit: limit, dumper: dumper, lineBuffered: lineBuffered, dumperToStdout: dumperToStdout)
        } else {
            try loop(source, limit: limit, dumper: dumper, lineBuffered: lineBuffered, dumperToStdout: dumperToStdout)
        }
    }

    private func loop<Source: PacketInput>(_ source: Source, limit: UInt64?, dumper: CaptureWriter?, lineBuffered: Bool,
                                           dumperToStdout: Bool) throws(CaptureError) {
        let writeOnly = self.writeOnly
        // Each packet is decoded by its interface's link type (a pcapng file may have several).
        let sourceLink = LinkDecoder(linkType: source.linkType)
        // A packet -w could not write (another link type, a rotated file that would not open).
        var unwritable: CaptureError?
        let progress = self.progress
        defer { progress?.finish() }
        let printSegments = options.segments && !options.quiet
        let seg = SegmentPrinter()
        let reassembler = self.reassembler
        let shardPool = self.shardPool
        try source.forEach(limit: limit) { p in
            // -w: libpcap's pcap writer holds one link type; another stops the run, said so.
            if let dumper, let refused = dumper.refusal(p) {
                unwritable = refused
                return false
            }
            let link = p.linkType < 0 || p.linkType == sourceLink.linkType ? sourceLink : LinkDecoder(linkType: p.linkType)
            capture.packets += 1
            capture.bytes += UInt64(p.wireLength)
            progress?.packet(caplen: p.data.count)
            if let dumper, writeOnly == nil {
                do throws(CaptureError) {
                    // -G with -W: the last file is made; the run ends here, as tcpdump's does.
                    guard try dumper.write(p) else { return false }
                } catch {
                    unwritable = error
                    return false
                }
                if lineBuffered { dumper.flush() }
            }
            // Nobody reads the output any more (`| head`): stop, as tcpdump does on SIGPIPE.
            // (The output is the merging thread's, when shards decode: it tells when it closed.)
            if (shardPool?.stopRequested ?? out.closed) || (dumperToStdout && dumper?.failed == true) { return false }
            var r = link.decode(p.data)
            if case .tcp(var s) = r, s.payloadLength > s.payload.count, p.data.count >= p.wireLength {
                // The snaplen cut nothing, yet the IP header announces more than the frame
                // holds: the header lies (or is corrupt). No byte is missing: use what is there.
                s.payloadLength = s.payload.count
                capture.ipLengthBeyondFrame += 1
                r = .tcp(s)
            }
            capture.count(r)
            if case .tcp(let s) = r {
                if let writeOnly, let dumper {
                    let keep = writeOnly.keep(p.ref.number, s)
                    if keep != .drop {
                        // Cut as a snap length cuts: the reader sees the bytes were left out.
                        let w = keep == .whole ? p : p.cut(before: s.payload)
                        do throws(CaptureError) { guard try dumper.write(w) else { return false } } catch {
                            unwritable = error
                            return false
                        }
                    }
                }
                if printSegments { seg.print(s, at: p.ref.ts, to: out) }
                reassembler?.add(s, packet: p.ref)
            } else if case .udp(let d) = r {
                if let writeOnly, let dumper, writeOnly.keeps(p.ref.number, udp: d) {
                    do throws(CaptureError) { guard try dumper.write(p) else { return false } } catch {
                        unwritable = error
                        return false
                    }
                }
                if flows?.add(d, packet: p.ref) != true { capture.notTCP += 1 }
            } else if case .fragment(let f) = r, let d = defragmenter.add(f, at: p.ref.ts) {
                // The fragment that completes a datagram carries its segment.
                d.bytes.withUnsafeBytes { b in
                    inner(link.datagram(b, d), link: link, packet: p.ref, print: printSegments ? seg : nil, defragmented: true)
                }
            } else if case .compressed = r {
                inner(r, link: link, packet: p.ref, print: printSegments ? seg : nil, defragmented: false)
            }
            return true
        }
        if let unwritable { throw unwritable }
    }

    /// A datagram put back together (fragments) or inflated (IPComp): its segment or UDP
    /// datagram goes on as a packet's would. An IPComp payload is inflated here, into one
    /// buffer for the run (at most 65,535 bytes: what IP can carry).
    private func inner(_ r: LinkResult, link: LinkDecoder, packet: PacketRef, print seg: SegmentPrinter?, defragmented: Bool) {
        switch r {
        case .tcp(let s):
            if defragmented { capture.defragmentedSegments += 1 } else { capture.ipcompSegments += 1 }
            seg?.print(s, at: packet.ts, to: out)
            reassembler?.add(s, packet: packet)
        case .udp(let u):
            capture.udpDatagrams += 1
            if flows?.add(u, packet: packet) != true { capture.notTCP += 1 }
        case .compressed(let c):
            guard c.data.count > 0 else { return }
            let block = ipcompBlock ?? ByteBlock(capacity: 1 << 16)
            ipcompBlock = block
            ipcompInflater = ipcompInflater ?? Inflater(scratch: Inflater.Scratch(), contextTakeover: false)
            guard case .ok = ipcompInflater!.inflate(c.data, into: block, cap: 65_535) else {
                capture.ipcompFailed += 1
                return
            }
            let d = Defragmenter.Datagram(src: c.src, dst: c.dst, proto: c.next, bytes: [])
            inner(link.datagram(block.bytes, d), link: link, packet: packet, print: seg, defragmented: defragmented)
        default: break
        }
    }
    @exclusivity(unchecked) private var ipcompBlock: ByteBlock?
    @exclusivity(unchecked) private var ipcompInflater: Inflater?

    /// End of capture: close every connection (their holes become gaps) and write indexes.
    public func finish() {
        reassembler?.finish()
        flows?.finish()
        if let pool = shardPool {
            // Every shard's events run and written; then their counts are the run's, and the
            // run's sinks end as one thread's would (--diffable's lines, then -z's tables).
            pool.finish()
            for s in pool.shards { sessions?.absorb(s.manager) }
            filtering?.absorb(pool.shards.compactMap(\.sinks.filtering))
            collector?.absorb(pool.shards.compactMap(\.sinks.collector))
        }
        sink?.finish()
        export?.writeIndex()
        // NDJSON ends with a line per bound the run hit, so a reader knows what was cut.
        if options.format == .json && !options.segments && !options.follow { limitReport.json(to: out) }
        out.flush()
    }

    /// The bounds this run has run into so far, one per flag (the page's top bar).
    package var limitsHit: [LimitHit] {
        limitReport.rows.map { LimitHit(flag: $0.flag, value: $0.value, hits: $0.hits, what: $0.what) }
    }

    /// The bounds this run ran into.
    var limitReport: LimitReport {
        LimitReport(limits: options.limits, reassembly: reassembler?.stats, fragments: defragmenter.stats, sessions: sessions)
    }

    /// The summary, to stdout for `-q`, or to stderr after a live capture (as tcpdump does).
    public func printSummary(live: (received: UInt32, dropped: UInt32, ifDropped: UInt32)?, to target: OutputBuffer? = nil) {
        out.flush()
        let out = target ?? self.out
        let s = Summary(out: out)
        s.capture(capture)
        s.fragments(defragmenter)
        if let r = reassembler { s.reassembly(r.stats, options: r.options) }
        if let f = flows { s.flows(f) }
        if let m = sessions { s.protocols(m) }
        if let f = filtering, let text = options.displayFilter {
            s.line("filter \(text): \(f.matched) messages matched")
            let width = f.perMessage.map { $0.protocolName.count + $0.message.count + 1 }.max() ?? 0
            for r in f.perMessage {
                let label = r.protocolName + " " + r.message
                s.line("  " + label + String(repeating: " ", count: width - label.count) + "  \(r.count)")
            }
        }
        limitReport.text(s.line)
        if let live { s.live(live) }
        if options.verbose > 0 { s.memory() }
        out.flush()
    }
}

/// The sinks of one output, front first (`Pipeline.sinks`).
struct SinkChain {
    /// Where events enter: the filter, the statistics or the printer (a `NullSink` when nothing is printed).
    var head: MessageSink = NullSink()
    var filtering: FilteringSink?
    var statistics: StatisticsSink?
    var collector: ConnectionCollector?
}

/// Hands every stream event to several consumers in turn.
final class FanOut: StreamConsumer {
    let all: [StreamConsumer]
    init(_ all: [StreamConsumer]) { self.all = all }
    func opened(_ c: Connection, packet: PacketRef) { for x in all { x.opened(c, packet: packet) } }
    func data(_ c: Connection, _ d: Direction, _ b: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        for x in all { x.data(c, d, b, offset: offset, packet: packet) }
    }
    func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        for x in all { x.gap(c, d, offset: offset, length: length, reason: reason, packet: packet) }
    }
    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        for x in all { x.conflict(c, d, offset: offset, length: length, packet: packet) }
    }
    func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        for x in all { x.closed(c, reason: reason, packet: packet) }
    }
    func lateData(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        for x in all { x.lateData(c, d, offset: offset, length: length, packet: packet) }
    }
    func outOfWindowReset(_ c: Connection, _ d: Direction, packet: PacketRef) {
        for x in all { x.outOfWindowReset(c, d, packet: packet) }
    }
    func afterClose(_ c: Connection, _ d: Direction, length: Int, packet: PacketRef) {
        for x in all { x.afterClose(c, d, length: length, packet: packet) }
    }
}
