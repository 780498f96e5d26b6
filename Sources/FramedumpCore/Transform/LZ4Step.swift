import CLZ4

/// LZ4 bodies through the reference library: the frame format (streamed into the output, so a
/// frame's announced content size is never allocated), or one raw block whose size is given.
final class LZ4Step {
    let size: LZ4BlockSize?
    @exclusivity(unchecked) private var context: OpaquePointer?

    /// `size` nil: the frame format.
    init(block size: LZ4BlockSize?) { self.size = size }

    deinit { if let context { LZ4F_freeDecompressionContext(context) } }

    func run(_ body: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, layout: FrameLayout,
             into out: ByteBlock, limit: Int) -> StepResult {
        guard let src = body.baseAddress, !body.isEmpty else { return .failed("lz4: empty body") }
        if let size { return block(src, body.count, size, header, layout, out, limit) }
        return frame(src, body.count, out, limit)
    }

    private func frame(_ src: UnsafeRawPointer, _ n: Int, _ out: ByteBlock, _ limit: Int) -> StepResult {
        if context == nil {
            var c: OpaquePointer?
            guard !isError(LZ4F_createDecompressionContext(&c, UInt32(LZ4F_VERSION))), let c else {
                return .failed("lz4: cannot make a decompression context")
            }
            context = c
        }
        LZ4F_resetDecompressionContext(context)
        let start = out.count
        var at = 0
        while true {
            let produced = out.count - start
            if produced >= limit { return .tooLarge }
            let room = min(limit - produced, max(4096, (n - at) * 4))
            var dstSize = room
            var srcSize = n - at
            let r = LZ4F_decompress(context, out.reserve(room), &dstSize, src + at, &srcSize, nil)
            out.commit(dstSize)
            at += srcSize
            if isError(r) { return .failed("lz4: " + String(cString: LZ4F_getErrorName(r))) }
            if r == 0 {
                // The frame ended; anything after it is not LZ4.
                return at == n ? .ok : .failed("lz4: \(n - at) bytes follow the end of the frame")
            }
            if at == n && dstSize == 0 {
                return .failed("lz4: the body ends inside the frame (after \(out.count - start) bytes)")
            }
        }
    }

    private func block(_ src: UnsafeRawPointer, _ n: Int, _ size: LZ4BlockSize, _ header: UnsafeRawBufferPointer,
                       _ layout: FrameLayout, _ out: ByteBlock, _ limit: Int) -> StepResult {
        var input = src, count = n
        let expected: Int?
        switch size {
        case .prefixed:
            guard n >= 4 else { return .failed("lz4_block: \(n)-byte body has no 4-byte size before the block") }
            let p = src.assumingMemoryBound(to: UInt8.self)
            expected = Int(p[0]) | Int(p[1]) << 8 | Int(p[2]) << 16 | Int(p[3]) << 24
            input += 4; count -= 4
        case .field(let f):
            let v = layout.value(f, in: header, at: 0) ?? 0
            expected = v > UInt64(Int32.max) ? Int(Int32.max) : Int(v)
        case .atMost:
            expected = nil
        }
        var capacity: Int
        switch size {
        case .atMost(let m): capacity = min(m, limit)
        default: capacity = expected!
        }
        if let expected, expected > limit { return .tooLarge }
        capacity = min(capacity, Int(Int32.max))
        let dst = out.reserve(max(capacity, 1))
        let r = LZ4_decompress_safe(input.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
                                    Int32(clamping: count), Int32(clamping: capacity))
        guard r >= 0 else { return .failed("lz4_block: not a valid LZ4 block of at most \(capacity) bytes") }
        out.commit(Int(r))
        if let expected, Int(r) != expected {
            return .failed("lz4_block: the block holds \(r) bytes, \(expected) were announced")
        }
        return .ok
    }

    private func isError(_ r: Int) -> Bool { LZ4F_isError(r) != 0 }
}
