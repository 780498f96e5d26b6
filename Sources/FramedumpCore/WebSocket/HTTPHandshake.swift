import Crypto
import Foundation

/// The HTTP/1.1 request or response that opens a WebSocket (RFC 6455 §4): its start line and
/// header fields, read from the head of one direction of a stream.
public struct HTTPHandshake: Sendable {
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public var isRequest: Bool
    /// `GET /service HTTP/1.1` or `HTTP/1.1 101 Switching Protocols`.
    public var startLine: String
    public var method = ""
    public var path = ""
    public var status = 0
    public var headers: [Header] = []
    /// Bytes of the head, the blank line included.
    public var length = 0
    /// Stream offset of its first byte.
    public var offset: UInt64 = 0
    /// Response only: whether Sec-WebSocket-Accept matches the request's key (nil: no key seen).
    public var acceptValid: Bool?

    /// The longest head read; anything longer is not a handshake this tool waits for.
    public static let maxLength = 16 * 1024

    public enum Parse: Sendable {
        case complete(HTTPHandshake)
        case needMoreData
        case notHTTP
    }

    /// Whether the bytes begin like an HTTP request (`GET `, or another method: keep-alive
    /// HTTP may come before the upgrade) or response (`HTTP/`).
    public static func looksLikeHTTP(_ b: UnsafeRawBufferPointer, request: Bool) -> Bool {
        guard request else { return begins(b, "HTTP/") }
        return begins(b, "GET ") || begins(b, "POST ") || begins(b, "PUT ") || begins(b, "HEAD ")
            || begins(b, "DELETE ") || begins(b, "OPTIONS ") || begins(b, "PATCH ")
    }

    /// Whether `b` begins with `want`, or with a prefix of it when `b` is shorter.
    static func begins(_ b: UnsafeRawBufferPointer, _ want: StaticString) -> Bool {
        let n = min(b.count, want.utf8CodeUnitCount)
        guard n > 0 else { return false }
        for i in 0..<n where b[i] != want.utf8Start[i] { return false }
        return true
    }

    /// Reads a head from the start of `b`: bytes split into lines and fields here, a String
    /// made only for each start line, name and value kept.
    public static func parse(_ b: UnsafeRawBufferPointer, request: Bool) -> Parse {
        guard looksLikeHTTP(b, request: request) else { return .notHTTP }
        // The blank line that ends the head.
        var end = -1
        var i = 0
        let limit = min(b.count, maxLength)
        while i + 3 < limit {
            if b[i] == 0x0d && b[i + 1] == 0x0a && b[i + 2] == 0x0d && b[i + 3] == 0x0a { end = i; break }
            i += 1
        }
        guard end >= 0 else { return b.count >= maxLength ? .notHTTP : .needMoreData }
        var h = HTTPHandshake(isRequest: request, startLine: "")
        h.length = end + 4
        var lineStart = 0
        var first = true
        while lineStart <= end {
            // Lines end at CRLF; `b[end]` is the CR of the blank line, so `e + 1` stays inside.
            var e = lineStart
            while e < end && !(b[e] == 0x0d && b[e + 1] == 0x0a) { e += 1 }
            defer { lineStart = e + 2 }
            if first {
                h.startLine = text(b, lineStart, e)
                first = false
                continue
            }
            guard let colon = (lineStart..<e).first(where: { b[$0] == 0x3a }) else { continue }
            let (ns, ne) = trimmed(b, lineStart, colon)
            // Only token names (RFC 9110 §5.1): anything else is not a header we show.
            guard ns < ne, (ns..<ne).allSatisfy({ b[$0] > 0x20 && b[$0] < 0x7f && b[$0] != 0x22 && b[$0] != 0x5c }) else { continue }
            let (vs, ve) = trimmed(b, colon + 1, e)
            h.headers.append(Header(name: text(b, ns, ne), value: text(b, vs, ve)))
        }
        let parts = h.startLine.split(separator: " ", maxSplits: 2).map(String.init)
        if request {
            guard parts.count == 3, parts[2].hasPrefix("HTTP/") else { return .notHTTP }
            h.method = parts[0]
            h.path = parts[1]
        } else {
            guard parts.count >= 2, let code = Int(parts[1]) else { return .notHTTP }
            h.status = code
        }
        return .complete(h)
    }

