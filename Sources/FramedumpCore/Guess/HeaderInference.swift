#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a header byte range was found to be, once the frames are cut.
public enum FieldRole: Sendable, Equatable {
    case length
    /// Low cardinality, varies within connections, predicts the frame's length.
    case messageID
    /// +1 from one frame to the next of a direction.
    case sequence
    /// The same value in every frame (magic, reserved zeros).
    case constant(UInt64)
    /// One small value in every frame of the sample, in one byte: a version, written as a field
    /// (a new version must still decode), the value in a comment.
    case seenOnce(UInt64)
    /// Constant within each connection, different across them (a version, a session).
    case perConnection
    case other
}

public struct GuessedField: Sendable, Equatable {
    public var name: String
    public var offset: Int
    public var width: Int
    public var order: ByteOrder
    public var role: FieldRole
}

public struct HeaderLayout: Sendable {
    public var size: Int
    public var fields: [GuessedField]
    public var id: GuessedField? { fields.first { $0.role == .messageID } }
    public var sequence: GuessedField? { fields.first { $0.role == .sequence } }
    /// Bits of information the id gives about the frame's length, and the next best field's.
    public var idGain = 0.0
    public var idRunnerUp: (field: GuessedField, gain: Double)?
}

/// Reads the header bytes of the frames the framing cut: which bytes are constant, which
/// count, which select the message.
struct HeaderInference {
    let framing: LengthCandidate
    let streams: [SampledStream]
    let frames: [[GuessedFrame]]

    /// Frames are read through this: (stream, frame) → its bytes.
    func bytes(_ s: Int, _ f: GuessedFrame) -> ArraySlice<UInt8> {
        streams[s].pieces[f.piece].bytes[f.start..<(f.start + f.length)]
    }

    enum ByteRole { case constant(UInt8), perConnection, varying }

