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
///
/// Bytes held back behind a hole are handed on when a later packet fills it: `number` and `ts`
/// are then that later packet's (the one that completed them, which dates them, so output
/// stays in capture order), and `carrier` is the earliest packet that carried them.
public struct PacketRef: Hashable, Sendable {
    public var number: UInt64
    public var ts: Timestamp
    /// The earliest packet that carried these bytes (≤ `number`; equal for bytes in order).
    public var carrier: UInt64
    public init(number: UInt64, ts: Timestamp) {
        self.number = number
        self.ts = ts
        self.carrier = number
    }
    public init(number: UInt64, ts: Timestamp, carrier: UInt64) {
        self.number = number
        self.ts = ts
        self.carrier = min(carrier, number)
    }

    /// This packet as the first of a message: numbered by its earliest carrier.
    @inline(__always) public var asFirst: PacketRef {
        carrier == number ? self : PacketRef(number: carrier, ts: ts)
    }

    /// The same, also carried by `other`'s earliest carrier if that came earlier.
    @inline(__always) public func carried(with other: PacketRef) -> PacketRef {
        other.carrier < carrier ? PacketRef(number: number, ts: ts, carrier: other.carrier) : self
    }
}

/// One packet as libpcap (or, for the pcapng files libpcap refuses, `PcapngReader`) handed it
/// to us. `data` is borrowed: valid only during the callback.
public struct Packet {
    public var ref: PacketRef
    public var data: UnsafeRawBufferPointer
    /// The length on the wire; more than `data.count` when the snaplen cut the packet.
    public var wireLength: Int
    /// Its interface's link type (libpcap's DLT_ value): in a pcapng file each interface has
    /// its own. -1: not said (packets made by hand), the capture's one link type.
    public var linkType: Int32 = -1

    /// The packet as a snap length would have cut it just before `payload` (bytes of `data`);
    /// the length on the wire stays.
    func cut(before payload: UnsafeRawBufferPointer) -> Packet {
        var p = self
        if let at = payload.baseAddress, let base = data.baseAddress, at >= base, at <= base + data.count {
            p.data = UnsafeRawBufferPointer(rebasing: data[..<(at - base)])
        }
        return p
    }
}
