#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds the length field: every candidate (offset, width, byte order, adjustment) is walked
/// over the sampled streams, frame after frame, and scored by how many bytes its chains explain.
///
/// Most candidates break within a frame or two, so the search first screens all of them on a
/// few pieces that start at a message boundary, then scores the survivors on every piece
/// (finding, in a piece that starts mid-message or after a gap, the first offset from which
/// the chain holds).
public struct FramingSearch: Sendable {
    public var maxOffset = 32
    public var adjustments = -16...64
    public var maxFrame = 16 << 20
    /// Below this share of the sampled bytes no length field is claimed.
    public var acceptShare = 0.9
    /// How far into a mid-stream piece a chain's start is looked for, and how many frames
    /// must chain from it.
    public var resyncLimit = 2048
    public var resyncConfirm = 4
    /// The same when screening pieces none of which starts at a boundary (10,368 candidates
    /// each try them on three pieces): as far as when scoring, a cut-off first message is as
    /// long as any (with 512, a u32 whose first boundaries lay further in two of the three was
    /// dropped before scoring: a byte plus a constant or a varint in the body won).
    public var screenResyncLimit = 2048

    public init() {}

    /// The score of one candidate over every piece.
    public struct Score: Sendable {
        public var candidate: LengthCandidate
        public var frames = 0
        public var covered = 0
        public var total = 0
        /// Bytes explained in pieces that start at a message boundary (a stream from its SYN,
        /// walked from byte 0), and in the others (from where the chain resynchronised); of the
        /// first, those in pieces that end where their stream did (no gap or sample cap after).
        public var closedCovered = 0
        /// The bytes of the pieces that start at a boundary and end where their stream did.
        public var closedTotal = 0
        public var boundaryCovered = 0
        /// Bytes of the pieces that start mid-message and end where their stream did, whose
        /// chain (from its resync) lands exactly on that end.
        public var midClosedEnds = 0
        public var midCovered = 0
        /// Over the pieces that start mid-message, the bytes before the chain's first frame, up
        /// to its longest frame: the rest of the message the piece starts in, which no framing
        /// explains, while a chance chain through it (a byte plus a constant chains anywhere; a
        /// length inside the body that cuts the same frames may start a frame earlier by luck)
        /// seems to. (Its first frame's length, as before, fell short of the cut-off message
        /// about as often as not: a u32 lost to its own low byte's chance chain.)
        public var midSlack = 0
        /// Over the boundary pieces cut short (a gap, the sample's cap), the bytes of the frame
        /// that runs past the cut: lost to every candidate, more to one with longer frames.
        public var cutSlack = 0
        /// Per stream (index into the streams given): frames and bytes explained.
        public var perStream: [(frames: Int, covered: Int, total: Int)] = []
        /// Distinct length values seen (1: every frame the same size, a weak explanation).
        public var distinctValues = 0
        public var minFrame = Int.max
        public var maxFrame = 0
        public var share: Double { total == 0 ? 0 : Double(covered) / Double(total) }

        /// Bytes of whole streams first: only the true length field walks a stream from its
        /// start to its very end, where a length read anywhere else (a byte plus a constant
        /// takes any value) overshoots its last frame; before a cut end, that overshoot costs a
        /// true field with long frames more than one reading short ones. Then the streams seen
        /// from mid-message to their end whose chain lands exactly on it; then bytes of the
        /// other pieces at boundaries; then the rest (what a resync finds in a cut-off message
        /// is weaker evidence).
        func better(than o: Score) -> Bool {
            if closedCovered != o.closedCovered { return closedCovered > o.closedCovered }
            if midClosedEnds != o.midClosedEnds { return midClosedEnds > o.midClosedEnds }
            return boundaryCovered != o.boundaryCovered ? boundaryCovered > o.boundaryCovered : midCovered > o.midCovered
        }

        /// As good as `lead`: the same bytes at boundaries, and elsewhere within what a chance
        /// resync in the cut-off first messages can make up.
        func ties(_ lead: Score) -> Bool {
            closedCovered == lead.closedCovered && midClosedEnds == lead.midClosedEnds && boundaryCovered + max(cutSlack, lead.cutSlack) >= lead.boundaryCovered
                && midCovered + max(midSlack, lead.midSlack) >= lead.midCovered
        }
    }

