import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh reassembly`): arbitrary TCP segment sequences into the
/// reassembler, with its invariants checked on every event:
/// - per connection and direction, data and gaps follow on from offset 0 with no overlap;
/// - the bytes delivered are the bytes sent, in order: every payload byte is the low byte of
///   its sequence number, so a byte at stream offset `o` must equal `origin + o` (mod 256)
///   for one origin per direction (unless the input sent conflicting copies);
/// - never more bytes delivered than were sent in that direction;
/// - out-of-order bytes and segments held stay within `maxBufferedBytes` / `maxBufferedSegments`
///   per direction and `maxBufferedTotal` over every connection.
///
/// Input: 2 option bytes (buffer limits, connections, TIME-WAIT), then 8-byte records, one segment each:
/// `[ctl][seq i16 BE][len][ack i16 BE][time][captured]`. ctl bit 0 = server to client, bits 1–4
/// = SYN, FIN, RST, ACK, bit 5 = bytes that disagree with the sequence pattern, bits 6–7 =
/// which of four client ports. Sequence and ACK are relative to each side's ISN (the client's
/// sits just below 2^32, so streams wrap). `time` advances the clock (ms below 200, then tens
/// of seconds; 255 steps back); `captured` ≥ 128 keeps only `captured - 128` payload bytes.
public enum FuzzReassembly {
    static let isn: [UInt32] = [0xFFFF_FF00, 1000]

    public static func run(_ input: UnsafeRawBufferPointer) {
        guard input.count >= 2 else { return }
        var o = ReassemblyOptions()
        o.maxBufferedBytes = 1 << Int(input[0] & 15)
        o.maxBufferedSegments = 1 + Int(input[0] >> 4) * 4
        o.maxConnections = 1 + Int(input[1] & 3)
        o.recentBytesPerDirection = 64 << Int(input[1] >> 2 & 3)
        o.maxTimeWait = Int(input[1] >> 4 & 3)
        o.maxBufferedTotal = 256 << Int(input[1] >> 6)
        let check = Checker(options: o)
        let r = Reassembler(options: o, consumer: check, isServerPort: { $0 == 8000 })
        check.reassembler = r
        var payload = [UInt8](repeating: 0, count: 256)
        var ns: Int64 = 1_700_000_000 * 1_000_000_000
        var at = 2, n: UInt64 = 0
        while at + 8 <= input.count {
            let ctl = input[at], len = Int(input[at + 3]), time = input[at + 6], captured = input[at + 7]
            let rel = Int32(Int16(bitPattern: UInt16(input[at + 1]) << 8 | UInt16(input[at + 2])))
            let ackRel = Int32(Int16(bitPattern: UInt16(input[at + 4]) << 8 | UInt16(input[at + 5])))
            at += 8
            n += 1
            ns += time == 255 ? -100_000_000_000 : time < 200 ? Int64(time) * 1_000_000 : Int64(time - 199) * 10_000_000_000
            let up = ctl & 1 == 0, d = up ? 0 : 1
            var flags: TCPFlags = []
            if ctl & 2 != 0 { flags.insert(.syn) }
            if ctl & 4 != 0 { flags.insert(.fin) }
            if ctl & 8 != 0 { flags.insert(.rst) }
            if ctl & 16 != 0 { flags.insert(.ack) }
            let syn = flags.contains(.syn)
            // A SYN's sequence number is the ISN's; its data starts one further.
            let seq = isn[d] &+ UInt32(bitPattern: rel) &+ (syn ? 0 : 1)
            let first = syn ? seq &+ 1 : seq
            let scramble: UInt8 = ctl & 32 != 0 ? 0x5A : 0
            for i in 0..<len { payload[i] = UInt8(truncatingIfNeeded: first &+ UInt32(i)) ^ scramble }
            if scramble != 0 { check.scrambled[d] = true }
            let present = captured >= 128 ? min(len, Int(captured) - 128) : len
            let client = Endpoint(IPAddress(v4: 0x0A00_0001), 40000 + UInt16(ctl >> 6))
            let server = Endpoint(IPAddress(v4: 0x0A00_0002), 8000)
            let ack = isn[1 - d] &+ 1 &+ UInt32(bitPattern: ackRel)
            let ts = Timestamp(seconds: ns / 1_000_000_000, nanos: UInt32(ns % 1_000_000_000))
            check.sent[d] += UInt64(len)
            payload.withUnsafeBytes { b in
                let s = TCPSegment(src: up ? client : server, dst: up ? server : client, seq: seq, ack: ack, flags: flags,
                                   window: 65535, payload: UnsafeRawBufferPointer(rebasing: b[0..<present]), payloadLength: len)
                r.add(s, packet: PacketRef(number: n, ts: ts))
            }
            check.bounded()
        }
        r.finish()
    }

    final class Checker: StreamConsumer {
        let options: ReassemblyOptions
        weak var reassembler: Reassembler?
        /// Per connection number and direction: the next offset expected, and the origin's
        /// low byte once the first data byte fixed it. Per sending side: bytes sent, delivered,
        /// and whether any copy disagreed with the sequence pattern.
        var next: [UInt64: [UInt64]] = [:]
        var origin: [UInt64: [UInt8?]] = [:]
        var sent: [UInt64] = [0, 0]
        var delivered: [UInt64] = [0, 0]
        var scrambled = [false, false]

        init(options: ReassemblyOptions) { self.options = options }

        func bounded() {
            guard let r = reassembler else { return }
            precondition(r.table.count <= options.maxConnections, "more connections than maxConnections")
            precondition(r.heldTotal <= options.maxBufferedTotal, "buffered bytes over maxBufferedTotal")
            let held = r.table.all.reduce(0) { sum, c in
                sum + c.halves.reduce(0) { $0 + $1.pendingBytes + $1.pending.count * ReassemblyOptions.segmentOverhead }
            }
            precondition(held == r.heldTotal, "heldTotal miscounted")
            for c in r.table.all {
                for h in c.halves {
                    precondition(h.pendingBytes <= options.maxBufferedBytes, "buffered bytes over maxBufferedBytes")
                    precondition(h.pending.count <= options.maxBufferedSegments, "buffered segments over maxBufferedSegments")
                    precondition(h.pendingBytes == h.pending.reduce(0) { $0 + $1.bytes.count }, "pendingBytes miscounted")
                }
            }
        }

        func follows(_ c: Connection, _ d: Direction, _ offset: UInt64, _ length: UInt64) {
            var n = next[c.number] ?? [0, 0]
            precondition(offset == n[d.rawValue], "stream offsets do not follow on")
            precondition(length > 0, "empty data or gap event")
            n[d.rawValue] = offset + length
            next[c.number] = n
        }

        func opened(_ c: Connection, packet: PacketRef) {
            precondition(next[c.number] == nil, "connection number opened twice")
            next[c.number] = [0, 0]
            origin[c.number] = [nil, nil]
        }

        /// Which side sent this direction's bytes (0 the client ports, 1 port 8000): the roles
        /// the reassembler gives need not be the input's (a SYN from port 8000 makes it the client).
        func sender(_ c: Connection, _ d: Direction) -> Int { (d == .c2s ? c.client : c.server).port == 8000 ? 1 : 0 }

        func data(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
            follows(c, d, offset, UInt64(bytes.count))
            let from = sender(c, d)
            delivered[from] += UInt64(bytes.count)
            precondition(delivered[from] <= sent[from], "more bytes delivered than sent")
            guard !scrambled[from] else { return }
            let o = origin[c.number]?[d.rawValue] ?? bytes[0] &- UInt8(truncatingIfNeeded: offset)
            origin[c.number]?[d.rawValue] = o
            for i in 0..<bytes.count {
                precondition(bytes[i] == o &+ UInt8(truncatingIfNeeded: offset + UInt64(i)), "bytes delivered out of order")
            }
        }

        func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
            follows(c, d, offset, length)
        }

        func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
            precondition(scrambled[sender(c, d)], "a conflict reported for copies with the same bytes")
        }

        func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
            precondition(next[c.number] != nil, "closed a connection never opened")
        }
    }
}
