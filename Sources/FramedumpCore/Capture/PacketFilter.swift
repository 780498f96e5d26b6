import CPcap

/// A BPF filter expression compiled once per link type (libpcap's `pcap_compile` on a dead
/// handle of that type) and run by `pcap_offline_filter`, the interpreter libpcap runs on a
/// savefile's packets. Used where libpcap's own `pcap_setfilter` cannot be: our readers'
/// packets, a classic pcap file read record by record, and a merged set of files (filtered
/// after the merge, as `mergecap` then the filter would).
final class PacketFilter {
    let expression: String
    /// The link type the error messages take as the capture's own (others are named).
    let mainLinkType: Int32
    @exclusivity(unchecked) private var programs: [Int32: UnsafeMutablePointer<bpf_program>] = [:]

    init(_ expression: String, mainLinkType: Int32) {
        self.expression = expression
        self.mainLinkType = mainLinkType
    }

    deinit {
        for p in programs.values {
            pcap_freecode(p)
            p.deallocate()
        }
    }

    static func isPKTAP(_ linkType: Int32) -> Bool { linkType == 149 || linkType == 258 }

    /// The filter compiled for one link type (once).
    func program(for linkType: Int32) throws(CaptureError) -> UnsafeMutablePointer<bpf_program> {
        if let p = programs[linkType] { return p }
        guard let dead = pcap_open_dead(linkType, 262_144) else { throw .badFilter(expression, "pcap_open_dead failed") }
        defer { pcap_close(dead) }
        let p = UnsafeMutablePointer<bpf_program>.allocate(capacity: 1)
        p.initialize(to: bpf_program())
        if pcap_compile(dead, p, expression, 1, PCAP_NETMASK_UNKNOWN) != 0 {
            let why = String(cString: pcap_geterr(dead))
            p.deallocate()
            throw .badFilter(expression, linkType == mainLinkType ? why : "\(why) (for the packets of link type \(linkType))")
        }
        programs[linkType] = p
        return p
    }

    /// Checks the expression compiles for the capture's link type (PKTAP's packets are
    /// filtered by their inner link type, Ethernet's most often).
    func check(_ linkType: Int32) throws(CaptureError) {
        _ = try program(for: Self.isPKTAP(linkType) ? 1 : linkType)
    }

    /// The filter run over one packet. libpcap compiles no filter for Apple's PKTAP outside
    /// macOS: the packet inside its header is filtered by the inner link type instead (the
    /// header says both: `LinkDecoder.pktap`).
    func passes(_ data: UnsafeRawBufferPointer, wireLength: Int, linkType: Int32, inner: Bool = false) throws(CaptureError) -> Bool {
        if Self.isPKTAP(linkType) {
            guard !inner, let len = data.u32le(0), let dlt = data.u32le(8), len >= 12, len <= UInt32(data.count) else { return false }
            return try passes(data.slice(Int(len), data.count), wireLength: max(0, wireLength - Int(len)),
                              linkType: Int32(truncatingIfNeeded: dlt), inner: true)
        }
        let prog = try program(for: linkType)
        var h = pcap_pkthdr()
        h.caplen = UInt32(data.count)
        h.len = UInt32(clamping: max(wireLength, data.count))
        return pcap_offline_filter(prog, &h, data.bindMemory(to: UInt8.self).baseAddress) != 0
    }
}
