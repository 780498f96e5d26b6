/// `-T json`: one complete JSON object per line. Message lines have no `type` key; gaps,
/// malformed frames, conflicts and connection open/close are lines with a `type` key.
///
/// Keys come in a fixed order: conn, dir, ts, pkts, offset, protocol, id, message, length,
/// header, fields, warnings. Integers are exact JSON numbers (64-bit values included),
/// byte strings are lowercase hex, text with invalid UTF-8 gets U+FFFD in place of the bad
/// bytes. `--diffable` leaves out ts, pkts and offset, and writes the client's port as `*`.
public final class JSONPrinter: MessageSink {
    let out: OutputBuffer
    let diffable: Bool

    public init(output: OutputBuffer, diffable: Bool) {
        out = output
        self.diffable = diffable
    }

    func conn(_ c: Connection) {
        out.write("{\"conn\":\"")
        if diffable { out.write(c.clientAddressText); out.write(":*") } else { out.write(c.clientText) }
        out.byte(0x2d)
        out.write(c.serverText)
        out.byte(0x22)
    }

    func common(_ c: Connection, _ d: Direction?, _ ts: Timestamp, _ p: ProtocolRuntime?) {
        conn(c)
        if let d { out.write(",\"dir\":\""); out.write(d.name); out.byte(0x22) }
        if !diffable { out.write(",\"ts\":"); JSONText.timestamp(ts, to: out) }
        out.write(",\"protocol\":")
        if let p { out.byte(0x22); out.write(p.nameBytes); out.byte(0x22) } else { out.write("null") }
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        common(c, nil, packet.ts, p)
        out.write(",\"type\":\"open\",\"syn\":"); out.write(c.rolesFromSYN ? "true" : "false")
        out.byte(0x7d); out.newline()
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        common(c, nil, packet.ts, p)
        out.write(",\"type\":\"close\",\"reason\":\""); out.write(reason.rawValue)
        out.write("\",\"bytes\":{\"c2s\":"); out.decimal(c.bytesDelivered(.c2s))
        out.write(",\"s2c\":"); out.decimal(c.bytesDelivered(.s2c)); out.write("}}")
        out.newline()
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let f = m.frame!
        common(c, m.direction, f.lastPacket.ts, p)
        if !diffable {
            out.write(",\"pkts\":["); out.decimal(f.firstPacket.number); out.byte(0x2c)
            out.decimal(f.lastPacket.number); out.write("],\"offset\":"); out.decimal(f.offset)
        }
        out.write(",\"id\":")
        if let id = m.id { out.decimal(id) } else { out.write("null") }
        out.write(",\"message\":")
        if let mi = m.message { out.byte(0x22); out.write(p.names.message(mi)); out.byte(0x22) } else { out.write("null") }
        out.write(",\"length\":"); out.decimal(f.bytes.count)
        let ft = FieldText(p, frame: f.bytes)
        out.write(",\"header\":{")
        for (i, h) in m.headerFields.enumerated() {
            if i > 0 { out.byte(0x2c) }
            out.byte(0x22); ft.name(h.name, to: out); out.write("\":")
            scalar(h, ft)
        }
        out.write("},\"fields\":")
        let topIsArray = m.fields.first.map { if case .element = $0.name { return true } else { return false } } ?? false
        out.byte(topIsArray ? 0x5b : 0x7b)
        var i = 0
        var first = true
        while i < m.fields.count {
            if !first { out.byte(0x2c) }
            first = false
            i = member(m.fields, i, ft, inArray: topIsArray)
        }
        out.byte(topIsArray ? 0x5d : 0x7d)
        if !m.warnings.isEmpty {
            out.write(",\"warnings\":[")
            for (k, w) in m.warnings.enumerated() {
                if k > 0 { out.byte(0x2c) }
                JSONText.string(w.text, to: out)
            }
            out.byte(0x5d)
        }
        out.byte(0x7d)
        out.newline()
    }

    /// Writes the field at `i` (and its children); returns the index after them.
    func member(_ fs: [DecodedField], _ i: Int, _ ft: FieldText, inArray: Bool) -> Int {
        let x = fs[i]
        if !inArray { out.byte(0x22); ft.name(x.name, to: out); out.write("\":") }
        switch x.value {
        case .object(let n), .array(let n):
            var isArray = false
            if case .array = x.value { isArray = true }
            out.byte(isArray ? 0x5b : 0x7b)
            var j = i + 1
            var k: Int32 = 0
            while k < n && j < fs.count && fs[j].depth > x.depth {
                if k > 0 { out.byte(0x2c) }
                j = member(fs, j, ft, inArray: isArray)
                k += 1
            }
            out.byte(isArray ? 0x5d : 0x7d)
            return j
        default:
            scalar(x, ft)
            return i + 1
        }
    }

    func scalar(_ x: DecodedField, _ ft: FieldText) {
        let b = ft.frame
        switch x.value {
        case .unsigned(let v): out.decimal(v)
        case .signed(let v): out.decimal(v)
        case .float(let d): FieldText.float(d, to: out, json: true)
        case .bool(let v): out.write(v ? "true" : "false")
        case .string: JSONText.utf8(b.slice(Int(x.offset), Int(x.width)), to: out)
        case .jsonString:
            // Already-valid JSON string content (validated by the flattener): copy as is.
            out.byte(0x22); out.write(b.slice(Int(x.offset), Int(x.width))); out.byte(0x22)
        case .bytes:
            out.byte(0x22)
            let s = b.slice(Int(x.offset), Int(x.width))
            for k in 0..<s.count { out.hex(s[k]) }
            out.byte(0x22)
        case .jsonNumber, .jsonLiteral: out.write(b.slice(Int(x.offset), Int(x.width)))
        case .object, .array: out.write("null")
        }
    }

    func event(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, _ type: StaticString, _ packet: PacketRef,
               offset: UInt64, length: UInt64) {
        common(c, d, packet.ts, p)
        out.write(",\"type\":\""); out.write(type); out.byte(0x22)
        if !diffable {
            out.write(",\"pkt\":"); out.decimal(packet.number)
            out.write(",\"offset\":"); out.decimal(offset)
        }
        out.write(",\"length\":"); out.decimal(length)
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        event(c, p, d, "malformed", packet, offset: offset, length: length)
        out.write(",\"reason\":\""); out.write(reason.kind); out.write("\",\"detail\":")
        JSONText.string(reason.text, to: out)
        out.byte(0x7d); out.newline()
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        event(c, p, d, "gap", packet, offset: offset, length: length)
        out.write(",\"reason\":\""); out.write(reason.rawValue); out.write("\"}")
        out.newline()
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        event(c, nil, d, "conflict", packet, offset: offset, length: length)
        out.byte(0x7d); out.newline()
    }

    public func finish() { out.flush() }
}
