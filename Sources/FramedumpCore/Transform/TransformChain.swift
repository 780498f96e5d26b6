/// What one step did to a body.
enum StepResult {
    case ok
    /// The output would pass the size limit (a compression bomb, or a size that lies).
    case tooLarge
    case failed(String)
}

/// Runs a protocol's transform steps on each frame's body. The output of a step is the frame's
/// header followed by the step's result, so field offsets keep counting from the frame's start;
/// two blocks take turns as input and output, grown to the largest message, owned by the decoder.
package final class TransformChain {
    let specs: [TransformSpec]
    /// The largest body a step may produce (`--max-inflate`).
    let limit: Int
    let layout: FrameLayout
    private let blocks = (ByteBlock(), ByteBlock())
    /// Each step's own state (zlib and LZ4 contexts, AES keys), made when it first runs.
    @exclusivity(unchecked) private var inflaters: [InflateStep?]
    @exclusivity(unchecked) private var lz4: [LZ4Step?]
    @exclusivity(unchecked) private var aes: [AESStep?]
    /// Per step, what it did over the run (for the summary): bodies, bytes in and out, failures.
    /// Written by the one thread that decodes, read after it finished.
    @exclusivity(unchecked) private(set) var stats: [Stats]

    public struct Stats: Sendable, Equatable {
        public var bodies: UInt64 = 0
        public var bytesIn: UInt64 = 0
        public var bytesOut: UInt64 = 0
        public var failed: UInt64 = 0
    }

    /// A shard's counts added into the run's (the same protocol's chain), at the end.
    func absorb(_ o: TransformChain) {
        for i in stats.indices where i < o.stats.count {
            stats[i].bodies += o.stats[i].bodies
            stats[i].bytesIn += o.stats[i].bytesIn
            stats[i].bytesOut += o.stats[i].bytesOut
            stats[i].failed += o.stats[i].failed
        }
    }

    package init(_ specs: [TransformSpec], layout: FrameLayout, limit: Int) {
        self.specs = specs
        self.layout = layout
        self.limit = limit
        inflaters = Array(repeating: nil, count: specs.count)
        lz4 = Array(repeating: nil, count: specs.count)
        aes = Array(repeating: nil, count: specs.count)
        stats = Array(repeating: Stats(), count: specs.count)
    }

    package enum Outcome {
        /// No step's condition held: the body is decoded as it came.
        case untouched
        /// Header plus the final body; valid until the next frame.
        case done(UnsafeRawBufferPointer)
        /// A step failed: the body is shown as it came, with this warning.
        case failed(String)
        case tooLarge(String)
    }

    /// Runs the steps whose condition holds on `frame`, appending what ran to `steps`.
    /// `layout`: the frame's own, when the protocol's headers differ (nil: the chain's).
    /// `phase`: the connection's (-1: the protocol has none).
    package func run(_ frame: UnsafeRawBufferPointer, headerSize: Int, layout frameLayout: FrameLayout? = nil,
                     phase: Int32 = -1, steps: inout [TransformStep]) -> Outcome {
        let layout = frameLayout ?? self.layout
        var input = frame
        var useFirst = true
        let header = UnsafeRawBufferPointer(rebasing: frame[..<headerSize])
        for (i, spec) in specs.enumerated() {
            if let c = spec.condition, !c.holds(layout.value(c.field, in: frame, at: 0) ?? 0) { continue }
            if let ph = spec.phases, !ph.contains(Int(phase)) { continue }
            let out = useFirst ? blocks.0 : blocks.1
            useFirst.toggle()
            out.removeAll()
            out.append(header)
            let body = UnsafeRawBufferPointer(rebasing: input[headerSize...])
            let r: StepResult
            switch spec.kind {
            case .xor(let key): r = ByteSteps.xor(body, key: key, into: out)
            case .base64: r = ByteSteps.base64(body, into: out)
            case .zlib, .gzip, .deflate:
                if inflaters[i] == nil {
                    if case .zlib = spec.kind { inflaters[i] = InflateStep(.zlib) }
                    else if case .gzip = spec.kind { inflaters[i] = InflateStep(.gzip) }
                    else { inflaters[i] = InflateStep(.raw) }
                }
                r = inflaters[i]!.run(body, into: out, limit: limit)
            case .lz4Frame, .lz4Block:
                if lz4[i] == nil {
                    if case .lz4Block(let s) = spec.kind { lz4[i] = LZ4Step(block: s) } else { lz4[i] = LZ4Step(block: nil) }
                }
                r = lz4[i]!.run(body, header: header, layout: layout, into: out, limit: limit)
            case .aes(let a):
                if aes[i] == nil { aes[i] = AESStep(a) }
                r = aes[i]!.run(body, into: out)
            }
            // What ran before a failure, for its warning (the rare path).
            var after: String {
                let done = steps.map { "\($0.name)" }.joined(separator: ", ")
                return done.isEmpty ? "" : " (after \(done))"
            }
            switch r {
            case .ok:
                steps.append(TransformStep(name: spec.name, before: body.count, after: out.count - headerSize))
                stats[i].bodies += 1
                stats[i].bytesIn += UInt64(body.count)
                stats[i].bytesOut += UInt64(out.count - headerSize)
                input = out.bytes
            case .tooLarge:
                stats[i].failed += 1
                let text = "\(spec.name) output passes --max-inflate \(limit) bytes\(after) (a compression bomb?): body shown as it came"
                steps.removeAll()
                return .tooLarge(text)
            case .failed(let why):
                stats[i].failed += 1
                let text = "\(why)\(after): body shown as it came"
                steps.removeAll()
                return .failed(text)
            }
        }
        return steps.isEmpty ? .untouched : .done(input)
    }
}
