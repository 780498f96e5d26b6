import FramedumpCore
import FramedumpUI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fuzz entry (`scripts/fuzz.sh ui`): the bytes as a capture file, indexed by `framedump ui`
/// with the shipped dissector files; then every answer the page can ask for is made: the
/// rows (their one-line summaries read back from the spill), each message in full (its tree
/// text read back into fields and byte ranges, which must lie inside the bytes), each
/// connection's sequence, the plots, and a filter decoded again.
public enum FuzzUI {
    static let path: String = {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return dir + "/framedump-fuzz-ui-\(getpid()).pcap"
    }()

    public static func run(_ data: UnsafeRawBufferPointer) {
        guard FuzzFile.save(data, to: path) else { return }
        defer { unlink(path) }
        var o = PipelineOptions()
        o.dissectorPaths = [FuzzDeframer.dissectorDirectory]
        o.limits.maxConnections = 64
        o.limits.maxBufferPerStream = 1 << 16
        o.limits.maxBufferTotal = 1 << 18
        o.limits.maxWebSocketMessage = 1 << 16
        guard let indexer = try? CaptureIndexer(UIConfiguration(input: .file(path), options: o)) else { return }
        indexer.start()
        _ = indexer.waitForIndex()
        let views = Views(indexer: indexer)
        _ = views.rows(nil, from: 0, count: 1000)
        _ = views.connections(from: 0, count: Views.maxConnections)
        for n in indexer.index.range.prefix(2000) {
            guard let e = indexer.index.entry(n) else { preconditionFailure("message \(n) held but not found") }
            let stored = indexer.spill.read(offset: e.spillOffset, count: Int(e.treeLength))
            precondition(stored.count == Int(e.treeLength), "the spill gave back \(stored.count) of \(e.treeLength) bytes")
            guard let tree = StoredTree(stored) else { preconditionFailure("message \(n): its stored tree does not read back") }
            let bytes = Int(e.transformedLength > 0 ? e.transformedLength : e.frameLength)
            for case .field(_, let off, let width, _) in tree.lines {
                precondition(off >= 0 && width >= 0 && off + width <= bytes, "field [\(off)+\(width)] beyond \(bytes) bytes")
            }
            _ = views.message(n)
        }
        for c in 0..<indexer.index.connectionCount { _ = views.sequence(connection: c, from: 0, count: 100) }
        _ = views.plots(nil, buckets: 50)
        _ = try? indexer.filter("msg.dir == \"s2c\"")
    }
}
