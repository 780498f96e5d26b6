public enum MessageFormat: Sendable { case tree, json }

/// Everything the command line can set about a run.
public struct PipelineOptions: Sendable {
    public var segments = false
    public var hexDump = false
    /// `-A`: an ASCII dump of each frame; `-V`: the tree's field descriptions (tshark's
    /// details) without the longer summary; `-O`: details only for these protocols.
    public var asciiDump = false
    public var fieldDescriptions = false
    public var detailsOf: Set<String>?
    public var quiet = false
    /// Whether messages are printed (not with -w, unless --print).
    public var printsMessages = true
    /// `-T fields -e ...`: one line of field values per message instead of the tree.
    public var fields: FieldsOptions?
    public var verbose = 0
    public var format: MessageFormat = .tree
    /// How the tree's lines show their time (`-t` ... `-ttttt`).
    public var timeFormat: TimeFormat = .epoch
    public var diffable = false
    /// `--ignore`: fields left out of `--diffable` lines.
    public var ignore: [IgnorePattern] = []
    public var color = false
    public var streamsDir: String?
    public var follow = false
    /// The reassembler's settings; its buffer and connection bounds come from `limits`.
    public var reassembly = ReassemblyOptions()
    /// Every bound on what the input can make the run hold or do (`--max-…`).
    public var limits = Limits()
    public var dissectorPaths: [String] = []
    /// `--decode-as PORT=PROTOCOL`, in order.
    public var decodeAs: [DecodeAs] = []
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
    /// NSS key logs that TLS connections are decrypted with (`--tls-keylog`).
    public var tlsKeyLogs: [String] = []
    /// `-j`: threads decoding and printing beside the one reading, connections sharded among
    /// them (`ShardPool`); 1: everything on one thread. Live captures print each packet's
    /// messages at once: one.
    public var jobs = 1
    /// The shards' rounds (tests make them tiny, so every boundary is crossed).
    package var shardSizes = ShardPool.Sizes()
    public init() {}
}
