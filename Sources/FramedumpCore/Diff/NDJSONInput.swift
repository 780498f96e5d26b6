#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct DiffInputError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ d: String) { description = d }
}

/// An NDJSON export (`--diffable` or plain `-T json`) read as an input of `framedump diff`:
/// the same tracks and fingerprints a capture gives. Connections are told apart by `conn`
/// (a stable key, or `CLIENT:PORT-SERVER:PORT`); `open`, `close` and the reassembler's notices
/// are not items, nor lines without `conn` (`-z` statistics, limits reached). Every line must
/// be strict JSON: the first that is not is an error.
public enum NDJSONInput {
    /// The longest line accepted (a line is held whole while it is read).
    public static let maxLine = 64 << 20

    /// Whether the file starts like NDJSON (its first non-blank byte is `{`) rather than a capture.
    public static func looks(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var b = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &b, 64)
        guard n > 0 else { return false }
        return b[..<n].first { ![0x20, 0x0a, 0x0d, 0x09].contains($0) } == 0x7b
    }

    public static func load(_ path: String, ignore: [IgnorePattern], wanted: Set<ItemRef>? = nil)
        throws(DiffInputError) -> (connections: [TrackedConnection], fetched: [ItemRef: JSONValue]) {
        var matched: [Bool] = []
        return try load(path, ignore: ignore, wanted: wanted, matched: &matched)
    }

    /// The same, telling which `--ignore` patterns matched something.
    public static func load(_ path: String, ignore: [IgnorePattern], wanted: Set<ItemRef>?, matched: inout [Bool])
        throws(DiffInputError) -> (connections: [TrackedConnection], fetched: [ItemRef: JSONValue]) {
        let scanner = LineScanner(ignore: ignore)
        defer { matched = scanner.matched }
        var conns: [TrackedConnection] = []
        var byConn: [String: TrackedConnection] = [:]
        var counts: [[Int]] = []
        var fetched: [ItemRef: JSONValue] = [:]
        var lineNumber = 0
        var failure: DiffInputError?
        try forEachLine(path) { line in
            lineNumber += 1
            if line.isEmpty { return true }
            let f: LineFacts
            do { f = try scanner.scan(line) } catch {
                failure = DiffInputError("\(path):\(lineNumber): not strict JSON (\(error))")
                return false
            }
            // Lines about no connection (statistics, limits reached) are not compared.
            guard let cr = f.conn else { return true }
            let conn = String(decoding: UnsafeRawBufferPointer(rebasing: line[cr]), as: UTF8.self)
            let t: TrackedConnection
            if let x = byConn[conn] {
                t = x
            } else {
                if let (p, s) = StableKeys.parse(conn) {
                    t = TrackedConnection(order: conns.count, server: s)
                    t.protocolName = p == "tcp" ? nil : p
                    t.key = conn
                    t.givenKey = true
                } else {
                    t = TrackedConnection(order: conns.count, server: StableKeys.server(ofConn: conn))
                    t.client = StableKeys.client(ofConn: conn)
                }
                conns.append(t)
                counts.append([0, 0])
                byConn[conn] = t
            }
            if !t.givenKey, let p = f.proto { t.protocolName = String(decoding: UnsafeRawBufferPointer(rebasing: line[p]), as: UTF8.self) }
            if let ty = f.type, !isItem(UnsafeRawBufferPointer(rebasing: line[ty])) { return true }
            guard let d = f.dir else { return true }
            let (first, last) = f.pkts ?? (0, 0)
            t.packet(first, last)
            let index = counts[t.order][d.rawValue]
            counts[t.order][d.rawValue] += 1
            if let wanted {
                let ref = ItemRef(conn: t.order, dir: d.rawValue, index: index)
                if wanted.contains(ref), let v = try? JSONValue.parse(line) { fetched[ref] = v }
            } else {
                t.add(d.rawValue, MessagePrint(identity: f.identity, content: f.content, first: first, last: last), keep: true)
            }
            return true
        }
        if let failure { throw failure }
        return (conns, fetched)
    }

    /// Items are messages and the events decoding reports (malformed, gap, handshake).
    static func isItem(_ type: UnsafeRawBufferPointer) -> Bool {
        !(LineScanner.equal(type, "open") || LineScanner.equal(type, "close") || LineScanner.equal(type, "late")
          || LineScanner.equal(type, "reset-ignored") || LineScanner.equal(type, "after-close")
          || LineScanner.equal(type, "conflict"))
    }

    /// Calls `body` with each line (without its newline) until it returns false.
    static func forEachLine(_ path: String, _ body: (UnsafeRawBufferPointer) -> Bool) throws(DiffInputError) {
        let fd = path == "-" ? dup(0) : open(path, O_RDONLY)
        guard fd >= 0 else { throw DiffInputError("\(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var cap = 1 << 20
        var buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 8)
        defer { buf.deallocate() }
        var have = 0
        var eof = false
        while true {
            // Every complete line in the buffer.
            var start = 0
            var k = 0
            let p = buf.assumingMemoryBound(to: UInt8.self)
            while k < have {
                if p[k] == 0x0a {
                    if !body(UnsafeRawBufferPointer(start: buf + start, count: k - start)) { return }
                    start = k + 1
                }
                k += 1
            }
            if eof {
                if start < have { _ = body(UnsafeRawBufferPointer(start: buf + start, count: have - start)) }
                return
            }
            if start > 0 {
                memmove(buf, buf + start, have - start)
                have -= start
            }
            if have == cap {
                guard cap < maxLine else { throw DiffInputError("\(path): a line longer than \(maxLine) bytes") }
                let nb = UnsafeMutableRawPointer.allocate(byteCount: cap * 2, alignment: 8)
                nb.copyMemory(from: buf, byteCount: have)
                buf.deallocate()
                buf = nb
                cap *= 2
            }
            let n = read(fd, buf + have, cap - have)
            if n < 0 { throw DiffInputError("\(path): \(String(cString: strerror(errno)))") }
            if n == 0 { eof = true } else { have += n }
        }
    }
}
