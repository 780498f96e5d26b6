/// An HTTP/2 frame's 9-byte header (RFC 9113 §4.1): 24-bit length, type, flags, 31-bit stream.
struct HTTP2FrameHeader {
    static let size = 9
    /// "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n": the client's first bytes (§3.4).
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    var length: Int
    var type: UInt8
    var flags: UInt8
    var stream: UInt32

    /// Reads the header at `at` (9 bytes must be there).
    @inline(__always)
    init(_ b: UnsafeRawBufferPointer, at i: Int) {
        length = Int(b[i]) << 16 | Int(b[i + 1]) << 8 | Int(b[i + 2])
        type = b[i + 3]
        flags = b[i + 4]
        stream = (UInt32(b[i + 5]) << 24 | UInt32(b[i + 6]) << 16 | UInt32(b[i + 7]) << 8 | UInt32(b[i + 8])) & 0x7fff_ffff
    }

    // Types (§6).
    static let data: UInt8 = 0, headers: UInt8 = 1, priority: UInt8 = 2, rstStream: UInt8 = 3, settings: UInt8 = 4,
               pushPromise: UInt8 = 5, ping: UInt8 = 6, goAway: UInt8 = 7, windowUpdate: UInt8 = 8, continuation: UInt8 = 9
    // Flags.
    static let endStream: UInt8 = 0x1, ack: UInt8 = 0x1, endHeaders: UInt8 = 0x4, padded: UInt8 = 0x8, priorityFlag: UInt8 = 0x20

    /// RST_STREAM's and GOAWAY's error codes (§7).
    static func errorName(_ code: UInt32) -> String {
        let names = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
                     "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
                     "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
        return Int(code) < names.count ? names[Int(code)] : "error \(code)"
    }

    /// The payload without its padding (§6.1): nil when the pad length runs past the frame.
    @inline(__always)
    static func unpadded(_ p: UnsafeRawBufferPointer, flags: UInt8) -> UnsafeRawBufferPointer? {
        guard flags & padded != 0 else { return p }
        guard !p.isEmpty, Int(p[0]) < p.count else { return nil }
        return UnsafeRawBufferPointer(rebasing: p[1..<(p.count - Int(p[0]))])
    }
}

/// gRPC's status codes (grpc/doc/statuscodes.md).
enum GRPCStatus {
    static let names = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
                        "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
                        "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]

    static func name(_ code: Int) -> String { code >= 0 && code < names.count ? names[code] : "status \(code)" }
}
