/// The default output: a summary line per message, then its header and body fields as an
/// indented tree with byte ranges, enum labels and (with -v) the schema's comments.
public final class TreePrinter: MessageSink {
    let out: OutputBuffer
    let hexDump: Bool
    let verbose: Bool
    let color: Bool
    /// The registry's layers, held here so the per-message path reads no global.
    let layerKinds = LayerRegistry.kinds
    /// Lines' times in a format other than the epoch's (`-t`, `-ttt`, `-tttt`, `-ttttt`).
    @exclusivity(unchecked) var timeText: TimeText?

    /// `-A`: each frame's bytes as text too.
    let asciiDump: Bool
    /// `-O`: the fields only of these protocols' messages (lowercased); the others a line each.
    let detailsOf: Set<String>?
    /// Told of each line of a message as it is written (the page's index); nil for the
    /// terminal, where each line then costs one test.
    @exclusivity(unchecked) package var lines: TreeLineTable?
    /// Where the field line being written has its text (after its byte range), for `lines`.
    @exclusivity(unchecked) var fieldTextStart: UInt64 = 0

    /// Where the cursor's next byte will land in the output.
    @inline(__always)
    func position(_ k: Cursor) -> UInt64 { out.flushed &+ UInt64(k.p - out.base) }

    public init(output: OutputBuffer, hexDump: Bool, verbose: Bool, color: Bool, time: TimeFormat = .epoch,
                asciiDump: Bool = false, detailsOf: Set<String>? = nil) {
        self.asciiDump = asciiDump
        self.detailsOf = detailsOf
        out = output
        self.hexDump = hexDump
        self.verbose = verbose
        self.color = color
        timeText = time == .epoch ? nil : TimeText(time)
    }

    func paint(_ code: StaticString) { if color { out.write(code) } }
    func reset() { if color { out.write("\u{1b}[0m") } }

    /// `time src > dst protocol` (no space after): how every event line starts.
    func lead(_ ts: Timestamp, _ c: Connection, _ d: Direction, _ p: ProtocolRuntime?) {
        if timeText != nil { timeText!.write(ts, to: out) } else { out.timestamp(ts); out.byte(0x20) }
        out.write(ConnectionText.of(c).arrow(d))
        out.byte(0x20)
        if let p { out.write(p.nameBytes) } else { out.write("tcp") }
    }

