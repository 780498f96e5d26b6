import FramedumpCore
/// What the fuzz entries share: one connection fed through the reassembler and a session stage.
package enum FuzzStreams {
    /// One connection's two streams, cut into segments of `piece` bytes, into a session stage.
    package static func feed(_ sessions: SessionManager, c2s: [UInt8], s2c: [UInt8], piece: Int, syn: Bool, port: UInt16) {
        var options = ReassemblyOptions()
        options.maxConnections = 4
        let r = Reassembler(options: options, consumer: sessions, isServerPort: { $0 == port })
        let client = Endpoint(IPAddress(v4: 0x0A00_0001), 40000), server = Endpoint(IPAddress(v4: 0x0A00_0002), port)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        func seg(_ up: Bool, _ seq: UInt32, _ flags: TCPFlags, _ b: UnsafeRawBufferPointer) -> TCPSegment {
            TCPSegment(src: up ? client : server, dst: up ? server : client, seq: seq, ack: 0, flags: flags,
                       window: 65535, payload: b, payloadLength: b.count)
        }
        if syn {
            r.add(seg(true, 99, .syn, none), packet: p)
            r.add(seg(false, 499, [.syn, .ack], none), packet: p)
        }
        var i = 0, j = 0
        while i < c2s.count || j < s2c.count {
            if i < c2s.count {
                let n = min(piece, c2s.count - i)
                c2s[i..<(i + n)].withUnsafeBytes { r.add(seg(true, 100 &+ UInt32(truncatingIfNeeded: i), [.psh, .ack], $0), packet: p) }
                i += n
            }
            if j < s2c.count {
                let n = min(piece, s2c.count - j)
                s2c[j..<(j + n)].withUnsafeBytes { r.add(seg(false, 500 &+ UInt32(truncatingIfNeeded: j), [.psh, .ack], $0), packet: p) }
                j += n
            }
        }
        r.finish()
        sessions.sink?.finish()
    }

    /// One connection's bytes in the order given (each run the client's, `true`, or the
    /// server's), each run cut into segments of `piece` bytes, after a handshake.
    package static func feed(_ sessions: SessionManager, runs: [(client: Bool, bytes: [UInt8])], piece: Int, port: UInt16) {
        var options = ReassemblyOptions()
        options.maxConnections = 4
        let r = Reassembler(options: options, consumer: sessions, isServerPort: { $0 == port })
        let client = Endpoint(IPAddress(v4: 0x0A00_0001), 40000), server = Endpoint(IPAddress(v4: 0x0A00_0002), port)
        let p = PacketRef(number: 1, ts: Timestamp(seconds: 1, nanos: 0))
        var next: [UInt32] = [100, 500]
        func add(_ up: Bool, _ flags: TCPFlags, _ b: UnsafeRawBufferPointer) {
            r.add(TCPSegment(src: up ? client : server, dst: up ? server : client, seq: next[up ? 0 : 1] &- (flags.contains(.syn) ? 1 : 0),
                             ack: 0, flags: flags, window: 65535, payload: b, payloadLength: b.count), packet: p)
            next[up ? 0 : 1] &+= UInt32(truncatingIfNeeded: b.count)
        }
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        add(true, .syn, none)
        add(false, [.syn, .ack], none)
        for run in runs {
            var i = 0
            while i < run.bytes.count {
                let n = min(max(1, piece), run.bytes.count - i)
                run.bytes[i..<(i + n)].withUnsafeBytes { add(run.client, [.psh, .ack], $0) }
                i += n
            }
        }
        r.finish()
        sessions.sink?.finish()
    }
}
