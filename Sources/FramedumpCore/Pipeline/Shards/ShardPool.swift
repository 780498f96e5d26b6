#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Connection-sharded decoding (`-j N`). The reading thread reads the capture, decodes links,
/// joins fragments and reassembles every connection; each stream event then goes to the shard
/// that owns its connection (by its number, so both directions go to the same one), which runs
/// that connection's session, layers, deframers, decoders and printers on a thread of its own.
/// A merging thread writes the shards' output back in the order the events came, so the
/// output is byte for byte what one thread writes.
///
/// Reassembly stays on the reading thread: the run's clock, idle timeouts, connection numbers,
/// TIME-WAIT and the bounds on connections and buffered bytes are the whole capture's, and
/// they decide what closes when (and so where lines fall in the output).
///
/// Events travel in rounds: a round holds one batch per shard plus the order of its events.
/// A fixed pool of rounds goes round (reader → shards → merge → reader), so memory stays flat;
/// the reader waits when every round is in use. A chunk larger than a batch's block gets a
/// block its size (chunks are bounded by the reassembler's), given back when the round returns.
package final class ShardPool: StreamConsumer {
    /// How much a round holds, how many rounds there are, and what a shard's output buffers
    /// start with (tests make them tiny: every line then outgrows its buffer).
    package struct Sizes: Sendable {
        var events = 1024
        var blockBytes = 256 << 10
        var rounds = 8
        var outBytes = 256 << 10

        package init(events: Int = 1024, blockBytes: Int = 256 << 10, rounds: Int = 8, outBytes: Int = 256 << 10) {
            self.events = events
            self.blockBytes = blockBytes
            self.rounds = rounds
            self.outBytes = outBytes
        }
    }

    let shards: [Shard]
    let sizes: Sizes
    /// At most this many (a round's order is a byte per event).
    static let maxShards = 64
    /// The run's output: the merging thread's while it runs.
    private let output: OutputBuffer
    /// `-z`'s tables: the merging thread's while it runs (it counts the shards' records).
    private let statistics: StatisticsTables?

    // The pthread objects must not move: allocated once, destroyed in deinit, which runs only
    // after every thread was joined (finish or stopThreads) (ShardPoolTests under ThreadSanitizer).
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let shardWork: UnsafeMutablePointer<pthread_cond_t>
    private let mergeWork = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let roundFree = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    @exclusivity(unchecked) private var threads: [pthread_t] = []

    // Under `lock`.
    @exclusivity(unchecked) private var free: [ShardRound] = []
    @exclusivity(unchecked) private var queued: [[ShardRound]]
    @exclusivity(unchecked) private var merging: [ShardRound] = []
    @exclusivity(unchecked) private var ended = false
    @exclusivity(unchecked) private var outputClosed = false

    // The reading thread's own.
    @exclusivity(unchecked) private var round: ShardRound
    @exclusivity(unchecked) private var serial: UInt64 = 1
    /// The output was closed (`| head`): the reader stops, as it does on one thread.
    @exclusivity(unchecked) private(set) var stopRequested = false
    /// Messages the shards counted in the rounds that came back (the progress line).
    @exclusivity(unchecked) private(set) var messagesDone: UInt64 = 0
    @exclusivity(unchecked) private var joined = false

    // The merging thread's own: per shard, its next event and where its output stands.
    @exclusivity(unchecked) private var nextEvent: [Int]
    @exclusivity(unchecked) private var written: [Int]
    @exclusivity(unchecked) private var counted: [Int]

    /// Nil when the threads cannot be started: the caller then decodes on its own thread.
    init?(shards: [Shard], output: OutputBuffer, statistics: StatisticsTables? = nil, sizes: Sizes = Sizes()) {
        precondition(!shards.isEmpty && shards.count <= Int(UInt8.max))
        self.shards = shards
        self.output = output
        self.statistics = statistics
        self.sizes = sizes
        shardWork = .allocate(capacity: shards.count)
        queued = Array(repeating: [], count: shards.count)
        nextEvent = Array(repeating: 0, count: shards.count)
        written = Array(repeating: 0, count: shards.count)
        counted = Array(repeating: 0, count: shards.count)
        pthread_mutex_init(lock, nil)
        for i in shards.indices { pthread_cond_init(shardWork + i, nil) }
        pthread_cond_init(mergeWork, nil)
        pthread_cond_init(roundFree, nil)
        round = ShardRound(shards: shards.count, sizes: sizes)
        round.serial = serial
        for _ in 1..<max(sizes.rounds, 2) { free.append(ShardRound(shards: shards.count, sizes: sizes)) }
        for i in shards.indices {
            guard start({ $0.runShard(i) }) else {
                stopThreads()
                return nil
            }
        }
        guard start({ $0.runMerge() }) else {
            stopThreads()
            return nil
        }
    }

    deinit {
        for i in shards.indices { pthread_cond_destroy(shardWork + i) }
        pthread_cond_destroy(mergeWork)
        pthread_cond_destroy(roundFree)
        pthread_mutex_destroy(lock)
        lock.deallocate()
        shardWork.deallocate()
        mergeWork.deallocate()
        roundFree.deallocate()
        stretches.deallocate()
    }

    /// A thread running `body` on this pool (which it keeps alive until it returns).
    private func start(_ body: @escaping (ShardPool) -> Void) -> Bool {
        // One retain handed to the new thread, taken back exactly once there, or released here
        // when the thread could not start.
        let job = Unmanaged.passRetained(ThreadJob(self, body))
        var t = pthread_t()
        guard pthread_create(&t, nil, { context in
            Unmanaged<ThreadJob>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, job.toOpaque()) == 0 else {
            job.release()
            return false
        }
        threads.append(t)
        return true
    }

    /// A start failed: the threads already started end (no round was submitted).
    private func stopThreads() {
        pthread_mutex_lock(lock)
        ended = true
        let last = round
        last.last = true
        merging.append(last)
        for i in shards.indices { pthread_cond_signal(shardWork + i) }
        pthread_cond_signal(mergeWork)
        pthread_mutex_unlock(lock)
        for t in threads { pthread_join(t, nil) }
        threads = []
        joined = true
    }

    // MARK: - The reading thread: events in

    package func opened(_ c: Connection, packet: PacketRef) {
        c.shard = Int(c.number % UInt64(shards.count))
        c.twin = c.makeTwin()
        add(c, .opened, .c2s, packet: packet)
    }

    @inline(__always)
    package func data(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        add(c, .data, d, bytes: bytes, offset: offset, packet: packet)
    }

    package func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        add(c, .gap, d, offset: offset, length: length, reason: UInt8(GapReason.allCases.firstIndex(of: reason)!), packet: packet)
    }

    package func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        add(c, .conflict, d, offset: offset, length: length, packet: packet)
    }

    package func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        add(c, .closed, .c2s, offset: c.deliveredAtClose.c2s, length: c.deliveredAtClose.s2c,
            reason: UInt8(CloseReason.allCases.firstIndex(of: reason)!), packet: packet)
    }

    package func lateData(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        add(c, .lateData, d, offset: offset, length: length, packet: packet)
    }

    package func outOfWindowReset(_ c: Connection, _ d: Direction, packet: PacketRef) {
        add(c, .outOfWindowReset, d, packet: packet)
    }

    package func afterClose(_ c: Connection, _ d: Direction, length: Int, packet: PacketRef) {
        add(c, .afterClose, d, length: UInt64(length), packet: packet)
    }

    /// Puts an event (and its bytes) in the batch of the connection's shard.
    @inline(__always)
    private func add(_ c: Connection, _ kind: ShardEvent.Kind, _ d: Direction,
                     bytes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                     offset: UInt64 = 0, length: UInt64 = 0, reason: UInt8 = 0, packet: PacketRef) {
        guard let twin = c.twin else { return }
        let s = c.shard
        var b = round.batches[s]
        if b.capacity - b.used < bytes.count {
            makeRoom(bytes.count, in: s)
            b = round.batches[s]
        }
        if c.twinRound != round.serial {
            c.twinRound = round.serial
            b.owners.append(twin)
        }
        let at = b.used
        if let src = bytes.baseAddress, !bytes.isEmpty {
            (b.block + at).copyMemory(from: src, byteCount: bytes.count)
            b.used += bytes.count
        }
        b.events.append(ShardEvent(kind: kind, dir: d, startedAtSYN: c.halves[d.rawValue].startedAtSYN, reason: reason,
                                   seq: UInt32(truncatingIfNeeded: round.route.count), twin: Unmanaged.passUnretained(twin),
                                   at: at, count: bytes.count, offset: offset, length: length, packet: packet))
        round.route.append(UInt8(truncatingIfNeeded: s))
        if round.route.count >= sizes.events { submit() }
    }

    /// The rare path: shard `s`'s block is full (the round goes), or one chunk is larger than it.
    private func makeRoom(_ n: Int, in s: Int) {
        if !round.route.isEmpty { submit() }
        let b = round.batches[s]
        guard b.capacity - b.used < n else { return }
        b.block.deallocate()
        b.capacity = b.used + n
        b.block = .allocate(byteCount: b.capacity, alignment: 16)
    }

    /// Hands the round over (to its shards and the merge) and takes a free one, waiting while
    /// every round is in use.
    private func submit(last: Bool = false) {
        let r = round
        r.last = last
        pthread_mutex_lock(lock)
        var pending = 0
        for (i, b) in r.batches.enumerated() where !b.events.isEmpty {
            queued[i].append(r)
            pending += 1
            pthread_cond_signal(shardWork + i)
        }
        r.pending = pending
        merging.append(r)
        pthread_cond_signal(mergeWork)
        if last {
            ended = true
            for i in shards.indices { pthread_cond_signal(shardWork + i) }
            pthread_mutex_unlock(lock)
            return
        }
        while free.isEmpty { pthread_cond_wait(roundFree, lock) }
        let next = free.removeLast()
        stopRequested = outputClosed
        pthread_mutex_unlock(lock)
        // A round back from the merge: its counts are read and its connections let go here,
        // on the thread that took them.
        for b in next.batches {
            messagesDone &+= b.messages
            b.reset(blockBytes: sizes.blockBytes, outBytes: sizes.outBytes)
        }
        next.route.removeAll(keepingCapacity: true)
        next.last = false
        serial &+= 1
        next.serial = serial
        round = next
    }

    /// End of the run: each shard's sinks finish, and everything is decoded and written
    /// before this returns.
    func finish() {
        guard !joined else { return }
        joined = true
        for s in shards.indices {
            round.batches[s].events.append(ShardEvent(kind: .finish, dir: .c2s, startedAtSYN: false, reason: 0,
                                                      seq: UInt32(truncatingIfNeeded: round.route.count), twin: nil,
                                                      at: 0, count: 0, offset: 0, length: 0,
                                                      packet: PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))))
            round.route.append(UInt8(s))
        }
        submit(last: true)
        for t in threads { pthread_join(t, nil) }
        threads = []
    }

    // MARK: - A shard's thread

    private func runShard(_ i: Int) {
        let shard = shards[i]
        while true {
            pthread_mutex_lock(lock)
            while queued[i].isEmpty && !ended { pthread_cond_wait(shardWork + i, lock) }
            if queued[i].isEmpty {
                pthread_mutex_unlock(lock)
                return
            }
            let r = queued[i].removeFirst()
            let skip = outputClosed
            pthread_mutex_unlock(lock)
            // Nobody reads any more: the events are passed over (the run is ending).
            if !skip { shard.run(r.batches[i], round: r.serial) }
            pthread_mutex_lock(lock)
            r.pending -= 1
            if r.pending == 0 { pthread_cond_signal(mergeWork) }
            pthread_mutex_unlock(lock)
        }
    }

    // MARK: - The merging thread: output out, in order

    private func runMerge() {
        while true {
            pthread_mutex_lock(lock)
            while merging.isEmpty || merging[0].pending > 0 { pthread_cond_wait(mergeWork, lock) }
            let r = merging.removeFirst()
            let skip = outputClosed
            let last = r.last
            pthread_mutex_unlock(lock)
            if !skip { write(r) }
            let closed = output.closed
            pthread_mutex_lock(lock)
            if closed { outputClosed = true }
            // (Once free, the round is the reader's again: nothing of it is read after.)
            if !last {
                free.append(r)
                pthread_cond_signal(roundFree)
            }
            pthread_mutex_unlock(lock)
            if last { return }
        }
    }

    /// The round's output, event by event in the order they came (a run of events of one
    /// shard is one stretch), written without being copied; and its statistics records
    /// counted in the same order.
    private func write(_ r: ShardRound) {
        for s in shards.indices {
            nextEvent[s] = 0
            written[s] = 0
            counted[s] = 0
        }
        let statistics = self.statistics
        var n = 0
        r.route.withUnsafeBufferPointer { route in
            var i = 0
            while i < route.count {
                let s = route[i]
                var j = i + 1
                while j < route.count && route[j] == s { j += 1 }
                let b = r.batches[Int(s)]
                // A shard that skipped its batch (the output closed) has no ends.
                let k = nextEvent[Int(s)] + (j - i) - 1
                if k < b.ends.count {
                    let end = b.ends[k], start = written[Int(s)]
                    // The stretch is handed to writev as it is: checked against what the shard wrote.
                    precondition(start <= end && end <= b.out.count, "a shard's output ends past what it wrote")
                    if end > start {
                        if n == stretchCapacity { growStretches() }
                        stretches[n] = iovec(iov_base: UnsafeMutableRawPointer(b.out.base + start), iov_len: end - start)
                        n += 1
                    }
                    written[Int(s)] = end
                }
                if let statistics, k < b.recordEnds.count {
                    let end = b.recordEnds[k]
                    for x in counted[Int(s)]..<end { statistics.count(b.records[x]) }
                    counted[Int(s)] = end
                }
                nextEvent[Int(s)] = k + 1
                i = j
            }
        }
        if n > 0 { output.write(gathering: stretches, n) }
    }

    /// The merge's list of stretches to write (a round has at most one per event).
    /// Grown before a stretch would pass its capacity (`growStretches`).
    @exclusivity(unchecked) private var stretches = UnsafeMutablePointer<iovec>.allocate(capacity: 1024)
    @exclusivity(unchecked) private var stretchCapacity = 1024

    private func growStretches() {
        let bigger = UnsafeMutablePointer<iovec>.allocate(capacity: stretchCapacity * 2)
        bigger.moveInitialize(from: stretches, count: stretchCapacity)
        stretches.deallocate()
        stretches = bigger
        stretchCapacity *= 2
    }
}

/// What a pool's thread runs, holding the pool until it returns.
private final class ThreadJob {
    let pool: ShardPool
    let body: (ShardPool) -> Void
    init(_ pool: ShardPool, _ body: @escaping (ShardPool) -> Void) {
        self.pool = pool
        self.body = body
    }
    func run() { body(pool) }
}
