/// The bytes a layer passes over while it looks for the next frame boundary (after a gap, or a
/// frame that cannot be right), kept as one run and reported once, as one malformed stretch,
/// before the next frame, gap or end: not once per segment. Shared by the deframer and the
/// WebSocket stream, which differ only in how they recognise a boundary.
struct SkippedRun {
    /// The run so far (stream offset, bytes), nil when none is open.
    private(set) var run: (offset: UInt64, length: UInt64)?
    /// Its first bytes, for `-x`.
    private var sample: [UInt8] = []

    var isEmpty: Bool { run == nil }

    /// Adds the bytes `b`, which start at stream offset `offset`; a run they do not continue is
    /// reported first (through `report`).
    mutating func add(_ b: some Collection<UInt8>, at offset: UInt64,
                      report: (_ offset: UInt64, _ length: UInt64, _ sample: UnsafeRawBufferPointer) -> Void) {
        if let s = run, s.offset + s.length == offset {
            run!.length += UInt64(b.count)
        } else {
            flush(report)
            run = (offset, UInt64(b.count))
        }
        if sample.count < MalformedSample.limit {
            sample += b.prefix(MalformedSample.limit - sample.count)
        }
    }

    /// Reports the open run, if any, and closes it.
    mutating func flush(_ report: (_ offset: UInt64, _ length: UInt64, _ sample: UnsafeRawBufferPointer) -> Void) {
        guard let s = run else { return }
        run = nil
        sample.withUnsafeBytes { report(s.offset, s.length, $0) }
        sample.removeAll(keepingCapacity: true)
    }
}

/// Where a search for the next frame boundary stopped: a boundary at a position, a position
/// from which more bytes are needed to decide, or none in the bytes held.
enum ResyncBoundary { case found(Int), wait(Int), none }
