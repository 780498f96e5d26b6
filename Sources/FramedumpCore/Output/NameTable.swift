/// Every name an output writes for a protocol (messages, fields, header fields, and the JSON
/// and tree pieces around them), laid out once in one block of bytes. Renderers use `view`,
/// a plain struct of pointers, so writing a name costs a copy and no reference counting.
public final class NameTable {
    // Raw blocks, read through `view` without reference counting: written once in init, read-only
    // after, freed in deinit; the protocol runtime that owns the table outlives every printer
    // call (GoldenTests under AddressSanitizer, scripts/sanitize.sh).
    let storage: UnsafeMutableBufferPointer<UInt8>
    let spans: UnsafeMutableBufferPointer<(Int32, Int32)>
    let fieldBase: UnsafeMutableBufferPointer<Int>
    let hasLabels: UnsafeMutableBufferPointer<Bool>
    /// Per field: NDJSON writes its value as its label (protobuf enums, as protobuf's JSON mapping does).
    let jsonEnums: UnsafeMutableBufferPointer<Bool>
    /// Per body field, then per header field: shown in hex (`[hex]`).
    let hexShown: UnsafeMutableBufferPointer<Bool>
    /// Labels of values 0-255 as span indexes (-1: none), 256 per labelled field.
    let smallLabels: UnsafeMutableBufferPointer<Int32>
    /// Per field span: its block in `smallLabels` (-1: no labels).
    let labelBlock: UnsafeMutableBufferPointer<Int32>
    /// Value labels as bytes, per field span index (the rare path).
    let labelBytes: [Int: [Int64: [UInt8]]]
    public let view: Names

    init(_ s: ProtocolSchema) {
        var bytes: [UInt8] = []
        var spans: [(Int32, Int32)] = []
        var labels: [Bool] = []
        var hex: [Bool] = []
        var enums: [Bool] = []
        func add(_ b: [UInt8]) {
            spans.append((Int32(bytes.count), Int32(b.count)))
            bytes += b
        }
        func key(_ b: [UInt8]) -> [UInt8] { [0x22] + b + [0x22, 0x3a] }
        var bases: [Int] = []
        for m in s.messages {
            bases.append(spans.count)
            for f in m.fields {
                add(f.nameBytes)
                labels.append(f.labels != nil)
                enums.append(f.labels != nil && f.jsonEnumNames)
                hex.append(f.hex)
            }
        }
        var v = Names()
        // Header fields' `[hex]` after the body fields'.
        v.hexHeaderBase = hex.count
        hex += s.header.map(\.hex)
        v.anyHex = hex.contains(true)
        v.messageBase = spans.count
        for m in s.messages { add(m.nameBytes) }
        v.headerBase = spans.count
        for h in s.header { add(h.nameBytes) }
        v.jsonFieldBase = spans.count
        for m in s.messages { for f in m.fields { add(key(f.jsonNameBytes ?? f.nameBytes)) } }
        v.jsonHeaderBase = spans.count
        for h in s.header { add(key(h.nameBytes)) }
        v.jsonMessageBase = spans.count
        for m in s.messages { add(Array(",\"message\":\"".utf8) + m.nameBytes + Array("\",\"length\":".utf8)) }
        v.jsonProtocol = spans.count
        add(Array(",\"protocol\":\"".utf8) + s.nameBytes + [0x22])
        v.protocolNameIndex = spans.count
        add(s.nameBytes)
        // Tree: ` (id N) "Title"` after the message name.
        v.treeMessageBase = spans.count
        for m in s.messages {
            var t = ""
            if let id = m.idText { t += " (id \(id))" }
            if let title = m.title { t += " \"\(title)\"" }
            if let pt = m.protoType { t += " " + s.messages[pt].name }
            add(Array(t.utf8))
        }
        v.longest = spans.map { Int($0.1) }.max() ?? 0
        var lb: [Int: [Int64: [UInt8]]] = [:]
        for (mi, m) in s.messages.enumerated() {
            for (fi, f) in m.fields.enumerated() {
                guard let l = f.labels else { continue }
                lb[bases[mi] + fi] = l.mapValues { Array($0.utf8) }
                v.longestLabel = max(v.longestLabel, l.values.map(\.utf8.count).max() ?? 0)
            }
        }
        labelBytes = lb
        // Small values get a direct table: no hashing on the common path.
        var blocks = [Int32](repeating: -1, count: max(1, spans.count))
        var small: [Int32] = []
        for (fieldSpan, l) in lb.sorted(by: { $0.key < $1.key }) {
            blocks[fieldSpan] = Int32(small.count / 256)
            var table = [Int32](repeating: -1, count: 256)
            for (value, text) in l where value >= 0 && value < 256 {
                table[Int(value)] = Int32(spans.count)
                add(text)
            }
            small += table
        }
        v.longest = max(v.longest, v.longestLabel)
        storage = .allocate(capacity: max(1, bytes.count))
        _ = storage.initialize(from: bytes)
        self.spans = .allocate(capacity: max(1, spans.count))
        _ = self.spans.initialize(from: spans)
        fieldBase = .allocate(capacity: max(1, bases.count))
        _ = fieldBase.initialize(from: bases)
        hasLabels = .allocate(capacity: max(1, labels.count))
        _ = hasLabels.initialize(from: labels)
        jsonEnums = .allocate(capacity: max(1, enums.count))
        _ = jsonEnums.initialize(from: enums)
        hexShown = .allocate(capacity: max(1, hex.count))
        _ = hexShown.initialize(from: hex)
        v.hex = UnsafePointer(hexShown.baseAddress!)
        smallLabels = .allocate(capacity: max(1, small.count))
        _ = smallLabels.initialize(from: small)
        labelBlock = .allocate(capacity: blocks.count)
        _ = labelBlock.initialize(from: blocks)
        v.smallLabels = UnsafePointer(smallLabels.baseAddress!)
        v.labelBlock = UnsafePointer(labelBlock.baseAddress!)
        v.storage = UnsafePointer(storage.baseAddress!)
        v.spans = UnsafePointer(self.spans.baseAddress!)
        v.fieldBase = UnsafePointer(fieldBase.baseAddress!)
        v.hasLabels = UnsafePointer(hasLabels.baseAddress!)
        v.jsonEnums = UnsafePointer(jsonEnums.baseAddress!)
        view = v
    }

