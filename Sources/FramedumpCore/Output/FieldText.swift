/// What both renderers need about a message: the protocol, its names, and the frame bytes.
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
