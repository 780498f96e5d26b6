/// The loaded `.proto` messages compiled for the wire decoder: per message, its fields sorted
/// by number with their type and target. Protobuf messages sit in `ProtocolSchema.messages`
/// after the dissector's own (so outputs name their fields like any other), from `base` on.
public final class ProtoTables: @unchecked Sendable {
    struct Op: Sendable {
        var number: Int32
        var type: ProtoType
        var repeated: Bool
        /// Schema message index for message, group and map fields; -1 otherwise.
        var target: Int32
        /// Index of the field in its `MessageDef`.
        var field: Int32
    }

    let ops: [Op]
    /// Per schema message index: (first op, count); (0, 0) for the dissector's own messages.
    let ranges: [(Int32, Int32)]
    let isMapEntry: [Bool]
    /// The field's type name for warnings (`int32`, `.pkg.Msg`), per schema message and field.
    let base: Int
    /// Fully qualified name → schema message index.
    public let byName: [String: Int]
    /// Add fields at their default value when they are not on the wire (`--proto-defaults`).
    let defaults: [[DefaultValue]]

    enum DefaultValue: Sendable {
        case none
        case value(FieldValue)
    }

    init(ops: [Op], ranges: [(Int32, Int32)], isMapEntry: [Bool], base: Int, byName: [String: Int],
         defaults: [[DefaultValue]]) {
        self.ops = ops
        self.ranges = ranges
        self.isMapEntry = isMapEntry
        self.base = base
        self.byName = byName
        self.defaults = defaults
        // The decoder reads these per field: plain pointers, no reference counting.
        opsP = .allocate(capacity: max(1, ops.count))
        _ = opsP.initialize(from: ops)
        rangesP = .allocate(capacity: max(1, ranges.count))
        _ = rangesP.initialize(from: ranges)
        mapEntryP = .allocate(capacity: max(1, isMapEntry.count))
        _ = mapEntryP.initialize(from: isMapEntry)
    }

    /// Immutable after init (hence @unchecked Sendable).
    let opsP: UnsafeMutableBufferPointer<Op>
    let rangesP: UnsafeMutableBufferPointer<(Int32, Int32)>
    let mapEntryP: UnsafeMutableBufferPointer<Bool>

    deinit {
        opsP.deallocate()
        rangesP.deallocate()
        mapEntryP.deallocate()
    }

    static let empty = ProtoTables(ops: [], ranges: [], isMapEntry: [], base: 0, byName: [:], defaults: [])

    /// The op index of field `number` in message `mi`, or nil.
    @inline(__always)
    func find(_ mi: Int, _ number: Int32, hint: inout Int) -> Int? {
        let (first, n) = rangesP[mi]
        let lo = Int(first), hi = Int(first) + Int(n)
        if hint >= lo && hint < hi && opsP[hint].number == number { hint += 1; return hint - 1 }
        var a = lo, b = hi
        while a < b {
            let mid = (a + b) >> 1
            let v = opsP[mid].number
            if v == number { hint = mid + 1; return mid }
            if v < number { a = mid + 1 } else { b = mid }
        }
        return nil
    }