    public struct Result: Sendable {
        public var best: Score?
        /// The best candidate that cuts other frames than the best (not a narrower or wider view
        /// of the same field, nor a varint that reads the same values): nil when none comes
        /// within `runnerUpMargin` of the best.
        public var runnerUp: Score?
        public var accepted: Bool
        /// How regular the first bytes of the best's frames are, and the runner-up's
        /// (`structure`: bits below the mean entropy; frames cut at random places score about 1,
        /// real ones 4 and up).
        public var regularity = 0.0
        public var runnerUpRegularity: Double?

        /// A runner-up that cuts other frames explains about as much (`ties`, better, or within
        /// half a point of the bytes), its frames look about as regular, and the best does not
        /// walk every stream seen whole (from its SYN to its end) exactly where the runner-up
        /// fails on one: nothing in the bytes tells the two apart, and the choice between them
        /// was a rule of thumb.
        /// (A rival with under a quarter as many frames is no evidence, as for the tie rules:
        /// a large value read once a stream makes a frame of each small stream and looks regular.)
        public var ambiguous: Bool {
            guard let best, let ru = runnerUp, let r = runnerUpRegularity, ru.frames * 4 >= best.frames else { return false }
            let wholeStreams = best.closedTotal > 0 && best.closedCovered == best.closedTotal && ru.closedCovered < best.closedTotal
            let asGood = ru.ties(best) || ru.better(than: best) || ru.share >= best.share - 0.005
            return asGood && !wholeStreams && regularity - r < FramingSearch.clearlyMoreRegular
        }

        /// Frames whose first bytes look no more alike than cuts at random places: a chain of
        /// chance (a byte plus a constant walks through much), or a protocol with no fixed header.
        public var irregular: Bool { best != nil && regularity < FramingSearch.regularFrames }

        /// How far the framing can be trusted, 0-1: the share of the bytes it explains; half of
        /// that when ambiguous; at most 0.85 when its frames look cut at random.
        public var confidence: Double {
            guard let best else { return 0 }
            var c = best.share
            if ambiguous { c *= 0.5 }
            if irregular { c = min(c, 0.85) }
            return c
        }
        /// How many candidates were tried, how many survived screening, and how many were
        /// walked over every piece (the others fell too far behind the best on the way).
        public var tried = 0
        public var screened = 0
        public var scored = 0
    }

    /// Bits of regularity (`structure`) that tell real frames from chance ones: below
    /// `regularFrames` a framing's frames look cut at random; a rival within
    /// `clearlyMoreRegular` of the best looks as real.
    static let regularFrames = 3.0
    static let clearlyMoreRegular = 3.0

    /// A candidate that misses this share of the bytes more than the best is dropped on the way
    /// (and no runner-up further behind is reported).
    public var runnerUpMargin = 0.1

