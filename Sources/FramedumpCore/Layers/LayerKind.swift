/// A kind of layer in a connection's stack (websocket today; tls and kcp later), as every shared
/// part sees it: the printers, the filter, the summary, `diff` and `check -r` ask the layer
/// through these requirements and never name it. All are static: what a layer says about a
/// message travels as a `LayerNote` only the layer reads, so no object is made per message.
/// A kind is known by its one line in `LayerRegistry`.
protocol LayerKind {
    /// The dissector keyword, the tree line's and the summary's label, the prefix of its
    /// warnings and its `check -r` class (`websocket`).
    static var name: String { get }
    /// Its NDJSON key and `-Y` namespace (`ws`).
    static var key: StaticString { get }

    // MARK: - A message's annotation

    /// What to call a message the layer shows itself (no message of the protocol's): a
    /// control frame's opcode.
    static func messageName(_ n: LayerNote) -> StaticString
    /// Its line of the tree, above the message's fields (`f`: the message as decoded): its
    /// summary in words, indented by four spaces, ending with a newline.
    static func writeTree(_ n: LayerNote, _ f: Frame, color: Bool, _ k: inout Cursor)
    /// Its fields, in order, told to `v`: the one description NDJSON's object (`writeJSON`)
    /// and `-Y KEY.FIELD` (`fields`) are both written from.
    static func visitFields<V: LayerFieldVisitor>(_ n: LayerNote, _ v: inout V)
    /// Its NDJSON object, written after `,"KEY":` (given: from `visitFields`, compiled for
    /// each layer, so the per-message path builds nothing).
    static func writeJSON(_ n: LayerNote, _ k: inout Cursor)
    /// Its fields by name, in NDJSON's order, for `-Y KEY.FIELD` and tests (given: from
    /// `visitFields`; the rare path).
    static func fields(_ n: LayerNote) -> [(name: String, value: LayerFieldValue)]
    /// The fields `fields` gives (and, for a layer below the stack, its `ConnectionLayerInfo`),
    /// with what each holds: `-Y` refuses a value a field can never equal and suggests names.
    static var fieldKinds: [(name: String, kind: LayerFieldKind)] { get }

    // MARK: - Dissector files

    /// The protocol settings the layer reads itself (`websocket`, `subprotocol`); the first
    /// puts the layer in the protocol's `stack`.
    static var keywords: [String] { get }
    /// Reads setting `keyword` (its name already read; the statement's end is read after).
    static func setting(_ keyword: String, _ p: inout Parser, _ s: inout ProtocolSchema) throws(DissectorError)
    /// Its lines in `framedump dissectors` for a protocol over it (none for the others).
    static func describe(_ s: ProtocolSchema) -> [String]
    /// Whether protocols `a` and `b`, both claiming `port`, are told apart by the layer.
    static func mayShare(_ port: UInt16, _ a: ProtocolSchema, _ b: ProtocolSchema) -> Bool

    /// What is wrong with protocol `s` over this layer, if anything (a setting it needs, a
    /// transport it cannot run on); nil for the protocols that do not run over it.
    static func check(_ s: ProtocolSchema) -> String?

    // MARK: - Building a stack

    /// Protocols the layer brings itself (the `websocket` dissector, for messages no file claims).
    static var builtInProtocols: [ProtocolSchema] { get }
    /// What the layer keeps per protocol that runs over it, and its part of the session
    /// manager: typed, read back with `state(of:)` (no cast at the call sites).
    associatedtype ProtocolState: AnyObject = NoLayerState
    associatedtype ManagerState: AnyObject = NoLayerState
    /// Its place in the registry, stored (`static let layer = index`): read per connection.
    static var layer: UInt8 { get }
    /// What the layer keeps per protocol that runs over it (nil: `s` does not).
    static func protocolState(_ s: ProtocolSchema, limits: Limits) -> ProtocolState?
    /// The layer's part of the session manager, made once every protocol is.
    static func managerState(_ protocols: [ProtocolRuntime]) -> ManagerState?
    /// Builds the stack of connection `s` for protocol `p`, which runs over this layer.
    static func attach(_ s: Session, _ p: ProtocolRuntime)
    /// Below protocol `p`'s new stack on connection `s` (TLS puts itself there, or asks to see
    /// the first bytes through `Session.firstDataHook`); most do nothing.
    static func below(_ s: Session, _ p: ProtocolRuntime)
    /// The connection's first data chunk, when `below` asked for it (before the stack gets it).
    static func firstData(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef)
    /// Any-port detection, before the protocols' headers are tried: whether these first bytes
    /// start this layer (an HTTP request); if so it has attached itself.
    static func detect(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64) -> Bool

