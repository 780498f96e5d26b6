/// HTTP/1.1's `Upgrade: h2c` (RFC 7540 §3.2): the client's HTTP/1.1 request, and its body, are
/// stream 1 of the HTTP/2 connection that follows the server's `101 Switching Protocols`; the
/// client's preface comes after its request, the server's frames after its 101.
struct HTTP1Head {
    /// The head so far (at most `HTTPHandshake.maxLength` bytes), and where it began.
    var bytes: [UInt8] = []
    var offset: UInt64 = 0
    var packet = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))

    /// Takes bytes from `b` at `i` up to the blank line that ends the head; true once it has.
    mutating func take(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> Bool {
        while i < b.count && bytes.count < HTTPHandshake.maxLength {
            bytes.append(b[i])
            i += 1
            let n = bytes.count
            if n >= 4 && bytes[n - 4] == 0x0d && bytes[n - 3] == 0x0a && bytes[n - 2] == 0x0d && bytes[n - 1] == 0x0a { return true }
        }
        return false
    }

    var full: Bool { bytes.count >= HTTPHandshake.maxLength }

    func parsed(request: Bool) -> HTTPHandshake? {
        bytes.withUnsafeBytes { if case .complete(let h) = HTTPHandshake.parse($0, request: request) { return h } else { return nil } }
    }

    /// The request's fields as HTTP/2 would carry them: pseudo-headers from the request line
    /// and Host, then the others in lower case, without HTTP/1.1's connection-specific ones.
    static func requestHeaders(_ h: HTTPHandshake) -> HeaderList {
        var pairs: [(String, String)] = [(":method", h.method), (":scheme", "http"), (":path", h.path)]
        if let host = h.header("Host") { pairs.append((":authority", host)) }
        let dropped: Set<String> = ["host", "connection", "upgrade", "http2-settings", "content-length", "keep-alive", "transfer-encoding"]
        for f in h.headers where !dropped.contains(f.name.lowercased()) { pairs.append((f.name.lowercased(), f.value)) }
        return HeaderList(pairs)
    }
}

extension HeaderList {
    init(_ pairs: [(String, String)]) {
        self.init()
        for (n, v) in pairs {
            let ns = text.count
            text += n.utf8
            let vs = text.count
            text += v.utf8
            fields.append((ns..<vs, vs..<text.count))
        }
    }
}

extension HTTP2Connection {
    /// The client's upgrade request, read whole: stream 1's request headers (nil when it is no
    /// request asking for h2c: said, and the direction read no further).
    func upgradeRequest(_ head: HTTP1Head, _ packet: PacketRef) -> (call: GRPCCall, body: Int)? {
        guard let h = head.parsed(request: true) else {
            problem(.c2s, "preface", "neither the HTTP/2 client preface nor an HTTP/1.1 request", head.offset, head.bytes.count, packet, lose: true)
            return nil
        }
        guard h.list("Upgrade").contains(where: { $0.lowercased() == "h2c" }) else {
            problem(.c2s, "preface", "an HTTP/1.1 request (\(h.method) \(h.path)) that does not ask for h2c (Upgrade: h2c)", head.offset, head.bytes.count, packet, lose: true)
            return nil
        }
        if h.header("Transfer-Encoding") != nil {
            problem(.c2s, "upgrade", "the h2c upgrade request's body is chunked (not read)", head.offset, head.bytes.count, packet, lose: true)
            return nil
        }
        let length = h.header("Content-Length").map { Int(HTTPHandshake.trimmed(Substring($0))) } ?? 0
        guard let length, length >= 0 else {
            problem(.c2s, "upgrade", "the h2c upgrade request's Content-Length is no number", head.offset, head.bytes.count, packet, lose: true)
            return nil
        }
        guard let call = request(1, HTTP1Head.requestHeaders(h), packet) else { return nil }
        return (call, length)
    }

    /// The server's answer to the upgrade: true when it switched to HTTP/2 (`101` with `Upgrade: h2c`).
    func upgradeResponse(_ head: HTTP1Head, _ packet: PacketRef) -> Bool {
        guard let h = head.parsed(request: false) else {
            problem(.s2c, "preface", "an HTTP/1.1 response head that cannot be read", head.offset, head.bytes.count, packet, lose: true)
            return false
        }
        guard h.status == 101, h.list("Upgrade").contains(where: { $0.lowercased() == "h2c" }) else {
            problem(.s2c, "upgrade", "the server answered the h2c upgrade with HTTP/1.1 \(h.status): the connection stays HTTP/1.1", head.offset, head.bytes.count, packet, lose: true)
            readers[Direction.c2s.rawValue].lost = true
            state.upgradesDeclined += 1
            return false
        }
        state.upgrades += 1
        return true
    }
}