    static let widths: [(Int, ByteOrder)] = [(1, .big), (2, .big), (2, .little), (3, .big), (3, .little), (4, .big), (4, .little),
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
        // 1. Screening: 32 frames from the start of a few pieces. A chain must explain at least
        // half of what it walked: a value read as huge runs past a cut end at once, which is no
        // failure but no evidence either (one frame, then nothing).
        var survivors: [(candidate: LengthCandidate, covered: Int)] = []
        var tried = 0
        // Two thirds of the screening pieces must pass (a candidate stops once it cannot).
        let needed = (screen.count * 2 + 2) / 3
        let scratch = ResyncScratch()
        for o in 0..<maxOffset {
            for (w, order) in Self.widths {
                for a in adjustments {
                    let c = LengthCandidate(offset: o, width: w, order: order, adjustment: a)
                    tried += 1
                    let walker = ChainWalker(candidate: c, maxFrame: maxFrame, scratch: scratch)
                    var passed = 0, failed = 0, covered = 0
                    for p in screen where failed <= screen.count - needed {
                        let ok = p.bytes.withUnsafeBufferPointer { b -> Bool in
                            if atBoundary {
                                let chain = walker.walk(b, from: 0, cut: p.endsCut, maxFrames: 32)
                                covered += chain.covered
                                return chain.frames >= 32 || (chain.complete && chain.frames >= 1 && chain.covered * 2 >= b.count)
                            }
                            guard let s = walker.resync(b, cut: p.endsCut, searchLimit: screenResyncLimit, confirm: 8) else { return false }
                            covered += b.count - s
                            return true
                        }
                        if ok { passed += 1 } else { failed += 1 }
                    }
                    if passed >= needed { survivors.append((c, covered)) }
                }
            }
        }
        // 2. The survivors over every piece, the likeliest first, each dropped as soon as it has
        // missed more bytes than the best so far plus the margin (most break within a piece or two).
        survivors.sort { $0.covered > $1.covered }
        let total = pieces.reduce(0) { $0 + $1.bytes.count }
        let margin = Int(Double(total) * runnerUpMargin)
        var kept: [Score] = []
        var leastMiss = Int.max
        for (c, _) in survivors {
            let limit = leastMiss == .max ? Int.max : leastMiss + margin
            guard let s = score(c, streams, keepValues: false, maxMiss: limit, scratch: scratch) else { continue }
            leastMiss = min(leastMiss, s.total - s.covered)
            kept.append(s)
        }
        kept.removeAll { $0.total - $0.covered > leastMiss + margin }
        guard var lead = kept.first else { return Result(best: nil, runnerUp: nil, accepted: false, tried: tried, screened: survivors.count) }
        for s in kept where s.better(than: lead) { lead = s }
        // 3. The candidates as good as the lead, with their length values, for the tie rules.
        var top = kept.filter { $0.ties(lead) }
        // A fixed width and a varint at the same place read the same small values and chain
        // through the same frames. From mid-stream, chance frames through the cut-off first
        // message (a run of one byte value chains through both alike) make either look more
        // regular at random: when no frame both cut is read differently by the two, they are
        // one reading and the fixed width is the framing (the language can write it). Where the
        // values grow they part, and the wrong one wanders through chance frames until it falls
        // back in step: a varint that had to read an overlong encoding there is not the framing.
        // Where the two part and both still walk every piece, one of them took a detour through
        // chance frames until it fell back in step (a u8 reading a two-byte varint's first byte,
        // or a varint reading a u8 of 128 or more and the byte after it): the one whose own
        // frames look like the frames both cut (by more than a bit per byte) is the framing.
        let fixed = top.filter { !$0.candidate.isVarint }
        var detoured = Set<LengthCandidate>(), stays = Set<LengthCandidate>()
        for f in fixed {
            for v in top where v.candidate.isVarint && v.candidate.offset == f.candidate.offset {
                guard part(f.candidate, v.candidate, streams), let d = detourLikeness(f.candidate, v.candidate, streams) else { continue }
                if d.b > d.a + 1 { detoured.insert(f.candidate); stays.insert(v.candidate) }
                if d.a > d.b + 1 { detoured.insert(v.candidate) }
            }
        }
        top.removeAll { detoured.contains($0.candidate) }
        // Otherwise, where they never part they are one reading, and the fixed width is the
        // framing (the language can write it); where they part, a varint that had to read an
        // overlong encoding on its way is not.
        top.removeAll { v in
            v.candidate.isVarint && !stays.contains(v.candidate) && fixed.contains { f in
                !detoured.contains(f.candidate) && f.candidate.offset == v.candidate.offset
                    && (!part(f.candidate, v.candidate, streams) || overlongVarints(v.candidate, streams) > 0)
            }
        }
        // Before a cut end a length read anywhere (a byte plus a constant takes any value) chains
        // as far as the true one: when such candidates cut different frames, the frames whose
        // first bytes are the most regular (a magic, a version, an id's few values, a length's
        // zero high bytes, against the rest) are the messages.
        // (Only candidates with a quarter as many frames to show as the most: a handful of
        // frames, a huge value read once per piece, always look regular.)
        if top.count > 1 {
            let regularity = top.map { structure($0.candidate, streams) }
            let frames = regularity.map(\.frames).max()!
            let eligible = regularity.map { $0.frames * 4 >= frames }
            let most = zip(regularity, eligible).filter(\.1).map(\.0.bits).max()!
            top = zip(top, zip(regularity, eligible)).filter { $0.1.1 && $0.1.0.bits >= most - 0.5 }.map(\.0)
        }
        let best = choose(top.compactMap { score($0.candidate, streams, keepValues: true) })
        var runnerUp: Score?
        // (A varint on the best's low byte reads the same small values: where they part, the
        // rules above chose; it is a reading of the same field, not another framing.)
        for s in kept.sorted(by: { $0.better(than: $1) }) where !sameField(s.candidate, best.candidate)
            && !(s.candidate.isVarint != best.candidate.isVarint && s.candidate.lowByte == best.candidate.lowByte) {
            if relation(s.candidate, best.candidate, streams) == .other { runnerUp = s; break }
        }
        let regularity = structure(best.candidate, streams).bits
        let runnerUpRegularity = runnerUp.map { structure($0.candidate, streams).bits }
        let accepted = best.share >= acceptShare && best.frames >= 2 && best.covered > 0
        return Result(best: best, runnerUp: runnerUp, accepted: accepted, regularity: regularity,
                      runnerUpRegularity: runnerUpRegularity, tried: tried,
                      screened: survivors.count, scored: kept.count)
    }