    // MARK: - The summary

    /// Lines under a protocol that ran over this layer (indented by two spaces).
    static func summary(_ p: ProtocolRuntime) -> [String]
    /// Lines after the protocols, about connections the layer looked at and passed over.
    static func summary(_ m: SessionManager) -> [String]

    /// Whether `-z NAME` gives a table of the layer's.
    static var hasStatistics: Bool { get }
    /// The part of its connection a message came on, for `-z conv`'s rows under the
    /// connection (HTTP/2's stream, and its method's number); nil: none. Plain values: the
    /// record crosses threads and is copied per message.
    static func substream(_ n: LayerNote) -> (number: UInt64, label: UInt32)?
    /// A substream's label as the table shows it (the method's path).
    static func substreamLabel(_ label: UInt32) -> String
    /// Its `-z NAME` table, if it has one: a title, the column names, the rows.
    static func statistics(_ m: SessionManager) -> (title: String, header: [String], rows: [[String]])?

    // MARK: - Connection-sharded runs

    /// Adds a shard's counts (`protocolState`'s, `managerState`'s) into the run's, at its end.
    static func absorb(protocol mine: ProtocolState, _ theirs: ProtocolState)
    static func absorb(manager mine: ManagerState, _ theirs: ManagerState)
}

/// The state of a layer that keeps none.
final class NoLayerState {}

extension LayerKind where ProtocolState == NoLayerState {
    static func protocolState(_ s: ProtocolSchema, limits: Limits) -> NoLayerState? { nil }
    static func absorb(protocol mine: NoLayerState, _ theirs: NoLayerState) {}
}

extension LayerKind {
    /// This layer's state for protocol `p` (nil: `p` does not run over it). The registry made
    /// the entry with this kind's `protocolState`, so its type is known.
    @inline(__always)
    static func state(of p: ProtocolRuntime) -> ProtocolState? {
        p.layerStates[Int(layer)].map { unsafeDowncast($0, to: ProtocolState.self) }
    }

    /// This layer's part of manager `m`.
    @inline(__always)
    static func state(of m: SessionManager) -> ManagerState? {
        m.layerStates[Int(layer)].map { unsafeDowncast($0, to: ManagerState.self) }
    }

    /// A shard's states added into the run's, for the registry's loop (either may be nil).
    static func absorbStates(protocol mine: ProtocolRuntime, _ theirs: ProtocolRuntime) {
        guard let m = state(of: mine), let t = state(of: theirs) else { return }
        absorb(protocol: m, t)
    }

    static func absorbStates(manager mine: SessionManager, _ theirs: SessionManager) {
        guard let m = state(of: mine), let t = state(of: theirs) else { return }
        absorb(manager: m, t)
    }
}

extension LayerKind {
    static func check(_ s: ProtocolSchema) -> String? { nil }
    static func below(_ s: Session, _ p: ProtocolRuntime) {}
    static func firstData(_ s: Session, _ d: Direction, _ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {}
    static var hasStatistics: Bool { false }
    static func statistics(_ m: SessionManager) -> (title: String, header: [String], rows: [[String]])? { nil }
    static func substream(_ n: LayerNote) -> (number: UInt64, label: UInt32)? { nil }
    static func substreamLabel(_ label: UInt32) -> String { "" }

    /// `,"KEY":{...}`: its member of a message's NDJSON object.
    @inline(__always)
    static func writeJSONMember(_ n: LayerNote, _ k: inout Cursor) {
        k.write(",\""); k.write(key); k.write("\":")
        writeJSON(n, &k)
    }

    /// Its place in the registry: the `layer` of the notes it writes.
    static var index: UInt8 {
        UInt8(LayerRegistry.kinds.firstIndex { $0 == Self.self }!)
    }
}

extension LayerKind {
    static var fieldNames: [String] { fieldKinds.map(\.name) }

