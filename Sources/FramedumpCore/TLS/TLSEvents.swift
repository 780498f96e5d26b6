/// What the TLS layer shows as records of their own: the handshake (version, suite, SNI,
/// ALPN, whether it could be decrypted), alerts, key updates, records it could not read.
struct TLSHandshakeEvent: LayerEvent {
    let version: UInt16
    let suite: UInt16
    let serverName: String?
    let alpn: String?
    let offeredALPN: [String]
    let clientRandom: [UInt8]
    /// Why the connection is not decrypted (nil: it is).
    let undecryptable: String?

    func writeTree(_ w: TreeEventWriter) {
        guard version != 0 else {
            w.write(" tls, the handshake not captured"); w.newline()
            if let why = undecryptable { w.write("    "); w.alarm("not decrypted: "); w.text(why); w.newline() }
            return
        }
        w.write(" tls handshake: ")
        w.text(TLSHello.versionName(version)); w.write(", "); w.text(TLSSuite.name(suite))
        if let n = serverName { w.write(", SNI "); w.text(n) }
        if let a = alpn { w.write(", ALPN "); w.text(a) } else if !offeredALPN.isEmpty { w.write(", ALPN offered "); w.text(offeredALPN.joined(separator: ",")) }
        w.newline()
        w.write("    client random "); w.text(TLSConnection.hex(clientRandom)); w.newline()
        if let why = undecryptable {
            w.write("    "); w.alarm("not decrypted: "); w.text(why); w.newline()
        } else {
            w.write("    decrypted with the key log"); w.newline()
        }
    }

    func writeJSON(_ out: OutputBuffer, diffable: Bool) {
        out.write(",\"type\":\"tls-handshake\",\"version\":")
        if version == 0 { out.write("null") } else { JSONText.string(TLSHello.versionName(version), to: out) }
        out.write(",\"suite\":")
        if version == 0 { out.write("null") } else { JSONText.string(TLSSuite.name(suite), to: out) }
        out.write(",\"sni\":"); if let n = serverName { JSONText.string(n, to: out) } else { out.write("null") }
        out.write(",\"alpn\":"); if let a = alpn { JSONText.string(a, to: out) } else { out.write("null") }
        if !diffable && !clientRandom.isEmpty { out.write(",\"client_random\":"); JSONText.string(TLSConnection.hex(clientRandom), to: out) }
        out.write(",\"decrypted\":"); out.write(undecryptable == nil ? "true" : "false")
        if let why = undecryptable { out.write(",\"why\":"); JSONText.string(why, to: out) }
    }

    var belowProtocol: String? { (version == 0 ? "TLS" : TLSHello.versionName(version)) + (undecryptable == nil ? "" : " (not decrypted)") }

    var problems: [LayerProblem] {
        guard let why = undecryptable else { return [] }
        return [LayerProblem(layer: TLSLayer.name, kind: "not-decrypted", text: why)]
    }
}

/// An alert (RFC 8446 §6): close_notify is the ordinary end; the others are failures.
struct TLSAlertEvent: LayerEvent {
    let level: UInt8
    let description: UInt8

    static func name(_ d: UInt8) -> String {
        switch d {
        case 0: "close_notify"; case 10: "unexpected_message"; case 20: "bad_record_mac"; case 22: "record_overflow"
        case 40: "handshake_failure"; case 42: "bad_certificate"; case 43: "unsupported_certificate"
        case 44: "certificate_revoked"; case 45: "certificate_expired"; case 46: "certificate_unknown"
        case 47: "illegal_parameter"; case 48: "unknown_ca"; case 49: "access_denied"; case 50: "decode_error"
        case 51: "decrypt_error"; case 70: "protocol_version"; case 71: "insufficient_security"
        case 80: "internal_error"; case 86: "inappropriate_fallback"; case 90: "user_canceled"
        case 109: "missing_extension"; case 110: "unsupported_extension"; case 112: "unrecognized_name"
        case 116: "certificate_required"; case 120: "no_application_protocol"
        default: "alert \(d)"
        }
    }

    func writeTree(_ w: TreeEventWriter) {
        w.write(" tls alert: ")
        if description == 0 { w.text(Self.name(description)) } else { w.alarm("ALERT "); w.text(Self.name(description)) }
        w.write(level == 2 ? " (fatal)" : " (warning)")
        w.newline()
    }

    func writeJSON(_ out: OutputBuffer, diffable: Bool) {
        out.write(",\"type\":\"tls-alert\",\"alert\":"); JSONText.string(Self.name(description), to: out)
        out.write(",\"fatal\":"); out.write(level == 2 ? "true" : "false")
    }

    var problems: [LayerProblem] {
        description == 0 ? [] : [LayerProblem(layer: TLSLayer.name, kind: "alert", text: "alert \(Self.name(description))")]
    }
}

/// A TLS 1.3 KeyUpdate: this side's keys change after the record.
struct TLSKeyUpdateEvent: LayerEvent {
    let requested: Bool

    func writeTree(_ w: TreeEventWriter) {
        w.write(" tls key update"); if requested { w.write(" (update requested)") }
        w.newline()
    }

    func writeJSON(_ out: OutputBuffer, diffable: Bool) {
        out.write(",\"type\":\"tls-key-update\",\"update_requested\":"); out.write(requested ? "true" : "false")
    }

    var problems: [LayerProblem] { [] }
}

/// A record the layer could not read: failed authentication, not a record at all.
struct TLSProblemEvent: LayerEvent {
    let kind: String
    let text: String

    func writeTree(_ w: TreeEventWriter) {
        w.write(" tls "); w.alarm("MALFORMED"); w.write(": "); w.text(text); w.newline()
    }

    func writeJSON(_ out: OutputBuffer, diffable: Bool) {
        out.write(",\"type\":\"tls-problem\",\"reason\":"); JSONText.string(kind, to: out)
        out.write(",\"text\":"); JSONText.string(text, to: out)
    }

    var problems: [LayerProblem] { [LayerProblem(layer: TLSLayer.name, kind: kind, text: text)] }
}
