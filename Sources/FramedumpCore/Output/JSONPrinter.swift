/// `-T json`: one complete JSON object per line. Message lines have no `type` key; gaps,
/// malformed frames, conflicts and connection open/close are lines with a `type` key.
///
/// Keys come in a fixed order: conn, dir, ts, protocol, pkts, offset, id, message, length,
/// header (fields not already given as id or length; left out when none), fields, warnings. Integers are exact JSON numbers (64-bit values included),
/// byte strings are lowercase hex, text with invalid UTF-8 gets U+FFFD in place of the bad
/// bytes. `--diffable` leaves out ts, pkts and offset, and writes the client's port as `*`.
public final class JSONPrinter: MessageSink {
    let out: OutputBuffer
    let diffable: Bool
    /// The registry's layers, held here so the per-message path reads no global.
    let layerKinds = LayerRegistry.kinds

    public init(output: OutputBuffer, diffable: Bool) {
        out = output
        self.diffable = diffable
    }

    func common(_ c: Connection, _ d: Direction?, _ ts: Timestamp, _ p: ProtocolRuntime?) {
        let text = ConnectionText.of(c)
        out.write(d.map { text.jsonOpening($0, diffable: diffable) } ?? text.jsonConnection(diffable: diffable))
        if !diffable { out.write(",\"ts\":"); JSONText.timestamp(ts, to: out) }
        out.write(",\"protocol\":")
        if let p { out.byte(0x22); out.write(p.nameBytes); out.byte(0x22) } else { out.write("null") }
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        common(c, nil, packet.ts, p)
        if c.udp {
            out.write(",\"type\":\"open\",\"transport\":\"udp\"")
        } else {
            out.write(",\"type\":\"open\",\"syn\":"); out.write(c.rolesFromSYN ? "true" : "false")
        }
        if let n = c.continues { out.write(",\"continues\":"); out.decimal(n) }
        out.byte(0x7d); out.newline()
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        common(c, nil, packet.ts, p)
        out.write(",\"type\":\"close\",\"reason\":\""); out.write(reason.rawValue)
        out.write("\",\"bytes\":{\"c2s\":"); out.decimal(c.deliveredAtClose.c2s)
        out.write(",\"s2c\":"); out.decimal(c.deliveredAtClose.s2c); out.write("}}")
        out.newline()
        ConnectionText.forget(c)
    }

