import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fuzz entry (`scripts/fuzz.sh pcap`): the bytes as a classic pcap file, read by `PcapReader`
/// in memory (each packet decoded by the file's link type), then as a file through
/// `PacketSource`: libpcap first, our reader from the first record libpcap cuts to the
/// snaplen, with a BPF filter. Every outcome is a packet or a `CaptureError`: no trap, no hang.
public enum FuzzPcap {
    static let path: String = {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return dir + "/framedump-fuzz-\(getpid()).pcap"
    }()

    public static func run(_ data: UnsafeRawBufferPointer) {
        if let reader = try? PcapReader(bytes: data) {
            var packets = 0
            while let r = try? reader.next() {
                precondition(r.data.count <= data.count - 40 && r.data.count <= PcapReader.maxRecord, "a packet beyond its file")
                _ = LinkDecoder(linkType: r.linkType).decode(r.data)
                packets += 1
                precondition(packets <= data.count / 16, "more packets than records")
            }
        }

        guard FuzzFile.save(data, to: path) else { return }
        defer { unlink(path) }
        for filter in [nil, "tcp port 8000 or udp"] {
            guard let source = try? PacketSource(.file(path)) else { return }
            if let filter, (try? source.setFilter(filter)) == nil { return }
            try? source.forEach { p in
                precondition(p.data.count <= data.count, "a packet beyond its file")
                _ = LinkDecoder(linkType: p.linkType).decode(p.data)
                return true
            }
        }
    }
}
