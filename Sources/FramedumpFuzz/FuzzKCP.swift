import FramedumpCore
/// The fuzz entry of the KCP layer and the UDP flow table (`scripts/fuzz.sh kcp`): arbitrary
/// bytes as the datagrams of UDP flows to a KCP port, through the flow table, the KCP layer,
/// the game protocol's deframer and the tree printer. It must return, whatever they are,
/// without a trap or a hang.
package enum FuzzKCP {
    /// Dissector text: the game header over KCP, in message mode (port 8100) and stream mode (8101).
    package static let dissector = """
        protocol kgame { udp port 8100; kcp; header { uint32 length; uint16 id; } frame_length = length; message_id = id; max_frame 65536; body raw; }
        protocol kstream { udp port 8101; kcp stream; header { uint32 length; uint16 id; } frame_length = length; message_id = id; max_frame 65536; body raw; }
        """

    /// The first byte chooses the port (bit 0) and how many flows (bits 1-2); then records of
    /// [u8 flags: bit 0 the direction, bits 1-2 the flow][u16le length][datagram].
    package static func run(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 1, let schemas = try? DissectorLoader.parse(text: dissector, file: "fuzz.dissector") else { return }
        let out = OutputBuffer(fd: nil)
        let sessions = SessionManager(protocols: schemas, sink: TreePrinter(output: out, hexDump: true, verbose: false, color: false))
        var n: UInt64 = 1
        let flows = UDPFlows(options: UDPFlows.Options(), consumer: sessions, isServerPort: { sessions.isUDPServerPort($0) },
                             nextNumber: { defer { n += 1 }; return n })
        let port: UInt16 = data[0] & 1 == 0 ? 8100 : 8101
        let client = IPAddress(v4: 0x7f00_0001), server = IPAddress(v4: 0x7f00_0002)
        var i = 1, packet: UInt64 = 0
        while i + 3 <= data.count {
            let flags = data[i]
            let length = min(Int(data.u16le(i + 1)!), data.count - i - 3)
            let flow = UInt16(flags >> 1 & 3) % UInt16(1 + (data[0] >> 1 & 3))
            let c = Endpoint(client, 40000 + flow), s = Endpoint(server, port)
            packet += 1
            let d = UDPDatagram(src: flags & 1 == 0 ? c : s, dst: flags & 1 == 0 ? s : c,
                                payload: data.slice(i + 3, length), payloadLength: length + (flags & 0x80 != 0 ? 7 : 0))
            flows.add(d, packet: PacketRef(number: packet, ts: Timestamp(seconds: Int64(packet / 16), nanos: 0)))
            i += 3 + length
        }
        flows.finish()
        sessions.sink?.finish()
    }
}
