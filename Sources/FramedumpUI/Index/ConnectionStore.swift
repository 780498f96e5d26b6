import FramedumpCore

/// The one copy of every connection's record. An open connection's record changes with each
/// message, so it is held in memory; once it closes it is written to a file of its own (created
/// and unlinked as the spill is) and memory keeps 12 bytes of it: where it is and its length in
/// 8, a hash of its `client-server` key in 4. A million short connections then cost 12 MB, not
/// a record each (a capture of 1M connections once peaked at 1.59 GB). Used under
/// `MessageIndex`'s lock.
final class ConnectionStore {
    private let file: Spill
    /// Records of connections not closed yet (and of closed ones changed since: written again
    /// at the next `put`).
    private var open: [Int: ConnectionRecord] = [:]
    /// Per connection: where its record is in `file` (the offset above `lengthBits`, the length
    /// below), or `inMemory` while it is in `open`.
    private var places = ChunkedArray<UInt64>()
    /// Per connection: `keyHash` of its key, so a lookup by key reads only the records that may match.
    private var keyHashes = ChunkedArray<UInt32>()

    static let inMemory = UInt64.max
    /// A record is at most 16 × 64 KiB of notes and four 64 KiB texts: within 2²⁴ bytes. The
    /// file's offsets then have 40 bits (1 TiB).
    static let lengthBits: UInt64 = 24

    init() throws { file = try Spill() }

    var count: Int { places.count }

    /// A batch's new and changed records; the closed ones go to the file.
    func put(_ changed: [Int: ConnectionRecord]) {
        for i in changed.keys.sorted() {
            let r = changed[i]!
            while places.count <= i {
                places.append(Self.inMemory)
                keyHashes.append(0)
            }
            keyHashes[i] = Self.keyHash(r.client, r.server)
            let bytes = r.closed == nil ? [] : r.encoded()
            if r.closed == nil || bytes.count >= 1 << Self.lengthBits || file.position >= 1 << (64 - Self.lengthBits) {
                open[i] = r
                places[i] = Self.inMemory
            } else {
                open[i] = nil
                places[i] = file.position << Self.lengthBits | UInt64(bytes.count)
                file.out.write(bytes)
            }
        }
        file.out.flush()
    }

    func get(_ i: Int) -> ConnectionRecord? {
        guard i >= 0, i < places.count else { return nil }
        let at = places[i]
        if at == Self.inMemory { return open[i] }
        return ConnectionRecord(decoding: file.read(offset: at >> Self.lengthBits, count: Int(at & (1 << Self.lengthBits - 1))))
    }

    /// The connection whose key (`client-server`) is `key`: a pass over 4 bytes a connection,
    /// reading back only those whose hash matches.
    func find(key: String) -> Int? {
        guard let dash = Self.split(key) else { return nil }
        let h = Self.keyHash(dash.client, dash.server)
        for i in keyHashes.indices where keyHashes[i] == h {
            if let r = get(i), r.client == dash.client, r.server == dash.server { return i }
        }
        return nil
    }

    /// `client-server` into its two endpoints' texts (an IPv6 endpoint is bracketed: the dash
    /// between them is the one after the first endpoint's port).
    static func split(_ key: String) -> (client: String, server: String)? {
        var at = key.startIndex
        if key.hasPrefix("[") {
            guard let close = key.firstIndex(of: "]") else { return nil }
            at = close
        }
        guard let dash = key[at...].firstIndex(of: "-") else { return nil }
        return (String(key[..<dash]), String(key[key.index(after: dash)...]))
    }

    /// FNV-1a over `client-server`'s bytes.
    static func keyHash(_ client: String, _ server: String) -> UInt32 {
        var h: UInt32 = 2_166_136_261
        for b in client.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        h = (h ^ 0x2d) &* 16_777_619
        for b in server.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return h
    }
}

/// A record as bytes in the connections' file, and back: fixed fields little-endian, then its
/// texts length-prefixed. Read back with every length checked against the bytes.
extension ConnectionRecord {
    func encoded() -> [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(96)
        func u64(_ x: UInt64) { withUnsafeBytes(of: x.littleEndian) { b.append(contentsOf: $0) } }
        func text(_ s: String) {
            let u = Array(s.utf8.prefix(Int(UInt16.max)))
            b.append(UInt8(u.count & 0xff))
            b.append(UInt8(u.count >> 8))
            b.append(contentsOf: u)
        }
        u64(number)
        u64(first.bitPattern)
        u64(last.bitPattern)
        u64(UInt64(messages.c2s))
        u64(UInt64(messages.s2c))
        u64(bytes.c2s)
        u64(bytes.s2c)
        u64(UInt64(gaps))
        u64(UInt64(malformed))
        u64(UInt64(warnings))
        b.append((udp ? 1 : 0) | (midStream ? 2 : 0) | (closed != nil ? 4 : 0))
        text(client)
        text(server)
        text(protocolName)
        text(closed ?? "")
        b.append(UInt8(min(notes.count, Self.maxNotes)))
        for n in notes.prefix(Self.maxNotes) { text(n) }
        return b
    }

    init?(decoding b: [UInt8]) {
        var at = 0
        func u64() -> UInt64? {
            guard at + 8 <= b.count else { return nil }
            var x: UInt64 = 0
            for k in 0..<8 { x |= UInt64(b[at + k]) << (8 * UInt64(k)) }
            at += 8
            return x
        }
        func byte() -> UInt8? {
            guard at < b.count else { return nil }
            at += 1
            return b[at - 1]
        }
        func text() -> String? {
            guard let lo = byte(), let hi = byte() else { return nil }
            let n = Int(lo) | Int(hi) << 8
            guard at + n <= b.count else { return nil }
            at += n
            return String(decoding: b[(at - n)..<at], as: UTF8.self)
        }
        guard let number = u64(), let first = u64(), let last = u64(), let m0 = u64(), let m1 = u64(),
              let b0 = u64(), let b1 = u64(), let gaps = u64(), let malformed = u64(), let warnings = u64(),
              let flags = byte(), let client = text(), let server = text(), let proto = text(), let closed = text(),
              let noteCount = byte()
        else { return nil }
        self.init(number: number, client: client, server: server, protocolName: proto, udp: flags & 1 != 0,
                  midStream: flags & 2 != 0, first: Double(bitPattern: first), last: Double(bitPattern: last))
        messages = (Int(truncatingIfNeeded: m0), Int(truncatingIfNeeded: m1))
        bytes = (b0, b1)
        self.gaps = Int(truncatingIfNeeded: gaps)
        self.malformed = Int(truncatingIfNeeded: malformed)
        self.warnings = Int(truncatingIfNeeded: warnings)
        self.closed = flags & 4 != 0 ? closed : nil
        for _ in 0..<noteCount {
            guard let n = text() else { return nil }
            notes.append(n)
        }
    }
}
