import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fuzz entry (`scripts/fuzz.sh pipeline`): the bytes as a capture file, read through libpcap
/// by the whole pipeline with the shipped dissector files, eight times: the tree (hex dump,
/// verbose) with every `-z` table; NDJSON with every table (each line checked as strict
/// JSON), `--diffable` with every table, and the tree with a hex dump, each on one thread and
/// again with the connections sharded among three threads in tiny rounds with output buffers
/// of one byte, so that every line outgrows its buffer (each pair must be
/// the same, summary included); and the segment and follow printers with a stream export.
/// Each ends with the summary.
public enum FuzzPipeline {
    /// The capture is written here for libpcap to open (one file per process).
    static let path: String = {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return dir + "/framedump-fuzz-\(getpid()).pcap"
    }()
    static let streams = path + ".streams"

    public static func run(_ data: UnsafeRawBufferPointer) {
        guard FuzzFile.save(data, to: path) else { return }
        defer { unlink(path) }
        var oneThread: [UInt8] = []
        for pass in [0, 1, 6, 2, 7, 3, 4, 5] {
            var o = PipelineOptions()
            o.dissectorPaths = [FuzzDeframer.dissectorDirectory]
            o.limits.maxConnections = 64
            o.limits.maxBufferPerStream = 1 << 16
            o.limits.maxBufferTotal = 1 << 18
            o.limits.maxWebSocketMessage = 1 << 16
            o.limits.maxFragmentBytes = 1 << 18
            switch pass {
            case 0:
                o.hexDump = true
                o.verbose = 1
                o.statistics = FuzzDeframer.statistics
            case 1, 2:
                // -z and --diffable: the shards' records counted and their connections merged.
                o.format = .json
                o.diffable = pass == 2
                o.statistics = FuzzDeframer.statistics
                o.jobs = 1
            case 6, 7:
                // The same, sharded among three threads in tiny rounds.
                o.format = .json
                o.diffable = pass == 7
                o.statistics = FuzzDeframer.statistics
                o.jobs = 3
                o.shardSizes = ShardPool.Sizes(events: 5, blockBytes: 96, rounds: 2, outBytes: 1)
            case 3, 4:
                // The connections sharded among three threads, in tiny rounds (no -v: its
                // summary's memory line differs from run to run).
                o.hexDump = true
                o.jobs = pass == 4 ? 3 : 1
                o.shardSizes = ShardPool.Sizes(events: 4, blockBytes: 64, rounds: 2, outBytes: 1)
            case 5:
                o.segments = true
                o.follow = true
                o.streamsDir = streams
            default: break
            }
            let out = OutputBuffer(fd: nil)
            guard let source = try? PacketSource(.file(path)), let pipeline = try? Pipeline(options: o, output: out) else { return }
            try? pipeline.run(source, limit: nil, dumper: nil, lineBuffered: false)
            pipeline.finish()
            if pass == 1 { FuzzDeframer.checkNDJSON(out.bytes) }
            pipeline.printSummary(live: nil)
            // Each sharded pass (6, 7, 4) prints what the one-thread pass before it (1, 2, 3) did.
            if [1, 2, 3].contains(pass) { oneThread = out.bytes }
            if [6, 7, 4].contains(pass) && out.bytes != oneThread { fatalError("sharding the connections changed the output") }
        }
        removeStreams()
    }

    /// The stream export's folder, emptied (its files are flat: one per connection direction, an index).
    static func removeStreams() {
        guard let d = opendir(streams) else { return }
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { unlink(streams + "/" + name) }
        }
        closedir(d)
        rmdir(streams)
    }
}
