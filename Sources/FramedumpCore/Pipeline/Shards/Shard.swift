/// One shard of a connection-sharded run: a session manager of its own (protocols, layers,
/// decoders, counters) and printers writing to memory, fed the events of the connections it
/// owns. Only its thread touches any of it while the run goes on.
final class Shard {
    let manager: SessionManager
    /// Its sinks: the `-Y` filter (whose counts are added into the run's at the end), `-z`'s
    /// records (counted by the merge), `--diffable`'s connections (merged at the end).
    let sinks: SinkChain
    /// Where its printers write; each batch takes what one run of events wrote.
    let out: OutputBuffer

    init(manager: SessionManager, sinks: SinkChain, out: OutputBuffer) {
        self.manager = manager
        self.sinks = sinks
        self.out = out
    }

    /// Runs a batch's events in order, noting where each one's output ends, then hands the
    /// output to the batch.
    func run(_ b: ShardBatch, round: UInt64) {
        let before = messagesCounted
        let filtering = sinks.filtering, collector = sinks.collector, statistics = sinks.statistics
        let block = b.block
        let out = self.out
        b.events.withUnsafeBufferPointer { all in
            for e in all {
                // Where the event stands in the run: what is first seen here sorts by it.
                if filtering != nil || collector != nil {
                    let position = round << 32 | UInt64(e.seq)
                    filtering?.position = position
                    collector?.position = position
                }
                dispatch(e, block)
                b.ends.append(out.count)
                if let statistics { b.recordEnds.append(statistics.records.count) }
            }
        }
        out.exchangeBytes(with: b.out)
        if let statistics { swap(&statistics.records, &b.records) }
        b.messages = messagesCounted - before
    }

    @inline(__always)
    private func dispatch(_ e: ShardEvent, _ block: UnsafeMutableRawPointer) {
        let m = manager
        guard let twin = e.twin else {
            if e.kind == .finish { m.sink?.finish() }
            return
        }
        // Guaranteed: the batch's `owners` holds the connection while the shard runs it.
        twin._withUnsafeGuaranteedRef { c in
            switch e.kind {
            case .data:
                if c.halves[e.dir.rawValue].startedAtSYN != e.startedAtSYN { c.halves[e.dir.rawValue].startedAtSYN = e.startedAtSYN }
                m.data(c, e.dir, UnsafeRawBufferPointer(start: block + e.at, count: e.count), offset: e.offset, packet: e.packet)
            case .opened:
                m.opened(c, packet: e.packet)
            case .gap:
                if c.halves[e.dir.rawValue].startedAtSYN != e.startedAtSYN { c.halves[e.dir.rawValue].startedAtSYN = e.startedAtSYN }
                m.gap(c, e.dir, offset: e.offset, length: e.length, reason: GapReason.allCases[Int(e.reason)], packet: e.packet)
            case .conflict:
                m.conflict(c, e.dir, offset: e.offset, length: e.length, packet: e.packet)
            case .closed:
                c.isClosed = true
                c.deliveredAtClose = (e.offset, e.length)
                m.closed(c, reason: CloseReason.allCases[Int(e.reason)], packet: e.packet)
                // As the reassembler does with its own: the session is let go.
                c.context = nil
            case .lateData:
                m.lateData(c, e.dir, offset: e.offset, length: e.length, packet: e.packet)
            case .outOfWindowReset:
                m.outOfWindowReset(c, e.dir, packet: e.packet)
            case .afterClose:
                m.afterClose(c, e.dir, length: Int(e.length), packet: e.packet)
            case .finish:
                break
            }
        }
    }

    /// Messages decoded or counted so far (the progress line's count).
    var messagesCounted: UInt64 {
        manager.protocols.reduce(0) { $0 + $1.messageCounts.reduce(0, +) }
    }
}
