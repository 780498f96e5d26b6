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
        for sw in r.switches where sw.from == nil {
            for ph in r.names.indices { n[ph * s.messages.count + sw.message] = Int32(sw.to) }
        }
        for sw in r.switches { if let f = sw.from { n[f * s.messages.count + sw.message] = Int32(sw.to) } }
        next = n
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
}