    /// Where two candidates part: in the pieces at a boundary (all pieces when none is), the
    /// frames both cut (sure ones) say what a frame's first bytes look like (`FrameLikeness`);
    /// the frames only one of them cuts, from where both chains have begun to where the shorter
    /// stops, are scored against that, on average per frame (nil: no such frames).
    func detourLikeness(_ a: LengthCandidate, _ b: LengthCandidate, _ streams: [SampledStream]) -> (a: Double, b: Double)? {
        var model = FrameLikeness()
        var own: [(bytes: [UInt8], start: Int, length: Int, isA: Bool)] = []
        // Enough frames to judge by: a few thousand of each (walking a large sample's chains
        // twice more for every such pair cost seconds).
        let enough = 2048
        var shared = 0, ownA = 0, ownB = 0
        sideBySide(a, b, streams) { p, ca, cb, stretch in
            guard let ca, let cb, let (from, to) = stretch else { return true }
            func frames(_ c: Chain) -> [(start: Int, length: Int)] {
                var at = c.start
                return c.lengths.map { l in defer { at += l }; return (at, l) }.filter { $0.start >= from && $0.start + $0.length <= to }
            }
            let fa = frames(ca), fb = frames(cb)
            let sa = Set(fa.map { $0.start * 31 &+ $0.length }), sb = Set(fb.map { $0.start * 31 &+ $0.length })
            for f in fa {
                if sb.contains(f.start * 31 &+ f.length) {
                    if shared < enough { model.add(p.bytes, at: f.start, length: f.length); shared += 1 }
                } else if ownA < enough {
                    own.append((p.bytes, f.start, f.length, true))
                    ownA += 1
                }
            }
            for f in fb where ownB < enough && !sa.contains(f.start * 31 &+ f.length) {
                own.append((p.bytes, f.start, f.length, false))
                ownB += 1
            }
            return ownA < enough || ownB < enough
        }
        var sum = (a: 0.0, b: 0.0), n = (a: 0, b: 0)
        for f in own {
            let l = model.likeness(f.bytes, at: f.start, length: f.length)
            if f.isA { sum.a += l; n.a += 1 } else { sum.b += l; n.b += 1 }
        }
        guard n.a > 0 || n.b > 0 else { return nil }
        return (n.a > 0 ? sum.a / Double(n.a) : 0, n.b > 0 ? sum.b / Double(n.b) : 0)
    }

    /// How a rival's frames stand to the best's.
    enum FrameRelation { case same, splits, other }

    /// How `a`'s frames stand to `b`'s, in every piece (at a boundary, when any piece is) from
    /// where both chains have begun to where the shorter stops: the same frame ends (two
    /// readings of one framing: a u32 whose high bytes are zero and a varint on its low byte),
    /// every end of `b`'s and more (`a` cuts each frame in two: a constant first part read as a
    /// length, then the real one), or other frames (a rival).
    func relation(_ a: LengthCandidate, _ b: LengthCandidate, _ streams: [SampledStream]) -> FrameRelation {
        var result = FrameRelation.same
        sideBySide(a, b, streams) { _, ca, cb, stretch in
            if (ca == nil) != (cb == nil) { result = .other; return false }
            guard let ca, let cb, let (from, to) = stretch else { return true }
            let x = ca.ends.filter { $0 > from && $0 <= to }, y = cb.ends.filter { $0 > from && $0 <= to }
            if x == y { return true }
            result = .splits
            if !Set(y).isSubset(of: Set(x)) { result = .other; return false }
            return true
        }
        return result
    }

