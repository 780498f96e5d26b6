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
        c.arrows[d.rawValue].withUnsafeBytes { out.write($0) }
    }

    func lead(_ ts: Timestamp, _ c: Connection, _ d: Direction, _ p: ProtocolRuntime?) {
        out.timestamp(ts)
        out.byte(0x20)
        endpoints(c, d)
        out.byte(0x20)
        if let p { out.write(p.nameBytes) } else { out.write("tcp") }
        out.byte(0x20)
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        out.timestamp(packet.ts)
        out.write(" ")
        out.write(c.clientText); out.write(" > "); out.write(c.serverText)
        out.write(" ")
        if let p { out.write(p.nameBytes) } else { out.write("tcp") }
        paint("\u{1b}[2m")
        out.write(c.rolesFromSYN ? " connection opened" : " connection picked up mid-stream (no SYN seen)")
        reset()
        out.newline()
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        out.timestamp(packet.ts)
        out.write(" ")
        out.write(c.clientText); out.write(" > "); out.write(c.serverText)
        out.write(" ")
        if let p { out.write(p.nameBytes) } else { out.write("tcp") }
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
            out.write(p.names.message(mi))
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
        let ft = FieldText(p, frame: f.bytes)
        let out = self.out
        m.headerFields.withUnsafeBufferPointer { hs in
            for h in hs { field(h, ft, depth: 0, out) }
        }
        m.fields.withUnsafeBufferPointer { fs in
            for x in fs { field(x, ft, depth: Int(x.depth), out) }
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

    @inline(__always)
    func field(_ x: DecodedField, _ ft: FieldText, depth: Int, _ out: OutputBuffer) {
        // Reserve the most this line can take, then write through a cursor.
        let name: UnsafeRawBufferPointer
        switch x.name {
        case .field(let mi, let fi): name = ft.names.field(mi, fi)
        case .header(let i): name = ft.names.header(i)
        case .key(let s, let l): name = ft.frame.slice(Int(s), Int(l))
        default: name = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        var valueRoom = 32
        switch x.value {
        case .string, .jsonString, .jsonNumber, .jsonLiteral: valueRoom = Int(x.width) * 6 + 2
        case .bytes: valueRoom = 96
        default: break
        }
        var c = out.cursor(reserving: 64 + depth * 2 + name.count + valueRoom)
        c.write("    ")
        c.spaces(depth * 2)
        if color { c.write("\u{1b}[2m") }
        let start = c.p
        c.byte(0x5b); c.decimal(x.offset); c.byte(0x2b); c.decimal(x.width); c.byte(0x5d)
        // Byte ranges in a column of their own, so names line up.
        c.spaces(10 - (c.p - start))
        if color { c.write("\u{1b}[0m") }
        switch x.name {
        case .field, .header, .key: c.write(name)
        case .element(let i): c.byte(0x5b); c.decimal(i); c.byte(0x5d)
        case .builtin(let s): out.commit(c); out.write(s); c = out.cursor(reserving: 64 + valueRoom)
        }
        switch x.value {
        case .object(let n):
            c.write(" {"); c.decimal(n); c.write(n == 1 ? " field}" : " fields}")
            out.commit(c)
        case .array(let n):
            c.write(" ["); c.decimal(n); c.write(n == 1 ? " element]" : " elements]")
            out.commit(c)
        default:
            c.write(": ")
            value(x, ft, &c, out)
            out.commit(c)
            if let l = ft.label(x.name, x.value) {
                out.write(" ("); out.write(l); out.byte(0x29)
            }
        }
        if verbose, let d = ft.def(x.name)?.description {
            paint("\u{1b}[2m")
            out.write("  // "); out.write(d)
            reset()
        }
        out.newline()
    }

    @inline(__always)
    func value(_ x: DecodedField, _ ft: FieldText, _ c: inout Cursor, _ out: OutputBuffer) {
        let b = ft.frame
        switch x.value {
        case .unsigned(let v): c.decimal(v)
        case .signed(let v): c.decimal(v)
        case .float(let d):
            out.commit(c)
            FieldText.float(d, to: out, json: false)
            c = out.cursor(reserving: 8)
        case .bool(let v): c.write(v ? "true" : "false")
        case .string:
            c.jsonString(b.slice(Int(x.offset), Int(x.width)))
        case .jsonString:
            // Already a valid JSON string's content: show it as written.
            c.byte(0x22); c.write(b.slice(Int(x.offset), Int(x.width))); c.byte(0x22)
        case .bytes:
            let s = b.slice(Int(x.offset), Int(x.width))
            c.decimal(UInt64(s.count)); c.write(s.count == 1 ? " byte" : " bytes")
            if !s.isEmpty {
                c.byte(0x20)
                for k in 0..<min(s.count, 32) { c.hex(s[k]) }
                if s.count > 32 { c.write("…") }
            }
        case .jsonNumber, .jsonLiteral:
            c.write(b.slice(Int(x.offset), Int(x.width)))
        case .object, .array: break
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
