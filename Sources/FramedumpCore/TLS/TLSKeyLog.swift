import Foundation

/// The secrets of an NSS key log (`SSLKEYLOGFILE`), by client random: what browsers, curl,
/// OpenSSL's `-keylogfile`, Python's `keylog_filename`, Go's `KeyLogWriter` and Android hooks
/// write, one `LABEL <client random hex> <secret hex>` a line. Labels it does not use
/// (EXPORTER_SECRET, CLIENT_EARLY_TRAFFIC_SECRET, a later generation's secret) are passed over;
/// lines it cannot read are counted, never fatal.
///
/// One per run, shared by every shard's TLS connections (a lookup takes a lock: it happens once
/// per handshake). Each file is opened once and kept open; a miss reads on only if the file grew
/// (a live capture's app may have just written the line), so a capture whose key log lacks most
/// connections costs one seek to the file's end a miss, not an open and a read.
public final class TLSKeyLog: @unchecked Sendable {
    /// The secrets logged for one connection.
    struct Secrets {
        /// TLS 1.2 and earlier: the 48-byte master secret (`CLIENT_RANDOM`).
        var master: [UInt8]?
        /// TLS 1.3: the handshake and first application traffic secrets.
        var clientHandshake: [UInt8]?
        var serverHandshake: [UInt8]?
        var clientTraffic: [UInt8]?
        var serverTraffic: [UInt8]?
    }

    public let paths: [String]
    private(set) var secrets: [[UInt8]: Secrets] = [:]
    /// Lines that were not `LABEL HEX HEX` with a 32-byte random (comments and blanks aside).
    public private(set) var unreadableLines = 0
    /// Where each file was read to (a live capture reads on as apps append keys).
    private var readTo: [UInt64]
    /// Each file, open for the run (closed with the key log).
    private var handles: [FileHandle?]
    /// Lookups come from every shard's thread.
    private let lock = NSLock()
    /// A partial last line, kept until its newline arrives.
    private var partial: [[UInt8]]
    /// The capture files read this run: a pcapng file may carry key logs in Decryption
    /// Secrets Blocks. They are read at the first miss (a capture without TLS, or whose every
    /// connection the key log files cover, is never read twice), each once.
    private var captures: [String] = []
    private var capturesRead = 0
    /// Connections whose secrets came from the captures.
    public private(set) var fromCaptures = 0

    /// A key log larger than this is refused (no real one comes near it).
    static let maxFileBytes: UInt64 = 256 << 20

    public init(paths: [String]) throws(TLSKeyLogError) {
        self.paths = paths
        readTo = Array(repeating: 0, count: paths.count)
        partial = Array(repeating: [], count: paths.count)
        handles = Array(repeating: nil, count: paths.count)
        for i in paths.indices {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: paths[i], isDirectory: &isDirectory) else {
                throw TLSKeyLogError(message: "\(paths[i]): no such TLS key log")
            }
            guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: paths[i]) else {
                throw TLSKeyLogError(message: "\(paths[i]): cannot read the TLS key log")
            }
            handles[i] = FileHandle(forReadingAtPath: paths[i])
            readMore(i)
        }
    }

    /// A key log from text lines (tests, the fuzz target): no file behind it.
    package init(lines: [String]) {
        paths = []
        readTo = []
        partial = []
        handles = []
        for l in lines { add(Array(l.utf8)) }
    }

    /// The secrets for `clientRandom`; on a miss, the files are read on from where they ended
    /// (a live capture: the app may have written the line just now), and the captures not yet
    /// read are searched for secrets.
    func lookup(_ clientRandom: [UInt8]) -> Secrets? {
        lock.lock()
        defer { lock.unlock() }
        if let s = secrets[clientRandom] { return s }
        for i in paths.indices { readMore(i) }
        while capturesRead < captures.count {
            let before = secrets.count
            for text in PcapngReader.tlsSecrets(path: captures[capturesRead]) {
                for line in text.split(separator: 0x0a, omittingEmptySubsequences: true) { add(Array(line)) }
            }
            fromCaptures += secrets.count - before
            capturesRead += 1
        }
        return secrets[clientRandom]
    }

    /// The capture files of the run (regular files; pcapng ones may hold secrets).
    public func readCaptures(_ files: [String]) {
        lock.lock()
        defer { lock.unlock() }
        for f in files where !captures.contains(f) && PcapngReader.isPcapng(f) { captures.append(f) }
    }

    /// Where secrets can come from: a key log file, or a pcapng capture that may hold some.
    var hasSources: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !paths.isEmpty || !secrets.isEmpty || !captures.isEmpty
    }

    /// Where a client random was looked for, for the note on a connection not decrypted.
    var searched: String {
        paths.isEmpty ? "in the capture's Decryption Secrets Blocks (and no key log given: --tls-keylog FILE)" : "in the key log"
    }

    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return secrets.count
    }

    deinit { for h in handles { try? h?.close() } }

    /// Reads file `i` on from where it ended, if it grew.
    private func readMore(_ i: Int) {
        guard let h = handles[i] else { return }
        guard let end = try? h.seekToEnd(), end > readTo[i], end <= Self.maxFileBytes else { return }
        guard (try? h.seek(toOffset: readTo[i])) != nil, let data = try? h.readToEnd() else { return }
        readTo[i] += UInt64(data.count)
        var line = partial[i]
        partial[i] = []
        for b in data {
            if b == 0x0a { add(line); line.removeAll(keepingCapacity: true) } else { line.append(b) }
        }
        partial[i] = line
    }

    /// Reads one line of text (also used by the fuzz target).
    package func add(_ raw: [UInt8]) {
        var line = raw
        while let last = line.last, last == 0x0d || last == 0x20 || last == 0x09 { line.removeLast() }
        guard let first = line.first(where: { $0 != 0x20 && $0 != 0x09 }), first != 0x23 else { return }  // blank, '#'
        let parts = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
        // OpenSSL's RSA lines (an encrypted premaster's first 8 bytes, the premaster): the
        // CLIENT_RANDOM line of the same connection is what decrypts it.
        if parts.count == 3, parts[0].elementsEqual("RSA".utf8) { return }
        guard parts.count == 3, let random = Self.hex(parts[1]), random.count == 32,
              let secret = Self.hex(parts[2]), !secret.isEmpty, secret.count <= 64 else {
            unreadableLines += 1
            return
        }
        var s = secrets[random] ?? Secrets()
        switch String(decoding: parts[0], as: UTF8.self) {
        case "CLIENT_RANDOM": s.master = secret
        case "CLIENT_HANDSHAKE_TRAFFIC_SECRET": s.clientHandshake = secret
        case "SERVER_HANDSHAKE_TRAFFIC_SECRET": s.serverHandshake = secret
        case "CLIENT_TRAFFIC_SECRET_0": s.clientTraffic = secret
        case "SERVER_TRAFFIC_SECRET_0": s.serverTraffic = secret
        default: return
        }
        secrets[random] = s
    }

    static func hex(_ s: ArraySlice<UInt8>) -> [UInt8]? {
        guard s.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(s.count / 2)
        var i = s.startIndex
        while i < s.endIndex {
            guard let h = ProtoLexer.hexValue(s[i]), let l = ProtoLexer.hexValue(s[i + 1]) else { return nil }
            out.append(UInt8(h << 4 | l))
            i += 2
        }
        return out
    }
}

/// A key log that cannot be opened (the command line says so and exits).
public struct TLSKeyLogError: Error, Sendable {
    public let message: String
}