    /// `time client > server protocol`, then the dimmed start of a connection event.
    func connectionLead(_ c: Connection, _ p: ProtocolRuntime?, _ ts: Timestamp) {
        lead(ts, c, .c2s, p)
        paint("\u{1b}[2m")
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {
        connectionLead(c, p, packet.ts)
        if c.udp {
            out.write(" udp flow opened")
        } else if let n = c.continues {
            out.write(" connection continues #"); out.decimal(n); out.write(" (bytes after it closed, no new SYN)")
        } else {
            out.write(c.rolesFromSYN ? " connection opened" : " connection picked up mid-stream (no SYN seen)")
        }
        reset()
        out.newline()
    }

    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {
        connectionLead(c, p, packet.ts)
        out.write(c.udp ? " udp flow closed (" : " connection closed (")
        out.write(reason.rawValue)
        out.write("): "); out.decimal(c.deliveredAtClose.c2s); out.write(" bytes c2s, ")
        out.decimal(c.deliveredAtClose.s2c); out.write(" bytes s2c")
        reset()
        out.newline()
        ConnectionText.forget(c)
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let f = m.frame!
        let names = p.names.view
        let ft = FieldText(p, frame: m.fieldBytes)
        let out = self.out
        let start = out.position
        lines?.removeAll(startingAt: start)
        // Room for a usual record at once; the cursor makes more as it writes, if needed.
        if timeText != nil { timeText!.write(f.lastPacket.ts, to: out) }
        var k = out.cursor(reserving: 1024 + 96 * (m.fields.count + m.headerFields.count))
        if timeText == nil { k.time(out.secondsText(f.lastPacket.ts), micros: f.lastPacket.ts.nanos, 0x20) }
        k.write(ConnectionText.of(c).arrow(m.direction), 0x20)
        k.write(names.protocolName, 0x20)
        if color { k.write("\u{1b}[1;36m") }
        if let mi = m.message {
            k.write(names.message(mi))
        } else if let n = m.layerNotes.first, m.id == nil {
            k.write(layerKinds[Int(n.layer)].messageName(n))
        } else {
            k.byte(0x3f)
        }
        if color { k.write("\u{1b}[0m") }
        if let mi = m.message {
            k.write(names.treeMessage(mi))
            if _slowPath(p.infoFields != nil), case let fi = p.infoFields.unsafelyUnwrapped[mi], fi >= 0, let x = m.topLevel(Int(fi)) {
                k.byte(0x20)
                value(x, ft, &k, out)
            }
        } else if let id = m.id {
            k.write(" (id ")
            if m.idPair {
                k.decimal(id >> 32); k.byte(0x3a); k.decimal(id & 0xffff_ffff)
            } else if m.idSigned { k.decimal(Int64(bitPattern: id)) } else { k.decimal(id) }
            k.byte(0x29)
        }
        k.write(", "); k.decimal(UInt64(f.bytes.count + f.missing)); k.write(" bytes")
        if f.missing > 0 { k.write(" [cut: "); k.decimal(UInt64(f.bytes.count)); k.write(" captured]") }
        if f.firstPacket.number != f.lastPacket.number {
            k.write(" [split over pkts "); k.decimal(f.firstPacket.number); k.byte(0x2d)
            k.decimal(f.lastPacket.number); k.byte(0x5d)
        } else if f.coalesced > 1 {
            k.write(" [coalesced "); k.decimal(UInt64(f.coalesced)); k.write(" in pkt ")
            k.decimal(f.lastPacket.number); k.byte(0x5d)
        }
        lines?.line(.summary, depth: 0, offset: 0, width: 0, text: start, end: position(k))
        k.byte(0x0a)
        if detailsOf != nil, detailsHidden(p) {
            // tshark's -O: another protocol's message is its summary line alone.
            out.commit(k)
            out.endOfRecord()
            return
        }
        if !m.layerNotes.isEmpty { layerLines(m.layerNotes, f, &k) }
        if _slowPath(m.phase.current >= 0), m.phase.next >= 0 || m.phase.assumed { phaseLine(m.phase, p, &k) }
        if m.pair.role == .answered { answersLine(m, names, &k) }
        if !m.transforms.isEmpty {
            let at = position(k)
            transformLine(m.transforms, &k)
            lines?.line(.note, depth: 0, offset: 0, width: 0, text: at + 4, end: position(k) - 1)
        }
        m.headerFields.withUnsafeBufferPointer { hs in
            for h in hs { field(h, ft, depth: 0, header: true, &k, out) }
        }
        m.fields.withUnsafeBufferPointer { fs in
            for x in fs { field(x, ft, depth: Int(x.depth), header: false, &k, out) }
        }
        out.commit(k)
        for w in m.warnings { warning(w.text) }
        if let cut = p.takeCutWarning() { warning(cut) }
        if asciiDump { AsciiDump.write(f.bytes, indent: 4, to: out) }
        if hexDump {
            HexDump.write(f.bytes, base: 0, indent: 4, to: out)
            if let t = m.transformed {
                out.write("    transformed (header, then the body the fields count in):"); out.newline()
                HexDump.write(t, base: 0, indent: 4, to: out)
            }
        }
        out.endOfRecord()
    }

    /// `-O`: whether this protocol's messages are shown as their summary line alone.
    @inline(never) func detailsHidden(_ p: ProtocolRuntime) -> Bool {
        detailsOf.map { !$0.contains(p.schema.name.lowercased()) } ?? false
    }

    /// `answers: LoginReq in pkt 7, 0.312 ms earlier`: the request this response answers.
    func answersLine(_ m: DecodedMessage, _ names: Names, _ k: inout Cursor) {
        let a = m.pair
        let at = position(k)
        k.write(color ? "    \u{1b}[2manswers: " : "    answers: ")
        if a.request >= 0 { k.write(names.message(Int(a.request))) } else { k.write("a request") }
        if a.firstPacket != a.lastPacket {
            k.write(" in pkts "); k.decimal(a.firstPacket); k.byte(0x2d); k.decimal(a.lastPacket)
        } else {
            k.write(" in pkt "); k.decimal(a.lastPacket)
        }
        k.write(", "); k.milliseconds(nanos: a.latency(to: m.frame.lastPacket.ts)); k.write(" ms earlier")
        if color { k.write("\u{1b}[0m") }
        k.byte(0x0a)
        lines?.line(.note, depth: 0, offset: 0, width: 0, text: at + 4, end: position(k) - 1)
    }

    /// `phase: auth → command`: the connection's phase changes after this message; or the
    /// phase a connection the capture joined late is assumed to be in, on its first message.
    func phaseLine(_ mark: PhaseMark, _ p: ProtocolRuntime, _ k: inout Cursor) {
        guard let names = p.decoder.phases?.names else { return }
        let at = position(k)
        k.write(color ? "    \u{1b}[2mphase: " : "    phase: ")
        k.text(names[Int(mark.current)])
        if mark.assumed { k.write(" (assumed: the capture began after the connection's start)") }
        if mark.next >= 0 { k.write(" → "); k.text(names[Int(mark.next)]) }
        if color { k.write("\u{1b}[0m") }
        k.byte(0x0a)
        lines?.line(.note, depth: 0, offset: 0, width: 0, text: at + 4, end: position(k) - 1)
    }

    /// `transforms: xor 120 → 120, zlib 120 → 842 bytes`: how the body was unwrapped. Body
    /// field offsets below count bytes of the result, not of the frame.
    func transformLine(_ steps: [TransformStep], _ k: inout Cursor) {
        k.write(color ? "    \u{1b}[2mtransforms: " : "    transforms: ")
        for (i, s) in steps.enumerated() {
            if i > 0 { k.write(", ") }
            k.write(s.name); k.byte(0x20); k.decimal(UInt64(s.before)); k.write(" → "); k.decimal(UInt64(s.after))
        }
        k.write(" bytes (body offsets count the result)")
        if color { k.write("\u{1b}[0m") }
        k.byte(0x0a)
    }

    func warning(_ text: String) {
        out.write("    ")
        paint("\u{1b}[1;31m")
        out.write("warning: ")
        let at = out.position
        out.write(text)
        lines?.line(.warning, depth: 0, offset: 0, width: 0, text: at, end: out.position)
        reset()
        out.newline()
    }

    /// A line per layer the message came through (`websocket: binary, FIN, masked`), above its
    /// own fields, each in its layer's words.
    func layerLines(_ notes: LayerNotes, _ f: Frame, _ k: inout Cursor) {
        let color = self.color, kinds = layerKinds
        notes.forEach { n in
            let at = position(k)
            kinds[Int(n.layer)].writeTree(n, f, color: color, &k)
            // A layer's line is indented by four spaces and ends with its newline.
            lines?.line(.note, depth: 0, offset: 0, width: 0, text: at + 4, end: position(k) - 1)
        }
    }

    /// A layer's event (a handshake): the common start, then the layer's own lines.
    public func layerEvent(_ e: any LayerEvent, _ c: Connection, _ p: ProtocolRuntime, _ d: Direction,
                           packet: PacketRef) {
        lead(packet.ts, c, d, p)
        e.writeTree(TreeEventWriter(out: out, color: color))
        out.endOfRecord()
    }

    /// (One copy, called per field: inlined in `message` twice it made that 39 KB of code, more
    /// than the level-1 instruction cache holds, and every message missed it.)
    @inline(never)
    func field(_ x: DecodedField, _ ft: FieldText, depth: Int, header: Bool, _ k: inout Cursor, _ out: OutputBuffer) {
        fieldStart(x, ft, depth: depth, &k)
        switch x.value {
        case .object(let n):
            k.write(" {"); k.decimal(n); k.write(n == 1 ? " field}" : " fields}")
        case .array(let n):
            k.write(" ["); k.decimal(n); k.write(n == 1 ? " element]" : " elements]")
        default:
            k.write(": ")
            value(x, ft, &k, out)
            // Header fields only: a body field does not load the table.
            if case .header(let hi) = x.name, case .unsigned(let v) = x.value, let bits = ft.runtime.headerBits,
               !bits[Int(hi)].isEmpty {
                BitText.write(v, bits[Int(hi)], &k)
            }
            if case .field(let mi, let fi) = x.name, ft.names.labelled(mi, fi) {
                var v: Int64?
                switch x.value {
                case .unsigned(let u): v = Int64(bitPattern: u)  // labels of uint64 values above 2⁶³ are kept by bit pattern
                case .signed(let s): v = s
                default: v = nil
                }
                if let v {
                    if let l = ft.names.smallLabel(mi, fi, v) {
                        k.write(" ("); k.write(l); k.byte(0x29)
                    } else if (v < 0 || v >= 256), let l = ft.runtime.names.label(mi, fi, v) {
                        k.write(" ("); l.withUnsafeBytes { k.write($0) }; k.byte(0x29)
                    }
                }
            }
        }
        if verbose, let d = ft.def(x.name)?.description {
            // Descriptions are unbounded: leave the cursor, write them, take a new one.
            out.commit(k)
            paint("\u{1b}[2m")
            out.write("  // "); out.write(d)
            reset()
            k = out.cursor()
        }
        if lines != nil { noteField(x, depth: depth, header: header, k) }
        k.byte(0x0a)
    }

    /// The page's index: a field's line, its text from the end of the byte range column.
    @inline(never)
    func noteField(_ x: DecodedField, depth: Int, header: Bool, _ k: Cursor) {
        lines?.line(header ? .header : .field, depth: depth, offset: x.offset, width: x.width,
                    text: fieldTextStart, end: position(k))
    }

    /// A field line's start: indentation, the byte range in its column, the name.
    @inline(__always)
    func fieldStart(_ x: DecodedField, _ ft: FieldText, depth: Int, _ k: inout Cursor) {
        k.spaces(4 &+ depth &* 2)
        if color { k.write("\u{1b}[2m") }
        // Byte ranges in a column of their own, so names line up.
        k.byteRange(x.offset, x.width)
        if color { k.write("\u{1b}[0m") }
        if lines != nil { fieldTextStart = position(k) }
        switch x.name {
        case .field(let mi, let fi): k.write(ft.names.field(mi, fi))
        case .header(let i): k.write(ft.names.header(i))
        case .key(let s, let l): k.write(ft.frame.slice(Int(s), Int(l)))
        case .element(let i): k.byte(0x5b); k.decimal(i); k.byte(0x5d)
        case .builtin(let s): k.write(s.text)
        case .unknown(let n, let w):
            k.byte(0x23); k.decimal(n); k.write(" ("); k.write(ProtoWire.name(w)); k.byte(0x29)
        case .stringKey(let s, let l): k.byte(0x5b); k.jsonString(ft.frame.slice(Int(s), Int(l))); k.byte(0x5d)
        case .intKey(let v): k.byte(0x5b); k.decimal(v); k.byte(0x5d)
        case .uintKey(let v): k.byte(0x5b); k.decimal(v); k.byte(0x5d)
        case .boolKey(let v): k.write(v ? "[true]" : "[false]")
        case .textKey(let s, let l):
            // As it is when it reads as a name; quoted and escaped otherwise.
            let key = ft.frame.slice(Int(s), Int(l))
            if Self.plainKey(key) { k.write(key) } else { k.jsonString(key) }
        }
    }

    /// A key that needs no quotes in the tree: printable, no quote or backslash, valid UTF-8.
    static func plainKey(_ key: UnsafeRawBufferPointer) -> Bool {
        guard !key.isEmpty else { return false }
        var ascii = true
        for c in key {
            if c < 0x20 || c == 0x7f || c == 0x22 || c == 0x5c || c == 0x20 && key.count == 1 { return false }
            if c >= 0x80 { ascii = false }
        }
        return ascii || UTF8Check.isValid(key)
    }

    @inline(__always)
    func value(_ x: DecodedField, _ ft: FieldText, _ k: inout Cursor, _ out: OutputBuffer) {
        if ft.sharedScalar(x, &k, json: false, out: out) { return }
        if case .ext(let type) = x.value { return ext(type, x, ft, &k) }
        guard case .bytes = x.value else { return }  // objects and arrays have no value
        let s = ft.frame.slice(Int(x.offset), Int(x.width))
        k.decimal(UInt64(s.count)); k.write(s.count == 1 ? " byte" : " bytes")
        if !s.isEmpty {
            k.byte(0x20)
            for i in 0..<Swift.min(s.count, 32) { k.hex(s[i]) }
            if s.count > 32 { k.write("…") }
        }
    }

    /// `ext 5: 3 bytes 010203` (a timestamp is written by `sharedScalar`).
    func ext(_ type: Int8, _ x: DecodedField, _ ft: FieldText, _ k: inout Cursor) {
        k.write("ext "); k.decimal(Int64(type)); k.write(": ")
        let s = ft.frame.slice(Int(x.offset), Int(x.width))
        k.decimal(UInt64(s.count)); k.write(s.count == 1 ? " byte" : " bytes")
        if !s.isEmpty {
            k.byte(0x20)
            for i in 0..<Swift.min(s.count, 32) { k.hex(s[i]) }
            if s.count > 32 { k.write("…") }
        }
    }

    /// `lead TAG ` with the tag in its colour: how gap, malformed and conflict lines start.
    func eventStart(_ ts: Timestamp, _ c: Connection, _ d: Direction, _ p: ProtocolRuntime?,
                    _ tag: StaticString, colour: StaticString?) {
        lead(ts, c, d, p)
        out.byte(0x20)
        if let colour { paint(colour) }
        out.write(tag)
        if colour != nil { reset() }
        out.byte(0x20)
    }

    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {
        malformed(c, p, d, offset: offset, length: length, reason: reason, packet: packet, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// `MALFORMED` (or `CUT` for a frame the end of the capture cut), and with -x its bytes.
    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef, bytes: UnsafeRawBufferPointer) {
        if reason.isCaptureCut {
            eventStart(packet.ts, c, d, p, "CUT", colour: "\u{1b}[1;33m")
        } else {
            eventStart(packet.ts, c, d, p, "MALFORMED", colour: "\u{1b}[1;31m")
        }
        out.decimal(length); out.write(length == 1 ? " byte" : " bytes")
        out.write(" at stream offset "); out.decimal(offset); out.write(": ")
        out.write(reason.text)
        out.newline()
        if hexDump && bytes.count > 0 {
            HexDump.write(bytes, base: 0, indent: 4, to: out)
            if UInt64(bytes.count) < length {
                out.spaces(4); out.write("(the first "); out.decimal(UInt64(bytes.count)); out.write(" of ")
                out.decimal(length); out.write(" bytes)"); out.newline()
            }
        }
    }

    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {
        eventStart(packet.ts, c, d, p, "GAP", colour: "\u{1b}[1;33m")
        out.decimal(length); out.write(" bytes missing at stream offset "); out.decimal(offset)
        out.write(" ("); out.write(reason.rawValue); out.byte(0x29)
        out.newline()
    }

    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {
        eventStart(packet.ts, c, d, nil, "CONFLICT", colour: nil)
        out.decimal(length); out.write(" bytes at stream offset "); out.decimal(offset)
        out.write(" retransmitted with different content (first copy kept)")
        out.newline()
    }

    public func notice(_ n: StreamNotice, _ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, packet: PacketRef) {
        eventStart(packet.ts, c, d, p, "NOTICE", colour: "\u{1b}[1;33m")
        out.write(n.text)
        out.newline()
    }

    public func finish() { out.flush() }
}
