#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Decoding and printing on a thread of their own, beside the thread that reads the capture,
/// reassembles and takes the layers of each connection's stack apart: reading a file, the two halves of the work
/// then run at once. The cut is where frames leave the deframers (`SessionFrames`): each frame's
/// bytes are copied into a batch, and the sink's events follow in the same queue, so the
/// output is the same, line for line, as on one thread.
///
/// Memory stays flat: a fixed pool of batches goes back and forth, and the reader waits when
/// all are full. A frame larger than a batch's block gets a block its size (frames are bounded
/// by `--max-frame` and `--max-ws-message`), given back when the batch is reused.
package final class DecodeThread: @unchecked Sendable {
    /// How much goes over at a time, and how many batches there are.
    package struct Sizes: Sendable {
        var events = 1024
        var blockBytes = 256 << 10
        var batches = 4

        package init(events: Int = 1024, blockBytes: Int = 256 << 10, batches: Int = 4) {
            self.events = events
            self.blockBytes = blockBytes
            self.batches = batches
        }
    }
    let sizes: Sizes

    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let hasWork = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let hasRoom = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    @exclusivity(unchecked) private var thread = pthread_t()

    // Under `lock`.
    @exclusivity(unchecked) private var full: [EventBatch] = []
    @exclusivity(unchecked) private var free: [EventBatch] = []
    @exclusivity(unchecked) private var ended = false
    @exclusivity(unchecked) private var outputClosed = false

    // The reading thread's own: the batch being filled lives in these fields (reached through
    // `self` alone, so filling it touches no reference count) and moves into a free
    // `EventBatch` when it is handed over.
    @exclusivity(unchecked) private var events: [DecodeEvent] = []
    /// The `call` events' closures, apart so that an event is a plain value.
    @exclusivity(unchecked) private var calls: [() -> Void] = []
    @exclusivity(unchecked) private var owners: [SessionFrames] = []
    @exclusivity(unchecked) private var block: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var used = 0
    @exclusivity(unchecked) private var serial: UInt64 = 1
    /// The output was closed (`| head`): the reader stops, as it does on one thread.
    @exclusivity(unchecked) private(set) var stopRequested = false
    /// Frames handed over so far (what the progress line counts while the other thread decodes).
    @exclusivity(unchecked) private(set) var framesSent: UInt64 = 0
    @exclusivity(unchecked) private var joined = false

    /// The decoding thread's: only it writes here once running.
    private let output: OutputBuffer

    /// Nil when no thread can be started: the caller then decodes on its own thread.
    init?(output: OutputBuffer, sizes: Sizes = Sizes()) {
        self.output = output
        self.sizes = sizes
        pthread_mutex_init(lock, nil)
        pthread_cond_init(hasWork, nil)
        pthread_cond_init(hasRoom, nil)
        capacity = sizes.blockBytes
        block = .allocate(byteCount: max(capacity, 1), alignment: 16)
        events.reserveCapacity(sizes.events)
        for _ in 1..<max(sizes.batches, 2) { free.append(EventBatch(sizes)) }
        let me = Unmanaged.passRetained(self)
        let started = pthread_create(&thread, nil, { context in
            let t = Unmanaged<DecodeThread>.fromOpaque(context!).takeRetainedValue()
            t.consume()
            return nil
        }, me.toOpaque())
        guard started == 0 else {
            me.release()
            return nil
        }
    }

    deinit {
        block.deallocate()
        pthread_cond_destroy(hasWork)
        pthread_cond_destroy(hasRoom)
        pthread_mutex_destroy(lock)
        lock.deallocate()
        hasWork.deallocate()
        hasRoom.deallocate()
    }

    // MARK: - The reading thread

    /// A deframed message, decoded over there by `to`.
    @inline(__always)
    func frame(_ to: SessionFrames, _ f: Frame, _ dir: Direction) {
        let at = store(f.bytes, for: to)
        events.append(DecodeEvent(kind: .frame, dir: dir, frame: FrameCopy(to, f, at: at), note: DecodeEvent.noNote))
        framesSent &+= 1
        if events.count >= sizes.events { submit() }
    }

    /// A message of a layer, decoded over there by `to`'s layer as its `note` says.
    @inline(__always)
    func layered(_ to: SessionFrames, _ f: Frame, _ dir: Direction, _ note: LayerNote) {
        let at = store(f.bytes, for: to)
        events.append(DecodeEvent(kind: .layered, dir: dir, frame: FrameCopy(to, f, at: at), note: note))
        framesSent &+= 1
        if events.count >= sizes.events { submit() }
    }

    /// Anything else (a connection opened or closed, a gap, a malformed stretch): rare, so a
    /// closure holding what it needs.
    func call(_ body: @escaping () -> Void) {
        events.append(DecodeEvent(kind: .call, dir: .c2s, frame: FrameCopy(call: calls.count), note: DecodeEvent.noNote))
        calls.append(body)
        if events.count >= sizes.events { submit() }
    }

    /// Copies `b` into the batch being filled (handing it over first if it is full) and keeps
    /// the batch holding `owner` until the batch comes back.
    @inline(__always)
    private func store(_ b: UnsafeRawBufferPointer, for owner: SessionFrames) -> Int {
        if capacity - used < b.count { makeRoom(b.count) }
        if owner.handoffSerial != serial {
            owner.handoffSerial = serial
            owners.append(owner)
        }
        let at = used
        if let src = b.baseAddress, !b.isEmpty { (block + at).copyMemory(from: src, byteCount: b.count) }
        used += b.count
        return at
    }

    /// The rare path: the block is full (hand the batch over), or one frame is larger than it.
    private func makeRoom(_ n: Int) {
        if !events.isEmpty { submit() }
        guard capacity - used < n else { return }
        block.deallocate()
        capacity = used + n
        block = .allocate(byteCount: capacity, alignment: 16)
    }

    /// Hands the batch being filled over and takes a free one (waiting while all are in use).
    private func submit() {
        pthread_mutex_lock(lock)
        while free.isEmpty { pthread_cond_wait(hasRoom, lock) }
        let b = free.removeLast()
        stopRequested = outputClosed
        pthread_mutex_unlock(lock)
        // What the decoding thread left in `b` (emptied events, owners to let go here, on the
        // thread that took them, and a block) changes places with what was filled.
        swap(&events, &b.events)
        swap(&calls, &b.calls)
        swap(&owners, &b.owners)
        swap(&block, &b.block)
        swap(&capacity, &b.capacity)
        owners.removeAll(keepingCapacity: true)
        used = 0
        // A block grown for one large frame goes back to the usual size.
        if capacity != sizes.blockBytes {
            block.deallocate()
            capacity = sizes.blockBytes
            block = .allocate(byteCount: max(capacity, 1), alignment: 16)
        }
        serial &+= 1
        pthread_mutex_lock(lock)
        full.append(b)
        pthread_cond_signal(hasWork)
        pthread_mutex_unlock(lock)
    }

    /// Hands over what is left and waits until the other thread has decoded and printed it.
    func finish() {
        guard !joined else { return }
        joined = true
        if !events.isEmpty { submit() }
        pthread_mutex_lock(lock)
        ended = true
        pthread_cond_signal(hasWork)
        pthread_mutex_unlock(lock)
        pthread_join(thread, nil)
    }

    // MARK: - The decoding thread

    private func consume() {
        while true {
            pthread_mutex_lock(lock)
            while full.isEmpty && !ended { pthread_cond_wait(hasWork, lock) }
            if full.isEmpty {
                pthread_mutex_unlock(lock)
                return
            }
            let b = full.removeFirst()
            let skip = outputClosed
            pthread_mutex_unlock(lock)
            if !skip { b.run() }
            b.events.removeAll(keepingCapacity: true)
            b.calls.removeAll(keepingCapacity: true)
            let closed = output.closed
            pthread_mutex_lock(lock)
            if closed { outputClosed = true }
            free.append(b)
            pthread_cond_signal(hasRoom)
            pthread_mutex_unlock(lock)
        }
    }
}

