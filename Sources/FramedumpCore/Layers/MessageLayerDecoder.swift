/// A message layer's part where messages are decoded:
/// one per connection and protocol, made by the layer with the connection's `SessionFrames`.
/// It turns the message it was handed back into a message (inflating, choosing the decoder)
/// and has `frames` decode it, with its note on the result.
protocol MessageLayerDecoder: AnyObject {
    /// One message the layer handed over with `SessionFrames.layered` (`note`: its own words).
    func decode(_ f: Frame, _ dir: Direction, _ note: LayerNote, _ frames: SessionFrames)
}

/// Says, per frame a deframer cut, what a layer below notes about it (TLS: the records it came
/// from). Asked on the reading thread, as the frame is cut.
protocol FrameNoter: AnyObject {
    func note(_ f: Frame, _ dir: Direction) -> LayerNote
}

/// Where a frame that carries a layer's note is decoded: the protocol's decoder, and the note on
/// the result (KCP's messages, frames under TLS).
final class NoteDecoding: MessageLayerDecoder, Sendable {
    static let shared = NoteDecoding()

    func decode(_ f: Frame, _ dir: Direction, _ note: LayerNote, _ frames: SessionFrames) {
        let p = frames.runtime
        p.bytes += UInt64(f.bytes.count)
        let decoded = frames.decoded
        frames.decoder.decode(f, dir, into: decoded)
        decoded.layerNotes.setOnly(note)
        p.count(decoded.message, id: decoded.id)
        if !decoded.warnings.isEmpty { p.warnings += 1; p.limitHits.count(decoded.warnings) }
        frames.sink.message(decoded, frames.connection, p)
    }
}
