/// `-T fields -e NAME ... [-E KEY=VALUE]`, as tshark's most used export: one line per message,
/// the values of the named fields (the names `-Y` takes) separated by a tab, several values
/// of one field joined by a comma, a field the message does not have left empty.
public struct FieldsOptions: Sendable {
    public enum Occurrence: Sendable { case first, last, all }
    public var names: [String] = []
    public var separator = "\t"
    public var aggregator = ","
    public var quote: String?
    public var occurrence = Occurrence.all
    public var header = false
    public init() {}

    /// tshark's `-E` settings: header=y|n, separator=/t|/s|C, aggregator=/s|C, quote=d|s|n,
    /// occurrence=f|l|a. Nil and the reason when one is not understood.
    public mutating func set(_ setting: String) -> String? {
        guard let eq = setting.firstIndex(of: "=") else { return "-E takes KEY=VALUE (header, separator, aggregator, quote, occurrence)" }
        let key = setting[..<eq], value = String(setting[setting.index(after: eq)...])
        func character(_ v: String) -> String? { v == "/t" ? "\t" : v == "/s" ? " " : v.count == 1 ? v : nil }
        switch key {
        case "header":
            guard value == "y" || value == "n" else { return "-E header takes y or n" }
            header = value == "y"
        case "separator":
            guard let c = character(value) else { return "-E separator takes /t, /s or one character" }
            separator = c
        case "aggregator":
            guard let c = character(value) else { return "-E aggregator takes /s or one character" }
            aggregator = c
        case "quote":
            switch value {
            case "d": quote = "\""
            case "s": quote = "'"
            case "n": quote = nil
            default: return "-E quote takes d, s or n"
            }
        case "occurrence":
            switch value {
            case "f": occurrence = .first
            case "l": occurrence = .last
            case "a": occurrence = .all
            default: return "-E occurrence takes f, l or a"
            }
        default: return "-E: unknown setting '\(key)' (header, separator, aggregator, quote, occurrence)"
        }
        return nil
    }
}

/// What one `-e` column shows.
public enum FieldColumn: Sendable {
    case reference(FieldReference)
    /// The message's time (`msg.time`, or Wireshark's `frame.time_epoch`), as NDJSON's `ts`.
    case time
    /// The packet that completed the message (Wireshark's `frame.number`).
    case packet

    /// `-e NAME`, checked against the loaded dissectors as `-Y` checks its names.
    public static func parse(_ name: String, protocols: [ProtocolSchema]) throws(FilterError) -> FieldColumn {
        switch name.lowercased() {
        case "msg.time", "frame.time_epoch": return .time
        case "msg.pkt", "frame.number": return .packet
        default: break
        }
        guard case .present(let r) = try FilterParser.parse(name, protocols: protocols) else {
            throw FilterError(column: 1, message: "-e takes a field name, not an expression", filter: name)
        }
        return .reference(r)
    }
}

public final class FieldsPrinter: MessageSink {
    let out: OutputBuffer
    let columns: [FieldColumn]
    let options: FieldsOptions
    /// Each column's compiled path, per protocol (made on first use).
    var paths: [ObjectIdentifier: [CompiledPath?]] = [:]

    public init(output: OutputBuffer, columns: [FieldColumn], options: FieldsOptions) {
        out = output
        self.columns = columns
        self.options = options
    }

    /// The `-E header=y` line: the names as given.
    public static func header(_ options: FieldsOptions) -> String {
        options.names.map { name in options.quote.map { $0 + name + $0 } ?? name }.joined(separator: options.separator) + "\n"
    }

    public func message(_ m: DecodedMessage, _ c: Connection, _ p: ProtocolRuntime) {
        let compiled: [CompiledPath?]
        if let known = paths[ObjectIdentifier(p)] {
            compiled = known
        } else {
            compiled = columns.map { col -> CompiledPath? in
                guard case .reference(.field(let proto, let path)) = col, proto == p.schema.name.lowercased() else { return nil }
                return CompiledPath(path, p.schema)
            }
            paths[ObjectIdentifier(p)] = compiled
        }
        var text = ""
        for (i, col) in columns.enumerated() {
            if i > 0 { text += options.separator }
            var values: [String] = []
            switch col {
            case .time: values = ["\(m.frame.lastPacket.ts.seconds).\(String(m.frame.lastPacket.ts.nanos + 1_000_000_000).dropFirst())"]
            case .packet: values = ["\(m.frame.lastPacket.number)"]
            case .reference(.field):
                if let cp = compiled[i] {
                    FilterEvaluator.walk(m, p, cp) { f in
                        if let o = FilterEvaluator.observe(f, m, p) { values.append(Self.text(o)) }
                        return true
                    }
                }
            case .reference(let r): values = FilterEvaluator.values(r, m, c, p).map(Self.text)
            }
            switch options.occurrence {
            case .first: values = Array(values.prefix(1))
            case .last: values = Array(values.suffix(1))
            case .all: break
            }
            guard !values.isEmpty else { continue }
            let joined = values.joined(separator: options.aggregator)
            text += options.quote.map { $0 + joined + $0 } ?? joined
        }
        text += "\n"
        out.write(text)
    }

    /// A value as tshark's fields print it: numbers as numbers (not their labels), bytes as hex.
    static func text(_ o: FilterEvaluator.Observed) -> String {
        switch o {
        case .integer(let negative, let magnitude, _): return (negative ? "-" : "") + String(magnitude)
        case .float(let d): return String(d)
        case .text(let s): return s
        case .bytes(let b):
            let hex = Array("0123456789abcdef".utf8)
            var s = [UInt8]()
            s.reserveCapacity(b.count * 2)
            for x in b { s.append(hex[Int(x >> 4)]); s.append(hex[Int(x & 15)]) }
            return String(decoding: s, as: UTF8.self)
        }
    }

    public func opened(_ c: Connection, _ p: ProtocolRuntime?, packet: PacketRef) {}
    public func malformed(_ c: Connection, _ p: ProtocolRuntime, _ d: Direction, offset: UInt64, length: UInt64,
                          reason: MalformedReason, packet: PacketRef) {}
    public func gap(_ c: Connection, _ p: ProtocolRuntime?, _ d: Direction, offset: UInt64, length: UInt64,
                    reason: GapReason, packet: PacketRef) {}
    public func conflict(_ c: Connection, _ d: Direction, offset: UInt64, length: UInt64, packet: PacketRef) {}
    public func closed(_ c: Connection, _ p: ProtocolRuntime?, reason: CloseReason, packet: PacketRef) {}
    public func finish() {}
}
