import CZlib

/// One direction's permessage-deflate decompressor (RFC 7692 §7.2.2): raw DEFLATE, each
/// message ending with the 4 bytes 00 00 ff ff that the sender removed. With context takeover
/// the window carries over from message to message; without it every message starts fresh.
final class Inflater {
    enum Result: Equatable {
        case ok
        /// The output would pass the cap (a deflate bomb): the message is skipped.
        case tooLarge
        case failed(String)
    }

    @exclusivity(unchecked) private var stream = z_stream()
    /// zlib's state is made at the first message (an inflater that only ever heard of a gap
    /// costs no more than this object).
    @exclusivity(unchecked) private var started = false
    @exclusivity(unchecked) private var ready = false
    /// Keep the window between messages.
    @exclusivity(unchecked) var contextTakeover = true
    /// The window went with a gap (or a failed message) and has not been rebuilt since: a
    /// message that then cannot be inflated is flagged as a likely consequence.
    @exclusivity(unchecked) private(set) var contextLost = false

    /// Where zlib writes before the bytes are appended to the message: one block for the whole
    /// run (`Scratch`), so a connection costs only zlib's own state.
    static let scratchSize = 64 * 1024
    private let shared: Scratch
    private var scratch: UnsafeMutablePointer<UInt8> { shared.bytes }

    /// zlib's wrapper (RFC 1950) around the DEFLATE data: TLS compression (RFC 3749) has it,
    /// permessage-deflate not.
    @exclusivity(unchecked) private var zlibHeader: Bool

    init(scratch: Scratch, contextTakeover: Bool = true, zlibHeader: Bool = false) {
        shared = scratch
        self.contextTakeover = contextTakeover
        self.zlibHeader = zlibHeader
    }

    deinit { if ready { inflateEnd(&stream) } }

    private func start() {
        started = true
        // A 15-bit window reads data written with any smaller window as well.
        ready = inflateInit2_(&stream, zlibHeader ? 15 : -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
    }

    /// An output block shared by the inflaters of one thread.
    final class Scratch {
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: Inflater.scratchSize)
        deinit { bytes.deallocate() }
    }

    func reset() { if ready { inflateReset(&stream) } }

    /// Starts again on raw DEFLATE, its window empty (TLS compression after a record that
    /// would not inflate: the sender's stream goes on without a header).
    func restartRaw() {
        if ready { inflateEnd(&stream) }
        ready = false
        started = false
        zlibHeader = false
    }

    /// A gap in the stream: back-references into the lost bytes cannot be resolved any more.
    /// (`negotiated`: the handshake was seen, so whether the window carried over is known.)
    func lost(negotiated: Bool) {
        reset()
        contextLost = negotiated && contextTakeover
    }

    /// One message: `input` is its payload followed by `tail`. Returns the bytes to decode (the
    /// inflated ones in `out`; none for a deflate bomb; the payload as it came, tail left off,
    /// when it cannot be inflated) and records on `info` what went wrong.
    func message(_ info: inout WebSocketInfo, _ input: UnsafeRawBufferPointer, into out: ByteBlock,
                 cap: Int) -> UnsafeRawBufferPointer {
        switch inflate(input, into: out, cap: cap) {
        case .ok:
            contextLost = false
            return out.bytes
        case .tooLarge:
            info.add(.inflatedTooLarge(max: cap))
            out.removeAll()
            contextLost = contextTakeover
            return out.bytes
        case .failed(let why):
            if contextLost { info.add(.compressionContextLost) }
            info.add(.inflateFailed(why))
            return UnsafeRawBufferPointer(rebasing: input[0..<max(input.count - 4, 0)])
        }
    }

    /// The 4 bytes the sender removed from the end of every message.
    /// (In memory order, as a plain value: no array to look up and retain per message.)
    static let tail: UInt32 = UInt32(littleEndian: 0xffff_0000)

    /// Inflates one message's payload into `out` (replacing its contents), never past `cap`
    /// bytes. The caller appends `tail` to the payload first (one pass through zlib).
    func inflate(_ input: UnsafeRawBufferPointer, into out: ByteBlock, cap: Int) -> Result {
        if !started { start() }
        guard ready else { return .failed("zlib could not start") }
        out.removeAll()
        let result = run(input, into: out, cap: cap)
        if case .ok = result, contextTakeover {} else { reset() }
        return result
    }

    private func run(_ input: UnsafeRawBufferPointer, into out: ByteBlock, cap: Int) -> Result {
        guard let base = input.baseAddress, !input.isEmpty else { return .ok }
        stream.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        stream.avail_in = UInt32(input.count)
        defer { stream.next_in = nil; stream.avail_in = 0 }
        while true {
            if out.count >= cap { return .tooLarge }
            let room = min(Self.scratchSize, cap - out.count)
            let inBefore = stream.avail_in
            // Straight into the message block when it has room; through the scratch block otherwise,
            // so the block grows by what was produced, not by what might be.
            let direct = out.capacity - out.count >= room
            let target = direct ? out.reserve(room).assumingMemoryBound(to: UInt8.self) : scratch
            stream.next_out = target
            stream.avail_out = UInt32(room)
            let code = CZlib.inflate(&stream, Z_SYNC_FLUSH)
            let produced = room - Int(stream.avail_out)
            if direct { out.commit(produced) } else { out.append(UnsafeRawBufferPointer(start: scratch, count: produced)) }
            stream.next_out = nil
            switch code {
            case Z_OK, Z_BUF_ERROR:
                if produced == 0 && stream.avail_in == inBefore {
                    // No progress: all input taken and all output given (or nothing can move).
                    return .ok
                }
            case Z_STREAM_END:
                // A final block: the next message starts a new deflate stream.
                reset()
                if stream.avail_in == 0 { return .ok }
            default:
                return .failed(stream.msg.map { String(cString: $0) } ?? "zlib error \(code)")
            }
            // Done when the input is used up and zlib had room to spare (nothing held back).
            if stream.avail_in == 0 && stream.avail_out > 0 { return .ok }
        }
    }
}
