/// Link layer → IPv4/IPv6 → TCP, bounds-checked over the borrowed packet bytes.
///
/// No copies and no allocation: the resulting `TCPSegment.payload` points into the packet.
public struct LinkDecoder: Sendable {
    public let linkType: Int32
    /// How many encapsulations deep this decoder works (tunnels and wrapping headers nest).
    let depth: Int

    public static let supported: [Int32: String] = [
        0: "BSD loopback (NULL)", 1: "Ethernet", 9: "PPP", 10: "FDDI", 12: "raw IP", 14: "raw IP",
        50: "PPP in HDLC-like framing", 51: "PPPoE", 104: "Cisco HDLC", 108: "OpenBSD loopback",
        113: "Linux cooked v1 (SLL)", 149: "Apple PKTAP", 166: "PPP (pppd)", 192: "PPI",
        204: "PPP with direction", 7: "ARCNET", 129: "Linux ARCNET", 228: "raw IPv4", 229: "raw IPv6", 239: "Linux NFLOG", 242: "IP over InfiniBand",
        258: "Apple PKTAP", 276: "Linux cooked v2 (SLL2)",
    ]

    public init(linkType: Int32) { self.init(linkType: linkType, depth: 0) }

    init(linkType: Int32, depth: Int) {
        self.linkType = linkType
        self.depth = depth
    }

    public var isSupported: Bool { Self.supported[linkType] != nil }

    public func decode(_ p: UnsafeRawBufferPointer) -> LinkResult {
        switch linkType {
        case 1: return ethernet(p, at: 0)
        case 113:  // SLL: ... [14..16) protocol, 16-byte header
            guard let proto = p.u16be(14) else { return .truncated }
            return network(p, etherType: proto, at: 16)
        case 276:  // SLL2: [0..2) protocol, 20-byte header
            guard let proto = p.u16be(0), p.count >= 20 else { return .truncated }
            return network(p, etherType: proto, at: 20)
        default: return link(p, linkType, depth: depth)
        }
    }

    /// A datagram the `Defragmenter` put back together: its payload from the transport
    /// header (IPv4) or from the header after the fragment header (IPv6).
    public func datagram(_ b: UnsafeRawBufferPointer, _ d: Defragmenter.Datagram) -> LinkResult {
        if d.src.isV6 { return ipv6Chain(b, next: d.proto, at: 0, remaining: b.count, src: d.src, dst: d.dst) }
        if d.proto == 17 || d.proto == 47 || d.proto == 4 || d.proto == 41 {
            return tunnel(b, proto: d.proto, at: 0, length: b.count, src: d.src, dst: d.dst)
        }
        guard d.proto == 6 else { return .notTCP }
        return tcp(b, at: 0, ipPayloadLength: b.count, src: d.src, dst: d.dst)
    }

    /// Any link type, for headers that wrap another link type (PKTAP, PPI).
    func link(_ p: UnsafeRawBufferPointer, _ type: Int32, depth: Int) -> LinkResult {
        guard depth < 4 else { return .malformed }
        switch type {
        case 1: return ethernet(p, at: 0)
        case 0, 108: return loopback(p, type)
        case 12, 14: return rawIP(p, at: 0)
        case 228: return ipv4(p, at: 0)
        case 229: return ipv6(p, at: 0)
        case 113, 276: return LinkDecoder(linkType: type).decode(p)
        case 9, 50, 166: return ppp(p, at: 0)
        case 204: return ppp(p, at: 1)  // one byte of direction first
        case 51: return pppoe(p, at: 0)
        case 104:  // Cisco HDLC: address, control, then an EtherType
            guard let proto = p.u16be(2) else { return .truncated }
            return network(p, etherType: proto, at: 4)
        case 10:  // FDDI: frame control and two addresses (13 bytes), then LLC/SNAP
            guard let dsap = p.u8(13), let ssap = p.u8(14), let ctl = p.u8(15), let proto = p.u16be(19) else { return .truncated }
            guard dsap == 0xaa, ssap == 0xaa, ctl == 0x03 else { return .unsupported }
            return network(p, etherType: proto, at: 21)
        case 239: return nflog(p)
        case 242:  // IP over InfiniBand (RFC 4391): 40 bytes of addresses, type, 2 reserved
            guard let proto = p.u16be(40), p.count >= 44 else { return .truncated }
            return network(p, etherType: proto, at: 44)
        case 7: return arcnet(p, at: 2)          // BSD: source, destination
        case 129: return arcnet(p, at: 4)        // Linux: source, destination, a 2-byte offset
        case 192: return ppi(p, depth: depth)
        case 149, 258: return pktap(p, depth: depth)
        default: return .unsupported
        }
    }

