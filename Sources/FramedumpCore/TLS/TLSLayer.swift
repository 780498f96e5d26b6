/// The TLS layer as the shared parts see it (`LayerKind`). Unlike WebSocket and KCP it sits
/// below a protocol's stack rather than being it: a dissector's port carries the protocol in
/// TLS when the first client bytes are a ClientHello (or always, with `tls;`), and a
/// ClientHello on a port no dissector claims is decrypted and the plaintext detected as on a
/// plain stream. Keys come from an NSS key log (`--tls-keylog`).
enum TLSLayer: LayerKind {
    static let name = "tls"
    static let key: StaticString = "tls"
    static let layer = index
    static let setting = "tls"

    // MARK: - Dissector files

    /// `tls;`: always inside TLS. `starttls;`: plaintext first, TLS from a ClientHello on.
    static let keywords = ["tls", "starttls"]
    static let startTLSSetting = "starttls"

    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError) {
        s.layerSettings[keyword == "starttls" ? startTLSSetting : setting] = ["1"]
    }

    static func check(_ s: ProtocolSchema) -> String? {
        let always = s.layerSettings[setting] != nil, later = s.layerSettings[startTLSSetting] != nil
        if always && later { return "tls and starttls exclude each other: keep 'tls' (TLS from the first byte) or 'starttls' (after a plaintext exchange)" }
        guard always || later else { return nil }
        return s.udp ? "\(always ? "tls" : "starttls") runs over TCP (DTLS is not decoded): drop 'udp' or '\(always ? "tls" : "starttls")'" : nil
    }

    static func describe(_ s: ProtocolSchema) -> [String] {
        if s.layerSettings[startTLSSetting] != nil {
            return ["  starttls: plaintext, then TLS from the client's ClientHello on (decrypted with --tls-keylog)"]
        }
        return s.layerSettings[setting] != nil ? ["  tls: always inside TLS (decrypted with --tls-keylog)"] : []
    }

    static func mayShare(_ port: UInt16, _ a: ProtocolSchema, _ b: ProtocolSchema) -> Bool { false }

    // MARK: - Building a stack

    static var builtInProtocols: [ProtocolSchema] { [] }
    static func managerState(_ protocols: [ProtocolRuntime]) -> TLSManagerState? { TLSManagerState() }

    /// Its part of manager `m` (every manager has one).
    static func state(_ m: SessionManager) -> TLSManagerState { state(of: m)! }

    /// Never a protocol's stack (see `below`).
    static func attach(_ s: Session, _ p: ProtocolRuntime) {}

    /// Below a TCP protocol's new stack: TLS when the dissector says so, else a look at the
    /// first bytes (`firstData`: nothing is made for the connections that are not TLS).
    static func below(_ s: Session, _ p: ProtocolRuntime) {
        guard !s.connection.udp else { return }
        if p.schema.layerSettings[startTLSSetting] != nil {
            s.layers = Direction.allCases.map { StartTLSGate(session: s, dir: $0, plain: s.layers[$0.rawValue]) }
            return
        }
        guard p.schema.layerSettings[setting] != nil else { return s.firstDataHook = Self.self }
        wrap(s)
    }

    /// A ClientHello after a plaintext exchange (`StartTLSGate`): the connection's TLS layer
    /// is made, its plaintext going to fresh deframers of the protocol (on a connection no
    /// dissector took, to what detection finds in it). Returns the client's record stream;
    /// the server's waits in its gate for the server's first handshake record.
    static func startTLS(_ s: Session, packet: PacketRef) -> TLSStream? {
        guard s.lower == nil else { return nil }
        var uppers: [StreamLayer?] = [nil, nil]
        if let p = s.proto, let f = s.frames {
            uppers = Deframer.both(p, consumer: f) { _ in true }
        }
        let t = TLSConnection(session: s, manager: state(s.manager), uppers: uppers, upperChosen: s.proto != nil)
        s.lower = t
        if s.undissected {
            s.undissected = false
            s.manager.undissectedConnections -= 1
        }
        (s.layers[Direction.s2c.rawValue] as? StartTLSGate)?.awaited = t.streams[Direction.s2c.rawValue]
        if s.proto != nil { t.noteFrames() }
        state(s.manager).startTLS += 1
        return t.streams[Direction.c2s.rawValue]
    }

    /// A connection no dissector took whose client sends a ClientHello after some plaintext:
    /// gates on both directions, the client's taking this chunk.
    static func startTLSUndissected(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64) -> Bool {
        guard d == .c2s, s.lower == nil, !s.connection.udp, offset < StartTLSGate.watchLimit,
              s.layers[0] == nil, s.layers[1] == nil, StartTLSGate.find(bytes, handshake: 1) != nil else { return false }
        s.layers = Direction.allCases.map { StartTLSGate(session: s, dir: $0, plain: nil) }
        return true
    }

    /// A ClientHello at the start, or TLS records where the protocol's header would be on a
    /// connection picked up mid-stream (said once: nothing can be decrypted).
    static func firstData(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        let c = s.connection
        if d == .c2s && offset == 0 && c.startsAtSYN(.c2s) && TLSHello.startsClientHello(bytes) {
            wrap(s)
        } else if !c.startsAtSYN(d) && TLSStream.looksLikeRecords(bytes) {
            wrap(s).midStream(packet: packet)
        }
    }

    @discardableResult
    static func wrap(_ s: Session) -> TLSConnection {
        let t = TLSConnection(session: s, manager: state(s.manager), uppers: s.layers, upperChosen: true)
        s.wrap(t, layers: t.streams)
        t.noteFrames()
        return t
    }

    /// A ClientHello at the start of a connection no dissector claims.
    static func detect(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64) -> Bool {
        guard s.lower == nil, d == .c2s, offset == 0, s.connection.startsAtSYN(.c2s), TLSHello.startsClientHello(bytes) else { return false }
        let t = TLSConnection(session: s, manager: state(s.manager), uppers: [nil, nil], upperChosen: false)
        s.wrap(t, layers: t.streams)
        return true
    }

    // MARK: - A message's annotation

    @inline(__always)
    static func note(_ n: TLSNote) -> LayerNote { LayerNote(layer: layer, n) }

    static func info(_ n: LayerNote) -> TLSNote { n.value(as: TLSNote.self) }

    /// A frame's own name comes from its protocol; the layer shows none itself.
    static func messageName(_ n: LayerNote) -> StaticString { "?" }

    /// `    tls: record 12` or `    tls: records 11-12` (the frame spans them).
    static func writeTree(_ n: LayerNote, _ f: Frame, color: Bool, _ k: inout Cursor) {
        let r = info(n)
        k.write(color ? "    \u{1b}[2mtls: record" : "    tls: record")
        if r.firstRecord != r.lastRecord {
            k.write("s ")
            if r.firstRecord == 0 { k.byte(0x3f) } else { k.decimal(r.firstRecord) }
            k.byte(0x2d)
        } else {
            k.byte(0x20)
        }
        k.decimal(r.lastRecord)
        if color { k.write("\u{1b}[0m") }
        k.byte(0x0a)
    }

    /// `{"records":[11,12]}` (0 for a first record no longer known); `-Y tls.record` is the
    /// last, `tls.first_record` the first. Version, suite, SNI and ALPN come from the
    /// connection (`TLSInfo`).
    static func visitFields<V: LayerFieldVisitor>(_ n: LayerNote, _ v: inout V) {
        let r = info(n)
        v.span("records", r.firstRecord, r.lastRecord, filterNames: ("first_record", "record"))
    }

    static let fieldKinds: [(name: String, kind: LayerFieldKind)] = [
        ("version", .text(values: [0x0304, 0x0303, 0x0302, 0x0301, 0x0300].map(TLSHello.versionName))),
        ("suite", .text(values: nil)), ("sni", .text(values: nil)), ("alpn", .text(values: nil)),
        ("record", .unsigned), ("first_record", .unsigned),
    ]

    // MARK: - The summary

    static func summary(_ p: ProtocolRuntime) -> [String] { [] }

    /// `tls: 3 connections (TLS 1.3 2, TLS 1.2 1), 120 records decrypted, ...`
    static func summary(_ m: SessionManager) -> [String] {
        let t = state(m)
        guard t.handshakes > 0 || t.records > 0 else { return [] }
        var parts: [String] = []
        let versions = t.versions.sorted { $0.key > $1.key }.map { "\(TLSHello.versionName($0.key)) \($0.value)" }
        var line = "tls: \(t.handshakes) handshakes" + (versions.isEmpty ? "" : " (" + versions.joined(separator: ", ") + ")")
        line += ", \(t.records) records, \(t.decrypted) decrypted (\(t.plaintextBytes) bytes of application data)"
        if t.failed > 0 { parts.append("\(t.failed) failed authentication") }
        if t.undecryptable > 0 { parts.append("\(t.undecryptable) connections not decrypted (\(t.undecrypted) records, \(t.undecryptedBytes) bytes)") }
        if t.realigned > 0 { parts.append("\(t.realigned) times records found again after a gap") }
        if t.alignmentLost > 0 { parts.append("\(t.alignmentLost) directions whose records could not be read on") }
        if t.startTLS > 0 { parts.append("\(t.startTLS) after a plaintext exchange (STARTTLS)") }
        if t.keyUpdates > 0 { parts.append("\(t.keyUpdates) key updates") }
        if t.sessionTickets > 0 { parts.append("\(t.sessionTickets) session tickets") }
        if t.alerts > 0 { parts.append("\(t.alerts) alerts") }
        if let log = t.keyLog, log.hasSources {
            parts.append("key log: \(log.count) connections' secrets"
                         + (log.fromCaptures > 0 ? " (\(log.fromCaptures) from the capture's Decryption Secrets Blocks)" : "")
                         + (log.unreadableLines > 0 ? ", \(log.unreadableLines) unreadable lines" : ""))
        } else if t.handshakes > 0 {
            parts.append("no key log given (--tls-keylog FILE)")
        }
        if !parts.isEmpty { line += "; " + parts.joined(separator: "; ") }
        return [line]
    }
}