    /// Walks two candidates' chains side by side over the pieces that judge them (those at a
    /// boundary, every piece when none is), handing `body` each piece, both chains (nil where
    /// one finds none) and the stretch both cover, from where both have begun to where the
    /// shorter stops (nil: none). `body` returns whether to go on.
    func sideBySide(_ a: LengthCandidate, _ b: LengthCandidate, _ streams: [SampledStream],
                    _ body: (SampledPiece, Chain?, Chain?, (from: Int, to: Int)?) -> Bool) {
        let wa = ChainWalker(candidate: a, maxFrame: maxFrame), wb = ChainWalker(candidate: b, maxFrame: maxFrame)
        let anyBoundary = streams.contains { $0.pieces.contains { $0.startsAtBoundary } }
        for stream in streams {
            for p in stream.pieces where p.startsAtBoundary || !anyBoundary {
                let ca = chain(of: p, wa), cb = chain(of: p, wb)
                var stretch: (from: Int, to: Int)?
                if let ca, let cb {
                    let from = max(ca.start, cb.start), to = min(ca.ends.last ?? ca.start, cb.ends.last ?? cb.start)
                    if from < to { stretch = (from, to) }
                }
                if !body(p, ca, cb, stretch) { return }
            }
        }
    }

    /// Two candidates that read the same value (one takes in high bytes that are always zero).
    /// (With every value below 256 a little-endian u16 and the big-endian u16 ending on the
    /// same byte read the same too.)
    func sameField(_ a: LengthCandidate, _ b: LengthCandidate) -> Bool {
        a.lowByte == b.lowByte && a.adjustment == b.adjustment && a.isVarint == b.isVarint
    }

    /// Among the candidates as good as the best: lengths that vary over a constant size, a fixed
    /// width over a varint at the same place that reads the same, far fewer frames, then within
    /// one field the widest view (a u32 whose high bytes are zero is a u32, not a u8 after
    /// padding), and across fields the one nearest the start (a length inside the body, a
    /// string's prefix, can explain the same frames; the header's comes first).
    func choose(_ top: [Score]) -> Score {
        top.min { x, y in
            let vx = x.distinctValues > 1, vy = y.distinctValues > 1
            if vx != vy { return vx }
            if x.candidate.isVarint != y.candidate.isVarint && x.candidate.offset == y.candidate.offset { return !x.candidate.isVarint }
            // A field read inside the header can cut each frame in two (a constant first part,
            // then the real length further on): the same bytes in far fewer frames is the framing.
            if (x.frames * 2 <= y.frames * 3) != (y.frames * 2 <= x.frames * 3) { return x.frames < y.frames }
            if sameField(x.candidate, y.candidate) { return x.candidate.width > y.candidate.width }
            if x.candidate.offset != y.candidate.offset { return x.candidate.offset < y.candidate.offset }
            if x.candidate.width != y.candidate.width { return x.candidate.width > y.candidate.width }
            if x.candidate.isVarint != y.candidate.isVarint { return !x.candidate.isVarint }
            return x.candidate.adjustment < y.candidate.adjustment
        }!
    }

    /// Walks one candidate over every piece of every stream, the pieces at a boundary first;
    /// nil as soon as it has missed more than `maxMiss` bytes. With `keepValues`, the length
    /// values too (distinct values, smallest and largest frame).
    public func score(_ c: LengthCandidate, _ streams: [SampledStream], keepValues: Bool = true, maxMiss: Int = .max) -> Score? {
        score(c, streams, keepValues: keepValues, maxMiss: maxMiss, scratch: ResyncScratch())
    }

