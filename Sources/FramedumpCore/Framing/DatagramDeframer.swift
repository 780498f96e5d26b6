/// The bottom of a UDP flow's stack, one per direction: each datagram is cut into frames on
/// its own (one message, or several sticky ones); a frame never continues in the next
/// datagram, so one that runs past its datagram's end is reported and the next datagram
/// starts at a boundary. A gap (the snaplen cut a datagram's tail) needs nothing more: the
/// datagram it cut has ended already.
final class DatagramDeframer: StreamLayer {
    let deframer: Deframer

    init(_ deframer: Deframer) { self.deframer = deframer }

    var started: Bool { deframer.started }
    func start(atBoundary: Bool) { deframer.start(atBoundary: true) }

    func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        deframer.data(bytes, offset: offset, packet: packet)
        deframer.endOfUnit(packet: packet)
    }

    func gap(offset: UInt64, length: UInt64, packet: PacketRef) {}
    func finish(packet: PacketRef, captureEnded: Bool) {}
}
