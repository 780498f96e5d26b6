/// The default output: a summary line per message, then its header and body fields as an
/// indented tree with byte ranges, enum labels and (with -v) the schema's comments.
public final class TreePrinter: MessageSink {
    let out: OutputBuffer
    let hexDump: Bool
    let verbose: Bool
    let color: Bool

    public init(output: OutputBuffer, hexDump: Bool, verbose: Bool, color: Bool) {
        out = output
        self.hexDump = hexDump
        self.verbose = verbose
        self.color = color
    }

    func paint(_ code: StaticString) { if color { out.write(code) } }
    func reset() { if color { out.write("\u{1b}[0m") } }

    func endpoints(_ c: Connection, _ d: Direction) {
        out.write(d == .c2s ? c.client.text : c.server.text)
        out.write(" > ")
        out.write(d == .c2s ? c.server.text : c.client.text)
    }

    func lead(_ ts: Timestamp, _ c: Connection, _ d: Direction, _ p: ProtocolRuntime?) {
        out.timestamp(ts)
        out.byte(0x20)
        endpoints(c, d)
        out.byte(0x20)
        if let p { out.write(p.schema.nameBytes) } else { out.write("tcp") }
        out.byte(0x20)
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        out.timestamp(packet.ts)
        out.write(" ")
        out.write(c.client.text); out.write(" > "); out.write(c.server.text)
        out.write(" ")
        if let p { out.write(p.schema.nameBytes) } else { out.write("tcp") }
        paint("\u{1b}[2m")
        out.write(c.rolesFromSYN ? " connection opened" : " connection picked up mid-stream (no SYN seen)")
        reset()
        out.newline()
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        out.timestamp(packet.ts)
        out.write(" ")
        out.write(c.client.text); out.write(" > "); out.write(c.server.text)
        out.write(" ")
        if let p { out.write(p.schema.nameBytes) } else { out.write("tcp") }
        paint("\u{1b}[2m")
        out.write(" connection closed (")
        out.write(reason.rawValue)
        out.write("): "); out.decimal(c.bytesDelivered(.c2s)); out.write(" bytes c2s, ")
        out.decimal(c.bytesDelivered(.s2c)); out.write(" bytes s2c")
        reset()
        out.newline()
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let f = m.frame!
        lead(f.lastPacket.ts, c, m.direction, p)
        paint("\u{1b}[1;36m")
        if let mi = m.message {
            out.write(p.schema.messages[mi].nameBytes)
        } else {
            out.write("?")
        }
        reset()
        if let id = m.id { out.write(" (id "); out.decimal(id); out.byte(0x29) }
        if let mi = m.message, let t = p.schema.messages[mi].title {
            out.write(" \""); out.write(t); out.byte(0x22)
        }
        out.write(", "); out.decimal(f.bytes.count); out.write(" bytes")
        if f.firstPacket.number != f.lastPacket.number {
            out.write(" [split over pkts "); out.decimal(f.firstPacket.number); out.byte(0x2d)
            out.decimal(f.lastPacket.number); out.byte(0x5d)
        } else if f.coalesced > 1 {
            out.write(" [coalesced "); out.decimal(f.coalesced); out.write(" in pkt ")
            out.decimal(f.lastPacket.number); out.byte(0x5d)
        }
        out.newline()
        let ft = FieldText(schema: p.schema, frame: f.bytes)
        for h in m.headerFields { field(h, ft, depth: 0) }
        var i = 0
        while i < m.fields.count {
            field(m.fields[i], ft, depth: Int(m.fields[i].depth))
            i += 1
        }
        for w in m.warnings {
            out.write("    ")
            paint("\u{1b}[1;31m")
            out.write("warning: ")
            out.write(w.text)
            reset()
            out.newline()
        }
        if hexDump { HexDump.write(f.bytes, base: 0, indent: 4, to: out) }
    }

    func field(_ x: DecodedField, _ ft: FieldText, depth: Int) {
        out.write("    ")
        out.spaces(depth * 2)
        paint("\u{1b}[2m")
        let start = out.bytes.count
        out.byte(0x5b); out.decimal(Int(x.offset)); out.byte(0x2b); out.decimal(Int(x.width)); out.byte(0x5d)
        reset()
        // Byte ranges in a column of their own, so names line up.
        out.spaces(10 - (out.bytes.count - start - (color ? 8 : 0)))
        ft.name(x.name, to: out)
        switch x.value {
        case .object(let n):
            out.write(" {"); out.decimal(Int(n)); out.write(n == 1 ? " field}" : " fields}")
        case .array(let n):
            out.write(" ["); out.decimal(Int(n)); out.write(n == 1 ? " element]" : " elements]")
        default:
            out.write(": ")
            value(x, ft)
        }
        if verbose, let d = ft.def(x.name)?.description {
            paint("\u{1b}[2m")
            out.write("  // "); out.write(d)
            reset()
        }
        out.newline()
    }

    func value(_ x: DecodedField, _ ft: FieldText) {
        let b = ft.frame
        switch x.value {
        case .unsigned(let v): out.decimal(v)
        case .signed(let v): out.decimal(v)
        case .float(let d): FieldText.float(d, to: out, json: false)
        case .bool(let v): out.write(v ? "true" : "false")
        case .string, .jsonString:
            JSONText.utf8(b.slice(Int(x.offset), Int(x.width)), to: out)
        case .bytes:
            let s = b.slice(Int(x.offset), Int(x.width))
            out.decimal(s.count); out.write(s.count == 1 ? " byte" : " bytes")
            if !s.isEmpty {
                out.write(" ")
                for k in 0..<min(s.count, 32) { out.hex(s[k]) }
                if s.count > 32 { out.write("…") }
            }
        case .jsonNumber, .jsonLiteral:
            out.write(b.slice(Int(x.offset), Int(x.width)))
        case .object, .array: break
        }
        if let l = ft.label(x.name, x.value) {
            out.write(" ("); out.write(l); out.byte(0x29)
        }
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        lead(packet.ts, c, d, p)
        paint("\u{1b}[1;31m")
        out.write("MALFORMED")
        reset()
        out.write(" "); out.decimal(length); out.write(length == 1 ? " byte" : " bytes")
        out.write(" at stream offset "); out.decimal(offset); out.write(": ")
        out.write(reason.text)
        out.newline()
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        lead(packet.ts, c, d, p)
        paint("\u{1b}[1;33m")
        out.write("GAP")
        reset()
        out.write(" "); out.decimal(length); out.write(" bytes missing at stream offset "); out.decimal(offset)
        out.write(" ("); out.write(reason.rawValue); out.byte(0x29)
        out.newline()
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        lead(packet.ts, c, d, nil)
        out.write("CONFLICT "); out.decimal(length); out.write(" bytes at stream offset "); out.decimal(offset)
        out.write(" retransmitted with different content (first copy kept)")
        out.newline()
    }

    public func finish() { out.flush() }
}
