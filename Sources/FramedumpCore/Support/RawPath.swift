/// File names on Unix are bytes, not text: `-r $'\xff.pcap'` names a file whose name is not
/// UTF-8. Swift's `CommandLine.arguments` replaces such bytes with U+FFFD, and the file is
/// then "not found". Arguments are read from the raw argv instead, and each byte that is not
/// part of valid UTF-8 is kept as a private-use scalar (U+10FE80 + byte - 0x80), which
/// `withCString` turns back into that byte whenever a path reaches the system.
public enum RawPath {
    /// Bytes 0x80...0xFF that are not valid UTF-8 become U+10FE80...U+10FEFF.
    static let escapeBase: UInt32 = 0x10FE00

    /// The process's arguments (without the program name), byte-exact.
    public static var arguments: [String] {
        (1..<max(1, Int(CommandLine.argc))).compactMap { i in CommandLine.unsafeArgv[i].map { decode($0) } }
    }

    /// A C string as text, every byte kept: valid UTF-8 as itself, other bytes escaped.
    public static func decode(_ p: UnsafePointer<CChar>) -> String {
        let bytes = UnsafeRawBufferPointer(start: p, count: strlenBytes(p))
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        return decodeSlow(bytes)
    }

    /// Byte by byte: each maximal valid sequence decoded, each bad byte escaped.
    static func decodeSlow(_ b: UnsafeRawBufferPointer) -> String {
        var out = String.UnicodeScalarView()
        var i = 0
        while i < b.count {
            let n = validLength(b, at: i)
            if n > 0 {
                out.append(contentsOf: String(decoding: b[i..<(i + n)], as: UTF8.self).unicodeScalars)
                i += n
            } else {
                out.append(Unicode.Scalar(escapeBase + UInt32(b[i]))!)
                i += 1
            }
        }
        return String(out)
    }

    /// The length of the valid UTF-8 sequence starting at `i` (0 when the byte starts none).
    static func validLength(_ b: UnsafeRawBufferPointer, at i: Int) -> Int {
        let c = b[i]
        if c < 0x80 { return 1 }
        let n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0
        guard n > 0, i + n <= b.count else { return 0 }
        return String(validating: b[i..<(i + n)], as: UTF8.self) != nil ? n : 0
    }

    static func strlenBytes(_ p: UnsafePointer<CChar>) -> Int {
        var n = 0
        while p[n] != 0 { n += 1 }
        return n
    }

    /// The bytes a path names on disk: escaped bytes back to themselves.
    public static func bytes(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        for u in s.unicodeScalars {
            if u.value >= escapeBase + 0x80 && u.value <= escapeBase + 0xFF {
                out.append(UInt8(u.value - escapeBase))
            } else {
                out.append(contentsOf: String(u).utf8)
            }
        }
        return out
    }

    /// Calls `body` with the path as the system needs it (a NUL-terminated byte string).
    public static func withCString<R>(_ s: String, _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        // The common case (no escapes) without a copy.
        if !s.unicodeScalars.contains(where: { $0.value >= escapeBase + 0x80 && $0.value <= escapeBase + 0xFF }) {
            return try s.withCString(body)
        }
        let b = bytes(s) + [0]
        return try b.withUnsafeBufferPointer { try $0.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) } }
    }

    /// How a path is shown to the user: escaped bytes as `\xFF`.
    public static func display(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            if u.value >= escapeBase + 0x80 && u.value <= escapeBase + 0xFF {
                let v = u.value - escapeBase
                out += "\\x" + String(v, radix: 16, uppercase: true)
            } else {
                out.unicodeScalars.append(u)
            }
        }
        return out
    }
}
