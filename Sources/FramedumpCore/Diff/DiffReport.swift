/// The two forms of a diff's result: a readable report like `diff -u` (colour on a terminal)
/// and one JSON object per difference.
public enum DiffReport {
    /// ```
    /// --- old.pcap
    /// +++ new.pcap
    /// @@ game@127.0.0.1:8000#2 c2s @@
    /// -Cs_10002 (pkt 57) {"ClientTime":1700000000002}
    /// @@ game@127.0.0.1:8000#4 c2s @@
    /// ~Cs_20001 (pkt 70 → pkt 71)
    ///     Line: 2 → 3
    /// 2 differences: 1 changed, 0 added, 1 removed (…)
    /// ```
    public static func text(_ r: DiffResult, old: String, new: String, color: Bool) -> String {
        func paint(_ code: String, _ s: String) -> String { color ? "\u{1b}[\(code)m" + s + "\u{1b}[0m" : s }
        var out = ""
        if !r.differences.isEmpty {
            out += paint("1", "--- " + old) + "\n" + paint("1", "+++ " + new) + "\n"
        }
        var hunk = ""
        for d in r.differences {
            let conn = d.conn + (d.newConn.map { " → " + $0 } ?? "")
            guard let dir = d.dir else {
                let sign = d.change == .added ? "+" : "-"
                let span = (d.oldPackets ?? d.newPackets).map { ", " + packets($0) } ?? ""
                out += paint(d.change == .added ? "32" : "31",
                             "\(sign)connection \(conn) (\(d.items ?? 0) items\(span))") + "\n"
                hunk = ""
                continue
            }
            // The client in each capture names the connection whatever ordinal --ignore gives it.
            let clients: String
            switch d.clients {
            case (let a?, let b?): clients = a == b ? " client \(a)" : " client \(a) → \(b)"
            case (let a?, nil), (nil, let a?): clients = " client \(a)"
            default: clients = ""
            }
            let h = "@@ \(conn) \(dir == .c2s ? "c2s" : "s2c") @@" + clients
            if h != hunk { out += paint("36", h) + "\n"; hunk = h }
            let name = d.message ?? "?"
            switch d.change {
            case .removed, .added:
                let at = (d.oldPackets ?? d.newPackets).map { " (" + packets($0) + ")" } ?? ""
                out += paint(d.change == .added ? "32" : "31",
                             (d.change == .added ? "+" : "-") + name + at + summary(d.line)) + "\n"
            case .changed:
                let a = d.oldPackets.map(packets) ?? "?", b = d.newPackets.map(packets) ?? "?"
                let at = d.oldPackets == nil && d.newPackets == nil ? "" : " (\(a) → \(b))"
                out += paint("33", "~" + name + at) + "\n"
                for f in d.fields {
                    out += "    " + (f.path.isEmpty ? "(value)" : f.path) + ": "
                        + paint("31", f.old?.text ?? "(none)") + " → " + paint("32", f.new?.text ?? "(none)") + "\n"
                }
            }
        }
        out += summaryLine(r) + "\n"
        return out
    }

    public static func summaryLine(_ r: DiffResult) -> String {
        let c = r.counts
        let sides = "old: \(r.oldItems) items in \(r.oldConnections) connections, new: \(r.newItems) in \(r.newConnections)"
        if r.differences.isEmpty { return "no differences (\(sides))" }
        let n = r.differences.count
        return "\(n) difference\(n == 1 ? "" : "s"): \(c.changed) changed, \(c.added) added, \(c.removed) removed (\(sides))"
    }

    static func packets(_ p: (UInt64, UInt64)) -> String { p.0 == p.1 ? "pkt \(p.0)" : "pkts \(p.0)-\(p.1)" }

    /// An added or removed item in a line: its fields, or for an event what it says.
    static func summary(_ line: JSONValue?) -> String {
        guard let line else { return "" }
        if let f = line["fields"] { return " " + f.text }
        guard case .object(let ms) = line else { return "" }
        let rest = ms.filter { !FieldCompare.perRun.contains($0.key) && !["protocol", "type"].contains($0.key) }
        return rest.isEmpty ? "" : " " + JSONValue.object(rest).text
    }

    /// One line per difference: `change`, `conn`, `dir`, `message`, `pkts_old`, `pkts_new`,
    /// and for `changed` the `fields` list of `{"path","old","new"}`.
    public static func json(_ r: DiffResult) -> String {
        var out = ""
        for d in r.differences {
            var ms: [JSONMember] = [
                JSONMember(key: "change", value: .string(d.change.rawValue)),
                JSONMember(key: "conn", value: .string(d.conn)),
                JSONMember(key: "dir", value: d.dir.map { .string($0 == .c2s ? "c2s" : "s2c") } ?? .null),
                JSONMember(key: "message", value: d.message.map { .string($0) } ?? .null),
                JSONMember(key: "pkts_old", value: packetsJSON(d.oldPackets)),
                JSONMember(key: "pkts_new", value: packetsJSON(d.newPackets)),
            ]
            if d.change == .changed {
                ms.append(JSONMember(key: "fields", value: .array(d.fields.map { f in
                    .object([JSONMember(key: "path", value: .string(f.path)),
                             JSONMember(key: "old", value: f.old ?? .null),
                             JSONMember(key: "new", value: f.new ?? .null)])
                })))
            }
            out += JSONValue.object(ms).text + "\n"
        }
        return out
    }

    static func packetsJSON(_ p: (UInt64, UInt64)?) -> JSONValue {
        guard let p else { return .null }
        return .array([.number(String(p.0)), .number(String(p.1))])
    }
}