    /// Ethernet II or 802.3 with LLC/SNAP, with any number of 802.1Q / 802.1ad (QinQ) tags.
    func ethernet(_ p: UnsafeRawBufferPointer, at base: Int) -> LinkResult {
        var at = base + 12
        guard var type = p.u16be(at) else { return .truncated }
        at += 2
        if type == 0x0800 { return ipv4(p, at: at) }  // the common case, first
        var tags = 0
        while true {
            if type == 0x8100 || type == 0x88a8 || type == 0x9100 {
                guard let inner = p.u16be(at + 2) else { return .truncated }
                type = inner
                at += 4
            } else if type == 0x88e7 {
                // 802.1ah provider backbone bridging: I-TAG, then the customer's addresses.
                guard let inner = p.u16be(at + 16) else { return .truncated }
                type = inner
                at += 18
            } else if type <= 1500 {
                // 802.3: a length, then LLC. SNAP (AA AA 03, OUI) carries an EtherType.
                guard let dsap = p.u8(at), let ssap = p.u8(at + 1), let ctl = p.u8(at + 2) else { return .truncated }
                guard dsap == 0xaa, ssap == 0xaa, ctl == 0x03 else { return .unsupported }
                guard let inner = p.u16be(at + 6) else { return .truncated }
                type = inner
                at += 8
            } else {
                break
            }
            tags += 1
            guard tags <= 8 else { return .malformed }
        }
        return network(p, etherType: type, at: at)
    }

