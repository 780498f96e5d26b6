import FramedumpCore
/// Fuzz entries for the body transforms (`scripts/fuzz.sh transform-*`): arbitrary bytes as a
/// frame (a one-byte header, then the body) through one step, or through a chain the first
/// byte chooses. Each must return without a trap or a hang, produce no more than the limit,
/// and keep the frame's header in front of what it produced.
public enum FuzzTransform {
    static let limit = 1 << 20
    static let key16: [UInt8] = Array(0..<16)

    /// The step each single-transform target runs; the header byte picks among variants.
    static func kind(_ name: String, _ variant: UInt8) -> TransformKind {
        switch name {
        case "zlib": return .zlib
        case "gzip": return .gzip
        case "deflate": return .deflate
        case "lz4": return .lz4Frame
        case "lz4-block":
            switch variant % 3 {
            case 0: return .lz4Block(.prefixed)
            case 1: return .lz4Block(.field(0))
            default: return .lz4Block(.atMost(Int(variant) * 1000 + 1))
            }
        case "xor": return .xor(Array(key16.prefix(Int(variant % 16) + 1)))
        case "base64": return .base64
        default:
            let modes: [BodyCipherSpec.Mode] = [.cbc, .ecb, .ctr, .gcm]
            let mode = modes[Int(variant) % 4]
            let iv: [UInt8] = mode == .ecb || (mode == .gcm && variant & 4 != 0) ? [] : mode == .gcm ? Array(key16.prefix(12)) : key16
            return .aes(BodyCipherSpec(mode: mode, keyName: "k", key: Array(key16.prefix([16, 24, 32][Int(variant >> 3) % 3])), iv: iv))
        }
    }

    public static let names = ["zlib", "gzip", "deflate", "lz4", "lz4-block", "xor", "base64", "aes"]
    nonisolated(unsafe) static var chains: [String: [UInt8: TransformChain]] = [:]

    static func chain(_ key: String, _ variant: UInt8, _ specs: () -> [TransformSpec]) -> TransformChain {
        if let c = chains[key]?[variant] { return c }
        var s = ProtocolSchema(name: "fuzz", file: "fuzz")
        s.header = [HeaderField(name: "flags", width: 1, signed: false, order: .big, constant: nil, isPadding: false,
                                offset: 0, nameBytes: Array("flags".utf8))]
        let c = TransformChain(specs(), layout: FrameLayout(s), limit: limit)
        chains[key, default: [:]][variant] = c
        return c
    }

    /// One target per transform: `transform-zlib`, `transform-lz4-block`, ...
    public static func single(_ name: String) -> @Sendable (UnsafeRawBufferPointer) -> Void {
        { data in
            guard data.count >= 1 else { return }
            let c = chain(name, data[0]) { [TransformSpec(kind(name, data[0]))] }
            check(c, data)
        }
    }

    /// `transform-chain`: up to three steps, each with a condition on the flags byte, chosen by
    /// the first byte; the second byte is the frame's header.
    public static func chained(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 2 else { return }
        let v = data[0]
        let c = chain("chain", v) {
            (0..<(Int(v % 3) + 1)).map { i in
                let pick = Int(v >> 2) &+ i &* 3
                return TransformSpec(kind(names[pick % names.count], v &+ UInt8(i)),
                                     when: TransformCondition(field: 0, mask: 1 << UInt64(i)))
            }
        }
        check(c, UnsafeRawBufferPointer(rebasing: data[1...]))
    }

    static func check(_ c: TransformChain, _ frame: UnsafeRawBufferPointer) {
        guard !frame.isEmpty else { return }
        var steps: [TransformStep] = []
        switch c.run(frame, headerSize: 1, steps: &steps) {
        case .done(let out):
            precondition(out.count <= limit + 1, "a step produced more than the limit")
            precondition(out[0] == frame[0], "the header was not kept in front")
            precondition(!steps.isEmpty && steps.last!.after == out.count - 1, "the steps do not add up")
        case .untouched: precondition(steps.isEmpty)
        case .failed, .tooLarge: precondition(steps.isEmpty, "a failed chain left steps behind")
        }
    }
}
