import FramedumpCore

/// The API's answers, built as text: small objects, written once, no encoder's reflection.
struct JSONOut {
    /// A JSON string literal: the library's own (one escaping rule for every output).
    static func quoted(_ s: String) -> String { JSONText.quoted(s) }

    /// A number JSON can hold (NaN and infinities have no JSON form: null).
    static func number(_ d: Double) -> String { d.isFinite ? String(d) : "null" }

    static func hex(_ b: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var o = [UInt8]()
        o.reserveCapacity(b.count * 2 + 2)
        o.append(0x22)
        for x in b { o.append(digits[Int(x >> 4)]); o.append(digits[Int(x & 15)]) }
        o.append(0x22)
        return String(decoding: o, as: UTF8.self)
    }

    /// `{"a":1,"b":"x"}` from members already in JSON form.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }
}
