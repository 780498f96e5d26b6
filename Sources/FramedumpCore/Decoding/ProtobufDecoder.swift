/// Decodes a protobuf body (the binary wire format) into the flat field list, against a
/// message of the loaded `.proto` files or, without one, schema-less like `protoc --decode_raw`.
///
/// Reads are bounds-checked against the body's end; a length is compared with what is
/// left before it is used, nothing is allocated from what the input announces, nesting is
/// capped. Malformed data ends the decoding of the message it is in with a warning giving
/// its offset; what was decoded stays, the rest is shown raw, and the next frame goes on.
final class ProtobufDecoder {
    // Constant references (`let`), so the per-field path reads them without reference counting.
    let t: ProtoTables
    /// The message this decoder fills (a session reuses one for every frame) and its fields.
    let m: DecodedMessage
    let fl: FieldList
    /// The bytes offsets refer to: set for each frame.
    @exclusivity(unchecked) var b = UnsafeRawBufferPointer(start: nil, count: 0)
    /// The schema (for names in warnings only); owned by the MessageDecoder that owns us.
    unowned(unsafe) let owner: MessageDecoder
    let addDefaults: Bool
    /// `--max-depth`, from the owner.
    let maxDepth: Int

    init(tables: ProtoTables, owner: MessageDecoder, addDefaults: Bool, into m: DecodedMessage) {
        t = tables
        self.owner = owner
        self.addDefaults = addDefaults
        maxDepth = owner.maxDepth
        self.m = m
        fl = m.fields
    }

    /// Decodes `[from, b.count)` of `bytes` as message `mi` (-1: schema-less) into `m`.
    func decode(_ mi: Int, _ bytes: UnsafeRawBufferPointer, from: Int) {
        b = bytes
        _ = message(mi, from, bytes.count, depth: 0)
    }

    /// Wire types by name, for warnings and the tree.
    static func wireName(_ w: UInt8) -> String {
        switch w {
        case 0: return "varint"
        case 1: return "fixed64"
        case 2: return "length-delimited"
        case 3: return "group start"
        case 4: return "group end"
        case 5: return "fixed32"
        default: return "wire type \(w)"
        }
    }

    // MARK: - Reading

