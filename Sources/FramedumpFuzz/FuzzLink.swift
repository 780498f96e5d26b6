import FramedumpCore
/// One fuzz input through every parser of untrusted packet bytes this stage has: the link
/// decoders (all link types), the IPv4/IPv6 defragmenter and the TCP reassembler.
///
/// Input layout: byte 0 picks the link type (an index into `LinkDecoder.supported`), then
/// records of `[u16 BE length][packet bytes]`, each a packet one millisecond after the last.
/// For a libFuzzer harness: `FuzzLink.run(UnsafeRawBufferPointer(start: data, count: size))`.
public enum FuzzLink {
    package static let linkTypes = LinkDecoder.supported.keys.sorted()

    public static func run(_ input: UnsafeRawBufferPointer) {
        guard let pick = input.u8(0) else { return }
        let link = LinkDecoder(linkType: linkTypes[Int(pick) % linkTypes.count])
        var o = ReassemblyOptions()
        o.maxBufferedBytes = 1 << 16
        o.maxConnections = 64
        let reassembler = Reassembler(options: o, consumer: Discard())
        var d = Defragmenter.Options()
        d.maxDatagrams = 16
        let defrag = Defragmenter(options: d)
        var at = 1, n: UInt64 = 0
        while let len = input.u16be(at) {
            let packet = input.slice(at + 2, Int(len))
            at += 2 + packet.count
            n += 1
            let ref = PacketRef(number: n, ts: Timestamp(seconds: 1_700_000_000 + Int64(n / 1000), nanos: UInt32(n % 1000) * 1_000_000))
            switch link.decode(packet) {
            case .tcp(let s): reassembler.add(s, packet: ref)
            case .fragment(let f):
                if let dg = defrag.add(f, at: ref.ts) {
                    dg.bytes.withUnsafeBytes { b in
                        if case .tcp(let s) = link.datagram(b, dg) { reassembler.add(s, packet: ref) }
                    }
                }
            default: break
            }
            if packet.count < Int(len) { break }
        }
        reassembler.finish()
    }

    /// Consumes stream events and checks their one invariant: offsets follow on.
    package final class Discard: StreamConsumer {
        package init() {}
        package func opened(_ c: Connection, packet: PacketRef) {}
        package func data(_ c: Connection, _ dir: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {}
        package func gap(_ c: Connection, _ dir: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {}
        package func conflict(_ c: Connection, _ dir: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
        package func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {}
    }
}
