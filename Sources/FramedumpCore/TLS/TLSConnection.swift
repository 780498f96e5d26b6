/// A TLS connection's state shared by its two directions: the hellos, the suite, the secrets
/// from the key log, each direction's record keys, and the layers above that get the plaintext
/// (a deframer, or the WebSocket layer for wss://).
///
///     TCP stream ─▶ TLSStream (records, decryption) ─▶ upper StreamLayer (Deframer, WebSocket…)
final class TLSConnection: FrameNoter {
    unowned(unsafe) let session: Session
    let manager: TLSManagerState
    @exclusivity(unchecked) private(set) var streams: [TLSStream] = []
    /// The layers the plaintext goes to, per direction (nil: not chosen yet, or nothing takes it).
    @exclusivity(unchecked) var uppers: [StreamLayer?] = [nil, nil]
    /// Whether the layers above are chosen (a dissector's port) or wait for the first plaintext.
    @exclusivity(unchecked) var upperChosen: Bool

    @exclusivity(unchecked) var client: TLSClientHello?
    var server: TLSServerHello? {
        didSet { tls13 = server?.version == 0x0304 }
    }
    @exclusivity(unchecked) var suite: TLSSuite?
    @exclusivity(unchecked) var secrets: TLSKeyLog.Secrets?
    /// Why nothing is decrypted, once known (no key log, no line for this client random...).
    @exclusivity(unchecked) var undecryptable: String?
    @exclusivity(unchecked) var reported = false
    /// TLS 1.2: the key block, derived at the ServerHello.
    @exclusivity(unchecked) var keyBlock: [UInt8]?

    /// Kept, not derived from `server` on each record (that copies the hello).
    @exclusivity(unchecked) private(set) var tls13 = false

    init(session: Session, manager: TLSManagerState, uppers: [StreamLayer?], upperChosen: Bool) {
        self.session = session
        self.manager = manager
        self.uppers = uppers
        self.upperChosen = upperChosen
        streams = Direction.allCases.map { TLSStream(owner: self, dir: $0) }
    }

    var connection: Connection { session.connection }

    // MARK: - The handshake

    func clientHello(_ h: TLSClientHello) {
        // A second ClientHello (after a HelloRetryRequest) keeps the first's random.
        if client == nil { client = h }
        manager.handshakes += 1
    }

    func serverHello(_ h: TLSServerHello, packet: PacketRef) {
        // One ServerHello sets the connection up (after a HelloRetryRequest, the next one);
        // another is a peer's error or an attack on the parser: passed over.
        if let earlier = server, !earlier.helloRetry { return }
        if h.helloRetry { server = h; return }
        server = h
        let version = h.version
        if version == 0x0304 { for st in streams { st.protected = true } }
        manager.count(version: version)
        if version < 0x0300 || version > 0x0304 {
            undecryptable = "version \(TLSHello.versionName(version)) is not decrypted (SSL 3.0 to TLS 1.3 are)"
            return handshakeDone(packet: packet)
        }
        guard let s = TLSSuite.all[h.suite], s.tls13 == (version == 0x0304) else {
            undecryptable = "cipher suite \(TLSSuite.name(h.suite)) is not one framedump decrypts"
            return handshakeDone(packet: packet)
        }
        // Before TLS 1.2 only HMAC-SHA1 CBC suites exist (the others need TLS 1.2's PRF);
        // SSL 3.0's MAC is its own, with SHA-1 here.
        guard version >= 0x0303 || (s.protection == .aesCBC && s.mac == .sha1) else {
            undecryptable = "cipher suite \(s.name) cannot be used with \(TLSHello.versionName(version))"
            return handshakeDone(packet: packet)
        }
        guard h.compression <= 1, h.compression == 0 || version < 0x0304 else {
            undecryptable = "compression method \(h.compression) is not one framedump undoes (DEFLATE is)"
            return handshakeDone(packet: packet)
        }
        suite = s
        guard let random = client?.random else {
            undecryptable = "the ClientHello was not captured"
            return handshakeDone(packet: packet)
        }
        guard let log = manager.keyLog, log.hasSources else {
            undecryptable = "no key log given (--tls-keylog FILE)"
            return handshakeDone(packet: packet)
        }
        guard let sec = log.lookup(random) else {
            undecryptable = "no keys for client random \(Self.hex(random)) \(log.searched)"
            return handshakeDone(packet: packet)
        }
        secrets = sec
        if s.tls13 {
            guard let ch = sec.clientHandshake, let sh = sec.serverHandshake else {
                undecryptable = "the key log has no handshake secrets for client random \(Self.hex(random))"
                return handshakeDone(packet: packet)
            }
            streams[0].keys = TLSRecordKeys(tls13: s, secret: ch)
            streams[1].keys = TLSRecordKeys(tls13: s, secret: sh)
            streams[0].next = sec.clientTraffic.map { TLSRecordKeys(tls13: s, secret: $0) }
            streams[1].next = sec.serverTraffic.map { TLSRecordKeys(tls13: s, secret: $0) }
            // TLS 1.3's handshake event waits for EncryptedExtensions (it names the ALPN).
        } else {
            guard let master = sec.master else {
                undecryptable = "the key log has no CLIENT_RANDOM line for client random \(Self.hex(random))"
                return handshakeDone(packet: packet)
            }
            keyBlock = TLSKeySchedule.keyBlock(s, version: version, master: master, serverRandom: h.random, clientRandom: random)
            handshakeDone(packet: packet)
        }
    }

