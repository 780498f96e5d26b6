/// The two constructs that name a field of another message, resolved once every message's
/// fields are: `Item[until type == 0] items` (a field of the element) and `when parent.etype`
/// (a field of the message that nests this one).
extension Resolver {
    /// A single integer field named `name` among `fields`, before index `before`.
    private func integerField(_ name: String, in fields: [FieldDef], before: Int? = nil) -> Int? {
        guard let i = fields.firstIndex(where: { $0.name == name }), i < (before ?? fields.count),
              fields[i].type.isInteger, fields[i].array == nil else { return nil }
        return i
    }

    func resolveUntils(_ untils: [(message: Int, field: Int, test: PendingCondition)], _ s: inout ProtocolSchema,
                       _ errors: inout Diagnostics) {
        for (mi, fi, c) in untils {
            guard case .message(let element) = s.messages[mi].fields[fi].type else { continue }
            let e = s.messages[element]
            guard let i = integerField(c.field, in: e.fields) else {
                let hint = DidYouMean.hint(c.field, e.fields.map(\.name))
                errors.add(err(c.token, "'until' tests a single integer field of the element: '\(e.name)' has no such field '\(c.field)'" + hint))
                continue
            }
            s.messages[mi].fields[fi].array = .until(TransformCondition(field: i, mask: c.mask, test: c.test))
        }
    }

    func resolveParents(_ parents: [(message: Int, field: Int, test: PendingCondition)], _ s: inout ProtocolSchema,
                        _ errors: inout Diagnostics) {
        for (mi, fi, c) in parents {
            let name = String(c.field.dropFirst("parent.".count))
            let child = s.messages[mi].name
            // Every message with a field (or array) of this message is a parent it can have.
            var map: [Int: Int] = [:]
            var failed = false
            for (pi, p) in s.messages.enumerated() {
                guard let k = p.fields.firstIndex(where: { if case .message(let t) = $0.type { return t == mi }; return false }) else { continue }
                guard let j = integerField(name, in: p.fields, before: k) else {
                    errors.add(err(c.token, "'\(p.name)' nests '\(child)' (field '\(p.fields[k].name)') but has no single integer field '\(name)' before it: 'parent.\(name)' names a field of every message that nests '\(child)'"))
                    failed = true
                    break
                }
                map[pi] = j
            }
            if failed { continue }
            if map.isEmpty {
                errors.add(err(c.token, "'parent.\(name)': no message nests '\(child)' (a message's parent is the message with a field of its type)"))
                continue
            }
            s.messages[mi].fields[fi].condition?.parent = map
        }
    }
}
