import Foundation

/// gRPC over HTTP/2 (h2c with prior knowledge, as gRPC speaks it) as the shared parts see it
/// (`LayerKind`): a dissector says `grpc;` with `body protobuf;` and its `.proto` files, and
/// each message of a call is decoded as its method's request or response type (the files'
/// `service` blocks), its method in `-Y grpc.method`.
enum GRPCLayer: LayerKind {
    static let name = "grpc"
    static let key: StaticString = "grpc"
    static let layer = index
    /// `layerSettings` entry: one "PATH\tREQUEST\tRESPONSE" per method of the `.proto` files'
    /// services (message indices), written when the files are loaded.
    static let methodsSetting = "grpc.methods"

    @inline(__always)
    static func note(_ i: GRPCInfo) -> LayerNote { LayerNote(layer: layer, i) }

    @inline(__always)
    static func info(_ n: LayerNote) -> GRPCInfo { n.value(as: GRPCInfo.self) }

    // MARK: - Dissector files

    static let keywords = ["grpc"]

    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError) {
        if !s.overLayers.contains(name) { s.overLayers.append(name) }
    }

    static func check(_ s: ProtocolSchema) -> String? {
        guard s.overLayers.contains(name) else { return nil }
        if s.udp { return "gRPC runs over TCP: give the protocol's port as 'port N;', not 'udp port N;'" }
        if s.overLayers.count > 1 { return "grpc is a stack of its own: it does not go with \(s.overLayers.filter { $0 != name }.joined(separator: ", "))" }
        if s.body != .protobuf { return "grpc carries protobuf messages: the protocol needs 'body protobuf;' (and its .proto files with 'proto')" }
        return nil
    }

    static func describe(_ s: ProtocolSchema) -> [String] {
        guard s.overLayers.contains(name) else { return [] }
        let n = s.layerSettings[methodsSetting]?.count ?? 0
        return ["  grpc: HTTP/2 (h2c), \(n) methods from the .proto files' services; other methods decoded without a schema"]
    }

    static func mayShare(_ port: UInt16, _ a: ProtocolSchema, _ b: ProtocolSchema) -> Bool { false }

    /// The methods of `s`'s services: path → the request's and the response's schema messages.
    static func methods(_ s: ProtocolSchema) -> [String: (request: Int32, response: Int32)] {
        var out: [String: (Int32, Int32)] = [:]
        for line in s.layerSettings[methodsSetting] ?? [] {
            let p = line.split(separator: "\t").map(String.init)
            guard p.count == 3, let a = Int32(p[1]), let b = Int32(p[2]) else { continue }
            out[p[0]] = (a, b)
        }
        return out
    }

    // MARK: - Building a stack

    static var builtInProtocols: [ProtocolSchema] { [] }

    static func protocolState(_ s: ProtocolSchema, limits: Limits) -> GRPCProtocolState? {
        s.overLayers.contains(name) ? GRPCProtocolState(methods: methods(s)) : nil
    }

    static func managerState(_ protocols: [ProtocolRuntime]) -> GRPCManagerState? { GRPCManagerState() }

    static func attach(_ s: Session, _ p: ProtocolRuntime) {
        s.proto = p
        p.connections += 1
        guard let state = Self.state(of: p) else { return }
        state.manager = Self.state(of: s.manager)
        let f = SessionFrames(manager: s.manager, runtime: p, connection: s.connection)
        let h = HTTP2Connection(session: s, frames: f, state: state)
        f.layer = h
        s.shared = h
        s.frames = f
        s.layers = h.readers
    }

    static func detect(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64) -> Bool { false }

    // MARK: - A message's annotation

    static func messageName(_ n: LayerNote) -> StaticString { "grpc" }

    /// `    grpc: /grpcchat.Chat/Send, stream 1, message 1, compressed 40 → 52 bytes`
    static func writeTree(_ n: LayerNote, _ f: Frame, color: Bool, _ k: inout Cursor) {
        let i = info(n)
        k.write(color ? "    \u{1b}[2mgrpc: " : "    grpc: ")
        GRPCMethodNames.writeShown(i.method, &k)
        k.write(", stream "); k.decimal(UInt64(i.stream))
        k.write(", message "); k.decimal(UInt64(i.sequence))
        if i.compressed {
            k.write(", compressed "); k.decimal(UInt64(i.wireLength))
            if i.undecodable { k.write(" bytes (not inflated)") } else { k.write(" → "); k.decimal(UInt64(f.bytes.count)); k.write(" bytes") }
        }
        if color { k.write("\u{1b}[0m") }
        k.byte(0x0a)
    }

    static func visitFields<V: LayerFieldVisitor>(_ n: LayerNote, _ v: inout V) {
        let i = info(n)
        v.string("method", GRPCMethodNames.name(i.method))
        v.unsigned("stream", UInt64(i.stream))
        v.unsigned("message", UInt64(i.sequence))
        v.bool("compressed", i.compressed)
        v.unsigned("wire_length", UInt64(i.wireLength))
    }

    static let fieldKinds: [(name: String, kind: LayerFieldKind)] = [
        ("method", .text(values: nil)), ("stream", .unsigned), ("message", .unsigned), ("compressed", .bool), ("wire_length", .unsigned),
    ]

    // MARK: - The summary

    /// `  grpc: 9 calls (8 OK, 1 NOT_FOUND), 3 compressed messages`
    static func summary(_ p: ProtocolRuntime) -> [String] {
        guard let g = state(of: p) else { return [] }
        var t = "  grpc: \(g.calls) calls"
        let ended = g.statuses.sorted { $0.key < $1.key }.map { "\($0.value) \(GRPCStatus.name($0.key))" }
        var parts = ended
        if g.noStatus > 0 { parts.append("\(g.noStatus) without a status") }
        if g.resets > 0 { parts.append("\(g.resets) reset") }
        if g.unfinished > 0 { parts.append("\(g.unfinished) unfinished") }
        if !parts.isEmpty { t += " (" + parts.joined(separator: ", ") + ")" }
        t += ", \(g.frames) HTTP/2 frames"
        if g.compressed > 0 { t += ", \(g.compressed) compressed messages" }
        if g.upgrades > 0 { t += ", \(g.upgrades) \(g.upgrades == 1 ? "connection" : "connections") upgraded from HTTP/1.1 (h2c)" }
        var lines = [t]
        var notes: [String] = []
        if g.unknownMethods > 0 { notes.append("\(g.unknownMethods) calls of methods no .proto service declares (decoded without a schema)") }
        if g.joinedLate > 0 { notes.append("\(g.joinedLate) directions joined mid-way (HTTP/2 frames and header tables unknown: not read)") }
        if g.gaps > 0 { notes.append("\(g.gaps) directions with a gap (read no further)") }
        if g.hpackFailures > 0 { notes.append("\(g.hpackFailures) header blocks not read") }
        if g.tooLong > 0 { notes.append("\(g.tooLong) messages past max_frame (passed over)") }
        if g.upgradesDeclined > 0 { notes.append("\(g.upgradesDeclined) h2c \(g.upgradesDeclined == 1 ? "upgrade" : "upgrades") the server declined (HTTP/1.1 stayed: not read)") }
        if g.callsPassedOver > 0 { notes.append("\(g.callsPassedOver) streams past \(HTTP2Connection.maxCalls) open calls (passed over)") }
        if !notes.isEmpty { lines.append("  grpc: " + notes.joined(separator: "; ")) }
        return lines
    }

    static func summary(_ m: SessionManager) -> [String] { [] }

    // MARK: - Statistics (`-z grpc`)

    static let hasStatistics = true

    static func substream(_ n: LayerNote) -> (number: UInt64, label: UInt32)? {
        let i = info(n)
        return (UInt64(i.stream), i.method)
    }

    static func substreamLabel(_ label: UInt32) -> String { label == GRPCMethodNames.none ? "" : GRPCMethodNames.name(label) }

    static func statistics(_ m: SessionManager) -> (title: String, header: [String], rows: [[String]])? {
        guard let g = state(of: m) else { return nil }
        func ms(_ n: Int64) -> String {
            let v = Double(n) / 1_000_000
            return v < 10 ? String(format: "%.3f", v) : String(format: "%.1f", v)
        }
        let rows = g.methods.keys.sorted().map { path -> [String] in
            let r = g.methods[path]!
            let failed = r.calls - r.ok
            return [path, "\(r.calls)", "\(r.ok)", "\(failed)", "\(r.requests)", "\(r.responses)",
                    ms(r.minNanos), ms(r.totalNanos / Int64(max(1, r.calls))), ms(r.maxNanos)]
        }
        return ("gRPC calls by method", ["method", "calls", "ok", "not ok", "requests", "responses",
                                          "min ms", "avg ms", "max ms"], rows)
    }

    // MARK: - Connection-sharded runs

    static func absorb(protocol mine: GRPCProtocolState, _ theirs: GRPCProtocolState) { mine.absorb(theirs) }
    static func absorb(manager mine: GRPCManagerState, _ theirs: GRPCManagerState) { mine.absorb(theirs) }
}

