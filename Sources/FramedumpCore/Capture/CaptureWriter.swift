#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// tcpdump's `-C`, `-G` and `-W`: when `-w` starts a new file, and what it names it.
public struct Rotation: Sendable, Equatable {
    /// `-C`: before a packet is written, a file already larger than this many bytes is closed
    /// and the next one opened (so a file passes the size by at most one packet, as tcpdump's).
    public var fileSize: UInt64?
    /// `-G`: a new file when a packet comes this many seconds (packet time) or more after the
    /// packet that opened the current window; the `-w` name goes through strftime(3).
    public var seconds: Int64?
    /// `-W`: with `-C` a ring of this many files (the oldest overwritten); with `-G` alone,
    /// the run stops when a packet would open one more file.
    public var files: Int?

    public init(fileSize: UInt64? = nil, seconds: Int64? = nil, files: Int? = nil) {
        self.fileSize = fileSize
        self.seconds = seconds
        self.files = files
    }

    /// The digits a `-W` count numbers files with (tcpdump's: enough for COUNT-1; 0 for 1).
    var digits: Int {
        guard let files else { return 0 }
        var x = files - 1, c = 0
        while x > 0 { c += 1; x /= 10 }
        return c
    }

    /// tcpdump's file name: the `-w` name (through strftime with `-G`, at `time`), then the
    /// count, zero-padded to `digits` (the first file of a window has no number unless `-W`
    /// asks for digits; without `-C` there is no number at all).
    func name(_ template: String, count: Int, time: Int64) throws(CaptureError) -> String {
        var base = template
        if seconds != nil { base = try Self.formatTime(template, time) }
        guard fileSize != nil, count != 0 || digits != 0 else { return base }
        let n = String(count)
        return base + String(repeating: "0", count: max(0, digits - n.count)) + n
    }

    /// The name with strftime's conversions done in local time (as tcpdump's `-G`).
    static func formatTime(_ template: String, _ time: Int64) throws(CaptureError) -> String {
        var t = time_t(time)
        var parts = tm()
        guard localtime_r(&t, &parts) != nil else { throw .dumpOpenFailed(template, "cannot convert time \(time) to local time") }
        var buf = [CChar](repeating: 0, count: 4097)
        let n = buf.withUnsafeMutableBufferPointer { b in
            RawPath.withCString(template) { strftime(b.baseAddress!, 4096, $0, &parts) }
        }
        // strftime says 0 both for an empty result and for one that does not fit: the
        // template is not empty, so 0 is the second.
        guard n > 0 else { throw .dumpOpenFailed(template, "the name after strftime is longer than 4096 bytes") }
        return buf.withUnsafeBufferPointer { RawPath.decode($0.baseAddress!) }
    }
}

/// `-w`: the packets written through libpcap's dumper, into one file or, with a `Rotation`,
/// into the files tcpdump would make of them.
public final class CaptureWriter {
    /// Opens one file (libpcap's `pcap_dump_open` on the input's handle, or a dead handle).
    public typealias Opener = (String) throws(CaptureError) -> PacketDumper

    let template: String
    let rotation: Rotation?
    let open: Opener
    @exclusivity(unchecked) private var current: PacketDumper?
    /// Bytes in the current file: libpcap's 24-byte file header, then 16 bytes and the
    /// captured bytes per packet (what tcpdump's `pcap_dump_ftell64` would say).
    @exclusivity(unchecked) private var size: UInt64 = 24
    /// The `-C` count within the current `-G` window (tcpdump's Cflag_count).
    @exclusivity(unchecked) private var count = 0
    /// Packets written, over every file.
    @exclusivity(unchecked) public private(set) var written = 0
    /// When the current `-G` window began (packet time, seconds), and how many windows began.
    @exclusivity(unchecked) private var windowStart: Int64 = 0
    @exclusivity(unchecked) private var windows = 0
    /// Every file opened, in order (a ring's names come again).
    @exclusivity(unchecked) public private(set) var opened: [String] = []
    /// `-G` with `-W`: a packet would have opened one file more, and the run stopped there.
    @exclusivity(unchecked) public private(set) var reachedFileLimit = false

    /// Opens the first file now, unless its name depends on the first packet's time (`-G`).
    public init(path: String, rotation: Rotation? = nil, open: @escaping Opener) throws(CaptureError) {
        template = path
        self.rotation = rotation
        self.open = open
        if rotation?.seconds == nil { try start(try name(count: 0, time: 0)) }
    }

    private func name(count: Int, time: Int64) throws(CaptureError) -> String {
        guard let rotation else { return template }
        return try rotation.name(template, count: count, time: time)
    }

    private func start(_ path: String) throws(CaptureError) {
        current = nil  // the file before is closed before the next opens (a ring may reuse its name)
        current = try open(path)
        opened.append(path)
        size = 24
    }

    /// nil when `p` can be written; else why not (a packet of another link type).
    public func refusal(_ p: Packet) -> CaptureError? { current?.refusal(p) }

    /// Writes a packet, starting a new file first when the rotation says; false when `-G`
    /// with `-W` has made its last file (the packet is not written, the run should stop).
    @inline(__always)
    public func write(_ p: Packet) throws(CaptureError) -> Bool {
        if let rotation {
            guard try rotate(p, rotation) else { return false }
            written += 1
            return true
        }
        current!.write(p)
        written += 1
        return true
    }

    private func rotate(_ p: Packet, _ r: Rotation) throws(CaptureError) -> Bool {
        let t = p.ref.ts.seconds
        if current == nil {
            windowStart = t
            try start(try name(count: 0, time: t))
        } else if let g = r.seconds, p.ref.ts.seconds(since: Timestamp(seconds: windowStart, nanos: 0)) >= g {
            windows += 1
            if r.fileSize == nil, let w = r.files, windows >= w {
                reachedFileLimit = true
                return false
            }
            windowStart = t
            count = 0
            try start(try name(count: 0, time: t))
        }
        if let c = r.fileSize, size > c {
            count += 1
            if let w = r.files, count >= w { count = 0 }
            try start(try name(count: count, time: windowStart))
        }
        current!.write(p)
        size &+= 16 &+ UInt64(p.data.count)
        return true
    }

    /// The end of the run: with `-G`, a run that wrote nothing still leaves its file (named
    /// by the clock, as tcpdump names its first one).
    public func finish() throws(CaptureError) {
        if current == nil { try start(try name(count: 0, time: Int64(time(nil)))) }
        current?.flush()
    }

    public func flush() { current?.flush() }

    /// A write failed (for `-w -`: the reader closed the pipe).
    public var failed: Bool { current?.failed ?? false }
}