    /// TLS 1.2: ChangeCipherSpec from direction `d`: its next record is protected.
    func changeCipherSpec(_ d: Direction) {
        guard !tls13, server != nil else { return }
        streams[d.rawValue].protected = true
        guard let s = suite, let k = keyBlock, let h = server, k.count >= TLSRecordKeys.keyBlockLength(s, version: h.version) else { return }
        streams[d.rawValue].keys = TLSRecordKeys(tls12: s, version: h.version, keyBlock: k, client: d == .c2s,
                                                 encryptThenMAC: h.encryptThenMAC)
        // RFC 3749: one DEFLATE stream per direction, from the first protected record on.
        if h.compression == 1 { streams[d.rawValue].inflater = Inflater(scratch: Inflater.Scratch(), zlibHeader: true) }
    }

    /// TLS 1.3: the server's EncryptedExtensions (its ALPN).
    func encryptedExtensions(_ alpn: String?, packet: PacketRef) {
        if let alpn { server?.alpn = alpn }
        handshakeDone(packet: packet)
    }

    /// A TLS connection whose start the capture missed: said once; its records are counted.
    func midStream(packet: PacketRef) {
        for st in streams { st.protected = true }
        undecryptable = "picked up mid-stream: the handshake (and its client random) was not captured"
        handshakeDone(packet: packet)
    }

    /// The handshake as far as it shows (once per connection): its event, and the count of
    /// connections that cannot be decrypted.
    func handshakeDone(packet: PacketRef) {
        guard !reported else { return }
        reported = true
        if undecryptable != nil { manager.undecryptable += 1 }
        emit(TLSHandshakeEvent(version: server?.version ?? 0, suite: server?.suite ?? 0, serverName: client?.serverName,
                               alpn: server?.alpn, offeredALPN: client?.alpn ?? [], clientRandom: client?.random ?? [],
                               undecryptable: undecryptable), .s2c, packet: packet)
    }

    func emit(_ e: any LayerEvent, _ d: Direction, packet: PacketRef) {
        let p = session.proto ?? manager.defaultProtocol
        session.manager.sink?.layerEvent(e, connection, p, d, packet: packet)
    }

    // MARK: - The plaintext

    /// Each frame cut from the plaintext notes its records (when the layer above is a deframer).
    func note(_ f: Frame, _ dir: Direction) -> LayerNote {
        let r = streams[dir.rawValue].records(from: f.offset)
        return TLSLayer.note(TLSNote(firstRecord: r.first, lastRecord: r.last))
    }