/// The TLS layer's part of the session manager: the key log and the counts of the summary.
final class TLSManagerState {
    @exclusivity(unchecked) var keyLog: TLSKeyLog?
    /// The protocol named on the events of a TLS connection whose plaintext no protocol took.
    let defaultProtocol: ProtocolRuntime
    @exclusivity(unchecked) var handshakes: UInt64 = 0
    @exclusivity(unchecked) var versions: [UInt16: UInt64] = [:]
    @exclusivity(unchecked) var records: UInt64 = 0
    @exclusivity(unchecked) var decrypted: UInt64 = 0
    @exclusivity(unchecked) var failed: UInt64 = 0
    @exclusivity(unchecked) var undecryptable: UInt64 = 0
    @exclusivity(unchecked) var undecrypted: UInt64 = 0
    @exclusivity(unchecked) var undecryptedBytes: UInt64 = 0
    @exclusivity(unchecked) var alignmentLost: UInt64 = 0
    /// Directions whose records were found again after a gap.
    @exclusivity(unchecked) var realigned: UInt64 = 0
    @exclusivity(unchecked) var keyUpdates: UInt64 = 0
    @exclusivity(unchecked) var sessionTickets: UInt64 = 0
    @exclusivity(unchecked) var alerts: UInt64 = 0
    @exclusivity(unchecked) var plaintextBytes: UInt64 = 0
    /// Connections that turned to TLS after a plaintext exchange.
    @exclusivity(unchecked) var startTLS: UInt64 = 0

    init() {
        var s = ProtocolSchema(name: "tls", file: "(built in)")
        s.body = .raw
        defaultProtocol = ProtocolRuntime(s, limits: Limits())
    }

    func count(version: UInt16) { versions[version, default: 0] += 1 }
}

extension SessionManager {
    /// `--tls-keylog`: the secrets TLS connections are decrypted with.
    public func useTLSKeyLog(_ log: TLSKeyLog) { TLSLayer.state(self).keyLog = log }
}
