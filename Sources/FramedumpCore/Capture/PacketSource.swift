import CPcap
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How to open a capture: a file (or "-" for standard input) or a live interface.
public enum CaptureInput: Sendable {
    case file(String)
    case live(LiveOptions)
}

public struct LiveOptions: Sendable {
    public var interface: String
    public var snaplen: Int32 = 262_144
    /// The kernel's capture buffer. tcpdump's 2 MiB holds about 20 ms of a busy loopback; a
    /// game server flushing a tick to many clients, on a host whose cores the server itself
    /// keeps busy, bursts for longer than the capture process may wait to be scheduled. 32 MiB
    /// (about 0.3 s at 100 MB/s) measured no loss where 2 MiB lost packets (docs/performance.md, "Live load").
    public static let defaultBufferKiB: Int32 = 32 * 1024
    public var bufferKiB: Int32? = LiveOptions.defaultBufferKiB
    public var promiscuous = true
    public var immediate = false
    public init(interface: String) { self.interface = interface }
}

/// libpcap's handle: every packet framedump sees is read through it, except in the pcapng
/// files libpcap refuses (several link types or snapshot lengths, a section header of another
/// version, a packet longer than its snaplen, a section of the other byte order): those are
/// read by `PcapngReader`, from where libpcap stopped, with BPF filters still libpcap's; and
/// in the classic pcap files where libpcap cuts a record longer than the header's snaplen
/// down to the snaplen: `PcapReader` reads on from the start of that record.
public final class PacketSource: PacketInput {
    /// libpcap's handle; nil when libpcap refused the file at once (its pcapng version).
    let handle: OpaquePointer?
    /// The first interface's link type (the only one, when libpcap reads the whole file).
    public let linkType: Int32
    public let isLive: Bool
    public var captureFiles: [String] { isLive || name == "-" ? [] : [name] }
    let name: String
    @exclusivity(unchecked) private var packetCount: UInt64 = 0
    /// framedump's own reader (pcapng or pcap), once libpcap has refused or cut the file.
    @exclusivity(unchecked) private var reader: RecordReader?
    /// The first packet, read while opening with our reader (to learn the first link type).
    @exclusivity(unchecked) private var peeked: PcapngReader.Record?
    /// What libpcap said when it refused the file, or the record it would have cut (nil while
    /// libpcap reads it all).
    @exclusivity(unchecked) public private(set) var handedOver: String?
    /// A classic pcap file libpcap would cut a record of (not standard input): the file
    /// offset of the next record, counted from what libpcap hands on (`libpcapLoop`).
    @exclusivity(unchecked) private var pcapOffset: UInt64 = 24
    /// The offset of the first record libpcap would cut: our reader reads from there on.
    @exclusivity(unchecked) private var cutAt = UInt64.max
    /// The file's snapshot length, for a classic pcap file with a record above it;
    /// `UInt32.max` otherwise.
    @exclusivity(unchecked) private var clampedCaplen = UInt32.max
    /// The BPF filter, run here rather than inside libpcap on a classic pcap file: libpcap
    /// would skip the records the filter rejects, and the record offsets need every one.
    /// (`pcap_offline_filter` is the same interpreter libpcap runs on the same header.)
    @exclusivity(unchecked) private var ownFilter: UnsafeMutablePointer<bpf_program>?
    /// The link types of the packets read so far, in order of appearance.
    @exclusivity(unchecked) public private(set) var linkTypesSeen: [Int32] = []
    /// The BPF filter, when our reader reads or a classic pcap file is read record by record
    /// (compiled per link type: `PacketFilter`).
    @exclusivity(unchecked) private var filter: PacketFilter?
    /// libpcap has handed out its last packet (the end, `stop()`, or a hand-over to our reader).
    @exclusivity(unchecked) private var libpcapDone = false
    /// Set by `stop()` (from a signal handler too): our reader's loop returns.
    private let stopFlag: UnsafeMutablePointer<sig_atomic_t> = {
        let p = UnsafeMutablePointer<sig_atomic_t>.allocate(capacity: 1)
        p.initialize(to: 0)
        return p
    }()
    /// The file ended inside a record while another process still had it open for writing:
    /// what was whole has been read, and that is the end (see `GrowingFile`).
    @exclusivity(unchecked) public private(set) var endedWhileBeingWritten = false