    static func writeJSON(_ n: LayerNote, _ k: inout Cursor) {
        var w = JSONLayerFields(k)
        visitFields(n, &w)
        k = w.close()
    }

    static func fields(_ n: LayerNote) -> [(name: String, value: LayerFieldValue)] {
        var list = LayerFieldList()
        visitFields(n, &list)
        return list.fields
    }
}

/// What a layer's fields are told to: the NDJSON writer or `-Y`'s list. Names and text values
/// are the layer's own constants (plain ASCII words, written without escaping).
protocol LayerFieldVisitor {
    mutating func text(_ name: StaticString, _ value: StaticString)
    mutating func bool(_ name: StaticString, _ value: Bool)
    mutating func unsigned(_ name: StaticString, _ value: UInt64)
    /// Text from the wire (a gRPC method): escaped in NDJSON.
    mutating func string(_ name: StaticString, _ value: String)
    /// Two numbers from `first` to `last` (a frame's TLS records): an array in NDJSON, two
    /// fields for `-Y` (`last` under the plain name, since most spans are one).
    mutating func span(_ name: StaticString, _ first: UInt64, _ last: UInt64, filterNames: (first: StaticString, last: StaticString))
}

/// A layer's NDJSON object: `{"opcode":"binary","fin":true,...}`.
struct JSONLayerFields: LayerFieldVisitor {
    var k: Cursor
    var opened = false

    @inline(__always) init(_ k: Cursor) { self.k = k }

    @inline(__always) mutating func name(_ n: StaticString) {
        k.jsonMemberName(n, first: !opened)
        opened = true
    }

    @inline(__always) mutating func text(_ name: StaticString, _ value: StaticString) {
        self.name(name); k.jsonQuoted(value)
    }

    @inline(__always) mutating func bool(_ name: StaticString, _ value: Bool) {
        self.name(name); k.write(value ? "true" : "false")
    }

    mutating func string(_ name: StaticString, _ value: String) {
        self.name(name)
        var v = value
        v.withUTF8 { k.jsonString(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always) mutating func unsigned(_ name: StaticString, _ value: UInt64) {
        self.name(name); k.decimal(value)
    }

    @inline(__always) mutating func span(_ name: StaticString, _ first: UInt64, _ last: UInt64,
                                         filterNames: (first: StaticString, last: StaticString)) {
        self.name(name); k.byte(0x5b); k.decimal(first); k.byte(0x2c); k.decimal(last); k.byte(0x5d)
    }

    @inline(__always) mutating func close() -> Cursor {
        k.write(opened ? "}" : "{}")
        return k
    }
}

/// A layer's fields as `-Y` reads them.
struct LayerFieldList: LayerFieldVisitor {
    var fields: [(name: String, value: LayerFieldValue)] = []

    mutating func text(_ name: StaticString, _ value: StaticString) { fields.append(("\(name)", .text("\(value)"))) }
    mutating func bool(_ name: StaticString, _ value: Bool) { fields.append(("\(name)", .bool(value))) }
    mutating func unsigned(_ name: StaticString, _ value: UInt64) { fields.append(("\(name)", .unsigned(value))) }
    mutating func string(_ name: StaticString, _ value: String) { fields.append(("\(name)", .text(value))) }
    mutating func span(_ name: StaticString, _ first: UInt64, _ last: UInt64, filterNames: (first: StaticString, last: StaticString)) {
        fields.append(("\(filterNames.last)", .unsigned(last)))
        fields.append(("\(filterNames.first)", .unsigned(first)))
    }
}
