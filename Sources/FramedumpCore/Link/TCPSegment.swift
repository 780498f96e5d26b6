/// TCP flag bits as they sit in byte 13 of the header.
public struct TCPFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let fin = TCPFlags(rawValue: 0x01)
    public static let syn = TCPFlags(rawValue: 0x02)
    public static let rst = TCPFlags(rawValue: 0x04)
    public static let psh = TCPFlags(rawValue: 0x08)
    public static let ack = TCPFlags(rawValue: 0x10)
    public static let urg = TCPFlags(rawValue: 0x20)
    public static let ece = TCPFlags(rawValue: 0x40)
    public static let cwr = TCPFlags(rawValue: 0x80)

    /// tcpdump's flag string: `S`, `S.`, `P.`, `F.`, `R`, ...; `none` when no flag is set.
    public var tcpdumpText: String {
        var s = ""
        if contains(.fin) { s += "F" }
        if contains(.syn) { s += "S" }
        if contains(.rst) { s += "R" }
        if contains(.psh) { s += "P" }
        if contains(.ack) { s += "." }
        if contains(.urg) { s += "U" }
        if contains(.ece) { s += "E" }
        if contains(.cwr) { s += "W" }
        return s.isEmpty ? "none" : s
    }
}

/// A TCP segment decoded from a packet. `payload` borrows the packet's bytes.
public struct TCPSegment {
    public var src: Endpoint
    public var dst: Endpoint
    public var seq: UInt32
    public var ack: UInt32
    public var flags: TCPFlags
    public var window: UInt16
    /// The payload bytes present in the capture.
    public var payload: UnsafeRawBufferPointer
    /// The payload length the IP header announces; larger than `payload.count` when truncated.
    public var payloadLength: Int
    /// The window-scale option of a SYN (nil when absent or not a SYN).
    public var windowScale: UInt8? = nil
    /// The IP header said length 0 (segmentation offload): the length is what was captured.
    public var ipLengthFromCapture = false

    package init(src: Endpoint, dst: Endpoint, seq: UInt32, ack: UInt32, flags: TCPFlags, window: UInt16,
                 payload: UnsafeRawBufferPointer, payloadLength: Int, windowScale: UInt8? = nil,
                 ipLengthFromCapture: Bool = false) {
        self.src = src
        self.dst = dst
        self.seq = seq
        self.ack = ack
        self.flags = flags
        self.window = window
        self.payload = payload
        self.payloadLength = payloadLength
        self.windowScale = windowScale
        self.ipLengthFromCapture = ipLengthFromCapture
    }

    public var isTruncated: Bool { payload.count < payloadLength }
}

/// What the link decoder made of one packet.
public enum LinkResult {
    case tcp(TCPSegment)
    /// A UDP datagram (no tunnel): for the flow table, when a dissector claims UDP.
    case udp(UDPDatagram)
    /// IP but neither TCP nor UDP (ICMP, ...): counted and skipped.
    case notTCP
    /// A piece of a fragmented IPv4/IPv6 datagram: for the `Defragmenter`.
    case fragment(IPFragment)
    /// The headers themselves were cut by the snaplen.
    case truncated
    /// A link or network protocol we do not decode (ARP, ...).
    case unsupported
    /// Headers that contradict themselves (bad IHL, data offset below 5, ...).
    case malformed
    /// An IPComp payload (RFC 3173): decoded once inflated (`IPCompPayload`).
    case compressed(IPCompPayload)
}

/// A datagram's payload compressed by IPComp (IP protocol 108, RFC 3173) with DEFLATE (CPI 2,
/// RFC 2394: each datagram on its own). `data` borrows the packet's bytes; the pipeline
/// inflates it and decodes `next` from the result, as for a reassembled datagram.
public struct IPCompPayload {
    public var src: IPAddress
    public var dst: IPAddress
    public var next: UInt8
    public var data: UnsafeRawBufferPointer
}

/// A UDP datagram decoded from a packet. `payload` borrows the packet's bytes.
public struct UDPDatagram {
    public var src: Endpoint
    public var dst: Endpoint
    /// The payload bytes present in the capture.
    public var payload: UnsafeRawBufferPointer
    /// The payload length the UDP header announces; larger than `payload.count` when the snaplen cut it.
    public var payloadLength: Int

    package init(src: Endpoint, dst: Endpoint, payload: UnsafeRawBufferPointer, payloadLength: Int) {
        self.src = src
        self.dst = dst
        self.payload = payload
        self.payloadLength = payloadLength
    }

    public var isTruncated: Bool { payload.count < payloadLength }
}

/// One fragment of an IPv4 or IPv6 datagram. `data` borrows the packet's bytes.
public struct IPFragment {
    public var src: IPAddress
    public var dst: IPAddress
    /// IPv4's 16-bit or IPv6's 32-bit identification.
    public var id: UInt32
    /// The protocol (next header) of the reassembled payload.
    public var proto: UInt8
    /// Where this fragment's data goes in the datagram's payload, in bytes.
    public var offset: Int
    public var more: Bool
    /// The fragment's data present in the capture, and the length the header announces.
    public var data: UnsafeRawBufferPointer
    public var dataLength: Int
}