/// What crosses from the reading thread to the decoding one: a plain value (no reference
/// counted inside), so a batch of them is filled and emptied with plain stores.
struct DecodeEvent {
    enum Kind: UInt8 {
        /// A deframed message (`SessionFrames.decode(_:_:)`).
        case frame
        /// A layer's message (`SessionFrames.decodeLayered`).
        case layered
        /// Anything else: the batch's closure at `frame.at`.
        case call
    }
    var kind: Kind
    var dir: Direction
    var frame: FrameCopy
    var note: LayerNote

    static let noNote = LayerNote(layer: 0, 0 as UInt64)
}

/// A `Frame` whose bytes were copied into a batch's block.
struct FrameCopy {
    /// Kept alive by the batch's `owners`, so no reference count is touched per frame (on
    /// either thread: the two would fight over the count's cache line).
    let to: Unmanaged<SessionFrames>?
    let at: Int
    let count: Int
    let offset: UInt64
    let first: PacketRef
    let last: PacketRef
    let coalesced: Int

    @inline(__always)
    init(_ to: SessionFrames, _ f: Frame, at: Int) {
        self.to = Unmanaged.passUnretained(to)
        self.at = at
        count = f.bytes.count
        offset = f.offset
        first = f.firstPacket
        last = f.lastPacket
        coalesced = f.coalesced
    }