    @inline(__always)
    func varint(_ pos: inout Int, _ end: Int) -> UInt64? {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        var p = pos
        while p < end {
            let c = b[p]
            p += 1
            if shift == 63 && c > 1 { return nil }  // more than 64 bits
            v |= UInt64(c & 0x7f) << shift
            if c < 0x80 { pos = p; return v }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    @inline(__always)
    func fixed(_ pos: inout Int, _ end: Int, _ width: Int) -> UInt64? {
        guard end - pos >= width else { return nil }
        var v: UInt64 = 0
        for k in 0..<width { v |= UInt64(b[pos + k]) << UInt64(8 * k) }
        pos += width
        return v
    }

    func warn(_ text: String) { m.warnings.append(.protobuf(text)) }

    func fieldName(_ mi: Int, _ fi: Int32) -> String {
        let md = owner.schema.messages[mi]
        return md.name + "." + md.fields[Int(fi)].name
    }

    /// Shows `[from, end)` raw after a problem.
    func rest(_ from: Int, _ end: Int, depth: Int) -> Int32 {
        guard from < end else { return 0 }
        fl.append(DecodedField(name: .builtin(.undecoded), value: .bytes, offset: Int32(from),
                                     width: Int32(end - from), depth: Int16(depth)))
        return 1
    }

    // MARK: - Messages

    /// Ends the array (or map) whose header is at `header`: its element count and width.
    @inline(__always)
    func closeArray(_ open: inout Int, _ header: Int, _ count: Int32, _ pos: Int) {
        guard open >= 0 else { return }
        let f = fl.base + header
        f.pointee.width = Int32(pos) - f.pointee.offset
        if case .object = f.pointee.value { f.pointee.value = .object(count: count) } else { f.pointee.value = .array(count: count) }
        open = -1
    }

    /// Appends the fields of message `mi` (-1: schema-less) found in `[start, end)` at `depth`.
    /// In a group, stops after the END_GROUP tag of `group`. Returns the number of direct
    /// children added and the position after what was read.
    func message(_ mi: Int, _ start: Int, _ end: Int, depth: Int, group: Int32 = 0) -> (Int32, Int) {
        var pos = start
        var count: Int32 = 0
        var hint = mi >= 0 ? Int(t.rangesP[mi].0) : 0
        // The repeated field being collected (contiguous records of one number form one array).
        var open = -1, openHeader = 0, openCount: Int32 = 0
        var seen: [Bool] = []
        if addDefaults && mi >= 0 { seen = [Bool](repeating: false, count: t.defaults[mi].count) }
        while pos < end {
            let tagAt = pos
            guard let key = varint(&pos, end) else {
                closeArray(&open, openHeader, openCount, tagAt)
                warn("malformed protobuf at byte \(tagAt): truncated or overlong varint in a field tag")
                return (count + rest(tagAt, end, depth: depth), end)
            }
            let wire = UInt8(key & 7)
            guard key >> 3 <= UInt64(ProtoParser.maxFieldNumber), key >> 3 >= 1 else {
                closeArray(&open, openHeader, openCount, tagAt)
                warn("malformed protobuf at byte \(tagAt): field number \(key >> 3) is out of range")
                return (count + rest(tagAt, end, depth: depth), end)
            }
            let number = Int32(key >> 3)
            if wire == 4 {
                closeArray(&open, openHeader, openCount, tagAt)
                if group != 0 && number == group { return (count, pos) }
                warn(group != 0 ? "malformed protobuf at byte \(tagAt): group end \(number) does not match group \(group)"
                                : "malformed protobuf at byte \(tagAt): group end for field \(number) without its start")
                return (count + rest(tagAt, end, depth: depth), end)
            }
            guard wire <= 5 && wire != 4 else {
                closeArray(&open, openHeader, openCount, tagAt)
                warn("malformed protobuf at byte \(tagAt): invalid wire type \(wire) (field \(number))")
                return (count + rest(tagAt, end, depth: depth), end)
            }
            var opIndex: Int? = nil
            if mi >= 0 { opIndex = t.find(mi, number, hint: &hint) }
            if let oi = opIndex {
                let op = t.opsP[oi]
                let packed = op.repeated && wire == 2 && op.type.packable
                if wire == op.type.wireType || packed {
                    if !seen.isEmpty { seen[Int(op.field)] = true }
                    let valueAt = pos
                    if op.repeated {
                        if open != oi {
                            closeArray(&open, openHeader, openCount, tagAt)
                            let isMap = op.target >= 0 && t.mapEntryP[Int(op.target)]
                            openHeader = fl.count
                            fl.append(DecodedField(name: .field(Int32(mi), op.field),
                                                         value: isMap ? .object(count: 0) : .array(count: 0),
                                                         offset: Int32(tagAt), width: 0, depth: Int16(depth)))
                            open = oi
                            openCount = 0
                            count += 1
                        }
                        if packed {
                            guard let (s, e) = lengthDelimited(&pos, end, at: tagAt) else {
                                closeArray(&open, openHeader, openCount, tagAt)
                                return (count + rest(tagAt, end, depth: depth), end)
                            }
                            var p = s
                            while p < e {
                                let elementAt = p
                                guard let v = scalar(op.type, &p, e) else {
                                    warn("malformed protobuf at byte \(elementAt): packed element of '\(fieldName(mi, op.field))' runs past its end")
                                    openCount += rest(elementAt, e, depth: depth + 1)
                                    break
                                }
                                fl.append(DecodedField(name: .element(openCount), value: v, offset: Int32(elementAt),
                                                             width: Int32(p - elementAt), depth: Int16(depth + 1)))
                                openCount += 1
                            }
                            _ = valueAt
                            continue
                        }
                        let isMap = op.target >= 0 && t.mapEntryP[Int(op.target)]
                        let ok = isMap ? mapEntry(op, tagAt, &pos, end, depth: depth + 1)
                                       : value(op, mi, name: .element(openCount), tagAt, &pos, end, depth: depth + 1, group: number)
                        openCount += 1
                        if !ok { closeArray(&open, openHeader, openCount, pos); return (count, end) }
                        continue
                    }
                    closeArray(&open, openHeader, openCount, tagAt)
                    count += 1
                    if !value(op, mi, name: .field(Int32(mi), op.field), tagAt, &pos, end, depth: depth, group: number) {
                        return (count, end)
                    }
                    continue
                }
                warn("field '\(fieldName(mi, op.field))' (\(op.type.name)) arrived as \(Self.wireName(wire)) at byte \(tagAt): shown as an unknown field")
            }
            // Unknown to the schema, or schema-less: shown by number and wire type.
            closeArray(&open, openHeader, openCount, tagAt)
            count += 1
            if !unknown(number, wire, tagAt, &pos, end, depth: depth) { return (count, end) }
        }
        closeArray(&open, openHeader, openCount, pos)
        if group != 0 {
            warn("malformed protobuf at byte \(end): group \(group) is not closed")
        }
        if addDefaults && mi >= 0, case let defs = t.defaults[mi], !defs.isEmpty {
            for (fi, d) in defs.enumerated() where !seen[fi] {
                if case .value(let v) = d {
                    fl.append(DecodedField(name: .field(Int32(mi), Int32(fi)), value: v, offset: Int32(pos),
                                                 width: 0, depth: Int16(depth)))
                    count += 1
                }
            }
        }
        return (count, pos)
    }

    /// Reads a length and checks it against what is left: the payload's range.
    func lengthDelimited(_ pos: inout Int, _ end: Int, at tagAt: Int) -> (Int, Int)? {
        let lenAt = pos
        guard let n = varint(&pos, end) else {
            warn("malformed protobuf at byte \(lenAt): truncated length (field tag at byte \(tagAt))")
            return nil
        }
        guard n <= UInt64(end - pos) else {
            warn("malformed protobuf at byte \(lenAt): length \(n) runs past the end of the body (\(end - pos) bytes left)")
            return nil
        }
        let s = pos
        pos += Int(n)
        return (s, pos)
    }

    /// A varint, fixed32 or fixed64 value of a scalar type.
    @inline(__always)
    func scalar(_ type: ProtoType, _ pos: inout Int, _ end: Int) -> FieldValue? {
        switch type {
        case .int32, .enumeration:
            guard let v = varint(&pos, end) else { return nil }
            return .signed(Int64(Int32(truncatingIfNeeded: v)))
        case .int64:
            guard let v = varint(&pos, end) else { return nil }
            return .signed(Int64(bitPattern: v))
        case .uint32:
            guard let v = varint(&pos, end) else { return nil }
            return .unsigned(UInt64(UInt32(truncatingIfNeeded: v)))
        case .uint64:
            guard let v = varint(&pos, end) else { return nil }
            return .unsigned(v)
        case .sint32:
            guard let v = varint(&pos, end) else { return nil }
            let u = UInt32(truncatingIfNeeded: v)
            return .signed(Int64(Int32(bitPattern: (u >> 1) ^ (0 &- (u & 1)))))
        case .sint64:
            guard let v = varint(&pos, end) else { return nil }
            return .signed(Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1))))
        case .bool:
            guard let v = varint(&pos, end) else { return nil }
            return .bool(v != 0)
        case .fixed32:
            guard let v = fixed(&pos, end, 4) else { return nil }
            return .unsigned(v)
        case .sfixed32:
            guard let v = fixed(&pos, end, 4) else { return nil }
            return .signed(Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: v))))
        case .float:
            guard let v = fixed(&pos, end, 4) else { return nil }
            return .float(Double(Float(bitPattern: UInt32(truncatingIfNeeded: v))))
        case .fixed64:
            guard let v = fixed(&pos, end, 8) else { return nil }
            return .unsigned(v)
        case .sfixed64:
            guard let v = fixed(&pos, end, 8) else { return nil }
            return .signed(Int64(bitPattern: v))
        case .double:
            guard let v = fixed(&pos, end, 8) else { return nil }
            return .float(Double(bitPattern: v))
        default:
            return nil
        }
    }

    /// One value of a known field (its tag already read); false after a malformed value.
    func value(_ op: ProtoTables.Op, _ mi: Int, name: FieldName, _ tagAt: Int, _ pos: inout Int, _ end: Int,
                        depth: Int, group: Int32) -> Bool {
        let at = pos
        switch op.type {
        case .string, .bytes:
            guard let (s, e) = lengthDelimited(&pos, end, at: tagAt) else {
                _ = rest(tagAt, end, depth: depth)
                return false
            }
            var value = FieldValue.bytes
            if op.type == .string {
                value = validUTF8(s, e) ? .validString : .string
                if value == .string { m.warnings.append(.invalidUTF8(field: fieldName(mi, op.field))) }
            }
            fl.append(DecodedField(name: name, value: value, offset: Int32(s),
                                         width: Int32(e - s), depth: Int16(depth)))
            return true
        case .message:
            guard let (s, e) = lengthDelimited(&pos, end, at: tagAt) else {
                _ = rest(tagAt, end, depth: depth)
                return false
            }
            nested(Int(op.target), name: name, s, e, depth: depth)
            return true
        case .group:
            guard let n = groupField(Int(op.target), name, at: at, &pos, end, depth: depth, number: group) else { return false }
            return pos < end || n >= 0
        default:
            guard let v = scalar(op.type, &pos, end) else {
                warn("malformed protobuf at byte \(at): value of '\(fieldName(mi, op.field))' runs past the end of the body")
                _ = rest(tagAt, end, depth: depth)
                return false
            }
            fl.append(DecodedField(name: name, value: v, offset: Int32(at), width: Int32(pos - at), depth: Int16(depth)))
            return true
        }
    }

    /// A nested message (or a schema-less one when `mi` is -1) in `[s, e)`.
    func nested(_ mi: Int, name: FieldName, _ s: Int, _ e: Int, depth: Int) {
        let idx = fl.count
        fl.append(DecodedField(name: name, value: .object(count: 0), offset: Int32(s), width: Int32(e - s),
                                     depth: Int16(depth)))
        guard depth + 1 < maxDepth else {
            m.warnings.append(.protobufTooDeep("protobuf messages nested deeper than \(maxDepth) levels (--max-depth) at byte \(s): the rest shown raw"))
            fl[idx].value = .object(count: rest(s, e, depth: depth + 1))
            return
        }
        let (n, _) = message(mi, s, e, depth: depth + 1)
        fl[idx].value = .object(count: n)
    }

    /// A map entry (`key = 1`, `value = 2`), shown as one field named by its key.
    func mapEntry(_ op: ProtoTables.Op, _ tagAt: Int, _ pos: inout Int, _ end: Int, depth: Int) -> Bool {
        guard let (s, e) = lengthDelimited(&pos, end, at: tagAt) else {
            _ = rest(tagAt, end, depth: depth)
            return false
        }
        let entry = Int(op.target)
        var hint = Int(t.rangesP[entry].0)
        guard let ki = t.find(entry, 1, hint: &hint), let vi = t.find(entry, 2, hint: &hint) else { return true }
        let kop = t.opsP[ki], vop = t.opsP[vi]
        var keyName = FieldName.stringKey(Int32(s), 0)
        switch kop.type {
        case .string: keyName = .stringKey(Int32(s), 0)
        case .bool: keyName = .boolKey(false)
        case .uint32, .uint64, .fixed32, .fixed64: keyName = .uintKey(0)
        default: keyName = .intKey(0)
        }
        var valueAt = -1
        var p = s
        // First pass: the key and where the value is (either may come first, or be absent).
        while p < e {
            let fieldAt = p
            guard let k = varint(&p, e) else {
                warn("malformed protobuf at byte \(fieldAt): truncated tag in a map entry")
                _ = rest(s, e, depth: depth)
                return true
            }
            let w = UInt8(k & 7), n = k >> 3
            if n == 1 && w == kop.type.wireType {
                if kop.type == .string {
                    guard let (ks, ke) = lengthDelimited(&p, e, at: fieldAt) else { _ = rest(s, e, depth: depth); return true }
                    keyName = .stringKey(Int32(ks), Int32(ke - ks))
                } else {
                    guard let v = scalar(kop.type, &p, e) else {
                        warn("malformed protobuf at byte \(fieldAt): truncated map key")
                        _ = rest(s, e, depth: depth)
                        return true
                    }
                    switch v {
                    case .signed(let x): keyName = .intKey(x)
                    case .unsigned(let x): keyName = .uintKey(x)
                    case .bool(let x): keyName = .boolKey(x)
                    default: break
                    }
                }
                continue
            }
            if n == 2 && w == vop.type.wireType { valueAt = fieldAt }
            guard skip(w, Int32(truncatingIfNeeded: n), &p, e, depth: depth) else {
                _ = rest(s, e, depth: depth)
                return true
            }
        }
        guard valueAt >= 0 else {
            // No value on the wire: the value type's default.
            var v: FieldValue = .unsigned(0)
            switch vop.type {
            case .string: v = .string
            case .bytes: v = .bytes
            case .message: v = .object(count: 0)
            case .uint32, .uint64, .fixed32, .fixed64: v = .unsigned(0)
            case .float, .double: v = .float(0)
            case .bool: v = .bool(false)
            default: v = .signed(0)
            }
            fl.append(DecodedField(name: keyName, value: v, offset: Int32(e), width: 0, depth: Int16(depth)))
            return true
        }
        var q = valueAt
        _ = varint(&q, e)
        _ = value(vop, entry, name: keyName, valueAt, &q, e, depth: depth, group: 2)
        return true
    }

    /// Skips one value of wire type `w` (groups to their matching end).
    func skip(_ w: UInt8, _ number: Int32, _ p: inout Int, _ e: Int, depth: Int) -> Bool {
        let at = p
        switch w {
        case 0: if varint(&p, e) != nil { return true }
        case 1: if fixed(&p, e, 8) != nil { return true }
        case 5: if fixed(&p, e, 4) != nil { return true }
        case 2: return lengthDelimited(&p, e, at: at) != nil
        case 3:
            guard depth < maxDepth else {
                m.warnings.append(.protobufTooDeep("protobuf groups nested deeper than \(maxDepth) levels (--max-depth) at byte \(at)"))
                return false
            }
            while p < e {
                let tagAt = p
                guard let k = varint(&p, e) else { break }
                let w2 = UInt8(k & 7)
                if w2 == 4 {
                    if Int32(truncatingIfNeeded: k >> 3) == number { return true }
                    warn("malformed protobuf at byte \(tagAt): group end \(k >> 3) does not match group \(number)")
                    return false
                }
                guard w2 <= 5, skip(w2, Int32(truncatingIfNeeded: k >> 3), &p, e, depth: depth + 1) else { return false }
            }
            warn("malformed protobuf at byte \(e): group \(number) is not closed")
            return false
        default: break
        }
        warn("malformed protobuf at byte \(at): value of field \(number) (\(Self.wireName(w))) runs past the end")
        return false
    }

    /// A field the schema does not describe: its raw value, a length-delimited one guessed as
    /// text, a nested message or bytes (as `protoc --decode_raw` does).
    func unknown(_ number: Int32, _ wire: UInt8, _ tagAt: Int, _ pos: inout Int, _ end: Int, depth: Int) -> Bool {
        let name = FieldName.unknown(number: number, wire: wire)
        let at = pos
        switch wire {
        case 0, 1, 5:
            let v: UInt64?
            if wire == 0 { v = varint(&pos, end) } else { v = fixed(&pos, end, wire == 1 ? 8 : 4) }
            guard let v else {
                warn("malformed protobuf at byte \(at): value of field \(number) (\(Self.wireName(wire))) runs past the end of the body")
                _ = rest(tagAt, end, depth: depth)
                return false
            }
            fl.append(DecodedField(name: name, value: .unsigned(v), offset: Int32(at), width: Int32(pos - at),
                                         depth: Int16(depth)))
            return true
        case 2:
            guard let (s, e) = lengthDelimited(&pos, end, at: tagAt) else {
                _ = rest(tagAt, end, depth: depth)
                return false
            }
            if s < e && printableText(s, e) {
                fl.append(DecodedField(name: name, value: .validString, offset: Int32(s), width: Int32(e - s), depth: Int16(depth)))
            } else if s < e && depth + 1 < maxDepth && looksLikeMessage(s, e) {
                nested(-1, name: name, s, e, depth: depth)
            } else {
                fl.append(DecodedField(name: name, value: .bytes, offset: Int32(s), width: Int32(e - s), depth: Int16(depth)))
            }
            return true
        default:  // 3: a group the schema does not know: its fields, schema-less
            return groupField(-1, name, at: at, &pos, end, depth: depth, number: number) != nil
        }
    }

    /// A group's fields as a nested object, typed by message `target` (-1: schema-less), ending
    /// at its end-group tag `number`. Nil when nested too deep: the rest is then shown raw.
    func groupField(_ target: Int, _ name: FieldName, at: Int, _ pos: inout Int, _ end: Int, depth: Int, number: Int32) -> Int32? {
        let idx = fl.count
        fl.append(DecodedField(name: name, value: .object(count: 0), offset: Int32(at), width: 0, depth: Int16(depth)))
        guard depth + 1 < maxDepth else {
            m.warnings.append(.protobufTooDeep("protobuf messages nested deeper than \(maxDepth) levels (--max-depth) at byte \(at): the rest shown raw"))
            fl[idx].value = .object(count: rest(at, end, depth: depth + 1))
            fl[idx].width = Int32(end - at)
            return nil
        }
        let (n, next) = message(target, pos, end, depth: depth + 1, group: number)
        fl[idx].value = .object(count: n)
        fl[idx].width = Int32(next - at)
        pos = next
        return n
    }

    /// Whether `[s, e)` parses as a sequence of well-formed fields (one level, no recursion).
    func looksLikeMessage(_ s: Int, _ e: Int) -> Bool {
        var p = s
        var groups: [UInt64] = []
        while p < e {
            guard let k = varint(&p, e), k >> 3 >= 1, k >> 3 <= UInt64(ProtoParser.maxFieldNumber) else { return false }
            switch k & 7 {
            case 0: guard varint(&p, e) != nil else { return false }
            case 1: guard e - p >= 8 else { return false }; p += 8
            case 5: guard e - p >= 4 else { return false }; p += 4
            case 2:
                guard let n = varint(&p, e), n <= UInt64(e - p) else { return false }
                p += Int(n)
            case 3:
                guard groups.count < maxDepth else { return false }
                groups.append(k >> 3)
            case 4:
                guard groups.last == k >> 3 else { return false }
                groups.removeLast()
            default: return false
            }
        }
        return groups.isEmpty
    }

    func validUTF8(_ s: Int, _ e: Int) -> Bool {
        // (ASCII eight bytes at a time there.)
        UTF8Check.isValid(UnsafeRawBufferPointer(rebasing: b[s..<e]))
    }

    /// Valid UTF-8 with no control characters but tab, newline and carriage return.
    func printableText(_ s: Int, _ e: Int) -> Bool {
        for i in s..<e {
            let c = b[i]
            if c < 0x20 && c != 0x09 && c != 0x0a && c != 0x0d { return false }
            if c == 0x7f { return false }
        }
        return validUTF8(s, e)
    }
}

/// Wire type names as the outputs write them.
enum ProtoWire {
    static func name(_ w: UInt8) -> StaticString {
        switch w {
        case 0: return "varint"
        case 1: return "fixed64"
        case 2: return "len"
        case 3: return "group"
        case 5: return "fixed32"
        default: return "?"
        }
    }
}
