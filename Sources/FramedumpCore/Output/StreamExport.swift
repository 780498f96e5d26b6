#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--streams DIR`: each connection's two directions as files holding exactly the
/// reassembled bytes, like tcpflow, plus `DIR/index.json` listing gaps and open/close.
public final class StreamExport: StreamConsumer {
    final class Entry {
        let connection: Connection
        let base: String
        var buffers: [[UInt8]] = [[], []]
        var written: [UInt64] = [0, 0]
        var gaps: [(Direction, UInt64, UInt64, UInt64, GapReason)] = []
        /// Bytes that came after their gap was reported, and RSTs ignored as out of window.
        var late: [(Direction, UInt64, UInt64)] = []
        var ignoredResets = 0
        var closeReason: CloseReason?
        var closedAt: PacketRef?
        init(_ c: Connection, base: String) { connection = c; self.base = base }
    }

    let dir: String
    var entries: [Entry] = []
    var usedNames: Set<String> = []
    public private(set) var error: String?
    let flushThreshold = 1 << 14

    public init(directory: String) throws(CaptureError) {
        dir = directory
        if RawPath.withCString(directory, { mkdir($0, 0o755) }) != 0 && errno != EEXIST {
            throw .dumpOpenFailed(directory, String(cString: strerror(errno)))
        }
    }

    /// IPv6 colons are not safe in every file system: `::1` becomes `__1`.
    static func safe(_ e: Endpoint) -> String {
        String(e.address.text.map { $0 == ":" ? "_" : $0 }) + "." + String(e.port)
    }

    public func opened(_ c: Connection, packet: PacketRef) {
        var base = Self.safe(c.client) + "-" + Self.safe(c.server)
        if usedNames.contains(base) {
            // The same 4-tuple again (port reuse): number the later ones.
            var n = 2
            while usedNames.contains("\(base)_\(n)") { n += 1 }
            base = "\(base)_\(n)"
        }
        usedNames.insert(base)
        // Fresh files for this run.
        for d in Direction.allCases { unlink("\(dir)/\(base).\(d.name)") }
        let e = Entry(c, base: base)
        entries.append(e)
        c.exportEntry = e
    }

    public func data(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        guard let e = c.exportEntry as? Entry else { return }
        e.buffers[d.rawValue].append(contentsOf: bytes)
        if e.buffers[d.rawValue].count >= flushThreshold { flush(e, d) }
    }

    public func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        guard let e = c.exportEntry as? Entry else { return }
        let fileOffset = e.written[d.rawValue] + UInt64(e.buffers[d.rawValue].count)
        e.gaps.append((d, offset, fileOffset, length, reason))
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}

    public func lateData(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        guard let e = c.exportEntry as? Entry, e.late.count < 1000 else { return }
        e.late.append((d, offset, length))
    }

    public func outOfWindowReset(_ c: Connection, _ d: Direction, packet: PacketRef) {
        (c.exportEntry as? Entry)?.ignoredResets += 1
    }

    public func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        guard let e = c.exportEntry as? Entry else { return }
        for d in Direction.allCases { flush(e, d) }
        e.closeReason = reason
        e.closedAt = packet
        e.buffers = [[], []]
        c.exportEntry = nil
    }

    func flush(_ e: Entry, _ d: Direction) {
        let buf = e.buffers[d.rawValue]
        let path = "\(dir)/\(e.base).\(d.name)"
        // Both files exist for every connection, even when one direction is empty.
        guard let f = RawPath.withCString(path, { fopen($0, "ab") }) else {
            error = "\(path): \(String(cString: strerror(errno)))"
            return
        }
        if !buf.isEmpty { _ = buf.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) } }
        fclose(f)
        e.written[d.rawValue] += UInt64(buf.count)
        e.buffers[d.rawValue].removeAll(keepingCapacity: true)
    }

    /// Writes `index.json`: one object per connection, in order of first appearance.
    public func writeIndex() {
        let out = OutputBuffer(fd: nil)
        out.write("[\n")
        for (i, e) in entries.enumerated() {
            let c = e.connection
            out.write("  {\"conn\": ")
            JSONText.string(c.name, to: out)
            out.write(", \"number\": "); out.decimal(c.number)
            out.write(", \"files\": {\"c2s\": "); JSONText.string(e.base + ".c2s", to: out)
            out.write(", \"s2c\": "); JSONText.string(e.base + ".s2c", to: out)
            out.write("}, \"bytes\": {\"c2s\": "); out.decimal(e.written[0])
            out.write(", \"s2c\": "); out.decimal(e.written[1])
            out.write("}, \"opened\": "); JSONText.timestamp(c.firstPacket.ts, to: out)
            out.write(", \"roles_from_syn\": "); out.write(c.rolesFromSYN ? "true" : "false")
            if c.udp { out.write(", \"transport\": \"udp\"") }
            out.write(", \"closed\": ")
            if let t = e.closedAt { JSONText.timestamp(t.ts, to: out) } else { out.write("null") }
            out.write(", \"close_reason\": ")
            if let r = e.closeReason { JSONText.string(r.rawValue, to: out) } else { out.write("null") }
            out.write(", \"gaps\": [")
            for (j, g) in e.gaps.enumerated() {
                if j > 0 { out.write(", ") }
                out.write("{\"dir\": \""); out.write(g.0.name)
                out.write("\", \"stream_offset\": "); out.decimal(g.1)
                out.write(", \"file_offset\": "); out.decimal(g.2)
                out.write(", \"length\": "); out.decimal(g.3)
                out.write(", \"reason\": \""); out.write(g.4.rawValue); out.write("\"}")
            }
            out.write("]")
            // Only when there are any (the index of an ordinary capture is unchanged).
            if !e.late.isEmpty {
                out.write(", \"late\": [")
                for (j, l) in e.late.enumerated() {
                    if j > 0 { out.write(", ") }
                    out.write("{\"dir\": \""); out.write(l.0.name)
                    out.write("\", \"stream_offset\": "); out.decimal(l.1)
                    out.write(", \"length\": "); out.decimal(l.2); out.write("}")
                }
                out.write("]")
            }
            if e.ignoredResets > 0 { out.write(", \"out_of_window_resets\": "); out.decimal(UInt64(e.ignoredResets)) }
            out.write("}")
            out.write(i + 1 < entries.count ? ",\n" : "\n")
        }
        out.write("]\n")
        let path = "\(dir)/index.json"
        guard let f = RawPath.withCString(path, { fopen($0, "wb") }) else {
            error = "\(path): \(String(cString: strerror(errno)))"
            return
        }
        _ = out.bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }
}