    public init(_ input: CaptureInput) throws(CaptureError) {
        var err = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        switch input {
        case .file(let path):
            name = path
            isLive = false
            if path != "-" { try Self.checkReadable(path) }
            let opened = RawPath.withCString(path) { pcap_open_offline_with_tstamp_precision($0, UInt32(PCAP_TSTAMP_PRECISION_NANO), &err) }
            guard let h = opened else {
                let why = String(cChars: err)
                // A pcapng file libpcap refuses from its first block (its version): our reader.
                if path != "-" && !why.contains("truncated") && PcapngReader.isPcapng(path) {
                    let r = try PcapngReader(path: path)
                    peeked = try r.next()
                    reader = r
                    handedOver = why
                    handle = nil
                    linkType = peeked?.linkType ?? r.interfaces.first?.linkType ?? 1
                    return
                }
                // A classic pcap file of a 2.x version libpcap does not know (2.5): our reader,
                // as tshark reads it. A file it cannot read either keeps libpcap's words.
                if path != "-" && why.contains("savefile version") && PcapReader.isPcap(path),
                   let r = try? PcapReader(path: path) {
                    peeked = try r.next()
                    reader = r
                    handedOver = why
                    handle = nil
                    linkType = r.linkType
                    return
                }
                if why.contains("No such file") { throw .noSuchFile(path) }
                // libpcap's words for a file that ends before its first header byte (stdin too).
                if why.contains("only got 0") { throw .emptyFile(path) }
                if why.contains("truncated") { throw .truncatedCapture(path, why) }
                if why.contains("Permission denied") { throw .cannotReadFile(path, "permission denied") }
                throw .notACapture(path, why)
            }
            handle = h
            // A classic pcap file: libpcap cuts a record above the snaplen to the snaplen (and
            // skips its other bytes). Under libpcap's own bound (262144, as a snaplen of 0 or
            // more becomes) no record can be cut: nothing to look for. Below it, the record
            // headers are read once to find the first record above the snaplen.
            let snap = UInt32(clamping: pcap_snapshot(h))
            if path != "-" && snap < 262_144 && PcapReader.isPcap(path),
               let at = PcapReader.firstRecord(over: snap, in: path) {
                clampedCaplen = snap
                cutAt = at
            }
        case .live(let o):
            name = o.interface
            isLive = true
            guard let h = pcap_create(o.interface, &err) else {
                throw .liveOpenFailed(o.interface, String(cChars: err))
            }
            pcap_set_snaplen(h, o.snaplen)
            pcap_set_promisc(h, o.promiscuous ? 1 : 0)
            pcap_set_timeout(h, 200)
            if let kib = o.bufferKiB { pcap_set_buffer_size(h, kib * 1024) }
            if o.immediate { pcap_set_immediate_mode(h, 1) }
            _ = pcap_set_tstamp_precision(h, Int32(PCAP_TSTAMP_PRECISION_NANO))
            let rc = pcap_activate(h)
            if rc < 0 {
                let why = String(cString: pcap_geterr(h))
                pcap_close(h)
                switch rc {
                case PCAP_ERROR_NO_SUCH_DEVICE: throw .noSuchInterface(o.interface)
                case PCAP_ERROR_PERM_DENIED: throw .permissionDenied(o.interface, why)
                default:
                    if why.contains("No such device") { throw .noSuchInterface(o.interface) }
                    throw .liveOpenFailed(o.interface, why)
                }
            }
            handle = h
        }
        linkType = pcap_datalink(handle!)
        linkTypesSeen = [linkType]
    }

    deinit {
        if let handle { pcap_close(handle) }
        stopFlag.deallocate()
    }

    /// tcpdump's line when a live capture starts: `listening on lo, link-type EN10MB
    /// (Ethernet), snapshot length 262144 bytes` (libpcap's names for the link type).
    public var listeningLine: String? {
        guard isLive, let handle else { return nil }
        let lt = pcap_datalink_val_to_name(linkType).map { String(cString: $0) } ?? String(linkType)
        let what = pcap_datalink_val_to_description(linkType).map { " (" + String(cString: $0) + ")" } ?? ""
        return "listening on \(name), link-type \(lt)\(what), snapshot length \(pcap_snapshot(handle)) bytes"
    }