    func score(_ c: LengthCandidate, _ streams: [SampledStream], keepValues: Bool, maxMiss: Int, scratch: ResyncScratch) -> Score? {
        var s = Score(candidate: c)
        let walker = ChainWalker(candidate: c, maxFrame: maxFrame, scratch: scratch)
        var distinct = Set<Int>()
        s.perStream = streams.map { (0, 0, $0.byteCount) }
        s.total = s.perStream.reduce(0) { $0 + $1.total }
        var miss = 0
        for boundary in [true, false] {
            for (i, stream) in streams.enumerated() {
                for p in stream.pieces where p.startsAtBoundary == boundary {
                    let chain = self.chain(of: p, walker, keepValues: keepValues)
                    if boundary && !p.endsCut { s.closedTotal += p.bytes.count }
                    miss += p.bytes.count - (chain?.covered ?? 0)
                    if miss > maxMiss { return nil }
                    guard let chain else { continue }
                    s.perStream[i].frames += chain.frames
                    s.perStream[i].covered += chain.covered
                    let overshoot = p.endsCut && chain.complete ? p.bytes.count - chain.start - chain.covered : 0
                    if boundary {
                        s.cutSlack += overshoot
                        s.boundaryCovered += chain.covered
                        if !p.endsCut { s.closedCovered += chain.covered }
                    } else {
                        s.midCovered += chain.covered
                        s.midSlack += min(chain.start, chain.longest) + overshoot
                        if !p.endsCut && chain.complete { s.midClosedEnds += p.bytes.count }
                    }
                    if keepValues {
                        if distinct.count < 64 { for v in chain.lengths.prefix(64) { distinct.insert(v) } }
                        for length in chain.lengths {
                            s.minFrame = min(s.minFrame, length)
                            s.maxFrame = max(s.maxFrame, length)
                        }
                    }
                }
            }
        }
        s.frames = s.perStream.reduce(0) { $0 + $1.frames }
        s.covered = s.boundaryCovered + s.midCovered
        s.distinctValues = distinct.count
        return s
    }

    /// How regular the first bytes of a candidate's frames are: over its first `sample` frames
    /// (at most 32 from each piece, at a boundary when there are such pieces), the entropy in
    /// bits of the byte at each of the first 16 offsets, and how far those below their mean lie
    /// under it, summed (frames cut at random places see about the same entropy everywhere;
    /// real ones see constant bytes, a length's zero high bytes, an id's few values beside a
    /// timestamp's many), and how many frames that was.
    func structure(_ c: LengthCandidate, _ streams: [SampledStream], sample: Int = 256) -> (bits: Double, frames: Int) {
        let walker = ChainWalker(candidate: c, maxFrame: maxFrame)
        let width = 16
        var counts = [Int](repeating: 0, count: width * 256)
        var seen = [Int](repeating: 0, count: width)
        var n = 0
        let anyBoundary = streams.contains { $0.pieces.contains { $0.startsAtBoundary } }
        for stream in streams where n < sample {
            for p in stream.pieces where n < sample && (p.startsAtBoundary || !anyBoundary) {
                p.bytes.withUnsafeBufferPointer { b in
                    let start: Int
                    if p.startsAtBoundary {
                        start = 0
                    } else {
                        guard let s = walker.resync(b, cut: p.endsCut, searchLimit: resyncLimit, confirm: resyncConfirm) else { return }
                        start = s
                    }
                    let chain = walker.walk(b, from: start, cut: p.endsCut, maxFrames: min(32, sample - n), keepValues: true)
                    var at = start
                    for length in chain.lengths {
                        for i in 0..<width where at + i < b.count {
                            counts[i * 256 + Int(b[at + i])] += 1
                            seen[i] += 1
                        }
                        n += 1
                        at += length
                    }
                }
            }
        }
        var h = [Double](repeating: 0, count: width)
        for i in 0..<width where seen[i] > 0 {
            let total = Double(seen[i])
            for v in 0..<256 where counts[i * 256 + v] > 0 {
                let q = Double(counts[i * 256 + v]) / total
                h[i] -= q * log2(q)
            }
        }
        let mean = h.reduce(0, +) / Double(width)
        return (h.reduce(0) { $0 + max(0, mean - $1) }, n)
    }

