/// The handshake messages framedump reads (RFC 8446 §4, RFC 5246 §7.4): what the hellos say,
/// parsed with bounds-checked reads; every other message is passed over by its length.
enum TLSHandshakeType: UInt8 {
    case clientHello = 1, serverHello = 2, newSessionTicket = 4, endOfEarlyData = 5
    case encryptedExtensions = 8, certificate = 11, serverKeyExchange = 12, certificateRequest = 13
    case serverHelloDone = 14, certificateVerify = 15, clientKeyExchange = 16, finished = 20
    case keyUpdate = 24
}

/// What a ClientHello offers.
struct TLSClientHello: Equatable {
    var random: [UInt8] = []
    var serverName: String?
    var alpn: [String] = []
    /// The highest version offered, from supported_versions when present.
    var versions: [UInt16] = []
}

/// What a ServerHello chose.
struct TLSServerHello: Equatable {
    var random: [UInt8] = []
    var version: UInt16 = 0
    var suite: UInt16 = 0
    var alpn: String?
    var encryptThenMAC = false
    var extendedMasterSecret = false
    /// The compression method chosen (0: none; 1: DEFLATE, RFC 3749).
    var compression: UInt8 = 0
    /// A HelloRetryRequest (RFC 8446 §4.1.3): the client sends a second ClientHello.
    var helloRetry = false
}

/// Bounds-checked reading over one handshake message's body.
struct TLSReader {
    let b: UnsafeRawBufferPointer
    var at: Int
    let end: Int

    init(_ b: UnsafeRawBufferPointer, from: Int = 0, to: Int? = nil) {
        self.b = b
        at = from
        end = min(to ?? b.count, b.count)
    }

    var remaining: Int { end - at }

    mutating func u8() -> UInt8? {
        guard at < end else { return nil }
        defer { at += 1 }
        return b[at]
    }

    mutating func u16() -> UInt16? {
        guard at + 2 <= end else { return nil }
        defer { at += 2 }
        return UInt16(b[at]) << 8 | UInt16(b[at + 1])
    }

    mutating func bytes(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, at + n <= end else { return nil }
        defer { at += n }
        return UnsafeRawBufferPointer(rebasing: b[at..<(at + n)])
    }

    /// A vector with a 1- or 2-byte length, as a reader over its contents.
    mutating func vector(lengthBytes: Int) -> TLSReader? {
        let n: Int
        if lengthBytes == 1 { guard let l = u8() else { return nil }; n = Int(l) } else { guard let l = u16() else { return nil }; n = Int(l) }
        guard at + n <= end else { return nil }
        defer { at += n }
        return TLSReader(b, from: at, to: at + n)
    }
}

enum TLSHello {
    static let helloRetryRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    /// A ClientHello's body (after the 4-byte message header).
    static func client(_ body: UnsafeRawBufferPointer) -> TLSClientHello? {
        var r = TLSReader(body)
        var h = TLSClientHello()
        guard let legacy = r.u16(), let random = r.bytes(32), r.vector(lengthBytes: 1) != nil,
              r.vector(lengthBytes: 2) != nil, r.vector(lengthBytes: 1) != nil else { return nil }
        h.random = Array(random)
        h.versions = [legacy]
        guard r.remaining > 0, var ext = r.vector(lengthBytes: 2) else { return h }  // no extensions
        while ext.remaining > 0 {
            guard let type = ext.u16(), var data = ext.vector(lengthBytes: 2) else { return nil }
            switch type {
            case 0:  // server_name
                guard var list = data.vector(lengthBytes: 2) else { return nil }
                while list.remaining > 0 {
                    guard let kind = list.u8(), var name = list.vector(lengthBytes: 2) else { return nil }
                    if kind == 0, h.serverName == nil, let bytes = name.bytes(name.remaining) {
                        h.serverName = String(decoding: bytes, as: UTF8.self)
                    }
                }
            case 16:  // application_layer_protocol_negotiation
                guard var list = data.vector(lengthBytes: 2) else { return nil }
                while list.remaining > 0 {
                    guard var p = list.vector(lengthBytes: 1), let bytes = p.bytes(p.remaining) else { return nil }
                    if h.alpn.count < 16 { h.alpn.append(String(decoding: bytes, as: UTF8.self)) }
                }
            case 43:  // supported_versions
                guard var list = data.vector(lengthBytes: 1) else { return nil }
                var v: [UInt16] = []
                while list.remaining >= 2, let x = list.u16() { if v.count < 16 { v.append(x) } }
                if !v.isEmpty { h.versions = v }
            default: break
            }
        }
        return h
    }

