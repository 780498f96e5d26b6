import CZlib

/// zlib, gzip and raw deflate bodies, each message on its own (no window carried over), the
/// output growing as zlib writes it, never past the chain's limit: a bomb stops at the limit.
final class InflateStep {
    enum Wrapper { case zlib, gzip, raw }
    let wrapper: Wrapper
    @exclusivity(unchecked) private var stream = z_stream()
    @exclusivity(unchecked) private var ready = false

    init(_ wrapper: Wrapper) { self.wrapper = wrapper }

    deinit { if ready { inflateEnd(&stream) } }

    var name: String {
        switch wrapper {
        case .zlib: return "zlib"
        case .gzip: return "gzip"
        case .raw: return "deflate"
        }
    }

    private func begin() -> Bool {
        if ready { return inflateReset(&stream) == Z_OK }
        let bits: Int32 = wrapper == .zlib ? 15 : wrapper == .gzip ? 31 : -15
        ready = inflateInit2_(&stream, bits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
        return ready
    }

    func run(_ body: UnsafeRawBufferPointer, into out: ByteBlock, limit: Int) -> StepResult {
        guard let src = body.baseAddress, !body.isEmpty else { return .failed("\(name): empty body") }
        let start = out.count
        var at = 0
        // gzip may hold several members in a row (RFC 1952 §2.2); the others end with the stream.
        repeat {
            guard begin() else { return .failed("\(name): cannot start zlib") }
            stream.next_in = UnsafeMutablePointer(mutating: src.assumingMemoryBound(to: UInt8.self) + at)
            stream.avail_in = UInt32(body.count - at)
            while true {
                let produced = out.count - start
                if produced >= limit { return .tooLarge }
                // Grow by what the input suggests, never by what it announces, never past the limit.
                let room = min(limit - produced, max(4096, (body.count - at) * 4))
                stream.next_out = out.reserve(room).assumingMemoryBound(to: UInt8.self)
                stream.avail_out = UInt32(room)
                let r = inflate(&stream, Z_NO_FLUSH)
                out.commit(room - Int(stream.avail_out))
                if r == Z_STREAM_END { break }
                if r == Z_BUF_ERROR && stream.avail_in == 0 {
                    return .failed("\(name): the body ends inside the compressed stream (after \(out.count - start) bytes)")
                }
                if r != Z_OK && r != Z_BUF_ERROR {
                    let why = stream.msg.map { String(cString: $0) } ?? "error \(r)"
                    return .failed("\(name): \(why)")
                }
            }
            at = body.count - Int(stream.avail_in)
        } while wrapper == .gzip && body.count - at >= 2 && body[at] == 0x1f && body[at + 1] == 0x8b
        if at < body.count {
            return .failed("\(name): \(body.count - at) bytes follow the end of the compressed stream")
        }
        return .ok
    }
}