    /// A response's request (`pair`, `pair_by`): its message, its number in the connection,
    /// where it was; then the latency in seconds.
    func answers(_ m: DecodedMessage, _ names: Names, _ k: inout Cursor) {
        let a = m.pair
        k.write(",\"answers\":{\"message\":")
        if a.request >= 0 {
            // (`,"message":"NAME","length":` less its ends: the name, quoted.)
            let piece = names.jsonMessage(Int(a.request))
            k.write(UnsafeRawBufferPointer(rebasing: piece[11..<(piece.count - 10)]))
        } else {
            k.write("null")
        }
        k.write(",\"n\":"); k.decimal(a.number)
        k.jsonPackets(a.firstPacket, a.lastPacket, offset: a.offset)
        k.write("},\"latency\":"); k.seconds(nanos: a.latency(to: m.frame.lastPacket.ts))
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let f = m.frame!
        let names = p.names.view
        let ft = FieldText(p, frame: m.fieldBytes)
        // Room for a usual line at once; the cursor makes more as it writes, if needed.
        var k = out.cursor(reserving: 1024 + 2 * m.fieldBytes.count)
        k.write(ConnectionText.of(c).jsonOpening(m.direction, diffable: diffable))
        if !diffable { k.jsonTime(out.secondsText(f.lastPacket.ts), nanos: f.lastPacket.ts.nanos) }
        k.write(names.jsonProtocolPiece)
        if !diffable { k.jsonPackets(f.firstPacket.number, f.lastPacket.number, offset: f.offset) }
        k.write(",\"id\":")
        if let id = m.id {
            if m.idPair {
                // (A pair is written as it is declared, "3:7": a string.)
                k.byte(0x22); k.decimal(id >> 32); k.byte(0x3a); k.decimal(id & 0xffff_ffff); k.byte(0x22)
            } else if m.idSigned { k.decimal(Int64(bitPattern: id)) } else { k.decimal(id) }
        } else {
            k.write("null")
        }
        if let mi = m.message { k.write(names.jsonMessage(mi)) } else { k.write(",\"message\":null,\"length\":") }
        k.decimal(UInt64(f.bytes.count + f.missing))
        if f.missing > 0 { k.write(",\"captured\":"); k.decimal(UInt64(f.bytes.count)) }
        if _slowPath(m.phase.current >= 0), let names = p.decoder.phases?.names {
            // The phase the message was decoded in; the one it leads to; whether it was assumed.
            k.write(",\"phase\":"); k.text(JSONText.quoted(names[Int(m.phase.current)]))
            if m.phase.next >= 0 { k.write(",\"enters\":"); k.text(JSONText.quoted(names[Int(m.phase.next)])) }
            if m.phase.assumed { k.write(",\"phase_assumed\":true") }
        }
        // (`--diffable` leaves pairing out: it follows from the ids and fields compared anyway,
        // and a request removed earlier would renumber every answer after it.)
        if m.pair.role == .answered && !diffable { answers(m, names, &k) }
        // Each layer's object under its key (`"ws":{...}`), in its own words.
        let kinds = layerKinds
        m.layerNotes.forEach { n in kinds[Int(n.layer)].writeJSONMember(n, &k) }
        // Header fields that only repeat `id` or `length` are left out; the rest (version,
        // sequence numbers, a body length...) are kept. No such field: no `header` key.
        let shown = p.jsonHeaderShown
        var opened = false
        m.headerFields.withUnsafeBufferPointer { hs in
            for h in hs {
                guard case .header(let hi) = h.name, shown[Int(hi)] else { continue }
                k.write(opened ? "," : ",\"header\":{")
                opened = true
                k.write(names.jsonHeader(hi))
                scalar(h, ft, &k)
            }
        }
        if opened { k.byte(0x7d) }
        if !m.transforms.isEmpty {
            // Body field offsets count bytes of the result of the last step, not of the frame.
            k.write(",\"transforms\":[")
            for (i, s) in m.transforms.enumerated() {
                k.write(i == 0 ? "{\"name\":\"" : ",{\"name\":\""); k.write(s.name)
                k.write("\",\"in\":"); k.decimal(UInt64(s.before))
                k.write(",\"out\":"); k.decimal(UInt64(s.after)); k.byte(0x7d)
            }
            k.byte(0x5d)
        }
        k.write(",\"fields\":")
        m.fields.withUnsafeBufferPointer { fs in
            let topIsArray = fs.first.map { if case .element = $0.name { return true } else { return false } } ?? false
            k.byte(topIsArray ? 0x5b : 0x7b)
            var i = 0
            while i < fs.count {
                if i > 0 { k.byte(0x2c) }
                // The common case, a top-level scalar field of the schema, without a call.
                let x = fs[i]
                if !topIsArray, case .field(let mi, let fi) = x.name {
                    switch x.value {
                    case .object, .array: break
                    default:
                        k.write(names.jsonField(mi, fi))
                        if names.jsonEnum(mi, fi) { enumValue(x, mi, fi, ft, &k) } else { scalar(x, ft, &k) }
                        i += 1
                        continue
                    }
                }
                i = member(fs, i, ft, inArray: topIsArray, &k)
            }
            k.byte(topIsArray ? 0x5d : 0x7d)
        }
        out.commit(k)
        let cut = p.takeCutWarning()
        if !m.warnings.isEmpty || cut != nil {
            out.write(",\"warnings\":[")
            for (n, w) in m.warnings.enumerated() {
                if n > 0 { out.byte(0x2c) }
                JSONText.string(w.text, to: out)
            }
            if let cut {
                if !m.warnings.isEmpty { out.byte(0x2c) }
                JSONText.string(cut, to: out)
            }
            out.byte(0x5d)
        }
        out.byte(0x7d)
        out.newline()
    }

