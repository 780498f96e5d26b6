import Foundation

/// One direction of a TLS connection, as the bottom of its stack: cuts the TCP stream into
/// records (across and within segments), decrypts them, reads the handshake messages among
/// them, and hands application data to the layer above. A record is copied only when it
/// spans chunks; a record's plaintext is one buffer (swift-crypto's).
final class TLSStream: StreamLayer {
    unowned(unsafe) let owner: TLSConnection
    let dir: Direction
    @exclusivity(unchecked) private(set) var started = false
    /// The current protection (nil: plaintext so far, or no keys) and, in TLS 1.3, the
    /// application keys that follow this side's Finished.
    @exclusivity(unchecked) var keys: TLSRecordKeys?
    @exclusivity(unchecked) var next: TLSRecordKeys?
    /// Offset of the plaintext handed up so far.
    @exclusivity(unchecked) var plainOffset: UInt64 = 0
    /// A record that spans chunks: its bytes so far.
    @exclusivity(unchecked) private var pending: [UInt8] = []
    /// The stream offset the next chunk should start at.
    @exclusivity(unchecked) private var expected: UInt64 = 0
    /// Handshake messages that span records.
    @exclusivity(unchecked) private var handshake: [UInt8] = []
    @exclusivity(unchecked) private var handshakeSkip = 0
    /// Record alignment lost (a gap, a record that is not TLS): the rest is passed over.
    @exclusivity(unchecked) private var lost = false
    @exclusivity(unchecked) private var keyUpdateAfterRecord = false
    /// Records seen this direction (the current one's number, from 1).
    @exclusivity(unchecked) private(set) var recordNumber: UInt64 = 0
    /// The last application-data records handed up: where each one's plaintext starts and its
    /// number, oldest first, so a frame's first byte finds its record.
    @exclusivity(unchecked) private var recent: [(plainStart: UInt64, number: UInt64)] = []
    @exclusivity(unchecked) private var recentCount = 0
    static let recentRecords = 128

    /// The records a frame whose plaintext starts at `from` came from, as it is cut (its last
    /// byte is in the record being handed up); first 0: older than the records kept.
    func records(from: UInt64) -> (first: UInt64, last: UInt64) {
        // Newest first: a frame usually starts in the current record or the one before.
        var i = recentCount - 1
        while i >= 0 && recentCount - i <= Self.recentRecords {
            let r = recent[i % Self.recentRecords]
            if r.plainStart <= from { return (r.number, recordNumber) }
            i -= 1
        }
        return (0, recordNumber)
    }

    /// After a gap: looking for the next record (see `realign`).
    @exclusivity(unchecked) private var realigning = false
    /// Where a record's sealed box is laid out for decryption.
    @exclusivity(unchecked) private var scratch: [UInt8] = []
    /// Records from here on are protected (TLS 1.2: after ChangeCipherSpec; TLS 1.3: after
    /// the ServerHello), whether or not there are keys for them.
    @exclusivity(unchecked) var protected = false
    /// TLS compression (RFC 3749 DEFLATE), from this side's ChangeCipherSpec on; the plaintext
    /// of a record is inflated into `inflated` (at most 2^14 bytes, RFC 5246 §6.2.2).
    @exclusivity(unchecked) var inflater: Inflater?
    private lazy var inflated = ByteBlock(capacity: 1 << 14)

    init(owner: TLSConnection, dir: Direction) {
        self.owner = owner
        self.dir = dir
    }

    func start(atBoundary: Bool) { started = true }

