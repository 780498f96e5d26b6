/// One stream event on its way to the shard that owns its connection: a plain value (the
/// connection is an unretained reference, kept alive by the batch's `owners`), so a round's
/// events are written and read with plain stores.
struct ShardEvent {
    enum Kind: UInt8 {
        case opened, data, gap, conflict, closed, lateData, outOfWindowReset, afterClose
        /// End of the run: the shard's sinks finish.
        case finish
    }
    var kind: Kind
    var dir: Direction
    /// `data` and `gap`: whether the direction began at a SYN (the reassembler learns it after
    /// the connection opened; the twin is kept in step).
    var startedAtSYN: Bool
    /// `gap`: the `GapReason`'s index; `closed`: the `CloseReason`'s.
    var reason: UInt8
    /// Where in its round the event came (orders what shards count first: `-Y`'s summary).
    var seq: UInt32
    /// The shard's copy of the connection (nil for `finish`).
    /// Unretained: the batch's `owners` holds each connection named until the round is back on
    /// the reading thread, after its shard and the merge are done with it (ShardPoolTests under
    /// AddressSanitizer and ThreadSanitizer, scripts/sanitize.sh).
    var twin: Unmanaged<Connection>?
    /// `data`: where its bytes are in the batch's block, and how many.
    var at: Int
    var count: Int
    var offset: UInt64
    /// `gap`, `conflict`, `lateData`: its length; `afterClose`: the payload's; `closed`: the
    /// bytes delivered s2c (and `offset` those c2s).
    var length: UInt64
    var packet: PacketRef
}

/// What one shard gets of a round: its events and their bytes, and, once it has run them, the
/// output they made and where each event's part of it ends.
final class ShardBatch {
    @exclusivity(unchecked) var events: [ShardEvent] = []
    /// Raw: `ShardPool.add` copies a chunk in only after making room for it (`makeRoom`), and
    /// each event keeps where its bytes are (`at`, `count`).
    @exclusivity(unchecked) var block: UnsafeMutableRawPointer
    @exclusivity(unchecked) var capacity: Int
    @exclusivity(unchecked) var used = 0
    /// The connections this batch's events name, each once (see `Connection.twinRound`):
    /// held until the round comes back to the reading thread.
    @exclusivity(unchecked) var owners: [Connection] = []
    /// The output, swapped in from the shard's printers' buffer after the run.
    let out: OutputBuffer
    @exclusivity(unchecked) var ends: [Int] = []
    /// `-z`: the statistics records the events made, and where each event's end (swapped in
    /// from the shard's statistics sink after the run; the merge counts them in order).
    @exclusivity(unchecked) var records: [StatisticsRecord] = []
    @exclusivity(unchecked) var recordEnds: [Int] = []
    /// Messages the shard counted while running this batch (the progress line).
    @exclusivity(unchecked) var messages: UInt64 = 0

    init(blockBytes: Int, events: Int, outBytes: Int) {
        out = OutputBuffer(fd: nil, capacity: outBytes)
        capacity = blockBytes
        block = .allocate(byteCount: max(capacity, 1), alignment: 16)
        self.events.reserveCapacity(events)
        ends.reserveCapacity(events)
    }

    deinit { block.deallocate() }

    /// Empty again, for the next round (on the reading thread, which took the owners).
    func reset(blockBytes: Int, outBytes: Int) {
        events.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        records.removeAll(keepingCapacity: true)
        recordEnds.removeAll(keepingCapacity: true)
        owners.removeAll(keepingCapacity: true)
        out.empty(shrinkingTo: outBytes)
        used = 0
        messages = 0
        // A block grown for one large chunk goes back to the usual size.
        if capacity != blockBytes {
            block.deallocate()
            capacity = blockBytes
            block = .allocate(byteCount: max(capacity, 1), alignment: 16)
        }
    }
}

/// A stretch of the run's stream events, cut by connection into one batch per shard, with the
/// order they came in (`route`: each event's shard), which the merge puts the output back in.
final class ShardRound {
    @exclusivity(unchecked) var serial: UInt64 = 0
    @exclusivity(unchecked) var route: [UInt8] = []
    let batches: [ShardBatch]
    /// Shards still running their batch (under the pool's lock).
    @exclusivity(unchecked) var pending = 0
    /// The round is the run's last: the merge ends after it.
    @exclusivity(unchecked) var last = false

    init(shards: Int, sizes: ShardPool.Sizes) {
        batches = (0..<shards).map { _ in
            ShardBatch(blockBytes: sizes.blockBytes, events: sizes.events, outBytes: sizes.outBytes)
        }
        route.reserveCapacity(sizes.events)
    }
}