    /// Appends the registry's messages to `schema.messages` and builds the tables.
    package static func attach(_ reg: ProtoRegistry, to s: inout ProtocolSchema) -> ProtoTables {
        let base = s.messages.count
        var byName: [String: Int] = [:]
        for (i, n) in reg.messageOrder.enumerated() { byName[n] = base + i }
        var ops: [Op] = []
        var ranges = [(Int32, Int32)](repeating: (0, 0), count: base)
        var mapEntry = [Bool](repeating: false, count: base)
        var defaults = [[DefaultValue]](repeating: [], count: base)
        let syntaxOf = reg.syntaxByMessage()
        // Enum labels are built once per enum, and copied into fields only up to a budget,
        // so a hostile .proto (a huge enum used by many fields) cannot blow up loading.
        var labelsOf: [String: [Int64: String]] = [:]
        var labelBudget = 1 << 20
        var numbersOf: [String: [String: Int32]] = [:]
        for full in reg.messageOrder {
            let m = reg.messages[full]!
            var fields: [FieldDef] = []
            var fieldDefaults: [DefaultValue] = []
            let proto3 = syntaxOf[full] == "proto3"
            for f in m.fields {
                var labels: [Int64: String]?
                let enumName = String(f.typeName.dropFirst())
                if f.type == .enumeration, let e = reg.enums[enumName], e.values.count <= labelBudget {
                    labelBudget -= e.values.count
                    if let l = labelsOf[enumName] {
                        labels = l
                    } else {
                        var l: [Int64: String] = [:]
                        for v in e.values where l[Int64(v.number)] == nil { l[Int64(v.number)] = v.name }
                        labelsOf[enumName] = l
                        labels = l
                    }
                }
                var fd = FieldDef(name: f.name, type: .bytes(.rest), array: nil, tag: Int(f.number),
                                  description: f.type == .message || f.type == .enumeration || f.type == .group
                                      ? String(f.typeName.dropFirst()) : f.type.name,
                                  labels: labels, nameBytes: Array(f.name.utf8))
                fd.jsonNameBytes = Array(f.jsonName.utf8)
                fd.jsonEnumNames = f.type == .enumeration
                fields.append(fd)
                // Repeated fields, oneof members and proto3 `optional` fields (which have presence)
                // have no default to show.
                fieldDefaults.append(f.label == .repeated || f.oneofIndex != nil
                                     ? .none : defaultValue(f, proto3: proto3, reg, &numbersOf))
            }
            let order = m.fields.indices.sorted { m.fields[$0].number < m.fields[$1].number }
            ranges.append((Int32(ops.count), Int32(order.count)))
            for i in order {
                let f = m.fields[i]
                let target = f.type == .message || f.type == .group ? Int32(byName[String(f.typeName.dropFirst())] ?? -1) : -1
                ops.append(Op(number: f.number, type: f.type, repeated: f.label == .repeated, target: target, field: Int32(i)))
            }
            mapEntry.append(m.isMapEntry)
            defaults.append(fieldDefaults)
            let short = m.name
            s.messages.append(MessageDef(name: full, title: nil, id: nil, direction: nil, fields: fields,
                                         nameBytes: Array(full.utf8), line: 0))
            _ = short
        }
        return ProtoTables(ops: ops, ranges: ranges, isMapEntry: mapEntry, base: base, byName: byName, defaults: defaults)
    }

    /// The value a field has when it is not on the wire (proto2 `[default = ...]`, else zero).
    static func defaultValue(_ f: ProtoFieldModel, proto3: Bool, _ reg: ProtoRegistry,
                             _ numbersOf: inout [String: [String: Int32]]) -> DefaultValue {
        let d = f.defaultValue
        switch f.type {
        case .int32, .int64, .sint32, .sint64, .sfixed32, .sfixed64:
            return .value(.signed(d.flatMap { Int64($0) } ?? 0))
        case .uint32, .uint64, .fixed32, .fixed64:
            return .value(.unsigned(d.flatMap { UInt64($0) } ?? 0))
        case .float, .double:
            let v: Double
            switch d {
            case "inf"?: v = .infinity
            case "-inf"?: v = -.infinity
            case "nan"?: v = .nan
            default: v = d.flatMap { Double($0) } ?? 0
            }
            return .value(.float(v))
        case .bool: return .value(.bool(d == "true"))
        case .enumeration:
            let name = String(f.typeName.dropFirst())
            if let d, let e = reg.enums[name] {
                if numbersOf[name] == nil {
                    var byName: [String: Int32] = [:]
                    for v in e.values where byName[v.name] == nil { byName[v.name] = v.number }
                    numbersOf[name] = byName
                }
                if let v = numbersOf[name]?[d] { return .value(.signed(Int64(v))) }
            }
            let first = reg.enums[String(f.typeName.dropFirst())]?.values.first?.number ?? 0
            return .value(.signed(Int64(first)))
        case .string: return d == nil || d == "" ? .value(.string) : .none
        case .bytes: return d == nil || d == "" ? .value(.bytes) : .none
        case .message, .group: return .none
        }
    }
}

extension ProtoRegistry {
    /// The syntax of the file that declares each message, by fully qualified name.
    func syntaxByMessage() -> [String: String] {
        var out: [String: String] = [:]
        for f in files {
            func walk(_ ms: [ProtoMessageModel], _ scope: String) {
                for m in ms {
                    let n = scope.isEmpty ? m.name : scope + "." + m.name
                    out[n] = f.syntax
                    walk(m.nested, n)
                }
            }
            walk(f.messages, f.package)
        }
        return out
    }
}
