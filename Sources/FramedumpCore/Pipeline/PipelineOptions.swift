public enum MessageFormat: Sendable { case tree, json }

/// Everything the command line can set about a run.
public struct PipelineOptions: Sendable {
    public var segments = false
    public var hexDump = false
    public var quiet = false
    public var verbose = 0
    public var format: MessageFormat = .tree
    public var diffable = false
    /// `--ignore`: fields left out of `--diffable` lines.
    public var ignore: [IgnorePattern] = []
    public var color = false
    public var streamsDir: String?
    public var follow = false
    public var reassembly = ReassemblyOptions()
    public var dissectorPaths: [String] = []
    /// The largest WebSocket message assembled or inflated; larger ones are reported and skipped.
    public var maxWebSocketMessage = 16 << 20
    /// `-Y`: a display filter on decoded messages (Wireshark's syntax).
    public var displayFilter: String?
    /// `-z`: statistics tables printed at the end.
    public var statistics: [StatisticsKind] = []
    /// Where to look when no `-d` is given: `./Dissectors` and `$FRAMEDUMP_DISSECTORS`.
    public var defaultDissectorPaths: [String] = ["Dissectors"]
    /// `--proto-path` and `--key`: what loading the dissectors' `.proto` files and ciphers needs.
    public var load = LoadOptions()
    /// `--proto-defaults`: protobuf fields not on the wire shown at their default value.
    public var protoDefaults = false
    public init() {}
}
