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

    /// Whether the bytes begin like an HTTP request (`GET `) or response (`HTTP/`).
    public static func looksLikeHTTP(_ b: UnsafeRawBufferPointer, request: Bool) -> Bool {
        let want: StaticString = request ? "GET " : "HTTP/"
        let n = min(b.count, want.utf8CodeUnitCount)
        guard n > 0 else { return false }
        for i in 0..<n where b[i] != want.utf8Start[i] { return false }
        return true
    }

    /// Reads a head from the start of `b`.
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
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: b[0..<end]), as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { return .notHTTP }
        var h = HTTPHandshake(isRequest: request, startLine: lines.removeFirst())
        h.length = end + 4
        let parts = h.startLine.split(separator: " ", maxSplits: 2).map(String.init)
        if request {
            guard parts.count == 3, parts[2].hasPrefix("HTTP/") else { return .notHTTP }
            h.method = parts[0]
            h.path = parts[1]
        } else {
            guard parts.count >= 2, let code = Int(parts[1]) else { return .notHTTP }
            h.status = code
        }
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            // Only token names (RFC 9110 §5.1): anything else is not a header we show.
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5c }) else { continue }
            h.headers.append(Header(name: name, value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return .complete(h)
    }

    /// The first value of a header field (names compare without case).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// A request that asks to become a WebSocket.
    public var isWebSocketUpgrade: Bool {
        guard isRequest, method == "GET", let up = header("Upgrade") else { return false }
        return up.lowercased().contains("websocket")
    }

    /// The comma-separated values of a header field, each trimmed.
    public func list(_ name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
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
            $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "permessage-deflate"
        }) else { return nil }
        for param in ext.split(separator: ";").dropFirst() {
            let kv = param.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let value = kv.count > 1 ? Int(kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) : nil
            switch kv[0].lowercased() {
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
