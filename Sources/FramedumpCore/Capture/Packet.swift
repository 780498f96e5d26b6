/// A capture timestamp with nanosecond resolution (libpcap is opened in nano precision).
public struct Timestamp: Comparable, Hashable, Sendable {
    public var seconds: Int64
    public var nanos: UInt32

    public init(seconds: Int64, nanos: UInt32) {
        self.seconds = seconds
        self.nanos = nanos
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        a.seconds != b.seconds ? a.seconds < b.seconds : a.nanos < b.nanos
    }

    /// Whole seconds between two timestamps (negative if `other` is later).
    /// Saturating: a crafted pcapng can stamp packets anywhere in the 64-bit range.
    public func seconds(since other: Timestamp) -> Int64 {
        let (d, overflow) = seconds.subtractingReportingOverflow(other.seconds)
        return overflow ? (seconds < other.seconds ? .min : .max) : d
    }

    /// Nanoseconds between two timestamps, saturating (negative if `other` is later).
    public func nanos(since other: Timestamp) -> Int64 {
        let (d, overflow) = seconds.subtractingReportingOverflow(other.seconds)
        if overflow { return seconds < other.seconds ? .min : .max }
        if d >= 1 << 32 { return .max }
        if d <= -(1 << 32) { return .min }
        return d * 1_000_000_000 + Int64(nanos) - Int64(other.nanos)
    }
}

/// Where a byte came from: the packet's number in the capture (1-based) and its time.
public struct PacketRef: Hashable, Sendable {
    public var number: UInt64
    public var ts: Timestamp
    public init(number: UInt64, ts: Timestamp) {
        self.number = number
        self.ts = ts
    }
}

/// One packet as libpcap handed it to us. `data` is borrowed: valid only during the callback.
public struct Packet {
    public var ref: PacketRef
    public var data: UnsafeRawBufferPointer
    /// The length on the wire; more than `data.count` when the snaplen cut the packet.
    public var wireLength: Int
}
