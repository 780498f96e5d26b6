/// Every name an output writes for a protocol (messages, fields, header fields), laid out
/// once in one block of bytes, so rendering a field costs a copy and no reference counting.
public final class NameTable {
    let storage: UnsafeMutableBufferPointer<UInt8>
    /// (offset, length) into `storage`.
    let spans: UnsafeMutableBufferPointer<(Int32, Int32)>
    let messageBase: Int
    let headerBase: Int
    /// Per message, the index of its first field's span.
    let fieldBase: UnsafeMutableBufferPointer<Int>
    /// Whether a field has value labels (checked before any dictionary lookup).
    let hasLabels: UnsafeMutableBufferPointer<Bool>
    /// JSON pieces: `"name":` per field and header field, `,"message":"Name","length":` per
    /// message, `,"protocol":"name"` once.
    let jsonFieldBase: Int
    let jsonHeaderBase: Int
    let jsonMessageBase: Int
    let jsonProtocol: Int
    let protocolNameIndex: Int
    /// The longest piece, for reserving output space.
    let longest: Int
    /// Tree pieces: per message ` Name (id N) "Title"` (without the colour codes around the name).
    let treeMessageBase: Int
    /// Value labels as bytes, per field span index.
    let labelBytes: [Int: [Int64: [UInt8]]]
    let longestLabel: Int

    init(_ s: ProtocolSchema) {
        var bytes: [UInt8] = []
        var spans: [(Int32, Int32)] = []
        var labels: [Bool] = []
        func add(_ b: [UInt8]) {
            spans.append((Int32(bytes.count), Int32(b.count)))
            bytes += b
        }
        var bases: [Int] = []
        for m in s.messages {
            bases.append(spans.count)
            for f in m.fields {
                add(f.nameBytes)
                labels.append(f.labels != nil)
            }
        }
        messageBase = spans.count
        for m in s.messages { add(m.nameBytes) }
        headerBase = spans.count
        for h in s.header { add(h.nameBytes) }
        func key(_ b: [UInt8]) -> [UInt8] { [0x22] + b + [0x22, 0x3a] }
        jsonFieldBase = spans.count
        for m in s.messages { for f in m.fields { add(key(f.nameBytes)) } }
        jsonHeaderBase = spans.count
        for h in s.header { add(key(h.nameBytes)) }
        jsonMessageBase = spans.count
        for m in s.messages { add(Array(",\"message\":\"".utf8) + m.nameBytes + Array("\",\"length\":".utf8)) }
        jsonProtocol = spans.count
        add(Array(",\"protocol\":\"".utf8) + s.nameBytes + [0x22])
        protocolNameIndex = spans.count
        add(s.nameBytes)
        treeMessageBase = spans.count
        for m in s.messages {
            var t = ""
            if let id = m.id { t += " (id \(id))" }
            if let title = m.title { t += " \"\(title)\"" }
            add(Array(t.utf8))
        }
        longest = spans.map { Int($0.1) }.max() ?? 0
        var lb: [Int: [Int64: [UInt8]]] = [:]
        var ll = 0
        for (mi, m) in s.messages.enumerated() {
            for (fi, f) in m.fields.enumerated() {
                guard let labels = f.labels else { continue }
                lb[bases[mi] + fi] = labels.mapValues { Array($0.utf8) }
                ll = Swift.max(ll, labels.values.map(\.utf8.count).max() ?? 0)
            }
        }
        labelBytes = lb
        longestLabel = ll
        fieldBase = .allocate(capacity: max(1, bases.count))
        _ = fieldBase.initialize(from: bases)
        storage = .allocate(capacity: max(1, bytes.count))
        _ = storage.initialize(from: bytes)
        self.spans = .allocate(capacity: max(1, spans.count))
        _ = self.spans.initialize(from: spans)
        hasLabels = .allocate(capacity: max(1, labels.count))
        _ = hasLabels.initialize(from: labels)
    }

    deinit {
        storage.deallocate()
        spans.deallocate()
        hasLabels.deallocate()
        fieldBase.deallocate()
    }

    @inline(__always) func bytes(_ i: Int) -> UnsafeRawBufferPointer {
        let (o, l) = spans[i]
        return UnsafeRawBufferPointer(start: storage.baseAddress! + Int(o), count: Int(l))
    }

    @inline(__always) func field(_ mi: Int32, _ fi: Int32) -> UnsafeRawBufferPointer { bytes(fieldBase[Int(mi)] + Int(fi)) }
    @inline(__always) func message(_ mi: Int) -> UnsafeRawBufferPointer { bytes(messageBase + mi) }
    @inline(__always) func header(_ i: Int32) -> UnsafeRawBufferPointer { bytes(headerBase + Int(i)) }
    @inline(__always) func jsonField(_ mi: Int32, _ fi: Int32) -> UnsafeRawBufferPointer {
        bytes(jsonFieldBase + fieldBase[Int(mi)] + Int(fi))
    }
    @inline(__always) func jsonHeader(_ i: Int32) -> UnsafeRawBufferPointer { bytes(jsonHeaderBase + Int(i)) }
    @inline(__always) func jsonMessage(_ mi: Int) -> UnsafeRawBufferPointer { bytes(jsonMessageBase + mi) }
    var jsonProtocolPiece: UnsafeRawBufferPointer { bytes(jsonProtocol) }
    var protocolName: UnsafeRawBufferPointer { bytes(protocolNameIndex) }

    @inline(__always) func treeMessage(_ mi: Int) -> UnsafeRawBufferPointer { bytes(treeMessageBase + mi) }

    @inline(__always) func label(_ mi: Int32, _ fi: Int32, _ v: Int64) -> [UInt8]? {
        labelBytes[fieldBase[Int(mi)] + Int(fi)]?[v]
    }

    @inline(__always) func labelled(_ mi: Int32, _ fi: Int32) -> Bool { hasLabels[fieldBase[Int(mi)] + Int(fi)] }
}