    /// Writes the field at `i` (and its children); returns the index after them.
    func member(_ fs: UnsafeBufferPointer<DecodedField>, _ i: Int, _ ft: FieldText, inArray: Bool, _ k: inout Cursor,
                enumOf: (Int32, Int32)? = nil) -> Int {
        let x = fs[i]
        if !inArray {
            switch x.name {
            case .field(let mi, let fi): k.write(ft.names.jsonField(mi, fi))
            case .key(let s, let l): k.byte(0x22); k.write(ft.frame.slice(Int(s), Int(l))); k.write("\":")
            case .builtin(let s): k.byte(0x22); k.write(s.text); k.write("\":")
            case .header(let h): k.write(ft.names.jsonHeader(h))
            case .element: k.write("\"\":")
            case .unknown(let n, _): k.byte(0x22); k.decimal(n); k.write("\":")
            case .stringKey(let s, let l): k.jsonString(ft.frame.slice(Int(s), Int(l))); k.byte(0x3a)
            case .intKey(let v): k.byte(0x22); k.decimal(v); k.write("\":")
            case .uintKey(let v): k.byte(0x22); k.decimal(v); k.write("\":")
            case .boolKey(let v): k.write(v ? "\"true\":" : "\"false\":")
            case .textKey(let s, let l): k.jsonString(ft.frame.slice(Int(s), Int(l))); k.byte(0x3a)
            }
        }
        switch x.value {
        case .object(let n), .array(let n):
            var isArray = false
            if case .array = x.value { isArray = true }
            k.byte(isArray ? 0x5b : 0x7b)
            var j = i + 1
            var c: Int32 = 0
            // Elements of a repeated protobuf enum are written as labels too.
            var elementsOf: (Int32, Int32)? = nil
            if isArray, case .field(let mi, let fi) = x.name, ft.names.jsonEnum(mi, fi) { elementsOf = (mi, fi) }
            while c < n && j < fs.count && fs[j].depth > x.depth {
                if c > 0 { k.byte(0x2c) }
                j = member(fs, j, ft, inArray: isArray, &k, enumOf: elementsOf)
                c += 1
            }
            k.byte(isArray ? 0x5d : 0x7d)
            return j
        default:
            if let (mi, fi) = enumOf {
                enumValue(x, mi, fi, ft, &k)
            } else if case .field(let mi, let fi) = x.name, ft.names.jsonEnum(mi, fi) {
                enumValue(x, mi, fi, ft, &k)
            } else {
                scalar(x, ft, &k)
            }
            return i + 1
        }
    }

    /// A protobuf enum as its label (protobuf's JSON mapping); a number the enum does not know stays a number.
    func enumValue(_ x: DecodedField, _ mi: Int32, _ fi: Int32, _ ft: FieldText, _ k: inout Cursor) {
        if case .signed(let v) = x.value {
            if let l = ft.names.smallLabel(mi, fi, v) {
                k.byte(0x22); k.write(l); k.byte(0x22)
                return
            }
            if v < 0 || v >= 256, let l = ft.runtime.names.label(mi, fi, v) {
                k.byte(0x22); l.withUnsafeBytes { k.write($0) }; k.byte(0x22)
                return
            }
        }
        scalar(x, ft, &k)
    }

    @inline(__always)
    func scalar(_ x: DecodedField, _ ft: FieldText, _ k: inout Cursor) {
        if ft.sharedScalar(x, &k, json: true, out: out) { return }
        switch x.value {
        case .bytes:
            k.byte(0x22)
            let s = ft.frame.slice(Int(x.offset), Int(x.width))
            for i in 0..<s.count { k.hex(s[i]) }
            k.byte(0x22)
        case .ext(let type):
            // {"ext":5,"hex":"010203"} (a timestamp is written by sharedScalar).
            k.write("{\"ext\":"); k.decimal(Int64(type)); k.write(",\"hex\":\"")
            let s = ft.frame.slice(Int(x.offset), Int(x.width))
            for i in 0..<s.count { k.hex(s[i]) }
            k.write("\"}")
        default: k.write("null")  // objects and arrays are written by member()
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
        // A frame the end of the capture cut is not malformed: a line of its own type.
        event(c, p, d, reason.isCaptureCut ? "cut" : "malformed", packet, offset: offset, length: length)
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

    /// A layer's event (a handshake) as an event line: the common members, then the layer's.
    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                           packet: PacketRef) {
        common(c, d, packet.ts, p)
        e.writeJSON(out, diffable: diffable)
        out.byte(0x7d); out.newline()
    }

    /// `{"type":"late"|"reset-ignored"|"after-close", ...}`: what the reassembler noticed.
    public func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        switch n {
        case .lateData(let offset, let length): event(c, p, d, n.kind, packet, offset: offset, length: length)
        case .afterClose(let length):
            common(c, d, packet.ts, p)
            out.write(",\"type\":\"after-close\""); if !diffable { out.write(",\"pkt\":"); out.decimal(packet.number) }
            out.write(",\"length\":"); out.decimal(UInt64(length))
        case .resetIgnored:
            common(c, d, packet.ts, p)
            out.write(",\"type\":\"reset-ignored\""); if !diffable { out.write(",\"pkt\":"); out.decimal(packet.number) }
        }
        out.byte(0x7d); out.newline()
    }

    public func finish() { out.flush() }
}