    deinit {
        storage.deallocate()
        spans.deallocate()
        fieldBase.deallocate()
        hasLabels.deallocate()
        jsonEnums.deallocate()
        hexShown.deallocate()
        smallLabels.deallocate()
        labelBlock.deallocate()
    }

    func label(_ mi: Int32, _ fi: Int32, _ v: Int64) -> [UInt8]? {
        labelBytes[fieldBase[Int(mi)] + Int(fi)]?[v]
    }
}

/// The table's bytes and indexes as plain values (valid while the NameTable lives, which is
/// the whole run).
public struct Names {
    var storage: UnsafePointer<UInt8>?
    var spans: UnsafePointer<(Int32, Int32)>?
    var fieldBase: UnsafePointer<Int>?
    var hasLabels: UnsafePointer<Bool>?
    var jsonEnums: UnsafePointer<Bool>?
    var hex: UnsafePointer<Bool>?
    /// Where header fields start in `hex`; whether any field is shown in hex at all.
    var hexHeaderBase = 0
    var anyHex = false
    var smallLabels: UnsafePointer<Int32>?
    var labelBlock: UnsafePointer<Int32>?
    var messageBase = 0, headerBase = 0, jsonFieldBase = 0, jsonHeaderBase = 0, jsonMessageBase = 0
    var jsonProtocol = 0, protocolNameIndex = 0, treeMessageBase = 0
    /// The longest piece and label, for reserving output space.
    var longest = 0
    var longestLabel = 0

    @inline(__always) func bytes(_ i: Int) -> UnsafeRawBufferPointer {
        let (o, l) = spans![i]
        return UnsafeRawBufferPointer(start: storage! + Int(o), count: Int(l))
    }

    @inline(__always) func field(_ mi: Int32, _ fi: Int32) -> UnsafeRawBufferPointer { bytes(fieldBase![Int(mi)] + Int(fi)) }
    @inline(__always) func message(_ mi: Int) -> UnsafeRawBufferPointer { bytes(messageBase + mi) }
    @inline(__always) func header(_ i: Int32) -> UnsafeRawBufferPointer { bytes(headerBase + Int(i)) }
    @inline(__always) func jsonField(_ mi: Int32, _ fi: Int32) -> UnsafeRawBufferPointer {
        bytes(jsonFieldBase + fieldBase![Int(mi)] + Int(fi))
    }
    @inline(__always) func jsonHeader(_ i: Int32) -> UnsafeRawBufferPointer { bytes(jsonHeaderBase + Int(i)) }
    @inline(__always) func jsonMessage(_ mi: Int) -> UnsafeRawBufferPointer { bytes(jsonMessageBase + mi) }
    @inline(__always) func treeMessage(_ mi: Int) -> UnsafeRawBufferPointer { bytes(treeMessageBase + mi) }
    var jsonProtocolPiece: UnsafeRawBufferPointer { bytes(jsonProtocol) }
    var protocolName: UnsafeRawBufferPointer { bytes(protocolNameIndex) }
    @inline(__always) func labelled(_ mi: Int32, _ fi: Int32) -> Bool { hasLabels![fieldBase![Int(mi)] + Int(fi)] }
    @inline(__always) func jsonEnum(_ mi: Int32, _ fi: Int32) -> Bool { jsonEnums![fieldBase![Int(mi)] + Int(fi)] }

    /// Whether a field's value is shown in hex (`[hex]`).
    @inline(__always) func shownInHex(_ n: FieldName) -> Bool {
        guard anyHex else { return false }
        switch n {
        case .field(let mi, let fi): return hex![fieldBase![Int(mi)] + Int(fi)]
        case .header(let i): return hex![hexHeaderBase + Int(i)]
        default: return false
        }
    }

    /// The label of a small value (0-255) straight from the table; nil: none or not small.
    @inline(__always) func smallLabel(_ mi: Int32, _ fi: Int32, _ v: Int64) -> UnsafeRawBufferPointer? {
        guard v >= 0 && v < 256 else { return nil }
        let block = labelBlock![fieldBase![Int(mi)] + Int(fi)]
        guard block >= 0 else { return nil }
        let span = smallLabels![Int(block) * 256 + Int(v)]
        return span < 0 ? nil : bytes(Int(span))
    }
}
