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
    /// (about 0.3 s at 100 MB/s) measured no loss where 2 MiB lost packets (README, "Live load").
    public static let defaultBufferKiB: Int32 = 32 * 1024
    public var bufferKiB: Int32? = LiveOptions.defaultBufferKiB
    public var promiscuous = true
    public var immediate = false
    public init(interface: String) { self.interface = interface }
}

/// libpcap's handle: every packet framedump sees is read through it.
public final class PacketSource {
    let handle: OpaquePointer
    public let linkType: Int32
    public let isLive: Bool
    let name: String
    private var packetCount: UInt64 = 0
    /// The file ended inside a record while another process still had it open for writing:
    /// what was whole has been read, and that is the end (see `GrowingFile`).
    public private(set) var endedWhileBeingWritten = false

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
                if why.contains("No such file") { throw .noSuchFile(path) }
                // libpcap's words for a file that ends before its first header byte (stdin too).
                if why.contains("only got 0") { throw .emptyFile(path) }
                if why.contains("truncated") { throw .truncatedCapture(path, why) }
                if why.contains("Permission denied") { throw .cannotReadFile(path, "permission denied") }
                throw .notACapture(path, why)
            }
            handle = h
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
        linkType = pcap_datalink(handle)
    }

    deinit { pcap_close(handle) }

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

    /// Compiles a BPF filter with libpcap and installs it.
    public func setFilter(_ expression: String) throws(CaptureError) {
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
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        while true {
            if let limit, packetCount >= limit { return }
            let rc = pcap_next_ex(handle, &header, &data)
            switch rc {
            case 1:
                guard let h = header?.pointee, let d = data else { continue }
                packetCount += 1
                let ts = Timestamp(seconds: Int64(h.ts.tv_sec), nanos: UInt32(clamping: h.ts.tv_usec))
                let buf = UnsafeRawBufferPointer(start: d, count: Int(h.caplen))
                let p = Packet(ref: PacketRef(number: packetCount, ts: ts), data: buf, wireLength: Int(h.len))
                if !body(p) { return }
            case 0:
                continue  // live read timeout: nothing arrived yet
            case PCAP_ERROR_BREAK:
                return
            default:
                let why = String(cString: pcap_geterr(handle))
                if !isLive && why.contains("truncated") {
                    if name != "-" && GrowingFile.hasWriter(name) == true {
                        endedWhileBeingWritten = true
                        return
                    }
                    throw .truncatedCapture(name, why)
                }
                throw .readFailedIn(name == "-" ? "standard input" : name, why)
            }
        }
    }

    /// Asks a running `forEach` to return; safe to call from a signal handler.
    public func stop() { pcap_breakloop(handle) }

    /// The kernel's counts for a live capture: (received, dropped by kernel, dropped by interface).
    public func statistics() -> (received: UInt32, dropped: UInt32, ifDropped: UInt32)? {
        guard isLive else { return nil }
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

    /// Opens libpcap's dumper for `-w`: writes packets in this source's link type.
    public func openDumper(_ path: String) throws(CaptureError) -> PacketDumper {
        guard let d = RawPath.withCString(path, { pcap_dump_open(handle, $0) }) else {
            throw .dumpOpenFailed(path, String(cString: pcap_geterr(handle)))
        }
        return PacketDumper(d)
    }
}

/// libpcap's savefile writer.
public final class PacketDumper {
    let dumper: OpaquePointer
    /// A dead handle that only describes the file (for captures we generate ourselves).
    let deadHandle: OpaquePointer?

    init(_ d: OpaquePointer, dead: OpaquePointer? = nil) {
        dumper = d
        deadHandle = dead
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
        return PacketDumper(d, dead: h)
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
