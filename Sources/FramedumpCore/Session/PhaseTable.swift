/// A protocol's connection phases at run time, made once per protocol: per phase which message
/// an id names, and which message moves the connection to which phase. The current phase is the
/// session's (`SessionFrames.phase`); the decoder reads it through `MessageDecoder.phase`.
final class PhaseTable {
    let names: [String]
    let midstream: Int32
    private let messageCount: Int
    /// `next[phase * messageCount + message]`: the phase after that message, decoded in that
    /// phase (-1: the phase stays).
    private let next: [Int32]
    private let byID: [[Direction: [UInt64: Int]]]
    private let otherwise: [[Direction: Int]]

    init?(_ s: ProtocolSchema) {
        let r = s.phases
        guard !r.isEmpty else { return nil }
        names = r.names
        midstream = Int32(r.midstream)
        messageCount = s.messages.count
        var n = [Int32](repeating: -1, count: r.names.count * s.messages.count)
        // A switch from one phase wins over one from any (the checker refuses two of a kind).
        for sw in r.switches where sw.from == nil && sw.isPlain {
            for ph in r.names.indices { n[ph * s.messages.count + sw.message] = Int32(sw.to) }
        }
        for sw in r.switches where sw.isPlain { if let f = sw.from { n[f * s.messages.count + sw.message] = Int32(sw.to) } }
        next = n
        // Switches with a test or a count, tried before the plain one of their phase and message.
        rules = r.switches.filter { !$0.isPlain }
        var sp: [Int: [Int]] = [:], src: [Int: [Int]] = [:]
        for (k, sw) in rules.enumerated() {
            for ph in sw.from.map({ [$0] }) ?? Array(r.names.indices) { sp[ph * s.messages.count + sw.message, default: []].append(k) }
            if let c = sw.count { src[c.source, default: []].append(k) }
        }
        special = sp
        sources = src
        hasSpecial = !rules.isEmpty
        byID = r.byID
        otherwise = r.otherwise
    }

    /// The message id `id` of direction `d` names in phase `phase`: its own, else the phase's `= *`.
    func message(_ phase: Int32, _ d: Direction, _ id: UInt64) -> Int? {
        let p = Int(phase)
        return byID[p][d]?[id] ?? otherwise[p][d]
    }

    /// The message id `id` names itself (not a `= *` one) in phase `phase`.
    func named(_ phase: Int32, _ d: Direction, _ id: UInt64) -> Int? { byID[Int(phase)][d]?[id] }

    /// The phase after message `mi` in phase `phase` (nil: it stays).
    @inline(__always)
    func after(_ phase: Int32, _ mi: Int) -> Int32? {
        let v = next[Int(phase) * messageCount + mi]
        return v < 0 ? nil : v
    }

    /// Switches with a test (`after EOF when length == 5`) or a count (`after ColumnDefinition *
    /// ColumnCount.status`), and per phase and message the ones to try; per message, the counts
    /// it sets. A connection keeps a counter per such rule (`counters`).
    let rules: [PhaseSwitch]
    private let special: [Int: [Int]]
    private let sources: [Int: [Int]]
    let hasSpecial: Bool

    /// The phase after message `m` (of type `mi`) in phase `phase`, by the switches with a test
    /// or a count first, then the plain one; and the counts `m` sets, set.
    func after(_ phase: Int32, _ mi: Int, _ m: DecodedMessage, counters: inout [Int64]) -> Int32? {
        var to: Int32? = nil
        for k in special[Int(phase) * messageCount + mi] ?? [] {
            let sw = rules[k]
            if let c = sw.when, !c.test.holds(Self.value(c.test.field, inHeader: c.inHeader, m)) { continue }
            if sw.count != nil {
                // (Counted down by each one; one never counted, or counted out, switches nothing.)
                guard counters[k] > 0 else { continue }
                counters[k] -= 1
                if counters[k] > 0 { continue }
            }
            to = Int32(sw.to)
            break
        }
        for k in sources[mi] ?? [] {
            let c = rules[k].count!
            let v = Self.value(c.field, inHeader: c.inHeader, m)
            counters[k] = Int64(bitPattern: v) > 0 ? Int64(bitPattern: v) : 0
        }
        return to ?? after(phase, mi)
    }

    /// A header field's value, or a top-level field's of the message (0: not there).
    static func value(_ field: Int, inHeader: Bool, _ m: DecodedMessage) -> UInt64 {
        let f = inHeader ? m.header(field) : m.topLevel(field)
        return f.map { MessageDecoder.bits($0.value).0 } ?? 0
    }
}