    /// What is wrong with a capture path before libpcap is asked: missing, not readable, a
    /// folder, or empty each have their own message and exit code.
    static func checkReadable(_ path: String) throws(CaptureError) {
        var st = stat()
        guard RawPath.withCString(path, { stat($0, &st) }) == 0 else {
            if errno == EACCES { throw .cannotReadFile(path, "permission denied") }
            throw .noSuchFile(path)
        }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw .cannotReadFile(path, "it is a folder") }
        let fd = RawPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else {
            throw .cannotReadFile(path, errno == EACCES ? "permission denied" : String(cString: strerror(errno)))
        }
        close(fd)
        if (st.st_mode & S_IFMT) == S_IFREG && st.st_size == 0 { throw .emptyFile(path) }
    }

    /// Compiles a BPF filter with libpcap and installs it. (Our reader's packets are filtered
    /// by the same expression compiled for each one's link type.)
    public func setFilter(_ expression: String) throws(CaptureError) {
        let f = PacketFilter(expression, mainLinkType: linkType)
        filter = f
        guard let handle, reader == nil else {
            try f.check(linkType)
            return
        }
        if clampedCaplen != UInt32.max {
            if !PacketFilter.isPKTAP(linkType) {
                ownFilter = try f.program(for: linkType)
                return
            }
            clampedCaplen = UInt32.max  // (PKTAP filtered by libpcap: records it cuts stay cut)
        }
        var prog = bpf_program()
        if pcap_compile(handle, &prog, expression, 1, PCAP_NETMASK_UNKNOWN) != 0 {
            throw .badFilter(expression, String(cString: pcap_geterr(handle)))
        }
        defer { pcap_freecode(&prog) }
        if pcap_setfilter(handle, &prog) != 0 {
            throw .badFilter(expression, String(cString: pcap_geterr(handle)))
        }
    }

    /// Reads packets until the end, `limit` packets, or `stop()`; the closure returns false to stop.
    public func forEach(limit: UInt64? = nil, _ body: (Packet) -> Bool) throws(CaptureError) {
        while true {
            if let limit, packetCount >= limit { return }
            guard let p = try next() else { return }
            if !body(p) { return }
        }
    }

    /// The next packet, numbered in this capture; nil at the end or after `stop()`. Its
    /// `data` is valid until the next call (a merge holds one packet of each file this way).
    @inline(__always)
    public func next() throws(CaptureError) -> Packet? {
        if !libpcapDone, let handle {
            if let p = try libpcapNext(handle) { return p }
            libpcapDone = true
        }
        guard let reader else { return nil }
        return try readerNext(reader)
    }

    /// Our reader's next packet, after libpcap's (or from the start).
    private func readerNext(_ reader: RecordReader) throws(CaptureError) -> Packet? {
        while true {
            if stopFlag.pointee != 0 { return nil }
            let next: PcapngReader.Record?
            if let p = peeked {
                next = p
                peeked = nil
            } else {
                do { next = try reader.next() } catch {
                    if case .truncatedCapture = error, GrowingFile.hasWriter(name) == true {
                        endedWhileBeingWritten = true
                        return nil
                    }
                    throw error
                }
            }
            guard let r = next else { return nil }
            if let filter, try !filter.passes(r.data, wireLength: r.wireLength, linkType: r.linkType) { continue }
            packetCount += 1
            if !linkTypesSeen.contains(r.linkType) { linkTypesSeen.append(r.linkType) }
            return Packet(ref: PacketRef(number: packetCount, ts: r.ts), data: r.data, wireLength: r.wireLength, linkType: r.linkType)
        }
    }

    /// libpcap's next packet; nil when libpcap is done: at the end, or when it refuses the
    /// rest of a pcapng file or would cut a classic pcap record (our reader is then set up
    /// to read on from there).
    @inline(__always)
    private func libpcapNext(_ handle: OpaquePointer) throws(CaptureError) -> Packet? {
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        while true {
            let rc = pcap_next_ex(handle, &header, &data)
            switch rc {
            case 1:
                guard let h = header?.pointee, let d = data else { continue }
                // The first record libpcap cut: our reader reads on from its start.
                if pcapOffset == cutAt {
                    try handOver(at: cutAt, why: nil)
                    return nil
                }
                pcapOffset &+= 16 &+ UInt64(h.caplen)
                if let ownFilter, pcap_offline_filter(ownFilter, header, d) == 0 { continue }
                packetCount += 1
                let ts = Timestamp(seconds: Int64(h.ts.tv_sec), nanos: UInt32(clamping: h.ts.tv_usec))
                let buf = UnsafeRawBufferPointer(start: d, count: Int(h.caplen))
                return Packet(ref: PacketRef(number: packetCount, ts: ts), data: buf, wireLength: Int(h.len), linkType: linkType)
            case 0:
                continue  // live read timeout: nothing arrived yet
            case PCAP_ERROR_BREAK:
                return nil
            default:
                let why = String(cString: pcap_geterr(handle))
                // libpcap refuses the rest of a pcapng file (another link type or snaplen, a
                // packet beyond the snaplen, a section of the other byte order): our reader
                // reads on from the end of the block libpcap stopped at. Cut-off files stay libpcap's.
                if !isLive && name != "-" && !why.contains("truncated") && PcapngReader.isPcapng(name),
                   let file = pcap_file(handle) {
                    let at = ftell(file)
                    if at >= 0 {
                        try handOver(at: UInt64(at), why: why)
                        return nil
                    }
                }
                if !isLive && why.contains("truncated") {
                    if name != "-" && GrowingFile.hasWriter(name) == true {
                        endedWhileBeingWritten = true
                        return nil
                    }
                    throw .truncatedCapture(name, why)
                }
                throw .readFailedIn(name == "-" ? "standard input" : name, why)
            }
        }
    }

    /// Our reader takes over from libpcap at file offset `at`: a classic pcap record libpcap
    /// would cut (`why` nil), or the rest of a pcapng file libpcap refused (`why`, its words).
    private func handOver(at: UInt64, why: String?) throws(CaptureError) {
        if let why {
            handedOver = why
            reader = try PcapngReader(path: name, resumeAt: at)
            return
        }
        let r = try PcapReader(path: name, resumeAt: at)
        peeked = try r.next()
        let caplen = peeked?.data.count ?? 0
        handedOver = "a record at offset \(at) of \(caplen) captured bytes, bigger than the snaplen of \(clampedCaplen): libpcap keeps its first \(clampedCaplen)"
        reader = r
    }

    /// Whether `stop` was called.
    public var stopped: Bool { stopFlag.pointee != 0 }

    /// Asks a running `forEach` to return; safe to call from a signal handler.
    public func stop() {
        stopFlag.pointee = 1
        if let handle { pcap_breakloop(handle) }
    }

    /// The kernel's counts for a live capture: (received, dropped by kernel, dropped by interface).
    public func statistics() -> (received: UInt32, dropped: UInt32, ifDropped: UInt32)? {
        guard isLive, let handle else { return nil }
        var s = pcap_stat()
        guard pcap_stats(handle, &s) == 0 else { return nil }
        return (s.ps_recv, s.ps_drop, s.ps_ifdrop)
    }

    /// The capture interfaces, in libpcap's order (`-D` numbers them from 1, `-i N` takes that number).
    public static func interfaces() throws(CaptureError) -> [CaptureInterface] {
        var err = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        var list: UnsafeMutablePointer<pcap_if_t>?
        guard pcap_findalldevs(&list, &err) == 0 else { throw .readFailed(String(cChars: err)) }
        defer { pcap_freealldevs(list) }
        var out: [CaptureInterface] = []
        var cur = list
        while let d = cur {
            out.append(CaptureInterface(number: out.count + 1, name: String(cString: d.pointee.name),
                                        description: d.pointee.description.map { String(cString: $0) },
                                        flags: d.pointee.flags))
            cur = d.pointee.next
        }
        return out
    }

    /// `-i 3`: a number names the interface `-D` lists with it, unless an interface has that name.
    public static func interfaceName(_ argument: String) throws(CaptureError) -> String {
        guard let n = Int(argument), n > 0 else { return argument }
        let all = try interfaces()
        if all.contains(where: { $0.name == argument }) { return argument }
        guard n <= all.count else { throw .noSuchInterface(argument) }
        return all[n - 1].name
    }

    /// The snapshot length the capture declares (libpcap's bound when it does not say).
    public var snaplen: Int32 { handle.map { pcap_snapshot($0) } ?? 262_144 }

    /// Opens libpcap's dumper for `-w`: writes packets in this source's (first) link type.
    /// A pcap file holds one link type: a packet of another stops the run (`PacketDumper.accepts`).
    public func openDumper(_ path: String) throws(CaptureError) -> PacketDumper {
        guard let handle else { return try PacketDumper.create(path: path, linkType: linkType) }
        guard let d = RawPath.withCString(path, { pcap_dump_open(handle, $0) }) else {
            throw .dumpOpenFailed(path, String(cString: pcap_geterr(handle)))
        }
        return PacketDumper(d, path: path, linkType: linkType)
    }
}

