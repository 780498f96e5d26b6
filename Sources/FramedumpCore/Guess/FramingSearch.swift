/// Finds the length field: every candidate (offset, width, byte order, adjustment) is walked
/// over the sampled streams, frame after frame, and scored by how many bytes its chains explain.
///
/// Most candidates break within a frame or two, so the search first screens all of them on a
/// few pieces that start at a message boundary, then scores the survivors on every piece
/// (finding, in a piece that starts mid-message or after a gap, the first offset from which
/// the chain holds).
public struct FramingSearch: Sendable {
    public var maxOffset = 16
    public var adjustments = -16...64
    public var maxFrame = 16 << 20
    /// Below this share of the sampled bytes no length field is claimed.
    public var acceptShare = 0.9
    /// How far into a mid-stream piece a chain's start is looked for, and how many frames
    /// must chain from it.
    public var resyncLimit = 2048
    public var resyncConfirm = 4

    public init() {}

    /// The score of one candidate over every piece.
    public struct Score: Sendable {
        public var candidate: LengthCandidate
        public var frames = 0
        public var covered = 0
        public var total = 0
        /// Per stream (index into the streams given): frames and bytes explained.
        public var perStream: [(frames: Int, covered: Int, total: Int)] = []
        /// Distinct length values seen (1: every frame the same size, a weak explanation).
        public var distinctValues = 0
        public var minFrame = Int.max
        public var maxFrame = 0
        public var share: Double { total == 0 ? 0 : Double(covered) / Double(total) }
    }

    public struct Result: Sendable {
        public var best: Score?
        /// The best candidate that is not a narrower or wider view of the same field.
        public var runnerUp: Score?
        public var accepted: Bool
        /// How many candidates were tried and how many survived screening.
        public var tried = 0
        public var screened = 0
    }

    static let widths: [(Int, ByteOrder)] = [(1, .big), (2, .big), (2, .little), (4, .big), (4, .little),
                                              (8, .big), (8, .little), (0, .big)]

    public func run(_ streams: [SampledStream]) -> Result {
        let pieces = streams.flatMap { $0.pieces }
        // Screening pieces: the longest that start at a boundary, one per stream.
        var screen = streams.compactMap { s in s.pieces.first(where: { $0.startsAtBoundary && !$0.bytes.isEmpty }) }
        screen.sort { $0.bytes.count > $1.bytes.count }
        screen = Array(screen.prefix(6))
        let atBoundary = !screen.isEmpty
        if !atBoundary {
            screen = Array(pieces.filter { !$0.bytes.isEmpty }.sorted { $0.bytes.count > $1.bytes.count }.prefix(3))
        }
        guard !screen.isEmpty else { return Result(best: nil, runnerUp: nil, accepted: false) }
        var survivors: [LengthCandidate] = []
        var tried = 0
        for o in 0..<maxOffset {
            for (w, order) in Self.widths {
                for a in adjustments {
                    let c = LengthCandidate(offset: o, width: w, order: order, adjustment: a)
                    tried += 1
                    let walker = ChainWalker(candidate: c, maxFrame: maxFrame)
                    var passed = 0
                    for p in screen {
                        let ok = p.bytes.withUnsafeBufferPointer { b -> Bool in
                            if atBoundary {
                                let chain = walker.walk(b, from: 0, cut: p.endsCut, maxFrames: 32)
                                return chain.frames >= 1 && (chain.complete || chain.frames == 32)
                            }
                            return walker.resync(b, cut: p.endsCut, searchLimit: 256, confirm: 8) != nil
                        }
                        if ok { passed += 1 }
                    }
                    if passed * 3 >= screen.count * 2 { survivors.append(c) }
                }
            }
        }
        var scores = survivors.map { score($0, streams) }
        scores.sort { $0.covered > $1.covered }
        guard let top = scores.first else { return Result(best: nil, runnerUp: nil, accepted: false, tried: tried, screened: 0) }
        let best = choose(scores)
        let runnerUp = scores.first { !sameField($0.candidate, best.candidate) }
        let accepted = best.share >= acceptShare && best.frames >= 2 && top.covered > 0
        return Result(best: best, runnerUp: runnerUp, accepted: accepted, tried: tried, screened: survivors.count)
    }

