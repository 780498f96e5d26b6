import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fuzz entry (`scripts/fuzz.sh pipeline`): the bytes as a capture file, read through libpcap
/// by the whole pipeline with the shipped dissector files, four times: the tree (hex dump,
/// verbose) with every `-z` table, NDJSON with every table (each line checked as strict
/// JSON) on one thread and again decoded on a second thread with tiny batches (the two must be
/// the same, summary included), and the segment and follow printers with a stream export;
/// each ends with the summary.
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
        for pass in 0..<6 {
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
                // -z: decoding and printing on a second thread when there are jobs.
                o.format = .json
                o.statistics = FuzzDeframer.statistics
                o.jobs = pass == 2 ? 2 : 1
                o.decodeThreadSizes = DecodeThread.Sizes(events: 5, blockBytes: 96, batches: 2)
            case 3, 4:
                // The connections sharded among three threads, in tiny rounds (no -v: its
                // summary's memory line differs from run to run).
                o.hexDump = true
                o.jobs = pass == 4 ? 3 : 1
                o.shardSizes = ShardPool.Sizes(events: 4, blockBytes: 64, rounds: 2)
            default:
                o.segments = true
                o.follow = true
                o.streamsDir = streams
            }
            let out = OutputBuffer(fd: nil)
            guard let source = try? PacketSource(.file(path)), let pipeline = try? Pipeline(options: o, output: out) else { return }
            try? pipeline.run(source, limit: nil, dumper: nil, lineBuffered: false)
            pipeline.finish()
            if pass == 1 { FuzzDeframer.checkNDJSON(out.bytes) }
            pipeline.printSummary(live: nil)
            if pass == 1 || pass == 3 { oneThread = out.bytes }
            if pass == 2 && out.bytes != oneThread { fatalError("decoding on a second thread changed the output") }
            if pass == 4 && out.bytes != oneThread { fatalError("sharding the connections changed the output") }
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