    /// Whether the two candidates read a different length for some frame both cut (from the
    /// same start). The two chains' starts rise: they are walked side by side.
    func part(_ a: LengthCandidate, _ b: LengthCandidate, _ streams: [SampledStream]) -> Bool {
        let wa = ChainWalker(candidate: a, maxFrame: maxFrame), wb = ChainWalker(candidate: b, maxFrame: maxFrame)
        for stream in streams {
            for p in stream.pieces {
                guard let ca = chain(of: p, wa), let cb = chain(of: p, wb) else { continue }
                var i = 0, j = 0, atA = ca.start, atB = cb.start
                while i < ca.lengths.count && j < cb.lengths.count {
                    if atA == atB {
                        if ca.lengths[i] != cb.lengths[j] { return true }
                        atA += ca.lengths[i]; i += 1
                        atB += cb.lengths[j]; j += 1
                    } else if atA < atB {
                        atA += ca.lengths[i]; i += 1
                    } else {
                        atB += cb.lengths[j]; j += 1
                    }
                }
            }
        }
        return false
    }

    /// How many of a varint candidate's frames read a length no encoder writes: more bytes than
    /// the value needs (a last byte of zero after a continuation). A fixed-width length read as
    /// a varint meets one whenever its value has the high bit set and a zero byte follows.
    func overlongVarints(_ c: LengthCandidate, _ streams: [SampledStream]) -> Int {
        guard c.isVarint else { return 0 }
        // (Only whether there is one matters: the first ends the count.)
        let walker = ChainWalker(candidate: c, maxFrame: maxFrame)
        var count = 0
        for stream in streams {
            for p in stream.pieces {
                guard let chain = chain(of: p, walker) else { continue }
                var at = chain.start
                for length in chain.lengths {
                    p.bytes.withUnsafeBufferPointer { b in
                        if let (_, end) = c.value(b, at: at), end - c.offset > 1, b[at + end - 1] == 0 { count += 1 }
                    }
                    if count > 0 { return count }
                    at += length
                }
            }
        }
        return count
    }

    /// The chain through one piece: from its start at a boundary, else from the first offset
    /// where frames hold (nil: nowhere).
    func chain(of p: SampledPiece, _ walker: ChainWalker, keepValues: Bool = true) -> Chain? {
        p.bytes.withUnsafeBufferPointer { b -> Chain? in
            if p.startsAtBoundary {
                return walker.walk(b, from: 0, cut: p.endsCut, maxFrames: .max, keepValues: keepValues)
            }
            guard let s = walker.resync(b, cut: p.endsCut, searchLimit: resyncLimit, confirm: resyncConfirm) else { return nil }
            return walker.walk(b, from: s, cut: p.endsCut, maxFrames: .max, keepValues: keepValues)
        }
    }

