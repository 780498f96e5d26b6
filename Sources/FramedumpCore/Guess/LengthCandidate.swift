/// One hypothesis about a length-prefixed framing: the field at `offset`, `width` bytes
/// (0 = a LEB128 varint), in `order`, whose value plus `adjustment` is the frame's length.
/// (Netty's model: lengthFieldOffset, lengthFieldLength, lengthAdjustment; a length that
/// counts the body only has an adjustment equal to the header's size.)
public struct LengthCandidate: Hashable, Sendable, CustomStringConvertible {
    public var offset: Int
    /// 1, 2, 4 or 8; 0 for a varint.
    public var width: Int
    public var order: ByteOrder
    public var adjustment: Int

    public init(offset: Int, width: Int, order: ByteOrder, adjustment: Int) {
        self.offset = offset
        self.width = width
        self.order = order
        self.adjustment = adjustment
    }

    public var isVarint: Bool { width == 0 }

    /// The first byte after the field (a varint's end depends on its value: its first byte).
    var minimumEnd: Int { offset + max(width, 1) }

    public var description: String {
        let type = isVarint ? "varint" : width == 1 ? "u8" : "u\(width * 8) \(order == .big ? "big" : "little")-endian"
        if isVarint {
            return "varint at offset \(offset), counts the bytes after it" + (adjustment == 0 ? "" : " \(adjustment > 0 ? "+" : "-") \(abs(adjustment))")
        }
        let adj = adjustment == 0 ? "counts the whole frame" : "frame = value \(adjustment > 0 ? "+" : "-") \(abs(adjustment))"
        return "\(type) at offset \(offset), \(adj)"
    }

    /// The byte that holds the lowest-order bits: two candidates over the same value that
    /// differ only in how many zero high bytes they take in share it.
    var lowByte: Int { isVarint || order == .little ? offset : offset + width - 1 }

    /// The field's value at `p`, or nil when the bytes are not all there (or a varint runs
    /// past 9 bytes). Never reads outside `b`.
    @inline(__always)
    func value(_ b: UnsafeBufferPointer<UInt8>, at p: Int) -> (value: UInt64, end: Int)? {
        let start = p + offset
        if isVarint {
            var v: UInt64 = 0, shift: UInt64 = 0, i = start
            while i < b.count && shift < 63 {
                let x = b[i]
                v |= UInt64(x & 0x7f) << shift
                i += 1
                if x & 0x80 == 0 { return (v, i - p) }
                shift += 7
            }
            return nil
        }
        guard let v = UnsafeRawBufferPointer(b).uint(start, width: width, bigEndian: order == .big) else { return nil }
        return (v, start + width - p)
    }
}

/// How far a candidate's chain of frames goes through one piece of a stream.
struct Chain {
    var start: Int
    /// Frames whose length was read and was plausible (the last may run past a cut end).
    var frames: Int
    /// Bytes from `start` to the end of the last frame that fit, or to the piece's end when
    /// the chain reached it.
    var covered: Int
    /// The chain reached the piece's end (exactly, or past a cut end).
    var complete: Bool
    /// The first frame's length (0: none).
    var first: Int
    /// Each frame's length, up to `FramingStats.keep` of them (for the header analysis).
    var lengths: [Int]
    /// The longest frame's length (0: none).
    var longest = 0

    /// Where each kept frame ends, in the piece.
    var ends: [Int] {
        var at = start
        return lengths.map { at += $0; return at }
    }
}

/// Walks frames of one candidate over bytes.
struct ChainWalker {
    let candidate: LengthCandidate
    /// Longer frames are implausible (never allocated: this only moves an index).
    let maxFrame: Int
    /// What `resync` remembers per position, shared by the walkers of one search.
    var scratch = ResyncScratch()

    /// Frames from `start`, at most `maxFrames`; `cut` says the bytes end before the stream does.
    func walk(_ b: UnsafeBufferPointer<UInt8>, from start: Int, cut: Bool, maxFrames: Int, keepValues: Bool = false) -> Chain {
        var p = start, frames = 0, first = 0, longest = 0
        var lengths: [Int] = []
        let n = b.count
        while frames < maxFrames {
            if p == n { return Chain(start: start, frames: frames, covered: p - start, complete: true, first: first, lengths: lengths, longest: longest) }
            guard let (v, end) = candidate.value(b, at: p) else {
                // A header cut by the end of what was sampled is not a failure (nor evidence).
                return Chain(start: start, frames: frames, covered: p - start, complete: cut, first: first, lengths: lengths, longest: longest)
            }
            guard v <= UInt64(maxFrame) else { break }
            // A varint counts what follows it (protobuf's delimited form), plus the adjustment.
            let length = candidate.isVarint ? end + Int(v) + candidate.adjustment : Int(v) + candidate.adjustment
            guard length >= end, length >= 1, length <= maxFrame else { break }
            if p + length > n {
                // A frame running past a cut end is not a failure, but explains nothing: else
                // a candidate reading huge lengths would explain every sample at once.
                if cut { return Chain(start: start, frames: frames, covered: p - start, complete: true, first: first, lengths: lengths, longest: longest) }
                break
            }
            if keepValues && lengths.count < FramingStats.keep { lengths.append(length) }
            if frames == 0 { first = length }
            longest = max(longest, length)
            frames += 1
            p += length
        }
        return Chain(start: start, frames: frames, covered: p - start, complete: p == n, first: first, lengths: lengths, longest: longest)
    }

