/// What a dissector's `transform` lines say: the steps that turn a body as it crossed the wire
/// into the bytes the fields describe, in the order they are undone (the sender's last step
/// first), each applied only to frames whose header passes its `when` test.
public struct TransformSpec: Sendable {
    public var kind: TransformKind
    public var condition: TransformCondition?
    /// `in play`: only in these connection phases (nil: in every phase).
    public var phases: [Int]? = nil

    public init(_ kind: TransformKind, when condition: TransformCondition? = nil) {
        self.kind = kind
        self.condition = condition
    }

    /// `zlib when flags & 0x1`, `aes-128-cbc key 'session' when version == 2`: for `check`.
    public func text(in s: ProtocolSchema) -> String {
        var t = "\(name)"
        switch kind {
        case .aes(let a) where !a.keyName.isEmpty: t += " key '\(a.keyName)'"
        case .xor(let k): t += " key of \(k.count) bytes"
        case .lz4Block(.field(let f)): t += " size " + s.header[f].name
        case .lz4Block(.atMost(let n)): t += " max \(n)"
        default: break
        }
        if let ph = phases { t += " in " + ph.map { s.phases.names[$0] }.joined(separator: ", ") }
        guard let c = condition else { return t }
        let f = s.header[c.field]
        // A one-bit test reads the same either way; a wider field's value needs its shift.
        if let m = c.mask, let b = f.bits.first(where: { $0.mask == m }), c.shift == b.shift || (c.test == .nonZero && c.shift == 0) {
            t += " when \(f.name).\(b.name)"
        } else {
            t += " when \(f.name)" + (c.mask.map { " & 0x\(String($0, radix: 16))" } ?? "")
        }
        switch c.test {
        case .nonZero: break
        case .equal(let v): t += " == \(v)"
        case .notEqual(let v): t += " != \(v)"
        }
        return t
    }

    /// The step's name in the outputs (`zlib`, `xor`, `aes-128-cbc`).
    public var name: StaticString {
        switch kind {
        case .xor: return "xor"
        case .zlib: return "zlib"
        case .gzip: return "gzip"
        case .deflate: return "deflate"
        case .lz4Frame: return "lz4"
        case .lz4Block: return "lz4_block"
        case .base64: return "base64"
        case .aes(let a): return a.name
        }
    }
}

public enum TransformKind: Sendable {
    /// Every byte XORed with a repeating key, restarting at each body.
    case xor([UInt8])
    /// RFC 1950 (a zlib header and Adler-32 trailer around deflate).
    case zlib
    /// RFC 1952 (one member or several in a row).
    case gzip
    /// RFC 1951 raw deflate.
    case deflate
    /// The LZ4 frame format (magic 04 22 4d 18).
    case lz4Frame
    /// One raw LZ4 block; where its decompressed size comes from.
    case lz4Block(LZ4BlockSize)
    /// Base64 text (standard or URL-safe alphabet, padding optional, white space ignored).
    case base64
    /// AES with a key from the dissector or `--key`.
    case aes(BodyCipherSpec)
}

public enum LZ4BlockSize: Sendable, Equatable {
    /// A 4-byte little-endian size before the block (python-lz4's and many engines' default).
    case prefixed
    /// A header field holds it.
    case field(Int)
    /// Unknown: at most this many bytes.
    case atMost(Int)
}

/// `when flags & 0x01`, `when version == 2`, `when flags.compressed`, `when kind & 0x0c != 0`.
public struct TransformCondition: Sendable, Equatable {
    public enum Test: Sendable, Equatable {
        case nonZero
        case equal(UInt64)
        case notEqual(UInt64)
    }

    /// The header field's index.
    public var field: Int
    public var mask: UInt64?
    /// For a named bit field (`flags.codec == 2`): the mask's lowest bit, so the value compares.
    public var shift: UInt64 = 0
    public var test: Test

    public init(field: Int, mask: UInt64? = nil, shift: UInt64 = 0, test: Test = .nonZero) {
        self.field = field
        self.mask = mask
        self.shift = shift
        self.test = test
    }

    @inline(__always)
    func holds(_ value: UInt64) -> Bool {
        let v = (mask.map { value & $0 } ?? value) >> shift
        switch test {
        case .nonZero: return v != 0
        case .equal(let x): return v == x
        case .notEqual(let x): return v != x
        }
    }
}

/// One step that ran on a message's body: shown in every output with the sizes around it.
public struct TransformStep: Sendable, Equatable {
    public var name: StaticString
    public var before: Int
    public var after: Int

    public static func == (a: TransformStep, b: TransformStep) -> Bool {
        a.before == b.before && a.after == b.after && a.name.description == b.name.description
    }
}
