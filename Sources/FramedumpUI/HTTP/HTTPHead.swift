/// A request's head (request line and header fields, RFC 9112), read from the bytes a client
/// sent: what the page's server answers from. Everything is bounded before it is kept: the
/// head (`maxBytes`), the number of fields, and the target; what does not fit is refused,
/// never grown into.
package struct HTTPHead: Equatable {
    /// At most this many bytes, up to and with the blank line that ends the head.
    static let maxBytes = 16 << 10
    static let maxFields = 64

    package var method: String
    /// The path, percent-decoded (`/api/messages`).
    package var path: String
    /// The query's parameters, percent-decoded; `+` stays a plus (the page encodes spaces as %20,
    /// and a filter has no other way to say a plus).
    package var query: [String: String]
    package var version: String
    /// Field names in lower case; a repeated field keeps its last value.
    package var fields: [String: String]

    package enum Problem: Error, Equatable {
        /// Not yet: more bytes may complete it.
        case incomplete
        /// Past `maxBytes` or `maxFields`.
        case tooLarge
        case malformed(String)
    }

    /// Where the head ends in `bytes` (one past its blank line), or nil when it has not yet.
    static func end(of bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var i = 3
        while i < bytes.count {
            if bytes[i] == 0x0a {
                if bytes[i - 1] == 0x0a { return i + 1 }  // bare LF LF
                if bytes[i - 1] == 0x0d && bytes[i - 2] == 0x0a { return i + 1 }
            }
            i += 1
        }
        return nil
    }

    /// The head at the start of `bytes` (which may hold more after it).
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(Problem) -> (head: HTTPHead, length: Int) {
        guard let length = end(of: UnsafeRawBufferPointer(rebasing: bytes[..<min(bytes.count, maxBytes)])) else {
            throw bytes.count >= maxBytes ? .tooLarge : .incomplete
        }
        // Lines, CRLF or bare LF, cut as bytes (in a String "\r\n" is one character).
        var lines: [Substring] = []
        var from = 0
        for i in 0..<length where bytes[i] == 0x0a {
            let to = i > from && bytes[i - 1] == 0x0d ? i - 1 : i
            lines.append(Substring(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[from..<to]), as: UTF8.self)))
            from = i + 1
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { throw .malformed("no request line") }
        let parts = first.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isASCII && $0.isUppercase }) else {
            throw .malformed("not a request line")
        }
        guard parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0" else { throw .malformed("not HTTP/1.x") }
        let target = parts[1]
        guard target.hasPrefix("/") else { throw .malformed("not a path") }
        let q = target.firstIndex(of: "?")
        guard let path = percentDecoded(target[..<(q ?? target.endIndex)]) else { throw .malformed("bad percent-encoding") }
        var query: [String: String] = [:]
        if let q {
            for pair in target[target.index(after: q)...].split(separator: "&") {
                let eq = pair.firstIndex(of: "=")
                guard let name = percentDecoded(pair[..<(eq ?? pair.endIndex)]),
                      let value = percentDecoded(eq.map { pair[pair.index(after: $0)...] } ?? "") else {
                    throw .malformed("bad percent-encoding")
                }
                query[name] = value
            }
        }
        guard lines.count - 1 <= maxFields else { throw .tooLarge }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { throw .malformed("not a header field") }
            let name = line[..<colon]
            guard name.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else { throw .malformed("not a header field") }
            fields[name.lowercased()] = String(line[line.index(after: colon)...].trimmingSpaces)
        }
        return (HTTPHead(method: String(parts[0]), path: path, query: query, version: String(parts[2]), fields: fields), length)
    }

    /// `%XX` decoded; nil for a `%` not followed by two hex digits or bytes that are not UTF-8.
    static func percentDecoded(_ s: Substring) -> String? {
        guard s.contains("%") else { return String(s) }
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        var it = s.utf8.makeIterator()
        while let c = it.next() {
            if c != 0x25 { out.append(c); continue }
            guard let h = it.next().flatMap(hexValue), let l = it.next().flatMap(hexValue) else { return nil }
            out.append(h << 4 | l)
        }
        return String(validating: out, as: UTF8.self)
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
