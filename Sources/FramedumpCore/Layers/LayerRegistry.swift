/// Every kind of layer a dissector can stack, one line each. A new layer is its folder (its
/// `StreamLayer`s, its `LayerKind`, its dissector keyword) plus its line here.
public enum LayerRegistry {
    // (Metatypes of stateless kinds, never written: safe to share.)
    nonisolated(unsafe) static let kinds: [any LayerKind.Type] = [
        WebSocketLayer.self,
        KCPLayer.self,
        TLSLayer.self,
        GRPCLayer.self,
    ]

    /// The kind named `name` in a dissector file or a `check -r` class, if any.
    static func kind(named name: String) -> (any LayerKind.Type)? {
        kinds.first { $0.name == name }
    }

    /// The kind whose NDJSON key and `-Y` namespace is `key` (`ws`), if any.
    static func kind(key: String) -> (any LayerKind.Type)? {
        kinds.first { "\($0.key)" == key }
    }

    /// What field `field` of the layer keyed `key` holds (`-Y ws.opcode`), if it has one.
    static func fieldKind(key: String, field: String) -> LayerFieldKind? {
        kind(key: key)?.fieldKinds.first { $0.name == field }?.kind
    }
}