    /// Two candidates that read the same value (one takes in high bytes that are always zero).
    /// (With every value below 256 a little-endian u16 and the big-endian u16 ending on the
    /// same byte read the same too.)
    func sameField(_ a: LengthCandidate, _ b: LengthCandidate) -> Bool {
        a.lowByte == b.lowByte && a.adjustment == b.adjustment && a.isVarint == b.isVarint
    }

    /// Among the candidates that explain as many bytes as the best: lengths that vary over
    /// a constant size, fixed widths over a varint that reads the same, far fewer frames, then within one field
    /// the widest view (a u32 whose high bytes are zero is a u32, not a u8 after padding), and
    /// across fields the one nearest the start.
    func choose(_ scores: [Score]) -> Score {
        let bestCovered = scores[0].covered
        let top = scores.filter { $0.covered == bestCovered }
        return top.min { x, y in
            let vx = x.distinctValues > 1, vy = y.distinctValues > 1
            if vx != vy { return vx }
            if x.candidate.isVarint != y.candidate.isVarint { return !x.candidate.isVarint }
            // A field read inside the header can cut each frame in two (a constant first part,
            // then the real length further on): the same bytes in far fewer frames is the framing.
            if (x.frames * 2 <= y.frames * 3) != (y.frames * 2 <= x.frames * 3) { return x.frames < y.frames }
            if sameField(x.candidate, y.candidate) { return x.candidate.width > y.candidate.width }
            if x.candidate.offset != y.candidate.offset { return x.candidate.offset < y.candidate.offset }
            if x.candidate.width != y.candidate.width { return x.candidate.width > y.candidate.width }
            return x.candidate.adjustment < y.candidate.adjustment
        }!
    }

    /// Walks one candidate over every piece of every stream.
    public func score(_ c: LengthCandidate, _ streams: [SampledStream]) -> Score {
        var s = Score(candidate: c)
        let walker = ChainWalker(candidate: c, maxFrame: maxFrame)
        var distinct = Set<Int>()
        for stream in streams {
            var frames = 0, covered = 0, total = 0
            for p in stream.pieces {
                total += p.bytes.count
                guard let chain = self.chain(of: p, walker) else { continue }
                frames += chain.frames
                covered += chain.covered
                if distinct.count < 64 { for v in chain.lengths.prefix(64) { distinct.insert(v) } }
                for length in chain.lengths {
                    s.minFrame = min(s.minFrame, length)
                    s.maxFrame = max(s.maxFrame, length)
                }
            }
            s.frames += frames
            s.covered += covered
            s.total += total
            s.perStream.append((frames, covered, total))
        }
        s.distinctValues = distinct.count
        return s
    }

    /// The chain through one piece: from its start at a boundary, else from the first offset
    /// where frames hold (nil: nowhere).
    func chain(of p: SampledPiece, _ walker: ChainWalker) -> Chain? {
        p.bytes.withUnsafeBufferPointer { b -> Chain? in
            if p.startsAtBoundary {
                return walker.walk(b, from: 0, cut: p.endsCut, maxFrames: .max, keepValues: true)
            }
            guard let s = walker.resync(b, cut: p.endsCut, searchLimit: resyncLimit, confirm: resyncConfirm) else { return nil }
            return walker.walk(b, from: s, cut: p.endsCut, maxFrames: .max, keepValues: true)
        }
    }

    /// Every frame the chosen candidate cuts, as (piece bytes, frame start, frame length),
    /// at most `limit` over all streams (for the header and body analysis).
    public func frames(_ c: LengthCandidate, _ streams: [SampledStream], limit: Int = 50_000) -> [[GuessedFrame]] {
        let walker = ChainWalker(candidate: c, maxFrame: maxFrame)
        var all: [[GuessedFrame]] = []
        var count = 0
        for stream in streams {
            var list: [GuessedFrame] = []
            for (pi, p) in stream.pieces.enumerated() where count < limit {
                guard let chain = self.chain(of: p, walker) else { continue }
                p.bytes.withUnsafeBufferPointer { b in
                    var at = chain.start
                    for length in chain.lengths where count < limit {
                        guard at + length <= b.count else { break }
                        list.append(GuessedFrame(piece: pi, start: at, length: length))
                        count += 1
                        at += length
                    }
                }
            }
            all.append(list)
        }
        return all
    }
}

/// One frame the chosen framing cut: where it is in its stream's piece.
public struct GuessedFrame: Sendable {
    public var piece: Int
    public var start: Int
    public var length: Int
}