    /// Has the frames of a plain deframer stack above carry this layer's note.
    func noteFrames() {
        guard let f = session.frames, f.layer == nil, session.shared == nil else { return }
        f.noter = self
        f.layer = NoteDecoding.shared
    }

    /// Application data from direction `d`, for the layer above.
    func deliver(_ d: Direction, _ plain: UnsafeRawBufferPointer, packet: PacketRef) {
        let st = streams[d.rawValue]
        defer { st.plainOffset += UInt64(plain.count) }
        manager.plaintextBytes += UInt64(plain.count)
        if !upperChosen { chooseUpper(d, plain, offset: st.plainOffset) }
        guard let u = uppers[d.rawValue] else {
            session.manager.undissectedBytes += UInt64(plain.count)
            return
        }
        if let f = session.frames, f.connectionLayer == nil { f.connectionLayer = info() }
        if !u.started { u.start(atBoundary: st.plainOffset == 0 && connection.startsAtSYN(d)) }
        u.data(plain, offset: st.plainOffset, packet: packet)
    }

    /// A stretch of plaintext that could not be had (a gap below, a record that failed).
    func lose(_ d: Direction, length: UInt64, packet: PacketRef) {
        let st = streams[d.rawValue]
        defer { st.plainOffset += length }
        guard let u = uppers[d.rawValue] else { return }
        if !u.started { u.start(atBoundary: false) }
        u.gap(offset: st.plainOffset, length: length, packet: packet)
    }

    func finish(_ d: Direction, packet: PacketRef, captureEnded: Bool) {
        uppers[d.rawValue]?.finish(packet: packet, captureEnded: captureEnded)
    }

    /// No dissector's port: the first plaintext chooses, as any-port detection does on a plain
    /// stream (an HTTP request opens a WebSocket; else the protocols that any port may carry).
    func chooseUpper(_ d: Direction, _ plain: UnsafeRawBufferPointer, offset: UInt64) {
        upperChosen = true
        let s = session
        let mine = s.layers
        defer { uppers = s.layers; s.layers = mine }
        for k in LayerRegistry.kinds where k.detect(s, d, plain, offset: offset) { return }
        if let p = s.manager.anyPort.first(where: { $0.recognises(plain, d) }) {
            s.attach(p, belowLower: true)
            noteFrames()
            return
        }
        s.layers = [nil, nil]
    }

    /// The connection as `-Y tls.*` sees it, made once.
    @exclusivity(unchecked) private var madeInfo: TLSInfo?
    func info() -> TLSInfo {
        if let i = madeInfo { return i }
        let i = TLSInfo(version: TLSHello.versionName(server?.version ?? 0), suite: TLSSuite.name(server?.suite ?? 0),
                        sni: client?.serverName, alpn: server?.alpn)
        madeInfo = i
        return i
    }

    static func hex(_ b: [UInt8]) -> String {
        var s = ""
        for x in b { s += String(x >> 4, radix: 16) + String(x & 15, radix: 16) }
        return s
    }
}

/// A decrypted connection's TLS facts, shared by its messages (`-Y tls.sni == "..."`).
final class TLSInfo: ConnectionLayerInfo {
    let version: String
    let suite: String
    let sni: String?
    let alpn: String?

    init(version: String, suite: String, sni: String?, alpn: String?) {
        self.version = version
        self.suite = suite
        self.sni = sni
        self.alpn = alpn
    }

    var layerKey: String { "tls" }

    var fields: [(name: String, value: LayerFieldValue)] {
        [("version", .text(version)), ("suite", .text(suite))] + (sni.map { [("sni", .text($0))] } ?? [])
            + (alpn.map { [("alpn", .text($0))] } ?? [])
    }
}

/// What the TLS layer notes on a frame: the records of its direction it came from (numbered
/// from 1, handshake records included; 0: not known, older than those kept).
struct TLSNote: BitwiseCopyable {
    var firstRecord: UInt64
    var lastRecord: UInt64
}