/// What the gRPC layer counts for one protocol, and its method table.
final class GRPCProtocolState {
    let methods: [String: (request: Int32, response: Int32)]
    /// The run's per-method table (set as connections are attached).
    @exclusivity(unchecked) var manager: GRPCManagerState?
    @exclusivity(unchecked) var calls: UInt64 = 0
    @exclusivity(unchecked) var frames: UInt64 = 0
    @exclusivity(unchecked) var statuses: [Int: UInt64] = [:]
    @exclusivity(unchecked) var noStatus: UInt64 = 0
    @exclusivity(unchecked) var resets: UInt64 = 0
    @exclusivity(unchecked) var unfinished: UInt64 = 0
    @exclusivity(unchecked) var compressed: UInt64 = 0
    @exclusivity(unchecked) var unknownMethods: UInt64 = 0
    @exclusivity(unchecked) var joinedLate: UInt64 = 0
    @exclusivity(unchecked) var gaps: UInt64 = 0
    @exclusivity(unchecked) var hpackFailures: UInt64 = 0
    @exclusivity(unchecked) var tooLong: UInt64 = 0
    @exclusivity(unchecked) var callsPassedOver: UInt64 = 0
    /// Connections upgraded from HTTP/1.1 (`Upgrade: h2c`).
    @exclusivity(unchecked) var upgrades: UInt64 = 0
    @exclusivity(unchecked) var upgradesDeclined: UInt64 = 0

