/// `--decode-as PORT=PROTOCOL`: tshark's `-d tcp.port==N,proto`. A protocol loaded from the
/// dissector files also claims a port its file does not list, for this run; the port is taken
/// from any protocol that claimed it.
public struct DecodeAs: Sendable, Equatable {
    public var port: UInt16
    public var protocolName: String

    /// `8001=game`; nil when it is not of that form.
    public init?(_ text: String) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let port = UInt16(parts[0]), port > 0, !parts[1].isEmpty else { return nil }
        self.port = port
        protocolName = parts[1]
    }

    /// The schemas with the ports moved; an unknown protocol name is an error that says which
    /// ones are loaded.
    public static func apply(_ rules: [DecodeAs], to schemas: [ProtocolSchema]) throws(DecodeAsError) -> [ProtocolSchema] {
        var out = schemas
        for r in rules {
            guard let i = out.firstIndex(where: { $0.name.lowercased() == r.protocolName.lowercased() }) else {
                throw DecodeAsError(rule: r, loaded: schemas.map(\.name))
            }
            for j in out.indices { out[j].ports.removeAll { $0 == r.port } }
            out[i].ports.append(r.port)
        }
        return out
    }
}

public struct DecodeAsError: Error, CustomStringConvertible, Sendable {
    public var rule: DecodeAs
    public var loaded: [String]

    public var description: String {
        "--decode-as \(rule.port)=\(rule.protocolName): no loaded dissector is named '\(rule.protocolName)'"
            + (loaded.isEmpty ? " (none is loaded: give -d PATH)" : " (loaded: \(loaded.joined(separator: ", ")))")
    }
}
