import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fuzz entry (`scripts/fuzz.sh pcapng`): the bytes as a pcapng file, read by `PcapngReader`
/// in memory (each packet decoded by its interface's link type), then as a file through
/// `PacketSource`: libpcap first, our reader from where libpcap refuses, with a BPF filter
/// compiled per link type; and the TLS key logs of its Decryption Secrets Blocks. Every outcome
/// is a packet or a `CaptureError`: no trap, no hang.
public enum FuzzPcapng {
    static let path: String = {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return dir + "/framedump-fuzz-\(getpid()).pcapng"
    }()

    public static func run(_ data: UnsafeRawBufferPointer) {
        let reader = PcapngReader(bytes: data)
        var packets = 0
        while let r = try? reader.next() {
            precondition(r.data.count <= data.count && r.interface < reader.interfaces.count, "a packet beyond its file")
            _ = LinkDecoder(linkType: r.linkType).decode(r.data)
            packets += 1
            precondition(packets <= data.count / 12, "more packets than blocks")
        }

        guard FuzzFile.save(data, to: path) else { return }
        defer { unlink(path) }
        // Decryption Secrets Blocks: what they hold is bounded by the file, and is key log text.
        let secrets = PcapngReader.tlsSecrets(path: path)
        precondition(secrets.reduce(0) { $0 + $1.count } <= data.count, "secrets beyond their file")
        let log = TLSKeyLog(lines: [])
        for text in secrets { for line in text.split(separator: 0x0a) { log.add(Array(line)) } }
        for filter in [nil, "tcp port 8000 or udp"] {
            guard let source = try? PacketSource(.file(path)) else { return }
            if let filter, (try? source.setFilter(filter)) == nil { return }
            try? source.forEach { p in
                _ = LinkDecoder(linkType: p.linkType).decode(p.data)
                return true
            }
        }
    }
}