    static func text(_ b: UnsafeRawBufferPointer, _ from: Int, _ to: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: b[from..<to]), as: UTF8.self)
    }

    /// `from..<to` without the spaces and tabs (HTTP's optional whitespace) at either end.
    static func trimmed(_ b: UnsafeRawBufferPointer, _ from: Int, _ to: Int) -> (Int, Int) {
        var s = from, e = to
        while s < e && (b[s] == 0x20 || b[s] == 0x09) { s += 1 }
        while e > s && (b[e - 1] == 0x20 || b[e - 1] == 0x09) { e -= 1 }
        return (s, e)
    }

    /// Text without the optional whitespace at either end.
    static func trimmed(_ s: Substring) -> Substring {
        var t = s.drop { $0 == " " || $0 == "\t" }
        while let l = t.last, l == " " || l == "\t" { t = t.dropLast() }
        return t
    }

    /// Header names compare without case (ASCII only: names are tokens).
    public static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7a)
        }
    }

    /// The first value of a header field (names compare without case).
    public func header(_ name: String) -> String? {
        headers.first { HTTPHandshake.sameName($0.name, name) }?.value
    }

    /// A request that asks to become a WebSocket.
    public var isWebSocketUpgrade: Bool {
        guard isRequest, method == "GET", let up = header("Upgrade") else { return false }
        return up.lowercased().contains("websocket")
    }

    /// The comma-separated values of a header field, each trimmed.
    public func list(_ name: String) -> [String] {
        headers.filter { HTTPHandshake.sameName($0.name, name) }
            .flatMap { $0.value.split(separator: ",") }
            .map { String(HTTPHandshake.trimmed($0)) }
            .filter { !$0.isEmpty }
    }

    /// Sec-WebSocket-Accept for a key (§4.2.2): base64(SHA-1(key + GUID)).
    public static func accept(forKey key: String) -> String {
        let digest = Insecure.SHA1.hash(data: Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        return Data(digest).base64EncodedString()
    }
}

/// permessage-deflate's negotiated parameters (RFC 7692 §7.1), from the server's response.
public struct DeflateParameters: Sendable, Equatable {
    public var serverNoContextTakeover = false
    public var clientNoContextTakeover = false
    public var serverMaxWindowBits: Int?
    public var clientMaxWindowBits: Int?

    /// The permessage-deflate offer the server accepted, if any.
    public init?(extensions: [String]) {
        guard let ext = extensions.first(where: {
            $0.split(separator: ";").first.map { HTTPHandshake.trimmed($0).lowercased() } == "permessage-deflate"
        }) else { return nil }
        for param in ext.split(separator: ";").dropFirst() {
            // `;=` splits into nothing: no parameter.
            let kv = param.split(separator: "=", maxSplits: 1).map { HTTPHandshake.trimmed($0) }
            guard let key = kv.first else { continue }
            // A quoted-string value (`"10"`) is allowed (§7.1).
            var v = kv.count > 1 ? kv[1] : ""
            while v.first == "\"" { v = v.dropFirst() }
            while v.last == "\"" { v = v.dropLast() }
            let value = kv.count > 1 ? Int(v) : nil
            switch key.lowercased() {
            case "server_no_context_takeover": serverNoContextTakeover = true
            case "client_no_context_takeover": clientNoContextTakeover = true
            case "server_max_window_bits": serverMaxWindowBits = value
            case "client_max_window_bits": clientMaxWindowBits = value
            default: break
            }
        }
    }

    public init() {}

    /// Whether the sender of a direction keeps its window between messages.
    public func contextTakeover(_ d: Direction) -> Bool {
        d == .c2s ? !clientNoContextTakeover : !serverNoContextTakeover
    }

    /// How the tree shows it.
    public var text: String {
        var parts = ["permessage-deflate"]
        parts.append(serverNoContextTakeover ? "server no context takeover" : "server context takeover")
        parts.append(clientNoContextTakeover ? "client no context takeover" : "client context takeover")
        if let b = serverMaxWindowBits { parts.append("server window \(b) bits") }
        if let b = clientMaxWindowBits { parts.append("client window \(b) bits") }
        return parts.joined(separator: ", ")
    }
}