    func run() -> HeaderLayout {
        let all = frames.enumerated().flatMap { s, list in list.map { (s, $0) } }
        let minFrame = all.map { $0.1.length }.min() ?? 0
        let lengthEnd = framing.offset + (framing.isVarint ? 1 : framing.width)
        // Roles for every byte the header may take (a body length's adjustment says how many),
        // fields looked for in the first 32.
        let window = min(minFrame, max(32, framing.adjustment))
        guard window > 0 else { return HeaderLayout(size: 0, fields: []) }
        // Each header byte's role.
        var roles: [ByteRole] = []
        for i in 0..<window {
            let first = bytes(all[0].0, all[0].1)[all[0].1.start + i]
            if all.allSatisfy({ bytes($0.0, $0.1)[$0.1.start + i] == first }) { roles.append(.constant(first)); continue }
            var perConnection = true
            for (s, list) in frames.enumerated() where list.count > 1 {
                let v = bytes(s, list[0])[list[0].start + i]
                if !list.allSatisfy({ bytes(s, $0)[$0.start + i] == v }) { perConnection = false; break }
            }
            roles.append(perConnection ? .perConnection : .varying)
        }
        let lengthRange = framing.offset..<(framing.isVarint ? window : lengthEnd)
        // A varint length ends where its value says: only the bytes before it are a fixed header.
        let searchEnd = framing.isVarint ? min(framing.offset, window) : min(window, 32)
        func isZero(_ i: Int) -> Bool { if case .constant(0) = roles[i] { return true }; return false }
        func isVarying(_ i: Int) -> Bool { if case .varying = roles[i] { return true }; return false }
        func value(_ s: Int, _ f: GuessedFrame, _ o: Int, _ w: Int, _ order: ByteOrder) -> UInt64 {
            let b = bytes(s, f)
            var v: UInt64 = 0
            for k in 0..<w { v = v << 8 | UInt64(b[f.start + o + (order == .big ? k : w - 1 - k)]) }
            return v
        }
        /// How many different values the bytes at these header positions take together.
        func distinct(_ positions: [Int]) -> Int {
            var seen = Set<[UInt8]>()
            for (s, list) in frames.enumerated() {
                for f in list {
                    let b = bytes(s, f)
                    seen.insert(positions.map { b[f.start + $0] })
                    if seen.count > 256 { return seen.count }
                }
            }
            return seen.count
        }
        /// Whether the varying bytes of a field fall into two runs whose values are met in
        /// nearly every pairing (four in five of the pairs of their values seen): two fields side
        /// by side (flags beside a command, a command's high byte and a flags byte), not one
        /// whose values come in few pairs (a module and its sub-command, a number's two bytes).
        func twoSideBySide(_ o: Int, _ w: Int) -> Bool {
            let v = (o..<(o + w)).filter(isVarying)
            guard v.count >= 2 else { return false }
            let whole = distinct(v)
            for k in 1..<v.count {
                let a = distinct(Array(v[..<k])), b = distinct(Array(v[k...]))
                if a >= 2 && b >= 2 && a * b <= 4 * 256 && Double(whole) >= 0.8 * Double(a * b) { return true }
            }
            return false
        }
        /// Fields over varying bytes, or zero bytes on their high-order side (a u32 id whose
        /// values are small), never over the length.
        func fieldCandidates(widths: [Int], avoid: [Range<Int>]) -> [(Int, Int, ByteOrder)] {
            var out: [(Int, Int, ByteOrder)] = []
            for w in widths {
                for o in 0...max(0, searchEnd - w) where o + w <= searchEnd {
                    let r = o..<(o + w)
                    if avoid.contains(where: { $0.overlaps(r) }) { continue }
                    for order in w == 1 ? [framing.order] : [framing.order, framing.order == .big ? .little : .big] {
                        let low = order == .big ? o + w - 1 : o
                        guard isVarying(low) else { continue }
                        // Bytes above the lowest: varying, or zero (high-order padding of small values).
                        let ok = r.allSatisfy { isVarying($0) || isZero($0) }
                        // A zero byte just above the field would be its own high byte: the
                        // field is the wider one that takes it in (a u16 id below 256).
                        let above = order == .big ? o - 1 : o + w
                        let zeroAbove = above >= 0 && above < searchEnd && isZero(above)
                            && !avoid.contains(where: { $0.contains(above) }) && w < 4
                        if ok && !zeroAbove { out.append((o, w, order)) }
                    }
                }
            }
            return out
        }

        // Sequence: +1 from frame to frame of a direction.
        var seq: GuessedField?
        var bestSeq: (varying: Int, natural: Bool, width: Int, offset: Int)?
        for (o, w, order) in fieldCandidates(widths: [1, 2, 4, 8], avoid: [lengthRange]) {
            var pairs = 0, steps = 0
            let mask: UInt64 = w == 8 ? .max : (1 << UInt64(w * 8)) - 1
            for (s, list) in frames.enumerated() where list.count > 1 {
                for k in 1..<list.count where list[k].piece == list[k - 1].piece {
                    pairs += 1
                    if (value(s, list[k], o, w, order) &- value(s, list[k - 1], o, w, order)) & mask == 1 { steps += 1 }
                }
            }
            guard pairs >= 4, steps * 10 >= pairs * 9 else { continue }
            let key = ((o..<(o + w)).filter(isVarying).count, order == framing.order, w, -o)
            if let b = bestSeq, (b.varying, b.natural ? 1 : 0, b.width, -b.offset) >= (key.0, key.1 ? 1 : 0, key.2, key.3) { continue }
            bestSeq = (key.0, key.1, w, o)
            seq = GuessedField(name: "seq", offset: o, width: w, order: order, role: .sequence)
        }

        // Message id: the low-cardinality field that best predicts the frame's length.
        let lengths = all.map { $0.1.length }
        let hLength = entropy(lengths.map { UInt64($0) })
        var avoid = [lengthRange]
        if let seq { avoid.append(seq.offset..<(seq.offset + seq.width)) }
        let n = Double(all.count)
        var ranked: [(field: GuessedField, score: Double, gain: Double, inBody: Bool, values: Int)] = []
        let bodyStart = framing.adjustment >= lengthEnd ? framing.adjustment : Int.max
        for (o, w, order) in fieldCandidates(widths: [1, 2, 4], avoid: avoid) where !twoSideBySide(o, w) {
            var counts: [UInt64: [Int]] = [:]
            var variesWithin = false
            for (s, list) in frames.enumerated() {
                var firstValue: UInt64?
                for f in list {
                    let v = value(s, f, o, w, order)
                    counts[v, default: []].append(f.length)
                    if counts.count > 256 { break }
                    if let fv = firstValue, fv != v { variesWithin = true } else { firstValue = v }
                }
                if counts.count > 256 { break }
            }
            let k = counts.count
            guard k >= 2, k <= 256, Double(k) <= max(2, n / 3), variesWithin else { continue }
            // A field that counts bytes of the frame (a string's length in the body) predicts
            // the length too, by arithmetic: the frame minus it takes few values.
            var rests = Set<Int>()
            for (v, ls) in counts { for l in ls where rests.count <= k { rests.insert(l &- Int(truncatingIfNeeded: v)) } }
            if rests.count * 2 <= k { continue }
            var conditional = 0.0
            for (_, ls) in counts { conditional += Double(ls.count) / n * entropy(ls.map { UInt64($0) }) }
            let gain = hLength - conditional
            // Every extra value costs: a field that merely splits frames finely gains too.
            let score = gain - Double(k - 1) * log2(max(n, 2)) / (2 * n)
            ranked.append((GuessedField(name: "id", offset: o, width: w, order: order, role: .messageID), score, gain, o + w > bodyStart, k))
        }
        // With the body's start unknown (a length that counts the whole frame), the id is the
        // first informative field: bytes further on may be the body's, which the id explains.
        let maxGain = ranked.map(\.gain).max() ?? 0
        let headerKnown = framing.adjustment >= lengthEnd
        ranked.sort { a, b in
            if a.inBody != b.inBody { return !a.inBody }
            if !headerKnown {
                let aGood = a.gain >= 0.5 * maxGain, bGood = b.gain >= 0.5 * maxGain
                if aGood != bGood { return aGood }
                if a.field.offset != b.field.offset { return a.field.offset < b.field.offset }
            }
            if abs(a.score - b.score) > 1e-9 { return a.score > b.score }
            // The same values read wider (zero high bytes) or narrower: the widest.
            if a.field.width != b.field.width { return a.field.width > b.field.width }
            if a.field.order != b.field.order { return a.field.order == framing.order }
            return a.field.offset < b.field.offset
        }
        // A field and its neighbour (flags, a body's first bytes) split the frames more finely
        // than the id alone: when a field over part of the chosen one's varying bytes has at
        // most half its values yet tells at least half as much, it is the id. (With nearly as
        // many values, the wider one is kept: its other bytes are the id's own.)
        func varying(_ f: GuessedField) -> Set<Int> { Set((f.offset..<(f.offset + f.width)).filter(isVarying)) }
        var changed = true
        while changed, let top = ranked.first {
            changed = false
            let mine = varying(top.field)
            if let i = ranked.indices.dropFirst().first(where: { j in
                let c = ranked[j]
                return c.inBody == top.inBody && varying(c.field).isStrictSubset(of: mine)
                    && c.values * 2 <= top.values && c.gain >= 0.5 * top.gain - 1e-9
            }) {
                ranked.swapAt(0, i)
                changed = true
            }
        }
        var id = ranked.first.flatMap { $0.gain > 0.05 ? $0.field : nil }
        var idGain = ranked.first?.gain ?? 0
        // A command's other byte tells little about the length when one message (a heartbeat)
        // fills the capture, and the byte alone scores higher for its fewer values. But bytes of
        // one number come in few pairs, each value of one with one or two of the other (a
        // module and its commands; 1001, 1002, 2001), where an id and a flags byte or a
        // counter beside it are met in many: the id takes in a varying neighbour that goes with
        // it so, 1 byte to 2. (Not 2 to 4: a body's first bytes go with the message too.)
        if let f = id, f.width == 1 {
            var best: (field: GuessedField, ratio: Double)?
            for o in [f.offset - 1, f.offset] where o >= 0 && o + 2 <= searchEnd {
                let r = o..<(o + 2)
                let other = [o == f.offset ? o + 1 : o]
                guard isVarying(other[0]), !avoid.contains(where: { $0.overlaps(r) }) else { continue }
                let a = distinct([f.offset]), b = distinct(other), j = distinct(Array(r))
                // (A counter's or a timestamp's byte takes a new value in most frames: no category.)
                guard b >= 2, j <= 256, Double(j) <= max(2, n / 3), Double(j) <= 1.5 * Double(max(a, b)) else { continue }
                let ratio = Double(j) / Double(max(a, b))
                // The byte with fewer values is the number's high byte.
                let lowFirst = distinct([r.lowerBound]) > distinct([r.upperBound - 1])
                if best.map({ ratio < $0.ratio }) ?? true {
                    best = (GuessedField(name: "id", offset: o, width: 2, order: lowFirst ? .little : .big, role: .messageID), ratio)
                }
            }
            if let wider = best?.field {
                id = wider
                if let r = ranked.first(where: { $0.field.offset == wider.offset && $0.field.width == wider.width }) { idGain = r.gain }
            }
        }
        let runner = ranked.dropFirst().first { r in
            guard let id else { return true }
            let a = id.offset..<(id.offset + id.width), b = r.field.offset..<(r.field.offset + r.field.width)
            return !a.overlaps(b)
        }

        // The header's size: a length that counts the body only says it; otherwise up to the
        // last field found (never past the shortest frame).
        var size = max(lengthEnd, [id, seq].compactMap { $0.map { $0.offset + $0.width } }.max() ?? 0)
        if framing.adjustment >= lengthEnd { size = max(size, framing.adjustment) }
        size = min(size, window)
        if framing.isVarint { size = framing.offset }

        var fields: [GuessedField] = []
        if !framing.isVarint {
            fields.append(GuessedField(name: "length", offset: framing.offset, width: framing.width, order: framing.order, role: .length))
        }
        if let id, id.offset + id.width <= size { fields.append(id) }
        if let seq, seq.offset + seq.width <= size { fields.append(seq) }
        // The rest of the header, by role: runs of constant bytes, per-connection bytes, others.
        var i = 0
        var magic = 0, version = 0, other = 0
        while i < size {
            if fields.contains(where: { $0.offset <= i && i < $0.offset + $0.width }) { i += 1; continue }
            var j = i + 1
            while j < size, !fields.contains(where: { $0.offset <= j && j < $0.offset + $0.width }), sameKind(roles[i], roles[j]) { j += 1 }
            // Split into natural widths, largest first.
            var at = i
            while at < j {
                let w = [8, 4, 2, 1].first { $0 <= j - at }!
                switch roles[at] {
                case .constant:
                    var v: UInt64 = 0
                    for k in at..<(at + w) { if case .constant(let b) = roles[k] { v = v << 8 | UInt64(b) } }
                    if w == 1 && v > 0 && v < 16 {
                        // One small value in every frame is a version more likely than a magic:
                        // seen once, not proven constant (the writer leaves it unchecked).
                        version += 1
                        fields.append(GuessedField(name: version == 1 ? "version" : "version\(version)", offset: at, width: w,
                                                   order: .big, role: .seenOnce(v)))
                        break
                    }
                    magic += 1
                    fields.append(GuessedField(name: v == 0 ? "reserved\(magic)" : magic == 1 ? "magic" : "magic\(magic)",
                                               offset: at, width: w, order: .big, role: .constant(v)))
                case .perConnection:
                    version += 1
                    fields.append(GuessedField(name: version == 1 ? "version" : "version\(version)", offset: at, width: w,
                                               order: framing.order, role: .perConnection))
                case .varying:
                    other += 1
                    fields.append(GuessedField(name: "field\(other)", offset: at, width: w, order: framing.order, role: .other))
                }
                at += w
            }
            i = j
        }
        fields.sort { $0.offset < $1.offset }
        return HeaderLayout(size: size, fields: fields, idGain: idGain,
                            idRunnerUp: id == nil ? nil : runner.map { ($0.field, $0.gain) })
    }

    func sameKind(_ a: ByteRole, _ b: ByteRole) -> Bool {
        switch (a, b) {
        case (.constant, .constant), (.perConnection, .perConnection), (.varying, .varying): return true
        default: return false
        }
    }
}

/// Shannon entropy in bits of a list of values.
func entropy(_ values: [UInt64]) -> Double {
    guard !values.isEmpty else { return 0 }
    var counts: [UInt64: Int] = [:]
    for v in values { counts[v, default: 0] += 1 }
    let n = Double(values.count)
    return counts.values.reduce(0.0) { h, c in
        let p = Double(c) / n
        return h - p * log2(p)
    }
}