    init(methods: [String: (request: Int32, response: Int32)]) { self.methods = methods }

    func count(status: Int?, reset: Bool) {
        if let status { statuses[status, default: 0] += 1 } else if !reset { noStatus += 1 }
    }

    func absorb(_ o: GRPCProtocolState) {
        calls += o.calls; frames += o.frames; noStatus += o.noStatus; resets += o.resets; unfinished += o.unfinished
        compressed += o.compressed; unknownMethods += o.unknownMethods; joinedLate += o.joinedLate; gaps += o.gaps
        hpackFailures += o.hpackFailures; tooLong += o.tooLong; callsPassedOver += o.callsPassedOver
        upgrades += o.upgrades; upgradesDeclined += o.upgradesDeclined
        for (k, v) in o.statuses { statuses[k, default: 0] += v }
    }
}

/// The run's calls by method, for `-z grpc`.
final class GRPCManagerState {
    struct Row {
        var calls: UInt64 = 0, ok: UInt64 = 0, requests: UInt64 = 0, responses: UInt64 = 0
        var minNanos: Int64 = .max, maxNanos: Int64 = 0, totalNanos: Int64 = 0
    }
    @exclusivity(unchecked) var methods: [String: Row] = [:]
    static let maxMethods = 4096

    func call(_ path: String, status: Int?, requests: UInt32, responses: UInt32, nanos: Int64) {
        let key = methods[path] != nil || methods.count < Self.maxMethods ? path : "(other methods)"
        var r = methods[key] ?? Row()
        r.calls += 1
        if status == 0 { r.ok += 1 }
        r.requests += UInt64(requests)
        r.responses += UInt64(responses)
        r.minNanos = min(r.minNanos, nanos)
        r.maxNanos = max(r.maxNanos, nanos)
        r.totalNanos &+= nanos
        methods[key] = r
    }

    func absorb(_ o: GRPCManagerState) {
        for (k, v) in o.methods {
            var r = methods[k] ?? Row()
            r.calls += v.calls; r.ok += v.ok; r.requests += v.requests; r.responses += v.responses
            r.minNanos = min(r.minNanos, v.minNanos); r.maxNanos = max(r.maxNanos, v.maxNanos); r.totalNanos &+= v.totalNanos
            methods[k] = r
        }
    }
}

extension GRPCLayer {
    /// Two messages per method of the loaded services, `Service.Method request` from the client
    /// and `Service.Method response` from the server (typed by the method), and the method table the
    /// layer reads (`methodsSetting`). Returns each new message with its protobuf type.
    static func define(_ reg: ProtoRegistry, _ s: inout ProtocolSchema) -> [(Int, String)] {
        var typed: [(Int, String)] = []
        var table: [String] = []
        for f in reg.files {
            for svc in f.services {
                let service = f.package.isEmpty ? svc.name : f.package + "." + svc.name
                for m in svc.methods {
                    let path = "/" + service + "/" + m.name
                    let req = s.messages.count
                    for (d, type) in [(Direction.c2s, m.inputType), (.s2c, m.outputType)] {
                        let name = svc.name + "." + m.name + (d == .c2s ? " request" : " response")
                        typed.append((s.messages.count, type))
                        s.messages.append(MessageDef(name: name, title: nil, id: nil, direction: d, fields: [],
                                                     nameBytes: Array(name.utf8), line: 0))
                    }
                    table.append("\(path)\t\(req)\t\(req + 1)")
                }
            }
        }
        s.layerSettings[methodsSetting] = table
        return typed
    }
}