    /// BSD NULL (family in the capturing host's byte order) and OpenBSD LOOP (network order).
    func loopback(_ p: UnsafeRawBufferPointer, _ type: Int32) -> LinkResult {
        guard let be = p.u32be(0), let le = p.u32le(0) else { return .truncated }
        // NULL's family is in host order; a small value tells us which order that was.
        let family = type == 108 ? be : (be & 0xffff_0000 == 0 ? be : le)
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
        case 0x8847, 0x8848: return mpls(p, at: at)
        case 0x8864: return pppoe(p, at: at)
        default: return .unsupported
        }
    }

    /// ARCNET (RFC 1051 and RFC 1201), after its addresses: a protocol id; RFC 1201's ids are
    /// followed by a split flag and a sequence number. An exception packet (RFC 1201 §4.5: flag
    /// 0xFF, two pad bytes, then id, flag and sequence again) is read past its padding, which
    /// tshark 4.0 does not do. A packet split in fragments is not put back together.
    func arcnet(_ p: UnsafeRawBufferPointer, at start: Int) -> LinkResult {
        guard let id = p.u8(start) else { return .truncated }
        switch id {
        case 0xF0: return ipv4(p, at: start + 1)       // RFC 1051 IP
        case 0xF1: return .unsupported                 // RFC 1051 ARP
        default: break
        }
        guard var flag = p.u8(start + 1) else { return .truncated }
        var at = start + 4
        if flag == 0xFF {
            guard let again = p.u8(start + 5) else { return .truncated }
            flag = again
            at = start + 8
        }
        guard flag == 0 else { return .unsupported }
        switch id {
        case 0xD4: return ipv4(p, at: at)              // RFC 1201 IP
        case 0xC4: return ipv6(p, at: at)              // IPv6 (RFC 2497)
        default: return .unsupported
        }
    }

    /// RFC 1661 PPP: optional address/control (FF 03), then a 1- or 2-byte protocol.
    func ppp(_ p: UnsafeRawBufferPointer, at start: Int, bounded: Bool = false) -> LinkResult {
        var at = start
        // Cisco HDLC in a file that says PPP (address 0x0F unicast or 0x8F multicast, control
        // 0, an EtherType), as tshark's heuristic finds it.
        if let a = p.u8(at), a == 0x0f || a == 0x8f, p.u8(at + 1) == 0 {
            guard let proto = p.u16be(at + 2) else { return .truncated }
            return network(p, etherType: proto, at: at + 4)
        }
        if p.u8(at) == 0xff && p.u8(at + 1) == nil { return .truncated }  // address cut from control
        if p.u8(at) == 0xff && p.u8(at + 1) == 0x03 { at += 2 }
        guard let b0 = p.u8(at) else { return .truncated }
        let proto: UInt16
        if b0 & 1 == 1 {  // protocol-field compression: one odd byte
            proto = UInt16(b0)
            at += 1
        } else {
            guard let v = p.u16be(at) else { return .truncated }
            proto = v
            at += 2
        }
        switch proto {
        case 0x0021: return ipv4(p, at: at, bounded: bounded)
        case 0x0057: return ipv6(p, at: at, bounded: bounded)
        case 0x0281: return mpls(p, at: at)
        default: return .unsupported
        }
    }

    /// RFC 2516 PPPoE session: version/type, code, session id, length, then PPP's protocol.
    /// The session length bounds the PPP frame: an IP length that claims more (and reaches
    /// into Ethernet padding) is cut to it, as tshark does.
    func pppoe(_ p: UnsafeRawBufferPointer, at: Int) -> LinkResult {
        guard let len = p.u16be(at + 4), p.count >= at + 8 else { return .truncated }
        let end = at + 6 + Int(len)
        // Only when the whole session frame was captured is its end the packet's end.
        return ppp(p.slice(0, end), at: at + 6, bounded: p.count >= end)
    }

    /// RFC 3032 MPLS label stack (4 bytes per entry, S bit ends it); the payload's first
    /// nibble says IPv4 or IPv6; 0 is a pseudowire control word before an Ethernet frame.
    func mpls(_ p: UnsafeRawBufferPointer, at start: Int) -> LinkResult {
        var at = start
        for _ in 0..<16 {
            guard let entry = p.u32be(at) else { return .truncated }
            at += 4
            if entry & 0x100 != 0 {
                guard let first = p.u8(at) else { return .truncated }
                switch first >> 4 {
                case 4: return ipv4(p, at: at)
                case 6: return ipv6(p, at: at)
                case 0: return p.count >= at + 4 + 14 ? ethernet(p, at: at + 4) : .truncated
                default: return .unsupported
                }
            }
        }
        return .malformed
    }

    /// Linux NFLOG: family, version, resource id, then TLVs (length and type in the host
    /// order of the reader: libpcap swaps them); type 9 is the packet from its IP header.
    func nflog(_ p: UnsafeRawBufferPointer) -> LinkResult {
        guard let family = p.u8(0), p.count >= 4 else { return .truncated }
        var at = 4
        while at + 4 <= p.count {
            #if _endian(little)
            guard let len = p.u16le(at), let type = p.u16le(at + 2) else { return .truncated }
            #else
            guard let len = p.u16be(at), let type = p.u16be(at + 2) else { return .truncated }
            #endif
            guard len >= 4 else { return .malformed }
            if type & 0x7fff == 9 {
                let body = p.slice(at + 4, Int(len) - 4)
                switch family {
                case 2: return ipv4(body, at: 0)
                case 10: return ipv6(body, at: 0)
                default: return rawIP(body, at: 0)
                }
            }
            at += (Int(len) + 3) & ~3
        }
        return .unsupported  // no packet in this record
    }

    /// PPI: version, flags, header length and the inner link type (little-endian).
    func ppi(_ p: UnsafeRawBufferPointer, depth: Int) -> LinkResult {
        guard let len = p.u16le(2), let dlt = p.u32le(4) else { return .truncated }
        guard len >= 8, Int(len) <= p.count else { return .malformed }
        return link(p.slice(Int(len), p.count), Int32(truncatingIfNeeded: dlt), depth: depth + 1)
    }

    /// Apple PKTAP (macOS `tcpdump -i rvi0`, `-i pktap`, `-k`): a header in the capturing
    /// Mac's (little-endian) order with its own length and the inner link type.
    func pktap(_ p: UnsafeRawBufferPointer, depth: Int) -> LinkResult {
        guard let len = p.u32le(0), let next = p.u32le(4), let dlt = p.u32le(8) else { return .truncated }
        guard len >= 12, len <= UInt32(p.count) else { return .malformed }
        guard next == 1 else { return .unsupported }  // PTH_TYPE_PACKET
        return link(p.slice(Int(len), p.count), Int32(truncatingIfNeeded: dlt), depth: depth + 1)
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
    /// `bounded`: the buffer ends where the packet does (a framing length said so), so an
    /// IP length beyond it is cut to it rather than taken for a snaplen cut.
    func ipv4(_ p: UnsafeRawBufferPointer, at: Int, bounded: Bool = false) -> LinkResult {
        guard let vihl = p.u8(at), var total = p.u16be(at + 2).map(Int.init), let id = p.u16be(at + 4),
              let frag = p.u16be(at + 6), let ipProto = p.u8(at + 9), let src = p.u32be(at + 12),
              let dst = p.u32be(at + 16)
        else { return .truncated }
        guard vihl >> 4 == 4 else { return .malformed }
        let ihl = Int(vihl & 0x0f) * 4
        // Total length 0: segmentation offload on the capturing host (TSO/LSO) handed the
        // capture a packet bigger than IP can say. As tshark and Zeek do, use what was captured.
        let lengthFromCapture = total == 0
        if lengthFromCapture || (bounded && total > p.count - at) { total = p.count - at }
        guard ihl >= 20, total >= ihl else { return .malformed }
        if ihl > 20, !Self.ipv4OptionsWellFormed(p, from: at + 20, to: min(at + ihl, p.count)) { return .malformed }
        // More-fragments set or a non-zero offset: part of a fragmented datagram.
        if frag & 0x3fff != 0 {
            let data = p.slice(at + ihl, total - ihl)
            return .fragment(IPFragment(src: IPAddress(v4: src), dst: IPAddress(v4: dst), id: UInt32(id), proto: ipProto,
                                        offset: Int(frag & 0x1fff) * 8, more: frag & 0x2000 != 0,
                                        data: data, dataLength: total - ihl))
        }
        var proto = ipProto, start = at + ihl
        // AH (RFC 4302, transport mode: authenticated, not encrypted): (len + 2) * 4 bytes, then
        // the protocol it names, as tshark reads it.
        if proto == 51 {
            guard let next = p.u8(start), let l = p.u8(start + 1) else { return .truncated }
            let size = (Int(l) + 2) * 4
            guard start + size <= at + total else { return .malformed }
            proto = next
            start += size
        }
        if proto == 108 { return Self.ipcomp(p, at: start, end: at + total, src: IPAddress(v4: src), dst: IPAddress(v4: dst)) }
        guard proto == 6 else {
            if proto == 17 || proto == 47 || proto == 4 || proto == 41 {
                return tunnel(p, proto: proto, at: start, length: at + total - start, src: IPAddress(v4: src), dst: IPAddress(v4: dst))
            }
            return .notTCP
        }
        return tcp(p, at: start, ipPayloadLength: at + total - start, src: IPAddress(v4: src), dst: IPAddress(v4: dst),
                   lengthFromCapture: lengthFromCapture)
    }

    /// IPComp (RFC 3173): next header, flags, the compression algorithm (CPI 2: DEFLATE, RFC
    /// 2394), then the compressed payload, which the pipeline inflates (`LinkResult.compressed`).
    static func ipcomp(_ p: UnsafeRawBufferPointer, at: Int, end: Int, src: IPAddress, dst: IPAddress) -> LinkResult {
        guard let next = p.u8(at), let cpi = p.u16be(at + 2) else { return end > p.count ? .truncated : .malformed }
        guard end >= at + 4 else { return .malformed }
        guard cpi == 2 else { return .unsupported }
        // The whole payload is needed to inflate it: one the snaplen cut cannot be.
        guard end <= p.count else { return .truncated }
        return .compressed(IPCompPayload(src: src, dst: dst, next: next, data: p.slice(at + 4, end - at - 4)))
    }

    /// Whether the IPv4 options in `from..<to` parse: each a type byte, then (but for EOL and
    /// NOP) a length of at least 2 that stays inside the header, and the length the RFCs fix
    /// for the options that have one. tshark stops at a malformed option and leaves the TCP
    /// segment undissected; so does this decoder, rather than reading the segment from a
    /// header it cannot trust.
    static func ipv4OptionsWellFormed(_ p: UnsafeRawBufferPointer, from: Int, to: Int) -> Bool {
        var i = from
        while i < to {
            let type = p[i]
            if type == 0 { return true }          // end of options; the rest is padding
            if type == 1 { i += 1; continue }     // no-operation
            guard i + 1 < to else { return false }
            let length = Int(p[i + 1])
            guard length >= 2, i + length <= to else { return false }
            switch type {
            case 130: guard length == 11 else { return false }              // security (RFC 1108)
            case 136, 148: guard length == 4 else { return false }          // stream id, router alert
            case 7, 131, 137: guard length >= 3 else { return false }       // record route, source routes
            case 68: guard length >= 4 else { return false }                // timestamp
            default: break
            }
            i += length
        }
        return true
    }

    /// TCP inside a tunnel, decoded as tshark does: GRE (IP protocol 47: IPv4, IPv6, MPLS,
    /// transparent Ethernet, WCCP redirect, ERSPAN types I, II and III), IP in IP (protocol
    /// 4: IPv4 inside, 41: IPv6 inside, under either IP version), VXLAN (UDP port 4789),
    /// Geneve (UDP port 6081) and GTP-U (UDP port 2152).
    /// Other UDP is a datagram for the flow table. The inner packet is decoded one level deeper,
    /// at most 4 levels; a tunnel header that does not fit in the outer packet is truncated (the
    /// snaplen cut it) or malformed (the outer IP length says it is shorter than its header).
    func tunnel(_ p: UnsafeRawBufferPointer, proto: UInt8, at: Int, length: Int, src: IPAddress, dst: IPAddress) -> LinkResult {
        guard depth < 4 else { return .malformed }
        let inner = p.slice(at, length)
        // A header that does not fit: cut by the snaplen, or shorter than its own header.
        let short: LinkResult = length > inner.count ? .truncated : .malformed
        let next = LinkDecoder(linkType: 1, depth: depth + 1)
        switch proto {
        case 4: return next.ipv4(inner, at: 0)
        case 41: return next.ipv6(inner, at: 0)
        case 47: return next.gre(inner, short: short)
        default: break
        }
        guard let sport = inner.u16be(0), let dport = inner.u16be(2) else { return short }  // UDP's ports
        if dport == 4789 || sport == 4789 {
            // VXLAN (RFC 7348): flags (I set: a valid VNI), reserved, 24-bit VNI, reserved;
            // then an Ethernet frame.
            guard let f = inner.u8(8), inner.count >= 16 else { return short }
            guard f & 0x08 != 0 else { return .malformed }
            return next.ethernet(inner.slice(16, inner.count), at: 0)
        }
        if dport == 6081 || sport == 6081 {
            // Geneve (RFC 8926): version and option length (4-byte words), flags, protocol
            // type, VNI, reserved, then the options.
            guard let b0 = inner.u8(8), let type = inner.u16be(10), inner.count >= 16 else { return short }
            guard b0 >> 6 == 0 else { return .malformed }
            let off = 16 + Int(b0 & 0x3f) * 4
            guard off <= inner.count else { return short }
            return type == 0x6558 ? next.ethernet(inner.slice(off, inner.count), at: 0)
                : next.network(inner, etherType: type, at: off)
        }
        if dport == 2152 || sport == 2152 {
            guard inner.count >= 16 else { return .notTCP }
            // GTP-U (mobile core networks): flags, type (255 = G-PDU), length, TEID; with
            // E/S/PN set, sequence, N-PDU and a chain of extension headers; then an IP packet.
            guard let flags = inner.u8(8), flags >> 5 == 1, inner.u8(9) == 0xff else { return .notTCP }
            var off = 16
            if flags & 0x07 != 0 {
                guard var ext = inner.u8(off + 3) else { return .truncated }
                off += 4
                var hops = 0
                while ext != 0 {
                    hops += 1
                    guard hops <= 16, let words = inner.u8(off), words > 0 else { return .malformed }
                    off += Int(words) * 4
                    guard let n = inner.u8(off - 1) else { return .truncated }
                    ext = n
                }
            }
            return next.rawIP(inner.slice(off, inner.count), at: 0)
        }
        if dport == 5247 || sport == 5247 {
            // CAPWAP data (RFC 5415 §4.3): preamble, HLEN (4-byte words, the whole header),
            // radio and binding ids, T (the payload in the binding's own format), F (a fragment).
            guard let b0 = inner.u8(8), let b1 = inner.u8(9), let b2 = inner.u8(10), let b3 = inner.u8(11) else { return short }
            guard b0 == 0 else { return .unsupported }
            let off = 8 + Int(b1 >> 3) * 4
            guard off >= 16 else { return .malformed }
            guard off <= inner.count else { return short }
            if b3 & 0x80 != 0 { return .unsupported }  // a fragment: not put back together
            let frame = inner.slice(off, inner.count)
            if b2 & 1 == 0 { return next.ethernet(frame, at: 0) }
            return (b2 >> 1) & 0x1f == 1 ? next.ieee80211(frame) : .unsupported
        }
        if dport == 3544 || sport == 3544 {
            switch Self.teredoPayload(inner) {
            case .ip(let off, _): return next.ipv6(inner.slice(off, inner.count), at: 0)
            case .cut where length > inner.count: return .truncated
            default: break
            }
        }
        if dport == 5072 || sport == 5072 {
            switch Self.ayiyaPayload(inner) {
            case .ip(let off, 41): return next.ipv6(inner.slice(off, inner.count), at: 0)
            case .ip(let off, _): return next.ipv4(inner.slice(off, inner.count), at: 0)
            case .cut where length > inner.count: return .truncated
            default: break
            }
        }
        return udp(inner, ipPayloadLength: length, src: src, dst: dst, sport: sport, dport: dport)
    }

    /// An IEEE 802.11 data frame (CAPWAP's native payload): frame control, duration, three
    /// addresses and sequence control; a fourth address between access points; QoS control
    /// (and HT control when the order bit is set) in QoS data; then LLC/SNAP and an EtherType.
    /// Protected frames are encrypted: not decoded. Cisco access points send the two frame
    /// control bytes swapped (tshark's `capwap.swap_fc`, on by default): read so when only
    /// the swapped order is a data frame.
    func ieee80211(_ f: UnsafeRawBufferPointer) -> LinkResult {
        guard var fc = f.u8(0), var flags = f.u8(1) else { return .truncated }
        if fc & 0x0c != 0x08 && flags & 0x0c == 0x08 { swap(&fc, &flags) }
        guard fc & 0x0c == 0x08 else { return .unsupported }            // not a data frame
        guard flags & 0x40 == 0 else { return .unsupported }            // protected
        var at = 24
        if flags & 0x03 == 0x03 { at += 6 }
        if fc & 0x80 != 0 {
            at += 2
            if flags & 0x80 != 0 { at += 4 }
        }
        guard fc & 0x40 == 0 else { return .notTCP }                    // no data ("null")
        guard let dsap = f.u8(at), let ssap = f.u8(at + 1), let ctl = f.u8(at + 2), let type = f.u16be(at + 6) else { return .truncated }
        guard dsap == 0xaa, ssap == 0xaa, ctl == 0x03 else { return .unsupported }
        return network(f, etherType: type, at: at + 8)
    }

    /// Teredo (RFC 4380, UDP port 3544): an IPv6 packet after the UDP header, perhaps behind
    /// an authentication indicator (0x0001: id and auth lengths, their bytes, a nonce and a
    /// confirmation byte) and an origin indication (0x0000, 8 bytes). Nil when what follows
    /// is not IPv6 (then the datagram is plain UDP).
    static func teredoPayload(_ u: UnsafeRawBufferPointer) -> UDPTunnelPayload {
        var off = 8
        guard let first = u.u16be(off) else { return .cut }
        if first == 0x0001 {
            guard let idLength = u.u8(off + 2), let authLength = u.u8(off + 3) else { return .cut }
            off += 4 + Int(idLength) + Int(authLength) + 8 + 1
        }
        guard let indicator = u.u16be(off) else { return .cut }
        if indicator == 0x0000 { off += 8 }
        guard let v = u.u8(off) else { return .cut }
        return v >> 4 == 6 ? .ip(off, 41) : .none
    }

    /// AYIYA (UDP port 5072, SixXS's "anything in anything"): identity length and type,
    /// signature length and hash, authentication method and opcode, next header, epoch time;
    /// then the identity (2^n bytes), the signature (4-byte words), the packet. Only a
    /// forwarded IPv6 or IPv4 packet is a tunnel; anything else is plain UDP.
    static func ayiyaPayload(_ u: UnsafeRawBufferPointer) -> UDPTunnelPayload {
        guard let ids = u.u8(8), let sig = u.u8(9), let op = u.u8(10), let next = u.u8(11) else { return .cut }
        guard ids >> 4 <= 8, op & 0x0f == 1, next == 41 || next == 4 else { return .none }
        let off = 8 + 8 + (1 << Int(ids >> 4)) + Int(sig >> 4) * 4
        return off < u.count ? .ip(off, next) : .cut
    }

    /*
     |          Source Port          |       Destination Port        |
     |            Length             |           Checksum            |
    */
    /// A UDP datagram that is no tunnel. Its payload ends where the UDP length says (never past
    /// what IP says, nor what was captured).
    func udp(_ u: UnsafeRawBufferPointer, ipPayloadLength: Int, src: IPAddress, dst: IPAddress,
             sport: UInt16, dport: UInt16) -> LinkResult {
        guard let ulen = u.u16be(4).map(Int.init) else { return ipPayloadLength > u.count ? .truncated : .malformed }
        // Length 0: a jumbogram (RFC 2675) or offload; IP's length stands.
        let length = ulen == 0 ? ipPayloadLength : ulen
        guard length >= 8, length <= ipPayloadLength else { return .malformed }
        let present = max(0, min(length, u.count) - 8)
        return .udp(UDPDatagram(src: Endpoint(src, sport), dst: Endpoint(dst, dport),
                                payload: u.slice(8, present), payloadLength: length - 8))
    }

    /*
     |C|R|K|S|s|Recur|  Flags  | Ver |         Protocol Type         |
     |      Checksum (optional)      |       Offset (optional)       |
     |                         Key (optional)                        |
     |                    Sequence Number (optional)                 |
    */
    /// GRE (RFC 2784, RFC 2890's key and sequence number), on a decoder one level down.
    func gre(_ g: UnsafeRawBufferPointer, short: LinkResult) -> LinkResult {
        guard let flags = g.u16be(0), let type = g.u16be(2) else { return short }
        if flags & 0x0007 == 1 && type == 0x880B { return pptp(g, flags: flags, short: short) }
        guard flags & 0x4007 == 0 else { return .unsupported }  // routing present, or not version 0
        var off = 4
        if flags & 0x8000 != 0 { off += 4 }
        if flags & 0x2000 != 0 { off += 4 }
        if flags & 0x1000 != 0 { off += 4 }
        guard off <= g.count else { return short }
        switch type {
        case 0x6558: return ethernet(g.slice(off, g.count), at: 0)
        case 0x883e: return network(g, etherType: 0x0800, at: off + 4)  // WCCP's 4-byte redirect header
        case 0x88be, 0x22eb:
            // ERSPAN (draft-foschiano-erspan), as tshark tells the types apart: with no GRE
            // flag set, type I (the mirrored frame at once); else the version in the first
            // nibble: 1, type II (8 bytes); 2, type III (12 bytes, and an 8-byte platform
            // subheader when O, the last bit of the 12, is set).
            if flags == 0 { return ethernet(g.slice(off, g.count), at: 0) }
            guard let v = g.u8(off) else { return short }
            switch v >> 4 {
            case 1: off += 8
            case 2:
                guard let o = g.u8(off + 11) else { return short }
                off += o & 1 != 0 ? 20 : 12
            default: return .malformed
            }
            guard off <= g.count else { return short }
            return ethernet(g.slice(off, g.count), at: 0)
        default: return network(g, etherType: type, at: off)
        }
    }

    /// PPTP's enhanced GRE (RFC 2637 §4.1, version 1): the key (payload length and call id)
    /// always, a sequence number when S is set, an acknowledgement when A is; then PPP.
    func pptp(_ g: UnsafeRawBufferPointer, flags: UInt16, short: LinkResult) -> LinkResult {
        guard flags & 0x2000 != 0, flags & 0xC000 == 0 else { return .malformed }
        var off = 8
        if flags & 0x1000 != 0 { off += 4 }
        if flags & 0x0080 != 0 { off += 4 }
        // An acknowledgement alone (payload length 0) carries no packet.
        guard let payload = g.u16be(4) else { return short }
        guard payload > 0 else { return .notTCP }
        guard off < g.count else { return short }
        return ppp(g, at: off)
    }

    /// IPv6 with its extension header chain (hop-by-hop, routing, destination, AH, fragment).
    func ipv6(_ p: UnsafeRawBufferPointer, at: Int, bounded: Bool = false) -> LinkResult {
        guard let v = p.u8(at), let plen = p.u16be(at + 4), let next = p.u8(at + 6),
              let sh = p.u64be(at + 8), let sl = p.u64be(at + 16),
              let dh = p.u64be(at + 24), let dl = p.u64be(at + 32)
        else { return .truncated }
        guard v >> 4 == 6 else { return .malformed }
        // Payload length 0: offload again (or a jumbogram, whose hop-by-hop option says the
        // same as the captured length, as with Linux BIG TCP); use what was captured.
        let lengthFromCapture = plen == 0
        var remaining = lengthFromCapture ? p.count - at - 40 : Int(plen)
        if bounded && remaining > p.count - at - 40 { remaining = max(0, p.count - at - 40) }
        return ipv6Chain(p, next: next, at: at + 40, remaining: remaining,
                         src: IPAddress(v6Hi: sh, lo: sl), dst: IPAddress(v6Hi: dh, lo: dl), lengthFromCapture: lengthFromCapture)
    }

    /// The extension header chain from `next` at `at`, `remaining` bytes of IPv6 payload
    /// left (also used for a reassembled datagram's unfragmentable-part-free payload).
    func ipv6Chain(_ p: UnsafeRawBufferPointer, next first: UInt8, at start: Int, remaining total: Int,
                   src: IPAddress, dst: IPAddress, lengthFromCapture: Bool = false) -> LinkResult {
        var next = first, off = start, remaining = total
        var hops = 0
        while true {
            hops += 1
            if hops > 16 { return .malformed }
            switch next {
            case 6:
                return tcp(p, at: off, ipPayloadLength: remaining, src: src, dst: dst, lengthFromCapture: lengthFromCapture)
            case 0, 43, 60:  // hop-by-hop, routing, destination options: (len + 1) * 8 bytes
                guard let n = p.u8(off), let l = p.u8(off + 1) else { return .truncated }
                let size = (Int(l) + 1) * 8
                next = n; off += size; remaining -= size
            case 51:  // AH: (len + 2) * 4 bytes
                guard let n = p.u8(off), let l = p.u8(off + 1) else { return .truncated }
                let size = (Int(l) + 2) * 4
                next = n; off += size; remaining -= size
            case 44:
                /*
                 |  Next Header  |   Reserved    |      Fragment Offset    |Res|M|
                 |                         Identification                        |
                */
                guard let n = p.u8(off), let fo = p.u16be(off + 2), let id = p.u32be(off + 4) else { return .truncated }
                off += 8; remaining -= 8
                if remaining < 0 { return .malformed }
                if fo & 0xfff9 == 0 {
                    // An atomic fragment (offset 0, no more): the whole datagram is here.
                    next = n
                    continue
                }
                return .fragment(IPFragment(src: src, dst: dst, id: id, proto: n, offset: Int(fo & 0xfff8),
                                            more: fo & 1 != 0, data: p.slice(off, remaining), dataLength: remaining))
            case 17, 47, 4, 41:  // UDP (VXLAN, Geneve, GTP-U), GRE, IPv4 or IPv6 inside
                return tunnel(p, proto: next, at: off, length: remaining, src: src, dst: dst)
            case 108:
                return Self.ipcomp(p, at: off, end: off + remaining, src: src, dst: dst)
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
             src: IPAddress, dst: IPAddress, lengthFromCapture: Bool = false) -> LinkResult {
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
        var s = TCPSegment(
            src: Endpoint(src, sport), dst: Endpoint(dst, dport), seq: seq, ack: ack,
            flags: TCPFlags(rawValue: flags), window: win,
            payload: p.slice(start, present), payloadLength: payloadLength)
        if flags & 0x02 != 0 && hlen > 20 { s.windowScale = windowScale(p, from: at + 20, to: at + hlen) }
        if lengthFromCapture { s.ipLengthFromCapture = true }
        return .tcp(s)
    }

    /// The window-scale option (kind 3) of a SYN's options, if present and captured.
    func windowScale(_ p: UnsafeRawBufferPointer, from: Int, to: Int) -> UInt8? {
        var i = from
        while i < to, let kind = p.u8(i) {
            if kind == 0 { return nil }
            if kind == 1 { i += 1; continue }
            guard let len = p.u8(i + 1), len >= 2 else { return nil }
            if kind == 3 && len == 3 { return p.u8(i + 2) }
            i += Int(len)
        }
        return nil
    }
}

/// Where a tunnel over UDP puts its packet: at an offset, with its IP protocol (41: IPv6,
/// 4: IPv4); not this tunnel (plain UDP); or cut before that could be told.
enum UDPTunnelPayload {
    case ip(Int, UInt8)
    case none
    case cut
}
