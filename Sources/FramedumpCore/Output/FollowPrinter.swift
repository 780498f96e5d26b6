/// `--follow`: the reassembled streams on the terminal as a hex+ASCII dump, one block per
/// chunk of in-order bytes, with gap markers where bytes are missing.
public final class FollowPrinter: StreamConsumer {
    let out: OutputBuffer

    public init(output: OutputBuffer) { out = output }

    func header(_ c: Connection, _ d: Direction) {
        out.write(d == .c2s ? c.client.text : c.server.text)
        out.write(" > ")
        out.write(d == .c2s ? c.server.text : c.client.text)
    }

    public func opened(_ c: Connection, packet: PacketRef) {
        out.write(c.udp ? "=== udp flow " : "=== connection "); out.decimal(c.number); out.write(" ")
        out.write(c.name)
        out.write(c.udp ? " (its datagrams one after another)" : c.continues != nil ? " (continues the connection closed before it)"
                  : c.rolesFromSYN ? " opened" : " (no SYN seen: roles guessed)")
        out.write(" at pkt "); out.decimal(packet.number)
        out.newline()
    }

    public func data(_ c: Connection, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        out.write("--- "); header(c, d)
        out.write(" "); out.write(d.name)
        out.write(" offset "); out.decimal(offset)
        out.write(", "); out.decimal(bytes.count); out.write(" bytes, pkt "); out.decimal(packet.carrier)
        if packet.carrier != packet.number { out.write(" (held until pkt "); out.decimal(packet.number); out.byte(0x29) }
        out.newline()
        HexDump.write(bytes, base: offset, indent: 2, to: out)
    }

    public func gap(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, reason: GapReason, packet: PacketRef) {
        out.write("!!! "); header(c, d)
        out.write(" "); out.write(d.name)
        out.write(" gap: "); out.decimal(length); out.write(" bytes missing at offset "); out.decimal(offset)
        out.write(" ("); out.write(reason.rawValue); out.write(")")
        out.newline()
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        out.write("!!! "); header(c, d)
        out.write(" conflicting retransmission: "); out.decimal(length)
        out.write(" bytes at offset "); out.decimal(offset); out.write(" differ (first copy kept), pkt ")
        out.decimal(packet.number)
        out.newline()
    }

    public func lateData(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        out.write("!!! "); header(c, d)
        out.write(" late data: "); out.decimal(length)
        out.write(" bytes at offset "); out.decimal(offset); out.write(" arrived after their gap was reported, pkt ")
        out.decimal(packet.number)
        out.newline()
    }

    public func outOfWindowReset(_ c: Connection, _ d: Direction, packet: PacketRef) {
        out.write("!!! "); header(c, d)
        out.write(" RST outside the receive window ignored, pkt "); out.decimal(packet.number)
        out.newline()
    }

    public func afterClose(_ c: Connection, _ d: Direction, length: Int, packet: PacketRef) {
        guard length > 0 else { return }
        out.write("!!! "); header(c, d)
        out.write(" "); out.decimal(UInt64(length)); out.write(" bytes after the connection closed (not stream), pkt ")
        out.decimal(packet.number)
        out.newline()
    }

    public func closed(_ c: Connection, reason: CloseReason, packet: PacketRef) {
        out.write(c.udp ? "=== udp flow " : "=== connection "); out.decimal(c.number); out.write(" closed (")
        out.write(reason.rawValue); out.write("): c2s "); out.decimal(c.bytesDelivered(.c2s))
        out.write(" bytes, s2c "); out.decimal(c.bytesDelivered(.s2c)); out.write(" bytes")
        let gaps = c.gapBytes(.c2s) + c.gapBytes(.s2c)
        if gaps > 0 { out.write(", "); out.decimal(gaps); out.write(" bytes missing") }
        out.newline()
    }
}

/// The classic 16-bytes-a-line hex dump with an ASCII column.
public enum HexDump {
    public static func write(_ b: UnsafeRawBufferPointer, base: UInt64, indent: Int, to out: OutputBuffer) {
        var i = 0
        while i < b.count {
            out.spaces(indent)
            out.hex(base + UInt64(i), width: 8)
            out.write("  ")
            for k in 0..<16 {
                if i + k < b.count { out.hex(b[i + k]); out.byte(0x20) } else { out.write("   ") }
                if k == 7 { out.byte(0x20) }
            }
            out.write(" |")
            for k in 0..<min(16, b.count - i) {
                let c = b[i + k]
                out.byte(c >= 0x20 && c < 0x7f ? c : 0x2e)
            }
            out.byte(0x7c)
            out.newline()
            i += 16
        }
    }
}

/// `-A`, as tcpdump's: the bytes as text, printable ASCII as it is, line feeds kept, carriage
/// returns dropped, anything else a dot; lines indented and cut at 96 columns.
public enum AsciiDump {
    public static func write(_ b: UnsafeRawBufferPointer, indent: Int, to out: OutputBuffer) {
        var column = 0
        for c in b {
            if c == 0x0d { continue }
            if c == 0x0a || column == 96 {
                if column > 0 || c == 0x0a { out.newline() }
                column = 0
                if c == 0x0a { continue }
            }
            if column == 0 { out.spaces(indent) }
            out.byte(c >= 0x20 && c < 0x7f || c == 0x09 ? c : 0x2e)
            column += 1
        }
        if column > 0 { out.newline() }
    }
}
