/// What a message body looks like, from its bytes alone.
public enum BodyKind: String, Sendable, Comparable {
    case empty, json, protobuf, text, binary, msgpack

    public static func < (a: BodyKind, b: BodyKind) -> Bool { a.rawValue < b.rawValue }
}

/// A length-prefixed UTF-8 string found at the same place in a message's bodies.
public struct FoundString: Sendable, Equatable {
    /// From the body's start.
    public var offset: Int
    /// 1, 2 or 4 bytes of prefix.
    public var prefix: Int
    public var order: ByteOrder
}

/// Per message id: the body kind most of its bodies have, and strings found in binary ones.
public struct BodyGuess: Sendable {
    public var id: UInt64?
    public var kind: BodyKind
    /// Bodies that have `kind`, of `count`.
    public var matching: Int
    public var count: Int
    public var strings: [FoundString]
    /// Every body of the id is one whole MessagePack value (a heartbeat's counter, a nil too),
    /// so the id does not stand against `body msgpack` where the others are MessagePack objects.
    public var messagePack = false
}

/// Content checks for a body: a JSON parse, a protobuf tag/wire-type walk, UTF-8.
enum BodyClassifier {
    static func kind(_ b: ArraySlice<UInt8>) -> BodyKind {
        if b.isEmpty { return .empty }
        if isJSON(b) { return .json }
        if isText(b) { return .text }
        // An object of MessagePack before protobuf: a map or array that is the whole body (of a
        // few bytes at least: a short run of random bytes is a valid value by chance).
        if b.count >= 4, Array(b).withUnsafeBytes({ MessagePackBody.oneValue($0) }) == (true, true) { return .msgpack }
        if isProtobuf(b) { return .protobuf }
        return .binary
    }

    static func isJSON(_ b: ArraySlice<UInt8>) -> Bool {
        guard let first = b.first(where: { $0 != 0x20 && $0 != 0x0a && $0 != 0x0d && $0 != 0x09 }),
              first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { return false }
        // The library's one JSON parser (`framedump diff` reads exports with it).
        return Array(b).withUnsafeBytes { raw in (try? JSONValue.parse(raw)) != nil }
    }

    /// Valid UTF-8 with printable characters (tabs and line ends allowed).
    static func isText(_ b: ArraySlice<UInt8>) -> Bool {
        var printable = 0
        var it = b.makeIterator()
        var decoder = UTF8()
        loop: while true {
            switch decoder.decode(&it) {
            case .scalarValue(let s):
                let v = s.value
                if v >= 0x20 && v != 0x7f || v == 0x09 || v == 0x0a || v == 0x0d { printable += 1 } else { return false }
            case .emptyInput: break loop
            case .error: return false
            }
        }
        return printable > 0
    }

    /// A walk over protobuf's wire format: every tag a valid field number and wire type, every
    /// length inside the body, the walk ending exactly at its end.
    static func isProtobuf(_ b: ArraySlice<UInt8>) -> Bool {
        var p = b.startIndex
        var fields = 0
        func varint() -> UInt64? {
            var v: UInt64 = 0, shift: UInt64 = 0
            while p < b.endIndex, shift < 64 {
                let x = b[p]
                p += 1
                v |= UInt64(x & 0x7f) << shift
                if x & 0x80 == 0 { return v }
                shift += 7
            }
            return nil
        }
        while p < b.endIndex {
            guard let tag = varint() else { return false }
            let field = tag >> 3
            guard field >= 1, field < 1 << 29 else { return false }
            switch tag & 7 {
            case 0: guard varint() != nil else { return false }
            case 1: guard b.endIndex - p >= 8 else { return false }; p += 8
            case 2:
                guard let n = varint(), n <= UInt64(b.endIndex - p) else { return false }
                p += Int(n)
            case 5: guard b.endIndex - p >= 4 else { return false }; p += 4
            default: return false
            }
            fields += 1
        }
        return fields > 0
    }

    /// Length-prefixed strings (at least 3 printable UTF-8 bytes) in a binary body.
    static func strings(_ b: ArraySlice<UInt8>, order: ByteOrder) -> [FoundString] {
        var found: [FoundString] = []
        var p = b.startIndex
        while p < b.endIndex {
            var hit = false
            for prefix in [2, 1, 4] where p + prefix <= b.endIndex {
                var n = 0
                for k in 0..<prefix { n = n << 8 | Int(b[p + (order == .big ? k : prefix - 1 - k)]) }
                guard n >= 3, n <= b.endIndex - p - prefix else { continue }
                let s = b[(p + prefix)..<(p + prefix + n)]
                if isText(s), s.allSatisfy({ $0 >= 0x20 || $0 >= 0x80 }) {
                    found.append(FoundString(offset: p - b.startIndex, prefix: prefix, order: order))
                    p += prefix + n
                    hit = true
                    break
                }
            }
            if !hit { p += 1 }
        }
        return found
    }

    /// The kind of each id's bodies (by majority), and for binary ones the strings every body
    /// of the id has at the same place.
    static func classify(_ bodies: [(id: UInt64?, body: ArraySlice<UInt8>)], order: ByteOrder) -> [BodyGuess] {
        var byID: [UInt64?: [ArraySlice<UInt8>]] = [:]
        var ids: [UInt64?] = []
        for (id, body) in bodies {
            if byID[id] == nil {
                ids.append(id)
                byID[id] = []
            }
            if byID[id]!.count < 512 { byID[id]!.append(body) }
        }
        return ids.sorted { ($0 ?? 0) < ($1 ?? 0) }.map { id in
            let list = byID[id]!
            var counts: [BodyKind: Int] = [:]
            for b in list { counts[kind(b), default: 0] += 1 }
            // Empty bodies say nothing about the others.
            let nonEmpty = counts.filter { $0.key != .empty }
            let (k, m) = nonEmpty.max { a, b in a.value != b.value ? a.value < b.value : a.key > b.key } ?? (.empty, counts[.empty] ?? 0)
            var strings: [FoundString] = []
            if k == .binary {
                let each = list.filter { !$0.isEmpty }.prefix(64).map { Self.strings($0, order: order) }
                if let first = each.first {
                    strings = first.filter { s in each.allSatisfy { $0.contains(s) } }
                }
            }
            var g = BodyGuess(id: id, kind: k, matching: m, count: list.count, strings: strings)
            g.messagePack = list.allSatisfy { $0.isEmpty || Array($0).withUnsafeBytes { MessagePackBody.oneValue($0).whole } }
            return g
        }
    }
}