/// libpcap's savefile writer.
public final class PacketDumper {
    let dumper: OpaquePointer
    /// A dead handle that only describes the file (for captures we generate ourselves).
    let deadHandle: OpaquePointer?
    let path: String
    /// The file's one link type.
    public let linkType: Int32

    init(_ d: OpaquePointer, dead: OpaquePointer? = nil, path: String, linkType: Int32) {
        dumper = d
        deadHandle = dead
        self.path = path
        self.linkType = linkType
    }

    /// nil when `p` can be written here; else why not (a packet of another link type, from
    /// a pcapng file with several: libpcap's pcap writer holds one link type per file).
    public func refusal(_ p: Packet) -> CaptureError? {
        guard p.linkType >= 0, p.linkType != linkType else { return nil }
        func named(_ t: Int32) -> String {
            pcap_datalink_val_to_name(t).map { "\(t) (\(String(cString: $0)))" } ?? "\(t)"
        }
        return .dumpOpenFailed(path, "packet \(p.ref.number) has link type \(named(p.linkType)), the file being written has \(named(linkType)): a pcap file holds one link type (the packets before it are written)")
    }

    deinit {
        pcap_dump_close(dumper)
        if let deadHandle { pcap_close(deadHandle) }
    }

    /// A new capture file of the given link type, written by libpcap (nanosecond timestamps).
    public static func create(path: String, linkType: Int32, snaplen: Int32 = 262_144) throws(CaptureError) -> PacketDumper {
        guard let h = pcap_open_dead_with_tstamp_precision(linkType, snaplen, UInt32(PCAP_TSTAMP_PRECISION_NANO)) else {
            throw .dumpOpenFailed(path, "pcap_open_dead failed")
        }
        guard let d = pcap_dump_open(h, path) else {
            let why = String(cString: pcap_geterr(h))
            pcap_close(h)
            throw .dumpOpenFailed(path, why)
        }
        return PacketDumper(d, dead: h, path: path, linkType: linkType)
    }