    /// A `call` event's: `at` is the closure's index.
    init(call: Int) {
        to = nil
        at = call
        count = 0
        offset = 0
        first = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))
        last = first
        coalesced = 0
    }

    @inline(__always)
    func frame(in block: UnsafeMutableRawPointer) -> Frame {
        Frame(bytes: UnsafeRawBufferPointer(start: block + at, count: count), offset: offset,
              firstPacket: first, lastPacket: last, coalesced: coalesced)
    }
}

/// A run of events and the bytes of their frames, on its way to the decoding thread or back.
final class EventBatch {
    @exclusivity(unchecked) var events: [DecodeEvent] = []
    @exclusivity(unchecked) var calls: [() -> Void] = []
    /// The frames' receivers, each once per batch (see `SessionFrames.handoffSerial`).
    @exclusivity(unchecked) var owners: [SessionFrames] = []
    @exclusivity(unchecked) var block: UnsafeMutableRawPointer
    @exclusivity(unchecked) var capacity: Int

    init(_ sizes: DecodeThread.Sizes) {
        capacity = sizes.blockBytes
        block = .allocate(byteCount: max(capacity, 1), alignment: 16)
        events.reserveCapacity(sizes.events)
    }

    deinit { block.deallocate() }

    /// The decoding thread's side: every event in order.
    func run() {
        let block = self.block
        events.withUnsafeBufferPointer { all in
            for e in all {
                switch e.kind {
                case .frame:
                    e.frame.to.unsafelyUnwrapped._withUnsafeGuaranteedRef { $0.decode(e.frame.frame(in: block), e.dir) }
                case .layered:
                    e.frame.to.unsafelyUnwrapped._withUnsafeGuaranteedRef {
                        $0.decodeLayered(e.frame.frame(in: block), e.dir, e.note)
                    }
                case .call: calls[e.frame.at]()
                }
            }
        }
    }
}

/// The sink the reading thread sees: every event goes over to the decoding thread, behind the
/// frames that came before it, to the sink there.
final class HandoffSink: MessageSink {
    let thread: DecodeThread
    let inner: MessageSink

    init(_ thread: DecodeThread, _ inner: MessageSink) {
        self.thread = thread
        self.inner = inner
    }

    func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        let s = inner
        thread.call { s.opened(c, p, packet: packet) }
    }

    /// Messages are decoded on the other thread, where `SessionFrames` hands them to `inner`.
    func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        inner.message(m, c, p)
    }

    func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                   reason: MalformedReason, packet: PacketRef) {
        let s = inner
        thread.call { s.malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet) }
    }

    func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
             reason: GapReason, packet: PacketRef) {
        let s = inner
        thread.call { s.gap(c, p, d, offset: offset, length: length, reason: reason, packet: packet) }
    }

    func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        let s = inner
        thread.call { s.conflict(c, d, offset: offset, length: length, packet: packet) }
    }

    func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        let s = inner
        thread.call { s.closed(c, p, reason: reason, packet: packet) }
    }

    func finish() {
        let s = inner
        thread.call { s.finish() }
    }

    func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction, packet: PacketRef) {
        let s = inner
        thread.call { s.layerEvent(e, c, p, d, packet: packet) }
    }

    func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        let s = inner
        thread.call { s.notice(n, c, p, d, packet: packet) }
    }
}
