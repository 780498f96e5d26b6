import ArgumentParser
import FramedumpCore

/// `--max-…`: every bound on what the input can make a run hold or do (see `Limits`). A run
/// that hits one says so in its summary (`limit hit: ...`) and in NDJSON (`"type":"limit"`).
struct LimitOptions: ParsableArguments {
    static let defaults = Limits()

    /// The bounds that loading dissector files obeys, declared once.
    @OptionGroup
    var load: LoadLimitOptions

    @Option(name: [.customLong("max-ws-message"), .customLong("ws-max-message")],
            help: ArgumentHelp("WebSocket: the largest message assembled or inflated; larger ones (a deflate bomb) are reported and skipped.", valueName: "bytes"))
    var maxWebSocketMessage: Int = defaults.maxWebSocketMessage

    @Option(help: ArgumentHelp("Transforms: the largest body one message's zlib, gzip, deflate, LZ4 or base64 steps may produce; larger ones (a bomb) are reported and shown as they came.", valueName: "bytes"))
    var maxInflate: Int = defaults.maxInflate

    @Option(help: ArgumentHelp("Reassembly: out-of-order bytes held per direction before a hole becomes a gap.", valueName: "bytes"))
    var maxBuffer: Int = defaults.maxBufferPerStream

    @Option(help: ArgumentHelp("Reassembly: out-of-order bytes held over every connection together.", valueName: "bytes"))
    var maxBufferTotal: Int = defaults.maxBufferTotal

    @Option(help: ArgumentHelp("Reassembly: connections tracked at once, least recently used evicted.", valueName: "n"))
    var maxConnections: Int = defaults.maxConnections

    @Option(help: ArgumentHelp("Bytes of IP fragments held while their datagrams are incomplete.", valueName: "bytes"))
    var maxIpFragments: Int = defaults.maxFragmentBytes

    @Option(help: ArgumentHelp("Nesting of messages, protobuf messages and JSON values decoded.", valueName: "levels"))
    var maxDepth: Int = defaults.maxDepth

    @Option(help: ArgumentHelp("Elements of one array decoded.", valueName: "n"))
    var maxArray: Int = defaults.maxArray

    @Option(help: ArgumentHelp("Bytes of one string value printed; longer ones are cut.", valueName: "bytes"))
    var maxString: Int = defaults.maxString

    var limits: Limits {
        var l = load.limits
        l.maxWebSocketMessage = maxWebSocketMessage
        l.maxInflate = maxInflate
        l.maxBufferPerStream = maxBuffer
        l.maxBufferTotal = maxBufferTotal
        l.maxConnections = maxConnections
        l.maxFragmentBytes = maxIpFragments
        l.maxDepth = maxDepth
        l.maxArray = maxArray
        l.maxString = maxString
        return l
    }

    func apply(_ o: LoadOptions) -> LoadOptions { load.apply(o) }

    /// The first bound given that only a capture run uses (`check` without `-r` refuses it).
    var runOnlyGiven: String? {
        let d = Self.defaults, l = limits
        let given: [(String, Bool)] = [
            ("--max-ws-message", l.maxWebSocketMessage != d.maxWebSocketMessage), ("--max-inflate", l.maxInflate != d.maxInflate),
            ("--max-buffer", l.maxBufferPerStream != d.maxBufferPerStream), ("--max-buffer-total", l.maxBufferTotal != d.maxBufferTotal),
            ("--max-connections", l.maxConnections != d.maxConnections), ("--max-ip-fragments", l.maxFragmentBytes != d.maxFragmentBytes),
            ("--max-depth", l.maxDepth != d.maxDepth), ("--max-array", l.maxArray != d.maxArray), ("--max-string", l.maxString != d.maxString),
        ]
        return given.first { $0.1 }?.0
    }

    func validate() throws {
        if let problem = limits.problem() { throw ValidationError(problem) }
    }
}

/// The load-time bounds, part of `LimitOptions` and alone for `dissectors` (which only reads
/// dissector files): a file it accepts is one a capture run accepts too.
struct LoadLimitOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The longest frame any protocol may announce; a dissector's max_frame above it is lowered to it.", valueName: "bytes"))
    var maxFrame: Int = LimitOptions.defaults.maxFrame

    @Option(help: ArgumentHelp("Protocols loaded from every dissector file together.", valueName: "n"))
    var maxProtocols: Int = LimitOptions.defaults.maxProtocols

    @Option(help: ArgumentHelp("Messages and enums loaded from every dissector file together.", valueName: "n"))
    var maxMessages: Int = LimitOptions.defaults.maxMessages

    /// The default bounds with these three given.
    var limits: Limits {
        var l = Limits()
        l.maxFrame = maxFrame
        l.maxProtocols = maxProtocols
        l.maxMessages = maxMessages
        return l
    }

    func apply(_ o: LoadOptions) -> LoadOptions { o.bounded(by: limits) }

    func validate() throws {
        if let problem = limits.problem() { throw ValidationError(problem) }
    }
}
