/// What both renderers need about a message: the protocol, its names, and the frame bytes.
struct FieldText {
    /// Unowned (no reference counting per message): a FieldText lives within one printer call on
    /// a message of `runtime`, which the session manager holds for the whole run (GoldenTests and
    /// LargeMessageTests under AddressSanitizer, scripts/sanitize.sh).
    unowned(unsafe) let runtime: ProtocolRuntime
    let names: Names
    let frame: UnsafeRawBufferPointer

    init(_ p: ProtocolRuntime, frame: UnsafeRawBufferPointer) {
        runtime = p
        names = p.names.view
        self.frame = frame
    }

    func def(_ n: FieldName) -> FieldDef? {
        if case .field(let mi, let fi) = n { return runtime.schema.messages[Int(mi)].fields[Int(fi)] }
        return nil
    }

    /// Writes a value both outputs show the same way (numbers, booleans, text, raw JSON
    /// tokens); false for bytes, objects and arrays, which each output shows its own way.
    /// A float is formatted through `out`, so the cursor is committed and taken anew.
    @inline(__always)
    func sharedScalar(_ x: DecodedField, _ k: inout Cursor, json: Bool, out: OutputBuffer) -> Bool {
        switch x.value {
        case .unsigned(let v):
            if names.anyHex && names.shownInHex(x.name) { hex(v, x, &k, json: json) } else { k.decimal(v) }
        case .signed(let v):
            if names.anyHex && names.shownInHex(x.name) { hex(UInt64(bitPattern: v), x, &k, json: json) } else { k.decimal(v) }
        case .float(let d):
            out.commit(k)
            FieldText.float(d, to: out, json: json)
            k = out.cursor()
        case .bool(let v): k.write(v ? "true" : "false")
        case .string, .validString:
            if Int(x.width) > runtime.maxString {
                k.jsonStringCut(frame.slice(Int(x.offset), Int(x.width)), limit: runtime.maxString)
                runtime.stringCut()
            } else {
                k.jsonString(frame.slice(Int(x.offset), Int(x.width)), valid: x.value == .validString)
            }
        case .jsonString:
            // Already a valid JSON string's content (checked by the flattener): written as is.
            k.byte(0x22); k.write(frame.slice(Int(x.offset), Int(x.width))); k.byte(0x22)
        case .jsonNumber, .jsonLiteral: k.write(frame.slice(Int(x.offset), Int(x.width)))
        case .null: k.write("null")
        case .ext(let type):
            guard type == MessagePackTimestamp.type,
                  let (s, n) = MessagePackTimestamp.decode(frame.slice(Int(x.offset), Int(x.width))) else { return false }
            if json { k.byte(0x22) }
            MessagePackTimestamp.write(s, n, &k)
            if json { k.byte(0x22) }
        case .bytes, .object, .array: return false
        }
        return true
    }

    /// `0xbeef`: all the field's bytes (a negative number as its two's complement); quoted in NDJSON.
    func hex(_ v: UInt64, _ x: DecodedField, _ k: inout Cursor, json: Bool) {
        if json { k.byte(0x22) }
        k.write("0x")
        let width = min(max(Int(x.width), 1), 8)
        for i in stride(from: width - 1, through: 0, by: -1) { k.hex(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
        if json { k.byte(0x22) }
    }

    static func float(_ d: Double, to out: OutputBuffer, json: Bool) {
        if d.isNaN || d.isInfinite { out.write(json ? "null" : d.description); return }
        // (Int64(-0.0) is 0: the sign would be lost.)
        if d == 0 && d.sign == .minus { out.write(json ? "-0" : "-0.0"); return }
        if d == d.rounded(.towardZero) && abs(d) < 1e15 {
            out.decimal(Int64(d))
            if !json { out.write(".0") }
            return
        }
        out.write(d.description)
    }
}