    func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        if owner.client == nil && !owner.reported && !owner.connection.startsAtSYN(dir) {
            owner.midStream(packet: packet)
        }
        expected = offset + UInt64(bytes.count)
        if lost { return }
        var b = bytes
        if realigning {
            // Held until a record that decrypts is found in it; then read on from there.
            held.append(contentsOf: b)
            guard let at = realign(packet: packet) else { return }
            let rest = held
            held = []
            if at > 0 { owner.lose(dir, length: UInt64(at), packet: packet) }
            return rest.withUnsafeBytes { data(UnsafeRawBufferPointer(rebasing: $0[at...]), offset: expected - UInt64($0.count - at), packet: packet) }
        }
        if !pending.isEmpty {
            // Complete the record held from earlier chunks.
            // (The header first, then the body its length asks for.)
            while pendingNeed() > 0 && !b.isEmpty {
                let take = min(pendingNeed(), b.count)
                pending.append(contentsOf: b[0..<take])
                b = UnsafeRawBufferPointer(rebasing: b[take...])
                checkPending(packet)
                if lost { return }
            }
            if pendingNeed() > 0 { return }
            let whole = pending
            pending.removeAll(keepingCapacity: true)
            whole.withUnsafeBytes { record($0, packet: packet) }
            if lost { return }
        }
        while b.count >= TLSRecordLayer.headerSize {
            let length = Int(b[3]) << 8 | Int(b[4])
            guard Self.plausible(b[0], b[1], length) else { return lose(b.count, packet: packet, why: "not a TLS record header") }
            let size = TLSRecordLayer.headerSize + length
            guard b.count >= size else { break }
            record(UnsafeRawBufferPointer(rebasing: b[0..<size]), packet: packet)
            if lost { return }
            b = UnsafeRawBufferPointer(rebasing: b[size...])
        }
        if !b.isEmpty {
            pending.append(contentsOf: b)
            checkPending(packet)
        }
    }

    /// Bytes still missing from the record held.
    private func pendingNeed() -> Int {
        guard pending.count >= TLSRecordLayer.headerSize else { return TLSRecordLayer.headerSize - pending.count }
        let length = Int(pending[3]) << 8 | Int(pending[4])
        return max(0, TLSRecordLayer.headerSize + length - pending.count)
    }

    private func checkPending(_ packet: PacketRef) {
        guard pending.count >= TLSRecordLayer.headerSize else { return }
        let length = Int(pending[3]) << 8 | Int(pending[4])
        if !Self.plausible(pending[0], pending[1], length) {
            let n = pending.count
            pending.removeAll()
            lose(n, packet: packet, why: "not a TLS record header")
        }
    }

    /// Whether a chunk picked up mid-stream starts with TLS records: an SSL 3.0 to TLS 1.3 header
    /// (application data, handshake or alert) whose record ends at the chunk's end or at
    /// another such header, or an application-data record running past the chunk.
    static func looksLikeRecords(_ b: UnsafeRawBufferPointer) -> Bool {
        guard b.count >= 5, (21...23).contains(b[0]), b[1] == 3, b[2] <= 3 else { return false }
        let length = Int(b[3]) << 8 | Int(b[4])
        guard length > 0, length <= TLSRecordLayer.maxRecord else { return false }
        let end = 5 + length
        if end == b.count { return true }
        if end > b.count { return b[0] == 23 }
        return end + 3 <= b.count && (20...23).contains(b[end]) && b[end + 1] == 3 && b[end + 2] == b[2]
    }

    /// A record header framedump will read: a known content type, version 3.x, a length
    /// within the limit (a longer one is malformed, never an allocation).
    static func plausible(_ type: UInt8, _ major: UInt8, _ length: Int) -> Bool {
        (20...24).contains(type) && major == 3 && length <= TLSRecordLayer.maxRecord
    }

    func gap(offset: UInt64, length: UInt64, packet: PacketRef) {
        expected = offset + length
        pending.removeAll()
        handshake.removeAll()
        handshakeSkip = 0
        // The records resume somewhere in what comes next: found again by their headers and
        // by a record that decrypts (its sequence number unknown: the ones lost in the gap).
        if realigning {
            // Still looking after an earlier gap: what was held is lost with this one.
            owner.lose(dir, length: UInt64(held.count), packet: packet)
            held.removeAll()
            scanFrom = 0
        }
        if !lost {
            if keys != nil {
                realigning = true
            } else {
                // During the handshake: the secrets' order cannot be followed on.
                lost = true
                owner.manager.alignmentLost += 1
            }
        }
        owner.lose(dir, length: length, packet: packet)
    }

    func finish(packet: PacketRef, captureEnded: Bool) {
        if realigning {
            if !held.isEmpty { owner.lose(dir, length: UInt64(held.count), packet: packet) }
            held = []
            owner.manager.alignmentLost += 1
        }
        owner.finish(dir, packet: packet, captureEnded: captureEnded)
    }

    /// The rest of the direction cannot be read as records.
    private func lose(_ n: Int, packet: PacketRef, why: String) {
        lost = true
        owner.manager.alignmentLost += 1
        owner.emit(TLSProblemEvent(kind: "not-tls", text: "\(why): the rest of this direction is not decrypted"), dir, packet: packet)
        owner.lose(dir, length: UInt64(n), packet: packet)
    }

    // MARK: - After a gap

    /// How many records a gap may have swallowed, at most, when the next one is tried.
    static let realignTries: UInt64 = 256

    /// Bytes after a gap, while records are looked for in them.
    @exclusivity(unchecked) private var held: [UInt8] = []
    /// Where in `held` the candidates not yet tried start.
    @exclusivity(unchecked) private var scanFrom = 0

    /// The offset in `held` where records resume after a gap: a plausible protected record's
    /// header whose record ends at the bytes' end or at another plausible header, and that
    /// decrypts with one of the next sequence numbers (which then is the sequence). Nil: none
    /// yet; bytes that can no longer start one are reported lost.
    private func realign(packet: PacketRef) -> Int? {
        guard let start = keys else { return nil }
        // The records' version byte: 3 (TLS 1.2, and TLS 1.3's legacy version), or the version
        // chosen for SSL 3.0 (0), TLS 1.0 (1) and 1.1 (2).
        let minor: UInt8 = owner.tls13 ? 3 : UInt8(truncatingIfNeeded: owner.server?.version ?? 0x0303)
        let found: Int? = held.withUnsafeBytes { b in
            var i = scanFrom
            while i + TLSRecordLayer.headerSize <= b.count {
                let length = Int(b[i + 3]) << 8 | Int(b[i + 4])
                // (Application data, or an encrypted alert or handshake message: a close_notify
                // may be all that follows a gap.)
                guard (21...23).contains(b[i]), b[i + 1] == 3, b[i + 2] == minor, length >= 17, length <= TLSRecordLayer.maxRecord else { i += 1; continue }
                let end = i + TLSRecordLayer.headerSize + length
                // Not all here yet: tried when it is.
                if end > b.count { break }
                if end == b.count || (end + 3 <= b.count && Self.plausible(b[end], b[end + 1], 0) && b[end + 2] == minor) {
                    let header = UnsafeRawBufferPointer(rebasing: b[i..<(i + 5)])
                    let body = UnsafeRawBufferPointer(rebasing: b[(i + 5)..<end])
                    // TLS 1.0 and SSL 3.0: this record's IV is the last ciphertext block of the
                    // one before it, the bytes in front of its header (before that one's MAC with
                    // encrypt-then-MAC). Without them here it cannot be known, and a record
                    // opened with another IV would be garbled in its first block (unnoticed with
                    // encrypt-then-MAC): not a candidate.
                    var chain = start.chainedIV
                    if chain != nil {
                        let tail = i - (start.encryptThenMAC ? start.suite.macLength : 0)
                        guard tail >= 16 else { i += 1; continue }
                        chain = Array(b[(tail - 16)..<tail])
                    }
                    for n in 0..<Self.realignTries {
                        var k = start
                        k.sequence = start.sequence &+ n
                        k.chainedIV = chain
                        if k.open(header: header, body: body, scratch: &scratch) != nil {
                            keys!.sequence = start.sequence &+ n
                            keys!.chainedIV = chain
                            return i
                        }
                    }
                }
                i += 1
            }
            scanFrom = i
            return nil
        }
        if let at = found {
            realigning = false
            scanFrom = 0
            owner.manager.realigned += 1
            return at
        }
        // Bytes before the last possible record's start cannot begin one: lost.
        let keep = TLSRecordLayer.headerSize + TLSRecordLayer.maxRecord
        if scanFrom > 0 && held.count > keep {
            let drop = min(scanFrom, held.count - keep)
            if drop > 0 {
                held.removeFirst(drop)
                scanFrom -= drop
                owner.lose(dir, length: UInt64(drop), packet: packet)
            }
        }
        return nil
    }

    // MARK: - Records

    private func record(_ r: UnsafeRawBufferPointer, packet: PacketRef) {
        let m = owner.manager
        m.records += 1
        recordNumber += 1
        let header = UnsafeRawBufferPointer(rebasing: r[0..<5])
        let body = UnsafeRawBufferPointer(rebasing: r[5...])
        let type = r[0]
        if type == 20 {  // ChangeCipherSpec: TLS 1.2's switch; TLS 1.3's middlebox compatibility
            owner.changeCipherSpec(dir)
            return
        }
        guard keys != nil else {
            // Plaintext: the hellos, an alert before encryption; or records without keys.
            switch type {
            case 22 where !protected: handshakeBytes(body, packet: packet)
            case 21 where !protected && body.count == 2: alert(body, packet: packet)
            default:
                m.undecrypted += 1
                m.undecryptedBytes += UInt64(body.count)
            }
            return
        }
        guard let plain = open(header, body) else {
            m.failed += 1
            owner.emit(TLSProblemEvent(kind: "bad-record-mac",
                                       text: "record of \(body.count) bytes failed authentication (sequence number \(keys!.sequence &- 1)): not decoded"),
                       dir, packet: packet)
            owner.lose(dir, length: UInt64(body.count), packet: packet)
            return
        }
        m.decrypted += 1
        let tls13 = owner.tls13
        plain.withUnsafeBytes { whole in
            var p = whole
            var content = type
            if tls13 {
                // The inner plaintext: content, the real type, zero padding (RFC 8446 §5.2).
                var end = p.count
                while end > 0 && p[end - 1] == 0 { end -= 1 }
                guard end > 0 else {
                    owner.emit(TLSProblemEvent(kind: "no-content-type", text: "decrypted record has no content type"), dir, packet: packet)
                    return
                }
                content = p[end - 1]
                p = UnsafeRawBufferPointer(rebasing: p[0..<(end - 1)])
            } else if let inflater {
                switch inflater.inflate(p, into: inflated, cap: (1 << 14) + 1) {
                case .ok:
                    p = inflated.bytes
                case .tooLarge:
                    return decompressionFailed("inflates past 2^14 bytes", compressed: p.count, packet: packet)
                case .failed(let why):
                    return decompressionFailed(why, compressed: p.count, packet: packet)
                }
            }
            switch content {
            case 23:
                if recent.isEmpty { recent = Array(repeating: (0, 0), count: Self.recentRecords) }
                recent[recentCount % Self.recentRecords] = (plainOffset, recordNumber)
                recentCount += 1
                owner.deliver(dir, p, packet: packet)
            case 22: handshakeBytes(p, packet: packet)
            case 21: alert(p, packet: packet)
            default: break
            }
        }
        if keyUpdateAfterRecord, let k = keys {
            keyUpdateAfterRecord = false
            keys = k.updated()
            m.keyUpdates += 1
        }
    }

    /// Decrypts with the current keys; in TLS 1.3, a record that fails them is tried with the
    /// application keys (this side's Finished may have been lost in a gap).
    private func open(_ header: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer) -> Data? {
        if let p = keys!.open(header: header, body: body, scratch: &scratch) { return p }
        guard var n = next else { return nil }
        if let p = n.open(header: header, body: body, scratch: &scratch) {
            keys = n
            next = nil
            return p
        }
        return nil
    }

    /// A record that cannot be inflated: said, and its bytes lost. The sender's DEFLATE stream
    /// goes on (RFC 3749 would end the connection here): the records after are inflated from
    /// where they start, without the window lost with this one, so one that refers back into
    /// it fails too (zlib says so) and one that does not is read.
    private func decompressionFailed(_ why: String, compressed: Int, packet: PacketRef) {
        inflater?.restartRaw()
        owner.manager.failed += 1
        owner.emit(TLSProblemEvent(kind: "decompression-failed",
                                   text: "record of \(compressed) compressed bytes could not be inflated (\(why)): not decoded"),
                   dir, packet: packet)
        owner.lose(dir, length: UInt64(compressed), packet: packet)
    }

    private func alert(_ b: UnsafeRawBufferPointer, packet: PacketRef) {
        guard b.count >= 2 else { return }
        owner.manager.alerts += 1
        owner.emit(TLSAlertEvent(level: b[0], description: b[1]), dir, packet: packet)
    }

    // MARK: - Handshake messages

    /// The handshake messages framedump reads are held whole (at most 64 KiB); the others are
    /// passed over by their length.
    static let maxHeldMessage = 1 << 16

    private func handshakeBytes(_ bytes: UnsafeRawBufferPointer, packet: PacketRef) {
        var b = bytes
        while !b.isEmpty {
            if handshakeSkip > 0 {
                let n = min(handshakeSkip, b.count)
                handshakeSkip -= n
                b = UnsafeRawBufferPointer(rebasing: b[n...])
                continue
            }
            if handshake.isEmpty && b.count >= 4 {
                // Whole messages in this record: read in place.
                let length = Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
                if !Self.held(b[0]) || length > Self.maxHeldMessage {
                    message(b[0], nil, packet: packet)
                    handshakeSkip = 4 + length
                    continue
                }
                if b.count >= 4 + length {
                    message(b[0], UnsafeRawBufferPointer(rebasing: b[4..<(4 + length)]), packet: packet)
                    b = UnsafeRawBufferPointer(rebasing: b[(4 + length)...])
                    continue
                }
            }
            // A message across records: held until whole.
            let need: Int
            if handshake.count < 4 {
                need = 4 - handshake.count
            } else {
                let length = Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3])
                need = 4 + length - handshake.count
            }
            let n = min(need, b.count)
            handshake.append(contentsOf: b[0..<n])
            b = UnsafeRawBufferPointer(rebasing: b[n...])
            guard handshake.count >= 4 else { continue }
            let length = Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3])
            if !Self.held(handshake[0]) || length > Self.maxHeldMessage {
                message(handshake[0], nil, packet: packet)
                handshakeSkip = 4 + length - handshake.count
                handshake.removeAll()
                continue
            }
            if handshake.count == 4 + length {
                let whole = handshake
                handshake.removeAll()
                whole.withUnsafeBytes { message($0[0], UnsafeRawBufferPointer(rebasing: $0[4...]), packet: packet) }
            }
        }
    }

    static func held(_ type: UInt8) -> Bool {
        switch TLSHandshakeType(rawValue: type) {
        case .clientHello, .serverHello, .encryptedExtensions, .finished, .keyUpdate: true
        default: false
        }
    }

    private func message(_ type: UInt8, _ body: UnsafeRawBufferPointer?, packet: PacketRef) {
        switch TLSHandshakeType(rawValue: type) {
        case .clientHello where dir == .c2s:
            if let h = body.flatMap(TLSHello.client) { owner.clientHello(h) }
        case .serverHello where dir == .s2c:
            if let h = body.flatMap(TLSHello.server) { owner.serverHello(h, packet: packet) }
        case .encryptedExtensions:
            owner.encryptedExtensions(body.flatMap(TLSHello.encryptedExtensionsALPN), packet: packet)
        case .finished:
            // TLS 1.3: this side's application keys protect what follows.
            if owner.tls13, let n = next { keys = n; next = nil }
        case .keyUpdate:
            keyUpdateAfterRecord = true
            owner.emit(TLSKeyUpdateEvent(requested: body.map { $0.count >= 1 && $0[0] == 1 } ?? false), dir, packet: packet)
        case .newSessionTicket:
            owner.manager.sessionTickets += 1
        default: break
        }
    }
}
