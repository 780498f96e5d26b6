/// Pieces both renderers share: a field's name and its schema definition.
struct FieldText {
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

    /// Writes the field's name as plain bytes (JSON keys are raw, already-escaped text).
    @inline(__always)
    func name(_ n: FieldName, to out: OutputBuffer) {
        switch n {
        case .field(let mi, let fi): out.write(names.field(mi, fi))
        case .header(let i): out.write(names.header(i))
        case .element(let i): out.byte(0x5b); out.decimal(Int(i)); out.byte(0x5d)
        case .key(let s, let l): out.write(frame.slice(Int(s), Int(l)))
        case .builtin(let s): out.write(s)
        }
    }

    @inline(__always)
    func label(_ n: FieldName, _ v: FieldValue) -> String? {
        guard case .field(let mi, let fi) = n, names.labelled(mi, fi), let labels = def(n)?.labels else { return nil }
        switch v {
        case .unsigned(let x): return x <= UInt64(Int64.max) ? labels[Int64(x)] : nil
        case .signed(let x): return labels[x]
        default: return nil
        }
    }

    static func float(_ d: Double, to out: OutputBuffer, json: Bool) {
        if d.isNaN || d.isInfinite { out.write(json ? "null" : d.description); return }
        if d == d.rounded(.towardZero) && abs(d) < 1e15 {
            out.decimal(Int64(d))
            if !json { out.write(".0") }
            return
        }
        out.write(d.description)
    }
}