    /// Where the chain locks in, in a piece that may start mid-message: the first offset (up to
    /// `searchLimit`) from which the chain reaches the piece's end; failing that, of the offsets
    /// from which `confirm` frames chain, the one whose chain goes furthest. (The first offset
    /// where a few frames chain can be a chance alignment inside the cut-off message.)
    ///
    /// Every offset is tried: chains from different offsets merge (once on a frame start another
    /// chain went through, they go the same way), so each position's outcome is remembered and
    /// no byte is walked twice. (Trying only the first few dozen chaining offsets missed the
    /// true start of a length that chains from anywhere, a u8, behind a long cut-off message.)
    func resync(_ b: UnsafeBufferPointer<UInt8>, cut: Bool, searchLimit: Int, confirm: Int) -> Int? {
        let n = b.count
        let limit = min(searchLimit, n)
        guard limit > 0 else { return nil }
        let m = scratch
        m.begin(n)
        let gen = m.generation
        let stamp = m.stamp, endOf = m.endOf, framesFrom = m.framesFrom
        // The lists are the scratch's (their capacity kept), held here while in use.
        var ends = m.ends, path = m.path
        m.ends = []
        m.path = []
        defer {
            m.ends = ends
            m.path = path
        }
        var best: (start: Int, end: Int)?
        for s in 0..<limit {
            if stamp[s] != gen {
                // Walk until the chain stops or meets a position already walked.
                if !path.isEmpty { path.removeAll(keepingCapacity: true) }
                var p = s
                var terminal = -1, tail: Int32 = 0
                while true {
                    if p == n { ends.append((n, true)); break }
                    if stamp[p] == gen { terminal = Int(endOf[p]); tail = framesFrom[p]; break }
                    guard let (v, end) = candidate.value(b, at: p) else { ends.append((p, cut)); break }
                    guard v <= UInt64(maxFrame) else { ends.append((p, false)); break }
                    let length = candidate.isVarint ? end + Int(v) + candidate.adjustment : Int(v) + candidate.adjustment
                    guard length >= end, length >= 1, length <= maxFrame else { ends.append((p, false)); break }
                    if p + length > n { ends.append((p, cut)); break }
                    path.append(Int32(p))
                    p += length
                }
                if terminal < 0 { terminal = ends.count - 1 }
                let count = Int32(path.count)
                for (k, q) in path.enumerated() {
                    stamp[Int(q)] = gen
                    endOf[Int(q)] = Int32(terminal)
                    framesFrom[Int(q)] = count - Int32(k) + tail
                }
                if path.isEmpty { continue }
            }
            let e = ends[Int(endOf[s])]
            let frames = Int(framesFrom[s])
            if e.complete && frames >= 1 { return s }
            if frames >= confirm, best == nil || e.end > best!.end { best = (s, e.end) }
        }
        return best?.start
    }

    /// Where the frame at `p` ends, when its length is plausible and it fits in `b`.
    @inline(__always)
    func next(_ b: UnsafeBufferPointer<UInt8>, _ p: Int) -> Int? {
        guard let (v, end) = candidate.value(b, at: p), v <= UInt64(maxFrame) else { return nil }
        let length = candidate.isVarint ? end + Int(v) + candidate.adjustment : Int(v) + candidate.adjustment
        guard length >= end, length >= 1, p + length <= b.count else { return nil }
        return p + length
    }