    /// A ServerHello's body.
    static func server(_ body: UnsafeRawBufferPointer) -> TLSServerHello? {
        var r = TLSReader(body)
        var h = TLSServerHello()
        guard let legacy = r.u16(), let random = r.bytes(32), r.vector(lengthBytes: 1) != nil,
              let suite = r.u16(), let compression = r.u8() else { return nil }
        h.random = Array(random)
        h.compression = compression
        h.version = legacy
        h.suite = suite
        h.helloRetry = h.random == helloRetryRandom
        guard r.remaining > 0, var ext = r.vector(lengthBytes: 2) else { return h }
        while ext.remaining > 0 {
            guard let type = ext.u16(), var data = ext.vector(lengthBytes: 2) else { return nil }
            switch type {
            case 16: h.alpn = alpn(&data)
            case 22: h.encryptThenMAC = true
            case 23: h.extendedMasterSecret = true
            case 43: if let v = data.u16() { h.version = v }
            default: break
            }
        }
        return h
    }

    /// The protocol chosen in an ALPN extension (ServerHello in TLS 1.2, EncryptedExtensions in 1.3).
    static func alpn(_ data: inout TLSReader) -> String? {
        guard var list = data.vector(lengthBytes: 2), var p = list.vector(lengthBytes: 1),
              let bytes = p.bytes(p.remaining) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The ALPN protocol in an EncryptedExtensions body, if any.
    static func encryptedExtensionsALPN(_ body: UnsafeRawBufferPointer) -> String? {
        var r = TLSReader(body)
        guard var ext = r.vector(lengthBytes: 2) else { return nil }
        while ext.remaining > 0 {
            guard let type = ext.u16(), var data = ext.vector(lengthBytes: 2) else { return nil }
            if type == 16 { return alpn(&data) }
        }
        return nil
    }

    static func versionName(_ v: UInt16) -> String {
        switch v {
        case 0x0304: "TLS 1.3"
        case 0x0303: "TLS 1.2"
        case 0x0302: "TLS 1.1"
        case 0x0301: "TLS 1.0"
        case 0x0300: "SSL 3.0"
        default: "0x" + String(v, radix: 16)
        }
    }

    /// Whether these bytes start a TLS handshake record holding a ClientHello (how a
    /// connection on any port, or on a dissector's port, is known to be TLS).
    /// A first segment shorter than six bytes (a record header cut by the sender) is judged on
    /// the bytes it has.
    static func startsClientHello(_ b: UnsafeRawBufferPointer) -> Bool {
        guard b.count >= 1, b[0] == 22 else { return false }
        if b.count >= 2 && b[1] != 3 { return false }
        if b.count >= 3 && b[2] > 4 { return false }
        if b.count >= 5 {
            let length = Int(b[3]) << 8 | Int(b[4])
            if length < 4 || length > TLSRecordLayer.maxPlaintext { return false }
        }
        return b.count < 6 || b[5] == 1
    }
}

/// The record layer's bounds (RFC 8446 §5.1, RFC 5246 §6.2.3).
enum TLSRecordLayer {
    static let headerSize = 5
    static let maxPlaintext = 1 << 14
    /// Ciphertext may grow by up to 2,048 bytes (TLS 1.2; TLS 1.3 allows 256).
    static let maxRecord = (1 << 14) + 2048
}