    public func write(_ p: Packet) {
        var h = pcap_pkthdr()
        h.ts.tv_sec = Int(p.ref.ts.seconds)
        // The handle was opened in nanosecond precision, so the dumper expects nanoseconds too.
        h.ts.tv_usec = Int(p.ref.ts.nanos)
        h.caplen = UInt32(p.data.count)
        h.len = UInt32(p.wireLength)
        withUnsafePointer(to: &h) { hp in
            pcap_dump(UnsafeMutableRawPointer(dumper).assumingMemoryBound(to: UInt8.self), hp,
                      p.data.bindMemory(to: UInt8.self).baseAddress)
        }
    }

    public func flush() { pcap_dump_flush(dumper) }

    /// A write failed (for `-w -`: the reader closed the pipe).
    public var failed: Bool { ferror(pcap_dump_file(dumper)) != 0 }
}

/// One line of `-D`: number, name, description and libpcap's status flags.
public struct CaptureInterface: Sendable {
    public var number: Int
    public var name: String
    public var description: String?
    public var flags: UInt32

    /// As `tcpdump -D` prints it: `1.eth0 [Up, Running, Connected]`.
    public var line: String {
        var s = "\(number).\(name)"
        if let description { s += " (\(description))" }
        guard flags != 0 else { return s }
        var words: [String] = []
        if flags & UInt32(PCAP_IF_UP) != 0 { words.append("Up") }
        if flags & UInt32(PCAP_IF_RUNNING) != 0 { words.append("Running") }
        if flags & UInt32(PCAP_IF_LOOPBACK) != 0 { words.append("Loopback") }
        let wireless = flags & UInt32(PCAP_IF_WIRELESS) != 0
        if wireless { words.append("Wireless") }
        var status = words.isEmpty ? "none" : words.joined(separator: ", ")
        switch flags & UInt32(PCAP_IF_CONNECTION_STATUS) {
        case UInt32(PCAP_IF_CONNECTION_STATUS_UNKNOWN): status += wireless ? ", Association status unknown" : ", Connection status unknown"
        case UInt32(PCAP_IF_CONNECTION_STATUS_CONNECTED): status += wireless ? ", Associated" : ", Connected"
        case UInt32(PCAP_IF_CONNECTION_STATUS_DISCONNECTED): status += wireless ? ", Not associated" : ", Disconnected"
        default: break
        }
        return s + " [\(status)]"
    }
}
