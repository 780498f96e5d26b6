/// Link layer → IPv4/IPv6 → TCP, bounds-checked over the borrowed packet bytes.
///
/// No copies and no allocation: the resulting `TCPSegment.payload` points into the packet.
public struct LinkDecoder: Sendable {
    public let linkType: Int32

    public static let supported: [Int32: String] = [
        0: "BSD loopback (NULL)", 1: "Ethernet", 12: "raw IP", 14: "raw IP", 108: "OpenBSD loopback",
        113: "Linux cooked v1 (SLL)", 228: "raw IPv4", 229: "raw IPv6", 276: "Linux cooked v2 (SLL2)",
    ]

    public init(linkType: Int32) { self.linkType = linkType }

    public var isSupported: Bool { Self.supported[linkType] != nil }

    public func decode(_ p: UnsafeRawBufferPointer) -> LinkResult {
        switch linkType {
        case 1: return ethernet(p)
        case 0, 108: return loopback(p)
        case 12, 14: return rawIP(p, at: 0)
        case 228: return ipv4(p, at: 0)
        case 229: return ipv6(p, at: 0)
        case 113:  // SLL: ... [14..16) protocol, 16-byte header
            guard let proto = p.u16be(14) else { return .truncated }
            return network(p, etherType: proto, at: 16)
        case 276:  // SLL2: [0..2) protocol, 20-byte header
            guard let proto = p.u16be(0), p.count >= 20 else { return .truncated }
            return network(p, etherType: proto, at: 20)
        default: return .unsupported
        }
    }

    /// Ethernet II, with any number of 802.1Q / 802.1ad (QinQ) tags.
    func ethernet(_ p: UnsafeRawBufferPointer) -> LinkResult {
        var at = 12
        guard var type = p.u16be(at) else { return .truncated }
        at += 2
        var tags = 0
        while type == 0x8100 || type == 0x88a8 || type == 0x9100 {
            tags += 1
            guard tags <= 8, let inner = p.u16be(at + 2) else { return .truncated }
            type = inner
            at += 4
        }
        return network(p, etherType: type, at: at)
    }

    /// BSD NULL (family in the capturing host's byte order) and OpenBSD LOOP (network order).
    func loopback(_ p: UnsafeRawBufferPointer) -> LinkResult {
        guard let be = p.u32be(0), let le = p.u32le(0) else { return .truncated }
        // NULL's family is in host order; a small value tells us which order that was.
        let family = linkType == 108 ? be : (be & 0xffff_0000 == 0 ? be : le)
        switch family {
        case 2: return ipv4(p, at: 4)
        case 10, 24, 28, 30: return ipv6(p, at: 4)
        default: return .unsupported
        }
    }

    func rawIP(_ p: UnsafeRawBufferPointer, at: Int) -> LinkResult {
        guard let v = p.u8(at) else { return .truncated }
        switch v >> 4 {
        case 4: return ipv4(p, at: at)
        case 6: return ipv6(p, at: at)
        default: return .malformed
        }
    }

    func network(_ p: UnsafeRawBufferPointer, etherType: UInt16, at: Int) -> LinkResult {
        switch etherType {
        case 0x0800: return ipv4(p, at: at)
        case 0x86dd: return ipv6(p, at: at)
        default: return .unsupported
        }
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |Version|  IHL  |Type of Service|          Total Length         |
     |         Identification        |Flags|      Fragment Offset    |
     |  Time to Live |    Protocol   |         Header Checksum       |
     |                       Source Address                          |
     |                    Destination Address                        |
     |                    Options (IHL > 5)                          |
    */
    func ipv4(_ p: UnsafeRawBufferPointer, at: Int) -> LinkResult {
        guard let vihl = p.u8(at), let total = p.u16be(at + 2), let frag = p.u16be(at + 6),
              let proto = p.u8(at + 9), let src = p.u32be(at + 12), let dst = p.u32be(at + 16)
        else { return .truncated }
        guard vihl >> 4 == 4 else { return .malformed }
        let ihl = Int(vihl & 0x0f) * 4
        guard ihl >= 20, Int(total) >= ihl else { return .malformed }
        // More-fragments set or a non-zero offset: part of a fragmented datagram.
        if frag & 0x3fff != 0 { return .fragment }
        guard proto == 6 else { return .notTCP }
        return tcp(p, at: at + ihl, ipPayloadLength: Int(total) - ihl,
                   src: IPAddress(v4: src), dst: IPAddress(v4: dst))
    }

    /// IPv6 with its extension header chain (hop-by-hop, routing, destination, AH, fragment).
    func ipv6(_ p: UnsafeRawBufferPointer, at: Int) -> LinkResult {
        guard let v = p.u8(at), let plen = p.u16be(at + 4), var next = p.u8(at + 6),
              let sh = p.u64be(at + 8), let sl = p.u64be(at + 16),
              let dh = p.u64be(at + 24), let dl = p.u64be(at + 32)
        else { return .truncated }
        guard v >> 4 == 6 else { return .malformed }
        var off = at + 40
        var remaining = Int(plen)
        var hops = 0
        while true {
            hops += 1
            if hops > 16 { return .malformed }
            switch next {
            case 6:
                return tcp(p, at: off, ipPayloadLength: remaining,
                           src: IPAddress(v6Hi: sh, lo: sl), dst: IPAddress(v6Hi: dh, lo: dl))
            case 0, 43, 60:  // hop-by-hop, routing, destination options: (len + 1) * 8 bytes
                guard let n = p.u8(off), let l = p.u8(off + 1) else { return .truncated }
                let size = (Int(l) + 1) * 8
                next = n; off += size; remaining -= size
            case 51:  // AH: (len + 2) * 4 bytes
                guard let n = p.u8(off), let l = p.u8(off + 1) else { return .truncated }
                let size = (Int(l) + 2) * 4
                next = n; off += size; remaining -= size
            case 44:
                return .fragment
            default:
                return .notTCP
            }
            if remaining < 0 { return .malformed }
        }
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     |          Source Port          |       Destination Port        |
     |                        Sequence Number                        |
     |                    Acknowledgment Number                      |
     |  Data |       |C|E|U|A|P|R|S|F|                               |
     | Offset| Rsrvd |W|C|R|C|S|S|Y|I|            Window             |
     |           Checksum            |         Urgent Pointer        |
     |                    Options (data offset > 5)                  |
    */
    func tcp(_ p: UnsafeRawBufferPointer, at: Int, ipPayloadLength: Int,
             src: IPAddress, dst: IPAddress) -> LinkResult {
        guard let sport = p.u16be(at), let dport = p.u16be(at + 2), let seq = p.u32be(at + 4),
              let ack = p.u32be(at + 8), let off = p.u8(at + 12), let flags = p.u8(at + 13),
              let win = p.u16be(at + 14)
        else { return .truncated }
        let hlen = Int(off >> 4) * 4
        guard hlen >= 20, hlen <= ipPayloadLength else { return .malformed }
        // The payload ends where IP says, never past what was captured (Ethernet padding
        // beyond the IP length is not payload).
        let payloadLength = ipPayloadLength - hlen
        let start = at + hlen
        let present = max(0, min(payloadLength, p.count - start))
        return .tcp(TCPSegment(
            src: Endpoint(src, sport), dst: Endpoint(dst, dport), seq: seq, ack: ack,
            flags: TCPFlags(rawValue: flags), window: win,
            payload: p.slice(start, present), payloadLength: payloadLength))
    }
}
