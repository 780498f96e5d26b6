/// A stream event that says something was lost or could not be read: a gap, a malformed or
/// cut frame, bytes skipped while resynchronising, a conflicting retransmission, a notice, a
/// layer's problem (a TLS record without its key). `-Y 'event.gap'` selects them, and the
/// page lists them as rows among the messages (Wireshark's expert info on its packets).
public struct LossEvent: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case gap, malformed, resync, cut, conflict, notice, layer

        /// Its place in `allCases` (counts kept in arrays).
        public var index: Int { Self.allCases.firstIndex(of: self)! }

        /// The tag the terminal's line and the page's row show.
        public var tag: String {
            switch self {
            case .gap: return "GAP"
            case .malformed: return "MALFORMED"
            case .resync: return "RESYNC"
            case .cut: return "CUT"
            case .conflict: return "CONFLICT"
            case .notice: return "NOTICE"
            case .layer: return "PROBLEM"
            }
        }
    }

    public var kind: Kind
    public var direction: Direction
    /// The bytes lost, skipped or affected (0 when the event has none: a notice, a layer problem).
    public var length: UInt64
    /// What happened, in the words of the terminal's line after its tag.
    public var text: String

    public init(kind: Kind, direction: Direction, length: UInt64, text: String) {
        self.kind = kind
        self.direction = direction
        self.length = length
        self.text = text
    }

    public static func malformed(_ d: Direction, offset: UInt64, length: UInt64, reason: MalformedReason) -> LossEvent {
        let kind: Kind
        if case .skipped = reason { kind = .resync } else { kind = reason.isCaptureCut ? .cut : .malformed }
        return LossEvent(kind: kind, direction: d, length: length,
                         text: "\(length) \(length == 1 ? "byte" : "bytes") at stream offset \(offset): \(reason.text)")
    }

    public static func gap(_ d: Direction, offset: UInt64, length: UInt64, reason: GapReason) -> LossEvent {
        LossEvent(kind: .gap, direction: d, length: length,
                  text: "\(length) bytes missing at stream offset \(offset) (\(reason.rawValue))")
    }

    public static func conflict(_ d: Direction, offset: UInt64, length: UInt64) -> LossEvent {
        LossEvent(kind: .conflict, direction: d, length: length,
                  text: "\(length) bytes at stream offset \(offset) retransmitted with different content (first copy kept)")
    }

    public static func notice(_ n: StreamNotice, _ d: Direction) -> LossEvent {
        var length: UInt64 = 0
        switch n {
        case .lateData(_, let l): length = l
        case .afterClose(let l): length = UInt64(max(0, l))
        case .resetIgnored: break
        }
        return LossEvent(kind: .notice, direction: d, length: length, text: n.text)
    }

    /// A layer event's problems, one event for all of them; nil when it has none (a handshake
    /// that went well is not a loss).
    public static func layer(_ e: any LayerEvent, _ d: Direction) -> LossEvent? {
        let problems = e.problems
        guard !problems.isEmpty else { return nil }
        return LossEvent(kind: .layer, direction: d, length: 0,
                         text: problems.map { $0.layer + ": " + $0.text }.joined(separator: "; "))
    }
}
