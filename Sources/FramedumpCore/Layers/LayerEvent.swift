/// Something a layer saw that is not a message (a handshake), shown as a record of
/// its own. The printers write the common start (time, endpoints, protocol) and hand over.
public protocol LayerEvent: Sendable {
    /// The tree: what follows `time src > dst protocol` on the first line, then its own lines.
    func writeTree(_ w: TreeEventWriter)
    /// NDJSON: the members after the common ones, from `,"type":...` on (no closing brace).
    func writeJSON(_ out: OutputBuffer, diffable: Bool)
    /// What `check -r` reports about it (none: nothing wrong).
    var problems: [LayerProblem] { get }
    /// For an event of a layer below the protocol (a TLS handshake): what `-z conv` says the
    /// connection runs in (`TLS 1.3`).
    var belowProtocol: String? { get }
}

extension LayerEvent {
    public var belowProtocol: String? { nil }
}

/// How a layer event writes its tree lines: escaped text from the wire, colour for alarms.
public struct TreeEventWriter {
    let out: OutputBuffer
    let color: Bool

    public func write(_ s: StaticString) { out.write(s) }
    public func decimal(_ v: UInt64) { out.decimal(v) }

    /// `12.345`: a duration in milliseconds, three decimals.
    public func milliseconds(nanos: Int64) {
        let us = UInt64(max(0, nanos)) / 1000
        out.decimal(us / 1000)
        let f = us % 1000
        out.byte(0x2e); out.byte(UInt8(0x30 + f / 100)); out.byte(UInt8(0x30 + f / 10 % 10)); out.byte(UInt8(0x30 + f % 10))
    }
    public func newline() { out.newline() }

    /// `s` in red when colour is on.
    public func alarm(_ s: StaticString) {
        if color { out.write("\u{1b}[1;31m") }
        out.write(s)
        if color { out.write("\u{1b}[0m") }
    }

    /// Bytes from the wire (UTF-8 text), written as `text` writes a string.
    func text(_ b: UnsafeRawBufferPointer) {
        for c in b where c < 0x20 || c == 0x7f {
            _ = c
            return text(String(decoding: b, as: UTF8.self))
        }
        out.write(b)
    }

    /// Text from the wire, with control characters escaped (`\x1b`) so they cannot drive the
    /// terminal.
    public func text(_ s: String) {
        // The common case, no control character: written at once.
        var s = s
        let clean = s.withUTF8 { b in
            for c in b where c < 0x20 || c == 0x7f { return false }
            return true
        }
        if clean { return out.write(s) }
        for c in s.utf8 {
            if c < 0x20 || c == 0x7f {
                out.write("\\x")
                if c >= 0x10 { out.byte(OutputBuffer.hexDigits.utf8Start[Int(c >> 4)]) }
                out.byte(OutputBuffer.hexDigits.utf8Start[Int(c & 15)])
            } else {
                out.byte(c)
            }
        }
    }
}
