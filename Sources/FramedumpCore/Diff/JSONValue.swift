/// A JSON value as read from an NDJSON line, for the few lines a diff looks at closely
/// (field comparison, the report). Members keep their order; numbers keep their text, so
/// 64-bit integers stay exact.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// One JSON text, strictly (see `JSONTokens`); nothing but white space may follow it.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONSyntaxError) -> JSONValue {
        var t = JSONTokens(bytes)
        let v = try value(&t, depth: 0)
        t.skipSpace()
        guard t.i == bytes.count else { throw t.fail("text after the value") }
        return v
    }

    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        let bytes = Array(text.utf8)
        var result: Result<JSONValue, JSONSyntaxError>!
        bytes.withUnsafeBytes { b in
            do throws(JSONSyntaxError) { result = .success(try parse(b)) } catch { result = .failure(error) }
        }
        return try result.get()
    }

    static func value(_ t: inout JSONTokens, depth: Int) throws(JSONSyntaxError) -> JSONValue {
        t.skipSpace()
        guard let c = t.peek else { throw t.fail("expected a value") }
        switch c {
        case 0x22:
            let (r, e) = try t.string()
            return .string(t.text(r, escaped: e))
        case 0x7b, 0x5b:
            guard depth < JSONTokens.maxDepth else { throw t.fail("nested deeper than \(JSONTokens.maxDepth) levels") }
            let isObject = c == 0x7b
            let close: UInt8 = isObject ? 0x7d : 0x5d
            t.i += 1
            t.skipSpace()
            var members: [JSONMember] = []
            var elements: [JSONValue] = []
            if t.peek == close {
                t.i += 1
            } else {
                while true {
                    if isObject {
                        t.skipSpace()
                        let (r, e) = try t.string()
                        try t.expect(0x3a, "':'")
                        members.append(JSONMember(key: t.text(r, escaped: e), value: try value(&t, depth: depth + 1)))
                    } else {
                        elements.append(try value(&t, depth: depth + 1))
                    }
                    t.skipSpace()
                    guard let n = t.peek else { throw t.fail("unterminated") }
                    t.i += 1
                    if n == close { break }
                    guard n == 0x2c else { throw t.fail("expected ',' or a closing bracket") }
                }
            }
            return isObject ? .object(members) : .array(elements)
        case 0x2d, 0x30...0x39:
            let r = try t.number()
            return .number(String(decoding: UnsafeRawBufferPointer(rebasing: t.b[r]), as: UTF8.self))
        default:
            let r = try t.literal()
            switch r.count {
            case 4: return t.b[r.lowerBound] == 0x74 ? .bool(true) : .null
            default: return .bool(false)
            }
        }
    }

    /// A member of an object, by key.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let ms) = self else { return nil }
        return ms.first { $0.key == key }?.value
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }

    /// Compact JSON text (the exports' own form: no spaces).
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): Self.quote(s, to: &out)
        case .array(let a):
            out += "["
            for (n, x) in a.enumerated() {
                if n > 0 { out += "," }
                x.write(to: &out)
            }
            out += "]"
        case .object(let ms):
            out += "{"
            for (n, m) in ms.enumerated() {
                if n > 0 { out += "," }
                Self.quote(m.key, to: &out)
                out += ":"
                m.value.write(to: &out)
            }
            out += "}"
        }
    }

    static func quote(_ s: String, to out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let h = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }
}

public struct JSONMember: Equatable, Sendable {
    public var key: String
    public var value: JSONValue
}