    /// Every frame the chosen candidate cuts, as (piece, frame start, frame length), at most
    /// `limit` over all streams (for the header and body analysis). Frames of pieces that start
    /// at a boundary only, when there are `enoughAtBoundary` of them.
    ///
    /// Else also those of the pieces that start mid-message, where the chain `resync` found can
    /// run through a cut-off message, and through long bodies beside the real boundaries, by
    /// chance for many frames (a byte plus a constant read in text chains anywhere, and chains
    /// there join each other) before it falls in step: one frame cut elsewhere makes a magic
    /// look varying, and dropping the chance ones by position (after a chain's first frames,
    /// from where another joins it) kept a third of a u8's streams' chance frames and lost as
    /// many real ones. Instead, (1) the frames every chain from the cut-off start agrees on
    /// (`ChainWalker.trunk`) are sure ones, and say what a frame's first bytes look like
    /// (`FrameLikeness`); (2) in each piece the chain through it whose frames look most like
    /// them is taken (`ChainWalker.likeliest`): the real boundaries from the first on, frames
    /// cut at random places lose.
    public func frames(_ c: LengthCandidate, _ streams: [SampledStream], limit: Int = 50_000,
                       enoughAtBoundary: Int = 20, sureFramesPerPiece: Int = 64) -> [[GuessedFrame]] {
        let walker = ChainWalker(candidate: c, maxFrame: maxFrame)
        /// The frames of `chain` through piece `pi` that fit in it, from `from` on.
        func cut(_ p: SampledPiece, _ pi: Int, _ chain: Chain, from: Int, max: Int = .max) -> [GuessedFrame] {
            var out: [GuessedFrame] = []
            var at = chain.start
            for length in chain.lengths where out.count < max {
                guard at + length <= p.bytes.count else { break }
                if at >= from { out.append(GuessedFrame(piece: pi, start: at, length: length)) }
                at += length
            }
            return out
        }
        /// A mid-stream piece's sure frames: its chain's from the trunk on.
        func sure(_ p: SampledPiece, _ pi: Int, max: Int = .max) -> [GuessedFrame] {
            guard let chain = self.chain(of: p, walker) else { return [] }
            let from = p.bytes.withUnsafeBufferPointer { b in
                walker.trunk(b, from: chain.start, starts: chain.start + Swift.max(1, chain.first))
            }
            return cut(p, pi, chain, from: from, max: max)
        }
        var boundaryCount = 0
        for stream in streams {
            for p in stream.pieces where p.startsAtBoundary && boundaryCount < enoughAtBoundary {
                if let chain = self.chain(of: p, walker) { boundaryCount += cut(p, 0, chain, from: 0).count }
            }
        }
        let mid = boundaryCount < enoughAtBoundary
        // 1. What a frame looks like, from the sure frames (at boundaries, and each mid-stream
        // piece's from its trunk; a few of each piece's).
        var model = FrameLikeness()
        var threshold = -Double.infinity
        if mid {
            var sample: [(s: Int, f: GuessedFrame)] = []
            for (s, stream) in streams.enumerated() {
                for (pi, p) in stream.pieces.enumerated() {
                    let frames: [GuessedFrame]
                    if p.startsAtBoundary {
                        frames = self.chain(of: p, walker).map { cut(p, pi, $0, from: 0, max: sureFramesPerPiece) } ?? []
                    } else {
                        frames = sure(p, pi, max: sureFramesPerPiece)
                    }
                    for f in frames {
                        model.add(p.bytes, at: f.start, length: f.length)
                        sample.append((s, f))
                    }
                }
            }
            var likeness = sample.map { model.likeness(streams[$0.s].pieces[$0.f.piece].bytes, at: $0.f.start, length: $0.f.length) }
            likeness.sort()
            // What nine in ten of the sure frames look like at least (too few to tell: the sure
            // frames only).
            if likeness.count >= 10 { threshold = likeness[likeness.count / 10] }
        }
        // 2. The frames: at boundaries, the chain from the start; in mid-stream pieces, the
        // likeliest chain.
        var all: [[GuessedFrame]] = []
        var count = 0
        for stream in streams {
            var list: [GuessedFrame] = []
            for (pi, p) in stream.pieces.enumerated() where count < limit && (mid || p.startsAtBoundary) {
                var frames: [GuessedFrame]
                if p.startsAtBoundary {
                    frames = self.chain(of: p, walker).map { cut(p, pi, $0, from: 0) } ?? []
                } else if threshold > -.infinity, let starts = p.bytes.withUnsafeBufferPointer({ b in
                    walker.likeliest(b, cut: p.endsCut) { at, length in model.likeness(p.bytes, at: at, length: length) - threshold }
                }) {
                    frames = starts.map { GuessedFrame(piece: pi, start: $0.start, length: $0.length) }
                } else {
                    frames = sure(p, pi)
                }
                frames = Array(frames.prefix(limit - count))
                count += frames.count
                list += frames
            }
            all.append(list)
        }
        return all
    }
}

/// What the first bytes of a protocol's frames look like: per offset of the first 16, how often
/// each value was seen; a frame's likeness is the mean log-probability of its bytes under that
/// (each value counted once more than seen: one never seen is unlikely, not impossible).
struct FrameLikeness {
    static let width = 16
    var counts = [Int](repeating: 0, count: width * 256)
    var seen = [Int](repeating: 0, count: width)

    mutating func add(_ b: [UInt8], at start: Int, length: Int) {
        for i in 0..<min(Self.width, length, b.count - start) {
            counts[i * 256 + Int(b[start + i])] += 1
            seen[i] += 1
        }
    }

    func likeness(_ b: [UInt8], at start: Int, length: Int) -> Double {
        let n = min(Self.width, length, b.count - start)
        guard n > 0 else { return -.infinity }
        var sum = 0.0
        for i in 0..<n {
            sum += log2(Double(counts[i * 256 + Int(b[start + i])] + 1) / Double(seen[i] + 256))
        }
        return sum / Double(n)
    }
}

/// One frame the chosen framing cut: where it is in its stream's piece.
public struct GuessedFrame: Sendable {
    public var piece: Int
    public var start: Int
    public var length: Int
}
