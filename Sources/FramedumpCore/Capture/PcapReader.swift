#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// framedump's own classic-pcap reader, for the records libpcap (1.10) cuts short: a record
/// whose captured length is above the file header's snapshot length (but within libpcap's
/// 256 KiB bound) is clamped by libpcap to the snapshot length, its other bytes skipped
/// without a word (sf-pcap.c, "read up to the snapshot length, discard the rest"), where
/// tshark hands on the whole record. When the snaplen is below libpcap's bound,
/// `PacketSource` finds the first such record (`firstRecord(over:in:)`), lets libpcap read up
/// to it and reads on with this reader from there; every file libpcap reads whole stays libpcap's.
///
/// Both byte orders, microsecond (0xa1b2c3d4) and nanosecond (0xa1b23c4d) magic, versions
/// 2.x (before 2.3 the two lengths may be swapped, as libpcap swaps them); the header's
/// LINKTYPE_ becomes libpcap's DLT_, and an NFLOG record of the other byte order has its
/// TLV headers put in host order, as libpcap does. A record's captured length is checked
/// against `maxRecord` before anything is read for it: the buffer grows only with bytes
/// actually read, never on a length's word. Anything malformed is a one-line `CaptureError`.
package final class PcapReader: RecordReader {
    /// libpcap's bound on a record (`max_snaplen_for_dlt`, 256 KiB for the link types framedump decodes).
    package static let maxRecord = 262_144
    static let headerSize = 24

    let name: String
    /// libpcap's DLT_ value for the header's LINKTYPE_.
    @exclusivity(unchecked) private(set) var linkType: Int32 = 1
    /// The header's snapshot length (0 in some writers: no bound).
    @exclusivity(unchecked) private(set) var snaplen: UInt32 = 0
    @exclusivity(unchecked) private(set) var nanosecond = false
    @exclusivity(unchecked) private(set) var swapped = false
    /// libpcap's `lengths_swapped`: 2.0-2.2 wrote len before caplen; 2.3 may have either.
    private enum Lengths { case inOrder, swapped, maybeSwapped }
    @exclusivity(unchecked) private var lengths = Lengths.inOrder

    /// The file, read as records need it.
    private let file: FileWindow
    /// The record handed out by the last `next()`, consumed at the next call.
    @exclusivity(unchecked) private(set) var pending = 0

    /// Reads the file at `path` from its header, then from `resumeAt` (a record's start) when given.
    init(path: String, resumeAt: UInt64 = 0) throws(CaptureError) {
        name = path
        file = try FileWindow(path: path, maxRecord: Self.maxRecord)
        let h = try readHeader()
        (linkType, snaplen, nanosecond, swapped, lengths) = (h.linkType, h.snaplen, h.nanosecond, h.swapped, h.lengths)
        if resumeAt > UInt64(Self.headerSize) { try file.seek(to: resumeAt) }
    }

    /// Reads bytes held in memory (the fuzz target).
    package init(bytes: UnsafeRawBufferPointer, name: String = "input") throws(CaptureError) {
        self.name = name
        file = FileWindow(bytes: bytes, name: name, maxRecord: Self.maxRecord)
        let h = try readHeader()
        (linkType, snaplen, nanosecond, swapped, lengths) = (h.linkType, h.snaplen, h.nanosecond, h.swapped, h.lengths)
    }

    private struct Header {
        var linkType: Int32, snaplen: UInt32, nanosecond: Bool, swapped: Bool, lengths: Lengths
    }

    /// The 24-byte file header, consumed.
    private func readHeader() throws(CaptureError) -> Header {
        guard try file.fill(Self.headerSize) else {
            throw .truncatedCapture(name, "pcap file header: \(file.available) of \(Self.headerSize) bytes")
        }
        let magic = file.next.loadUnaligned(as: UInt32.self)
        var h = Header(linkType: 1, snaplen: 0, nanosecond: false, swapped: false, lengths: .inOrder)
        switch magic {
        case 0xA1B2_C3D4: break
        case 0xA1B2_3C4D: h.nanosecond = true
        case 0xD4C3_B2A1: h.swapped = true
        case 0x4D3C_B2A1: h.swapped = true; h.nanosecond = true
        default: throw .notACapture(name, "not a classic pcap file (magic 0x\(String(magic, radix: 16)))")
        }
        let file = self.file, swapped = h.swapped
        func u16(_ at: Int) -> UInt16 { file.u16(at, swapped: swapped) }
        func u32(_ at: Int) -> UInt32 { file.u32(at, swapped: swapped) }
        let major = u16(4), minor = u16(6)
        guard major == 2 else { throw .notACapture(name, "pcap version \(major).\(minor)") }
        h.lengths = minor < 3 ? .swapped : minor == 3 ? .maybeSwapped : .inOrder
        h.snaplen = u32(16)
        h.linkType = PcapngReader.dlt(UInt16(truncatingIfNeeded: u32(20)))  // the upper bits: FCS length, class
        file.consume(Self.headerSize)
        return h
    }

    /// The file offset of the next unread byte.
    var offset: UInt64 { file.offset }

    @inline(__always) private func u32(_ at: Int) -> UInt32 { file.u32(at, swapped: swapped) }

    /// The next packet, nil at the end of the file; its `data` is valid until the next call.
    package func next() throws(CaptureError) -> PcapngReader.Record? {
        file.consume(pending)
        pending = 0
        guard try file.fill(16) else {
            if file.available == 0 { return nil }
            throw .truncatedCapture(name, "pcap record header at offset \(offset): \(file.available) of 16 bytes")
        }
        var caplen = u32(8), wire = u32(12)
        if lengths == .swapped || (lengths == .maybeSwapped && caplen > wire) { swap(&caplen, &wire) }
        guard caplen <= UInt32(Self.maxRecord) else {
            throw .notACapture(name, "pcap record at offset \(offset): captured length \(caplen) > maximum \(Self.maxRecord)")
        }
        let length = 16 + Int(caplen)
        guard try file.fill(length) else {
            throw .truncatedCapture(name, "pcap record at offset \(offset) is \(length) bytes, \(file.available) remain")
        }
        pending = length
        let seconds = Int64(Int32(bitPattern: u32(0)))  // libpcap's 32-bit signed tv_sec
        let frac = UInt64(u32(4))
        let ts = Timestamp(seconds: seconds, nanos: UInt32(min(nanosecond ? frac : frac * 1000, 999_999_999)))
        let data = UnsafeMutableRawBufferPointer(start: file.next + 16, count: Int(caplen))
        if swapped && linkType == 239 { Self.swapNFLOG(data) }
        return PcapngReader.Record(interface: 0, linkType: linkType, snaplen: snaplen, ts: ts,
                                   data: UnsafeRawBufferPointer(data), wireLength: max(Int(wire), Int(caplen)))
    }

    /// NFLOG's TLV lengths and types are in the capturing host's order: put them in ours
    /// (libpcap's `swap_nflog_header`, for a file of the other byte order).
    static func swapNFLOG(_ p: UnsafeMutableRawBufferPointer) {
        var at = 4  // family, version, resource id
        while at + 4 <= p.count {
            let len = p.loadUnaligned(fromByteOffset: at, as: UInt16.self).byteSwapped
            let type = p.loadUnaligned(fromByteOffset: at + 2, as: UInt16.self).byteSwapped
            p.storeBytes(of: len, toByteOffset: at, as: UInt16.self)
            p.storeBytes(of: type, toByteOffset: at + 2, as: UInt16.self)
            if len < 4 { return }
            at += (Int(len) + 3) & ~3
        }
    }

    /// The file offset of the first record whose captured length is above `snaplen` (the one
    /// libpcap would cut first), nil when none is, or when the file is damaged before one
    /// (libpcap then says so itself). Reads the record headers once, sequentially.
    static func firstRecord(over snaplen: UInt32, in path: String) -> UInt64? {
        guard let r = try? PcapReader(path: path) else { return nil }
        while true {
            let at = r.offset + UInt64(r.pending)
            guard let rec = try? r.next() else { return nil }
            if rec.data.count > Int(snaplen) { return at }
        }
    }

    /// Does the file begin with a classic pcap magic (either byte order, micro or nano)? Four bytes are read.
    static func isPcap(_ path: String) -> Bool {
        let fd = RawPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var magic: UInt32 = 0
        guard read(fd, &magic, 4) == 4 else { return false }
        return [0xA1B2_C3D4, 0xA1B2_3C4D, 0xD4C3_B2A1, 0x4D3C_B2A1].contains(magic)
    }
}