    /// Where a chain found from mid-stream (from `start`, which `resync` gave) is sure to be in
    /// step: the first of its frame starts that every chain from an offset below `starts` that
    /// ends where it does goes through. The message the piece starts in was cut off before
    /// `starts` (the chain's first frame end: `start` is the first offset whose chain reaches the
    /// end, the real first boundary is not before it); a chain from each offset there has joined
    /// the rest by then, whichever was the real one. (Chains from one offset meet another's only
    /// on a frame start and then go the same way: how many starts each position gathers is
    /// counted in one pass.) The piece's end when they meet only there.
    func trunk(_ b: UnsafeBufferPointer<UInt8>, from start: Int, starts: Int) -> Int {
        let n = b.count
        var gathered = [Int32](repeating: 0, count: n + 1)
        let limit = min(starts, n)
        for p in 0..<n {
            if p < limit { gathered[p] += 1 }
            guard gathered[p] > 0, let q = next(b, p) else { continue }
            gathered[q] += gathered[p]
        }
        var list: [Int] = []
        var p = start
        while p < n {
            list.append(p)
            guard let q = next(b, p) else { break }
            p = q
        }
        // Where the chain ends (the piece's end, or the frame that runs past a cut) gathers
        // every chain that ends there.
        let all = gathered[p]
        return list.first { gathered[$0] >= all } ?? n
    }

    /// The chain through a piece that starts mid-message whose frames score most, each frame
    /// scored by `weight(start, length)` (how much more it looks like a message than most
    /// sure ones do, negative when less): among the chains that end where the piece does
    /// (exactly, or past a cut end), the one from whichever offset gathers the highest sum.
    /// Chains join and never part, so the best chain to each position is found in one pass
    /// (the best that arrives there, if worth more than nothing, plus its frame). Nil when no
    /// chain reaches the end.
    func likeliest(_ b: UnsafeBufferPointer<UInt8>, cut: Bool, weight: (Int, Int) -> Double) -> [(start: Int, length: Int)]? {
        let n = b.count
        guard n > 0 else { return nil }
        var best = [Double](repeating: -.infinity, count: n + 1)
        var from = [Int32](repeating: -1, count: n + 1)
        var end: (at: Int, score: Double)?
        for p in 0..<n {
            let arriving = max(0, best[p])
            guard let q = next(b, p) else {
                // A frame (or its length) that runs past a cut end: the chain ends here.
                if cut, best[p] > 0, best[p] > (end?.score ?? -.infinity) {
                    let past = candidate.value(b, at: p).map { v -> Bool in
                        let length = candidate.isVarint ? v.end + Int(v.value) + candidate.adjustment : Int(v.value) + candidate.adjustment
                        return v.value <= UInt64(maxFrame) && length >= v.end && length >= 1 && p + length > n
                    } ?? true
                    if past { end = (p, best[p]) }
                }
                continue
            }
            let score = arriving + weight(p, q - p)
            if score > best[q] {
                best[q] = score
                from[q] = Int32(p)
            }
        }
        if best[n] > (end?.score ?? -.infinity) { end = (n, best[n]) }
        guard let end else { return nil }
        var starts: [Int] = []
        var p = end.at
        while from[p] >= 0 {
            let q = Int(from[p])
            starts.append(q)
            if best[q] <= 0 { break }
            p = q
        }
        starts.reverse()
        var out: [(start: Int, length: Int)] = []
        for (k, s) in starts.enumerated() { out.append((s, (k + 1 < starts.count ? starts[k + 1] : end.at) - s)) }
        return out
    }
}

/// The per-position memory of `ChainWalker.resync`, reused from one call to the next (a
/// generation stamp says which entries are this call's: nothing is cleared or allocated per call
/// once it has grown to the longest piece). Raw memory: this is read once per offset tried.
final class ResyncScratch {
    private(set) var capacity = 0
    private(set) var stamp = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
    /// The chain end a position leads to (an index into `ends`), and the frames to it.
    private(set) var endOf = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    private(set) var framesFrom = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    var ends: [(end: Int, complete: Bool)] = []
    var path: [Int32] = []
    private(set) var generation: UInt32 = 0

    init() {}

    deinit {
        stamp.deallocate()
        endOf.deallocate()
        framesFrom.deallocate()
    }

    func begin(_ n: Int) {
        if capacity < n {
            stamp.deallocate()
            endOf.deallocate()
            framesFrom.deallocate()
            stamp = .allocate(capacity: n)
            stamp.initialize(repeating: 0, count: n)
            endOf = .allocate(capacity: n)
            endOf.initialize(repeating: 0, count: n)
            framesFrom = .allocate(capacity: n)
            framesFrom.initialize(repeating: 0, count: n)
            capacity = n
            generation = 0
        }
        generation &+= 1
        if generation == 0 {
            stamp.update(repeating: 0, count: capacity)
            generation = 1
        }
        ends.removeAll(keepingCapacity: true)
    }
}

enum FramingStats {
    /// Length values kept per piece for the report and the header analysis.
    static let keep = 4096
}
