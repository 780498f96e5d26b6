/// A connection's endpoints, formatted once for every line the outputs write about it:
/// `client > server` / `server > client` for the tree, and the JSON line openings
/// `{"conn":"C-S","dir":"c2s"` (plain and `--diffable`), and the same without `dir`.
final class ConnectionText {
    /// Raw (no reference counting per line): immutable after init, freed in deinit; a piece is
    /// copied out before the call that took it returns, while `c.outputCache` holds this text
    /// (GoldenTests and ShardPoolTests under AddressSanitizer, scripts/sanitize.sh).
    let arena: UnsafeMutableBufferPointer<UInt8>
    @exclusivity(unchecked) var spans: [(Int, Int)] = []

    init(_ c: Connection) {
        let client = c.client.text, server = c.server.text
        let clientAddr = c.client.address.isV6 ? "[\(c.client.address.text)]" : c.client.address.text
        let pieces = [
            "\(client) > \(server)", "\(server) > \(client)",
            "{\"conn\":\"\(client)-\(server)\",\"dir\":\"c2s\"", "{\"conn\":\"\(client)-\(server)\",\"dir\":\"s2c\"",
            "{\"conn\":\"\(clientAddr):*-\(server)\",\"dir\":\"c2s\"", "{\"conn\":\"\(clientAddr):*-\(server)\",\"dir\":\"s2c\"",
            "{\"conn\":\"\(client)-\(server)\"", "{\"conn\":\"\(clientAddr):*-\(server)\"",
        ]
        let bytes = pieces.flatMap { Array($0.utf8) }
        arena = .allocate(capacity: bytes.count)
        _ = arena.initialize(from: bytes)
        var at = 0
        for p in pieces {
            spans.append((at, p.utf8.count))
            at += p.utf8.count
        }
    }

    deinit { arena.deallocate() }

    @inline(__always) func piece(_ i: Int) -> UnsafeRawBufferPointer {
        let (o, l) = spans[i]
        return UnsafeRawBufferPointer(start: arena.baseAddress! + o, count: l)
    }

    @inline(__always) func arrow(_ d: Direction) -> UnsafeRawBufferPointer { piece(d.rawValue) }
    @inline(__always) func jsonOpening(_ d: Direction, diffable: Bool) -> UnsafeRawBufferPointer {
        piece(2 + (diffable ? 2 : 0) + d.rawValue)
    }

    /// `{"conn":"C-S"` for lines about the whole connection (open, close).
    @inline(__always) func jsonConnection(diffable: Bool) -> UnsafeRawBufferPointer { piece(diffable ? 7 : 6) }

    /// After the close line: a closed connection kept for its late segments (TIME-WAIT) need
    /// not keep its text (made again if something is printed about it later).
    static func forget(_ c: Connection) { c.outputCache = nil }

    /// The connection's text, made on first use.
    @inline(__always) static func of(_ c: Connection) -> ConnectionText {
        if let t = c.outputCache { return unsafeDowncast(t, to: ConnectionText.self) }
        return made(for: c)
    }

    /// (Once per connection: kept out of the printers' per-message code.)
    @inline(never) static func made(for c: Connection) -> ConnectionText {
        let t = ConnectionText(c)
        c.outputCache = t
        return t
    }
}
