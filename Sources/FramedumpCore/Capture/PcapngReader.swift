#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// framedump's own pcapng reader, for the files libpcap (1.10) refuses or cuts short; every
/// file libpcap reads is read by libpcap (`PacketSource` hands over to this reader only
/// when libpcap has refused a pcapng file, from the point where libpcap stopped):
///
/// - interfaces of different link types or snapshot lengths in one file ("an interface has
///   a type N different from the type of the first interface": macOS `tcpdump -i pktap`,
///   Wireshark's multi-interface captures); each packet carries its interface's link type;
/// - section headers of another version than 1.0 and 1.2 ("unsupported pcapng savefile
///   version 2.0"): any 1.x and 2.x is read as 1.0 is;
/// - packets longer than their interface's snapshot length ("invalid packet capture length
///   N, bigger than snaplen of M"): the whole packet is handed on, as tshark does;
/// - sections of the other byte order after the first ("pcapng block size N > maximum").
///
/// Blocks: Section Header (both byte orders, any number of sections), Interface Description
/// (if_tsresol, if_tsoffset), Enhanced, Simple and Obsolete Packet; every other block is
/// skipped. The file is read through a buffer that grows only with bytes actually read,
/// up to `maxBlock`: a length field is checked against that bound and never allocated on
/// its word. Anything malformed is a one-line `CaptureError`.
package final class PcapngReader: RecordReader {
    /// One interface of the current section.
    package struct Interface {
        /// libpcap's DLT_ value for the file's LINKTYPE_ (they differ for raw IP: 101 → 12).
        var linkType: Int32
        var snaplen: UInt32
        /// Timestamp units per second, and how a fraction of a second becomes nanoseconds.
        var unitsPerSecond: UInt64 = 1_000_000
        var resolution = Resolution.decimal(6)
        var offsetSeconds: Int64 = 0
    }

    enum Resolution: Equatable {
        case decimal(Int)  // 10^-n s, n ≤ 19
        case binary(Int)   // 2^-n s, n ≤ 63
    }

    /// One packet: `data` is borrowed, valid until the next call to `next()`.
    package struct Record {
        package var interface: Int
        package var linkType: Int32
        var snaplen: UInt32
        var ts: Timestamp
        package var data: UnsafeRawBufferPointer
        var wireLength: Int
    }

    /// No block is longer than this (libpcap's limit is 16 MiB for most link types).
    static let maxBlock = 64 << 20
    /// Interfaces one section may describe.
    static let maxInterfaces = 1 << 16

    let name: String
    /// The file, read as blocks need it.
    private let file: FileWindow
    /// The block handed out by the last `next()`, consumed at the next call.
    @exclusivity(unchecked) private var pending = 0
    @exclusivity(unchecked) private var sectionSeen = false
    @exclusivity(unchecked) private var swapped = false
    @exclusivity(unchecked) package private(set) var interfaces: [Interface] = []
    /// Packet blocks ending before this file offset were read by libpcap already.
    private let resumeAt: UInt64
    /// Whether Decryption Secrets Blocks are kept (`tlsSecrets(path:)`), and what they held.
    private var collectSecrets = false
    private(set) var tlsSecrets: [[UInt8]] = []
    private var secretBytes = 0
    /// All the secrets of one file together, at most (a real key log is kilobytes).
    static let maxSecretBytes = 256 << 20

    /// The TLS key logs of every Decryption Secrets Block in a pcapng file, read to its end
    /// (or to the first damage, which the run itself reports); none for any other file.
    package static func tlsSecrets(path: String) -> [[UInt8]] {
        guard isPcapng(path), let r = try? PcapngReader(path: path) else { return [] }
        r.collectSecrets = true
        while (try? r.next()) != nil {}
        return r.tlsSecrets
    }

    /// Reads the file at `path` (a regular file, opened here).
    init(path: String, resumeAt: UInt64 = 0) throws(CaptureError) {
        name = path
        self.resumeAt = resumeAt
        file = try FileWindow(path: path, maxRecord: Self.maxBlock)
    }

    /// Reads bytes held in memory (the fuzz target).
    package init(bytes: UnsafeRawBufferPointer, name: String = "input") {
        self.name = name
        resumeAt = 0
        file = FileWindow(bytes: bytes, name: name, maxRecord: Self.maxBlock)
    }

    /// The file offset of the next unread byte.
    var offset: UInt64 { file.offset }

    @inline(__always) private func u16(_ at: Int) -> UInt16 { file.u16(at, swapped: swapped) }
    @inline(__always) private func u32(_ at: Int) -> UInt32 { file.u32(at, swapped: swapped) }

    private func bad(_ why: String) -> CaptureError {
        .notACapture(name, "pcapng block at offset \(offset): \(why)")
    }

    /// The next packet, nil at the end of the file.
    package func next() throws(CaptureError) -> Record? {
        while true {
            file.consume(pending)
            pending = 0
            guard try file.fill(8) else {
                if file.available == 0 { return nil }
                throw .truncatedCapture(name, "pcapng block header at offset \(offset): \(file.available) of 8 bytes")
            }
            let rawType = file.next.loadUnaligned(as: UInt32.self)
            if rawType == 0x0A0D0D0A {
                // A Section Header: its byte-order magic says how to read it and its section.
                guard try file.fill(12) else { throw .truncatedCapture(name, "section header at offset \(offset): cut off") }
                switch (file.next + 8).loadUnaligned(as: UInt32.self) {
                case 0x1A2B3C4D: swapped = false
                case 0x4D3C2B1A: swapped = true
                default: throw bad("a section header without the byte-order magic")
                }
            } else if !sectionSeen {
                throw .notACapture(name, "not pcapng: it does not begin with a section header")
            }
            let type = u32(0)
            let length = Int(u32(4))
            guard length >= 12, length % 4 == 0 else { throw bad("block length \(length) (at least 12, a multiple of 4)") }
            guard length <= Self.maxBlock else { throw bad("block length \(length) > maximum \(Self.maxBlock)") }
            guard try file.fill(length) else {
                throw .truncatedCapture(name, "pcapng block at offset \(offset) is \(length) bytes, \(file.available) remain")
            }
            guard Int(u32(length - 4)) == length else {
                throw bad("its trailing length \(u32(length - 4)) differs from its length \(length)")
            }
            pending = length
            let body = length - 12  // between the 8-byte header and the trailing length
            switch type {
            case 0x0A0D0D0A:
                guard body >= 16 else { throw bad("section header of \(length) bytes") }
                let major = u16(12), minor = u16(14)
                guard major == 1 || major == 2 else { throw .notACapture(name, "pcapng version \(major).\(minor)") }
                sectionSeen = true
                interfaces = []
            case 1:
                guard body >= 8 else { throw bad("interface description of \(length) bytes") }
                guard interfaces.count < Self.maxInterfaces else { throw bad("more than \(Self.maxInterfaces) interfaces in a section") }
                var i = Interface(linkType: Self.dlt(u16(8)), snaplen: u32(12))
                try interfaceOptions(&i, from: 16, to: 8 + body)
                interfaces.append(i)
            case 6, 2:
                guard body >= 20 else { throw bad("packet block of \(length) bytes") }
                let iface = type == 6 ? Int(u32(8)) : Int(u16(8))
                let caplen = Int(u32(20)), wire = Int(u32(24))
                guard iface < interfaces.count else {
                    throw bad("a packet on interface \(iface), but the section describes \(interfaces.count)")
                }
                guard caplen <= body - 20 else { throw bad("captured length \(caplen) > the block's \(body - 20) bytes of data") }
                if offset + UInt64(length) < resumeAt { continue }
                let units = UInt64(u32(12)) << 32 | UInt64(u32(16))
                return record(iface, ts: timestamp(units, interfaces[iface]), at: 28, caplen: caplen, wire: max(wire, caplen))
            case 3:
                guard body >= 4 else { throw bad("simple packet block of \(length) bytes") }
                guard let first = interfaces.first else { throw bad("a simple packet block, but the section describes no interface") }
                let wire = Int(u32(8))
                var caplen = min(wire, body - 4)
                if first.snaplen != 0 { caplen = min(caplen, Int(first.snaplen)) }
                if offset + UInt64(length) < resumeAt { continue }
                return record(0, ts: Timestamp(seconds: 0, nanos: 0), at: 12, caplen: caplen, wire: wire)
            case 10 where collectSecrets:
                // A Decryption Secrets Block: secrets type, length, the secrets. "TLSK": the
                // text of an NSS key log (what `editcap --inject-secrets tls,FILE` writes).
                guard body >= 8 else { continue }
                let kind = u32(8), count = Int(u32(12))
                guard kind == 0x544C_534B, count <= body - 8, secretBytes + count <= Self.maxSecretBytes else { continue }
                secretBytes += count
                tlsSecrets.append(Array(UnsafeRawBufferPointer(start: file.next + 16, count: count)))
            default:
                continue  // name resolution, statistics, custom, decryption secrets...: not packets
            }
        }
    }

    private func record(_ iface: Int, ts: Timestamp, at: Int, caplen: Int, wire: Int) -> Record {
        let i = interfaces[iface]
        return Record(interface: iface, linkType: i.linkType, snaplen: i.snaplen, ts: ts,
                      data: UnsafeRawBufferPointer(start: file.next + at, count: caplen), wireLength: wire)
    }

    /// if_tsresol (9) and if_tsoffset (14); the other options are skipped.
    private func interfaceOptions(_ i: inout Interface, from start: Int, to end: Int) throws(CaptureError) {
        var at = start
        while at + 4 <= end {
            let code = u16(at), len = Int(u16(at + 2))
            if code == 0 { return }
            let value = at + 4
            guard value + len <= end else { throw bad("an interface option of \(len) bytes runs past its block") }
            switch code {
            case 9 where len >= 1:
                let r = (file.next + value).load(as: UInt8.self)
                if r & 0x80 != 0 {
                    let n = Int(r & 0x7f)
                    guard n <= 63 else { throw bad("timestamp resolution 2^-\(n)") }
                    i.resolution = .binary(n)
                    i.unitsPerSecond = 1 << UInt64(n)
                } else {
                    let n = Int(r)
                    guard n <= 19 else { throw bad("timestamp resolution 10^-\(n)") }
                    i.resolution = .decimal(n)
                    var u: UInt64 = 1
                    for _ in 0..<n { u *= 10 }
                    i.unitsPerSecond = u
                }
            case 14 where len >= 8:
                let v = (file.next + value).loadUnaligned(as: UInt64.self)
                i.offsetSeconds = Int64(bitPattern: swapped ? v.byteSwapped : v)
            default: break
            }
            at = value + (len + 3) & ~3
        }
    }

    /// Units since 1970 in the interface's resolution, plus its offset (wrapping, as libpcap's
    /// time_t arithmetic does: a crafted file may stamp anything).
    func timestamp(_ units: UInt64, _ i: Interface) -> Timestamp {
        let seconds = Int64(truncatingIfNeeded: units / i.unitsPerSecond) &+ i.offsetSeconds
        let frac = units % i.unitsPerSecond
        let nanos: UInt64
        switch i.resolution {
        case .decimal(let n) where n <= 9:
            var m: UInt64 = 1
            for _ in 0..<(9 - n) { m *= 10 }
            nanos = frac * m
        case .decimal(let n):
            var d: UInt64 = 1
            for _ in 0..<(n - 9) { d *= 10 }
            nanos = frac / d
        case .binary(let n):
            // frac · 10^9 / 2^n, without overflow.
            let (high, low) = frac.multipliedFullWidth(by: 1_000_000_000)
            nanos = n == 0 ? 0 : n == 64 ? high : (high << (64 - n)) | (low >> n)
        }
        return Timestamp(seconds: seconds, nanos: UInt32(min(nanos, 999_999_999)))
    }

    /// LINKTYPE_ (the file's) to DLT_ (libpcap's, which `LinkDecoder` and BPF take), as
    /// libpcap's `linktype_to_dlt` maps them on this system.
    static func dlt(_ linktype: UInt16) -> Int32 {
        switch linktype {
        case 100: return 11  // ATM RFC 1483
        case 101: return 12  // raw IP
        case 102: return 15  // BSD/OS SLIP
        case 103: return 16  // BSD/OS PPP
        case 106: return 19  // ATM CLIP
        default: return Int32(linktype)
        }
    }

    /// Does the file begin as pcapng (a Section Header Block)? Four bytes are read.
    static func isPcapng(_ path: String) -> Bool {
        let fd = RawPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var magic: UInt32 = 0
        return read(fd, &magic, 4) == 4 && magic == 0x0A0D0D0A
    }
}

/// framedump's own readers (`PcapngReader`, `PcapReader`), as `PacketSource` reads on with them.
protocol RecordReader: AnyObject {
    /// The next packet, nil at the end of the file; its `data` is valid until the next call.
    func next() throws(CaptureError) -> PcapngReader.Record?
}
