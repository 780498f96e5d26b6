/// A message layer's part where messages are decoded (the decoding thread, reading a file):
/// one per connection and protocol, made by the layer with the connection's `SessionFrames`.
/// It turns the message it was handed back into a message (inflating, choosing the decoder)
/// and has `frames` decode it, with its note on the result.
protocol MessageLayerDecoder: AnyObject {
    /// One message the layer handed over with `SessionFrames.layered` (`note`: its own words).
    func decode(_ f: Frame, _ dir: Direction, _ note: LayerNote, _ frames: SessionFrames)
}
