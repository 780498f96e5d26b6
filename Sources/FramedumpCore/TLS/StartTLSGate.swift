/// One direction of a connection that may turn to TLS after a plaintext exchange: SMTP's,
/// IMAP's, POP3's and XMPP's STARTTLS, PostgreSQL's and MySQL's SSL requests, LDAP's StartTLS.
/// Plaintext goes on to `plain` (the protocol's deframer, or nowhere on a connection no
/// dissector took) until a ClientHello starts in the client's bytes; then the connection's TLS
/// layer is made, and the client's bytes from the ClientHello on are its. The server's side
/// follows at its first handshake record after that (its answer to the STARTTLS may still come
/// in plaintext before it).
///
/// Looked for in the first `watchLimit` bytes of the client's stream (the switch comes after a
/// few commands), at any offset in a chunk: a client may send its SSL request and its
/// ClientHello in one segment.
final class StartTLSGate: StreamLayer {
    unowned(unsafe) let session: Session
    let dir: Direction
    /// The plaintext's layer, until the switch.
    @exclusivity(unchecked) var plain: StreamLayer?
    /// After the switch: this direction's TLS records.
    @exclusivity(unchecked) var tls: TLSStream?
    /// Server side: the client's ClientHello went by; this stream's TLS, waiting for the
    /// server's first handshake record.
    @exclusivity(unchecked) var awaited: TLSStream?
    @exclusivity(unchecked) private(set) var started = false

    static let watchLimit: UInt64 = 1 << 20

    init(session: Session, dir: Direction, plain: StreamLayer?) {
        self.session = session
        self.dir = dir
        self.plain = plain
    }

    func start(atBoundary: Bool) { started = true }

    func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        if let t = tls { return feed(t, bytes, offset: offset, packet: packet) }
        var at: Int?
        if dir == .c2s, offset < Self.watchLimit {
            at = Self.find(bytes, handshake: 1)
        } else if let a = awaited {
            at = Self.find(bytes, handshake: 2)
            if at != nil { tls = a }
        }
        guard let at else { return feedPlain(bytes, offset: offset, packet: packet) }
        if at > 0 { feedPlain(UnsafeRawBufferPointer(rebasing: bytes[..<at]), offset: offset, packet: packet) }
        // The plaintext ends here: a frame it left unfinished is reported now.
        plain?.finish(packet: packet, captureEnded: false)
        plain = nil
        if dir == .c2s { tls = TLSLayer.startTLS(session, packet: packet) }
        if let t = tls { feed(t, UnsafeRawBufferPointer(rebasing: bytes[at...]), offset: offset + UInt64(at), packet: packet) }
    }

    func gap(offset: UInt64, length: UInt64, packet: PacketRef) {
        if let t = tls {
            if !t.started { t.start(atBoundary: false) }
            return t.gap(offset: offset, length: length, packet: packet)
        }
        guard let p = plain else { return }
        if !p.started { p.start(atBoundary: false) }
        p.gap(offset: offset, length: length, packet: packet)
    }

    func finish(packet: PacketRef, captureEnded: Bool) {
        plain?.finish(packet: packet, captureEnded: captureEnded)
        tls?.finish(packet: packet, captureEnded: captureEnded)
    }

    private func feedPlain(_ b: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        guard let p = plain else {
            session.manager.undissectedBytes += UInt64(b.count)
            return
        }
        p.feed(session.connection, dir, b, offset: offset, packet: packet)
    }

    private func feed(_ t: TLSStream, _ b: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        if !t.started { t.start(atBoundary: true) }
        t.data(b, offset: offset, packet: packet)
    }

    /// Where a handshake record holding a ClientHello (1) or a ServerHello (2) starts in `b`:
    /// content type 22, version 3.0-3.4, a length of 38 to 2^14, the handshake type, and the
    /// hello's own version 3.x (eleven bytes, strict enough to be no accident in plaintext).
    static func find(_ b: UnsafeRawBufferPointer, handshake: UInt8) -> Int? {
        var i = 0
        while i + 11 <= b.count {
            if b[i] == 22, b[i + 1] == 3, b[i + 2] <= 4, b[i + 5] == handshake, b[i + 9] == 3, b[i + 10] <= 4 {
                let length = Int(b[i + 3]) << 8 | Int(b[i + 4])
                if length >= 38 && length <= TLSRecordLayer.maxPlaintext { return i }
            }
            i += 1
        }
        return nil
    }
}
