/// The varint type names, one list for header fields (`varint32 length;`) and body fields
/// (`Svarint delta;`): `varint`/`uvarint` (at most 10 bytes), `varint32`/`uvarint32` (5),
/// `varint64`/`uvarint64` (10), and the zigzag-encoded `svarint`, `svarint32`, `svarint64`
/// (also `sint`, protobuf's name). Case is ignored. Only the names without a width take a size,
/// `varint(N)`: at most N bytes (MQTT's Remaining Length takes 4).
struct VarintName: Equatable {
    var signed: Bool
    var maxBytes: Int
    /// Whether `(N)` may follow (a name without 32 or 64).
    var takesSize: Bool

    init?(_ name: String) {
        switch name.lowercased() {
        case "varint", "uvarint": self.init(signed: false, maxBytes: 10, takesSize: true)
        case "varint64", "uvarint64": self.init(signed: false, maxBytes: 10, takesSize: false)
        case "varint32", "uvarint32": self.init(signed: false, maxBytes: 5, takesSize: false)
        case "svarint", "sint": self.init(signed: true, maxBytes: 10, takesSize: true)
        case "svarint64": self.init(signed: true, maxBytes: 10, takesSize: false)
        case "svarint32": self.init(signed: true, maxBytes: 5, takesSize: false)
        default: return nil
        }
    }

    init(signed: Bool, maxBytes: Int, takesSize: Bool) {
        self.signed = signed
        self.maxBytes = maxBytes
        self.takesSize = takesSize
    }

    /// What `(N)` may be, for errors.
    static let sizes = 1...10
}
