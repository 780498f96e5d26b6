/// `frame_end "\r\n";`: a frame ends with a byte string (Netty's DelimiterBasedFrameDecoder and
/// LineBasedFrameDecoder): text lines, NDJSON over TCP, NUL-terminated records. The delimiter is
/// part of the frame and not of its body; `max_frame` bounds how far it is looked for. A header
/// of fixed fields may come first; the search starts after it.
enum DelimitedFraming: FramingKind {
    static let name = "frame_end"
    static let keywords = ["frame_end"]

    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError) {
        let t = p.tok
        let text: String = try p.quoted("the bytes that end a frame (\"\\r\\n\", \"\\n\", \"\\0\")")
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 16 else {
            throw p.err(t, "frame_end takes 1 to 16 bytes (\\r, \\n, \\t, \\0 and \\xHH write control bytes)")
        }
        guard s.framingSettings[name] == nil else { throw p.err(t, "frame_end is given twice") }
        s.framingSettings[name] = bytes.map { String($0) }
    }

    static func chosen(by s: ProtocolSchema) -> Bool { s.framingSettings[name] != nil }

    static func check(_ s: ProtocolSchema) -> String? {
        s.length != nil || ConsumedFraming.chosen(by: s) ? "frame_end and a frame_length or body_length exclude each other (a frame ends at one or the other)" : nil
    }

    static func describe(_ s: ProtocolSchema) -> [String] {
        guard let d = delimiter(s) else { return [] }
        return ["  frame_end \"\(Self.escape(d))\" (a frame ends with it; max_frame \(s.maxFrame))"]
    }

    static func frameEnd(_ s: ProtocolSchema, _ dir: Direction?) -> any FrameEnd { DelimiterEnd(delimiter(s) ?? [0x0a]) }

    static func delimiter(_ s: ProtocolSchema) -> [UInt8]? { s.framingSettings[name]?.compactMap { UInt8($0) } }

    static func escape(_ b: [UInt8]) -> String {
        b.map { c -> String in
            switch c {
            case 0x0d: return "\\r"
            case 0x0a: return "\\n"
            case 0x09: return "\\t"
            case 0x00: return "\\0"
            case 0x5c: return "\\\\"
            case 0x22: return "\\\""
            case 0x20...0x7e: return String(UnicodeScalar(c))
            default: return "\\x" + String(c, radix: 16).leftPadded(2)
            }
        }.joined()
    }
}

private extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}

/// Finds a frame's delimiter: each search resumes where the last one on the same bytes stopped,
/// so a long frame arriving in many segments is read once, not once per segment.
final class DelimiterEnd: FrameEnd {
    let delimiter: [UInt8]
    let first: UInt8

    init(_ d: [UInt8]) {
        delimiter = d
        first = d[0]
    }

    var trailerSize: Int { delimiter.count }

    func check(_ b: UnsafeRawBufferPointer, at base: Int, from: Int, headerSize: Int, maxFrame: Int) -> FrameLayout.Check {
        // A delimiter that started before `from` may end after it.
        let start = max(base + headerSize, from - (delimiter.count - 1))
        let limit = min(b.count, base &+ maxFrame)
        if let e = find(b, from: start, to: limit) { return .ok(frameLength: e - base) }
        // Not within max_frame (and the bytes reach that far): no frame can be this long.
        if b.count - base >= maxFrame { return .tooLong(Int64(maxFrame) + 1) }
        return .needMoreData
    }

    /// The end (just past the delimiter) of the first delimiter in `b[from..<to]`.
    @inline(__always)
    func find(_ b: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
        Self.start(of: delimiter, in: b, from: from, to: to).map { $0 + delimiter.count }
    }

    /// Where byte string `d` first starts in `b[from..<to]`, if it does (also the decoder's, for
    /// values that end with a delimiter: `String(crlf)`).
    @inline(__always)
    static func start(of d: [UInt8], in b: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
        let n = d.count
        let first = d[0]
        var i = from
        while i + n <= to {
            if b[i] == first {
                var k = 1
                while k < n && b[i + k] == d[k] { k += 1 }
                if k == n { return i }
            }
            i += 1
        }
        return nil
    }

    func boundary(in b: UnsafeRawBufferPointer, from p: Int) -> Int? {
        find(b, from: p, to: b.count)
    }
}
