/// Something a layer of the stack found wrong, in its own words: a warning on a message it
/// carried, or the reason a stretch of its stream was malformed. Shared code prints and counts
/// it without knowing the layer (`check -r` files it under the layer's name).
public struct LayerProblem: Sendable, Equatable {
    /// The layer's name (`websocket`): the warning's prefix and the `check -r` class.
    public var layer: String
    /// A short stable word for the problem (NDJSON's `reason` of a malformed stretch).
    public var kind: String
    public var text: String

    public init(layer: String, kind: String, text: String) {
        self.layer = layer
        self.kind = kind
        self.text = text
    }
}
