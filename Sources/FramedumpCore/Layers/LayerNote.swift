/// What a layer says about one message (the opcode, FIN and mask of its frame...), as a plain
/// value of fixed size: it crosses from the reading thread to the decoding one and sits on the
/// decoded message without an allocation or a reference count. Only its layer reads the bytes;
/// everyone else asks the layer (`LayerKind`), found by `layer`.
public struct LayerNote: Sendable {
    /// The layer's place in `LayerRegistry.kinds`.
    public let layer: UInt8
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    static let capacity = 64

    @inline(__always)
    init<T: BitwiseCopyable>(layer: UInt8, _ value: T) {
        precondition(MemoryLayout<T>.size <= Self.capacity, "a layer's note holds at most 64 bytes")
        self.layer = layer
        storage = (0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: T.self) }
    }

    /// The layer's own value back (only its layer knows `T`).
    @inline(__always)
    func value<T: BitwiseCopyable>(as: T.Type) -> T {
        withUnsafeBytes(of: storage) { $0.load(as: T.self) }
    }

    /// The layer that wrote it.
    var kind: any LayerKind.Type { LayerRegistry.kinds[Int(layer)] }
}

/// The notes of the layers a message came through, bottom first. One is kept inline (the
/// common case: a single layer), so setting it per message allocates nothing.
public struct LayerNotes: Sendable {
    private var firstNote: LayerNote?
    private var more: [LayerNote] = []

    public init() {}

    public var isEmpty: Bool { firstNote == nil }
    public var first: LayerNote? { firstNote }

    public var all: [LayerNote] { firstNote.map { [$0] + more } ?? [] }

    @inline(__always)
    mutating func append(_ n: LayerNote) {
        if firstNote == nil { firstNote = n } else { more.append(n) }
    }

    /// `n` as the only note (a message of a single layer): one store on the per-message path.
    @inline(__always)
    mutating func setOnly(_ n: LayerNote) {
        firstNote = n
        if !more.isEmpty { more.removeAll(keepingCapacity: true) }
    }

    @inline(__always)
    mutating func removeAll() {
        firstNote = nil
        if !more.isEmpty { more.removeAll(keepingCapacity: true) }
    }

    /// The note of layer `layer`, if the message came through it.
    public func note(of layer: UInt8) -> LayerNote? {
        if let f = firstNote, f.layer == layer { return f }
        return more.first { $0.layer == layer }
    }

    @inline(__always)
    func forEach(_ body: (LayerNote) -> Void) {
        guard let f = firstNote else { return }
        body(f)
        for n in more { body(n) }
    }
}

/// What a layer's field holds: text (from a closed list of values when `values` is given),
/// a Bool, or an unsigned number.
public enum LayerFieldKind: Sendable, Equatable {
    case text(values: [String]?)
    case bool
    case unsigned
}

/// A layer's field as `-Y` and the tests read it.
public enum LayerFieldValue: Sendable, Equatable {
    case text(String)
    case bool(Bool)
    case unsigned(UInt64)
}

/// What a layer below a protocol's stack (TLS) says about a whole connection, made once when it
/// is known and shared by the connection's messages (no per-message note): `-Y KEY.FIELD` reads it.
public protocol ConnectionLayerInfo: AnyObject, Sendable {
    /// The layer's NDJSON key and `-Y` namespace (`tls`).
    var layerKey: String { get }
    var fields: [(name: String, value: LayerFieldValue)] { get }
}
