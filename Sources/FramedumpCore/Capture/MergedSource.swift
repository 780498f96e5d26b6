#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Several capture files read as one run, merged as `mergecap` merges them: the next packet
/// is always the earliest of the files' next packets, a tie going to the file given first
/// (each file is read in its own order, as mergecap reads it: a packet dated earlier than the
/// one before it in its file is not moved further back). Packets are numbered in the merged
/// order; a BPF filter runs after the merge, so the numbers are those of `mergecap` then
/// `framedump -r merged` with the same filter. Each packet keeps its own link type.
///
/// A file is opened only once the merge reaches its first packet (and closed at its end):
/// files that follow one another in time, as rotated ones do, hold one descriptor at a time.
/// Opening every file first (to learn its first packet's time) also finds a bad file before
/// any output: the error names it.
public final class MergedSource: PacketInput {
    /// The files, in the order given (the order ties are broken in).
    public let files: [String]
    public var captureFiles: [String] { files.filter { $0 != "-" } }
    public let linkType: Int32
    @exclusivity(unchecked) public private(set) var linkTypesSeen: [Int32] = []
    /// Per file that libpcap refused or cut part of: the file and libpcap's words.
    @exclusivity(unchecked) public private(set) var handedOver: [(file: String, why: String)] = []
    /// The files that ended inside a record while still being written (see `GrowingFile`).
    @exclusivity(unchecked) public private(set) var endedWhileBeingWritten: [String] = []

    /// A file not yet opened: where its first packet falls.
    private struct Pending {
        var file: Int
        var first: Timestamp
    }
    /// A file being read, with its next packet (whose bytes its source lends until its next read).
    private struct Active {
        var file: Int
        var source: PacketSource
        var head: Packet
    }

    /// Files not yet opened, earliest first packet first (ties in file order).
    private let pending: [Pending]
    @exclusivity(unchecked) private var nextPending = 0
    /// A binary min-heap by (head time, file).
    @exclusivity(unchecked) private var heap: [Active] = []
    @exclusivity(unchecked) private var filter: PacketFilter?
    /// Each file's first link type (a filter is checked against each before any output).
    private let fileLinkTypes: [Int32]
    private let maxSnaplen: Int32
    @exclusivity(unchecked) private var packetCount: UInt64 = 0
    private let stopFlag: UnsafeMutablePointer<sig_atomic_t> = {
        let p = UnsafeMutablePointer<sig_atomic_t>.allocate(capacity: 1)
        p.initialize(to: 0)
        return p
    }()

    /// Opens each file once to read its first packet's time; any error names its file.
    public init(files: [String]) throws(CaptureError) {
        self.files = files
        var pending: [Pending] = []
        var linkTypes: [Int32] = []
        var snap: Int32 = 0
        var growing: [String] = []
        for (i, path) in files.enumerated() {
            let s = try PacketSource(.file(path))
            linkTypes.append(s.linkType)
            snap = max(snap, s.snaplen)
            if let p = try s.next() { pending.append(Pending(file: i, first: p.ref.ts)) }
            if s.endedWhileBeingWritten { growing.append(path) }
        }
        pending.sort { ($0.first, $0.file) < ($1.first, $1.file) }
        self.pending = pending
        fileLinkTypes = linkTypes
        linkType = pending.first.map { linkTypes[$0.file] } ?? linkTypes.first ?? 1
        maxSnaplen = snap == 0 ? 262_144 : snap
        endedWhileBeingWritten = growing
    }

    /// One file as ever (`PacketSource`), several merged.
    public static func open(_ files: [String]) throws(CaptureError) -> any PacketInput {
        if files.count == 1 { return try PacketSource(.file(files[0])) }
        return try MergedSource(files: files)
    }

    deinit { stopFlag.deallocate() }

    /// Checked against every file's link type now, so a bad expression is known before any output.
    public func setFilter(_ expression: String) throws(CaptureError) {
        let f = PacketFilter(expression, mainLinkType: linkType)
        for t in Set(fileLinkTypes) { try f.check(t) }
        filter = f
    }

    public func stop() { stopFlag.pointee = 1 }
    public var stopped: Bool { stopFlag.pointee != 0 }

    /// Written as the first packet's capture (libpcap's pcap writer holds one link type).
    public func openDumper(_ path: String) throws(CaptureError) -> PacketDumper {
        try PacketDumper.create(path: path, linkType: linkType, snaplen: maxSnaplen)
    }

    @inline(__always)
    private static func earlier(_ a: Active, _ b: Active) -> Bool {
        a.head.ref.ts != b.head.ref.ts ? a.head.ref.ts < b.head.ref.ts : a.file < b.file
    }

    public func forEach(limit: UInt64?, _ body: (Packet) -> Bool) throws(CaptureError) {
        var lastLinkType = Int32.min
        while true {
            if let limit, packetCount >= limit { return }
            if stopFlag.pointee != 0 { return }
            // Open the files whose first packet comes before the earliest packet at hand.
            while nextPending < pending.count {
                let p = pending[nextPending]
                if let top = heap.first, (top.head.ref.ts, top.file) < (p.first, p.file) { break }
                nextPending += 1
                try activate(p.file)
            }
            guard !heap.isEmpty else { return }
            var p = heap[0].head
            var passes = true
            if let filter { passes = try filter.passes(p.data, wireLength: p.wireLength, linkType: p.linkType) }
            if passes {
                packetCount += 1
                p.ref = PacketRef(number: packetCount, ts: p.ref.ts)
                if p.linkType != lastLinkType {
                    lastLinkType = p.linkType
                    if !linkTypesSeen.contains(p.linkType) { linkTypesSeen.append(p.linkType) }
                }
                if !body(p) { return }
            }
            // The packet is delivered: its file may read on.
            if let next = try heap[0].source.next() {
                heap[0].head = next
                siftDown(0)
            } else {
                retire(0)
            }
        }
    }

    private func activate(_ file: Int) throws(CaptureError) {
        let s = try PacketSource(.file(files[file]))
        guard let head = try s.next() else {
            note(s, file)
            return
        }
        heap.append(Active(file: file, source: s, head: head))
        siftUp(heap.count - 1)
    }

    /// A file at its end: what it said is kept, its descriptor closed.
    private func retire(_ i: Int) {
        note(heap[i].source, heap[i].file)
        heap.swapAt(i, heap.count - 1)
        heap.removeLast()
        if i < heap.count { siftDown(i) }
    }

    private func note(_ s: PacketSource, _ file: Int) {
        if let why = s.handedOver { handedOver.append((files[file], why)) }
        if s.endedWhileBeingWritten && !endedWhileBeingWritten.contains(files[file]) { endedWhileBeingWritten.append(files[file]) }
    }

    private func siftUp(_ i: Int) {
        var i = i
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.earlier(heap[i], heap[parent]) else { return }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private func siftDown(_ i: Int) {
        var i = i
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count && Self.earlier(heap[l], heap[m]) { m = l }
            if r < heap.count && Self.earlier(heap[r], heap[m]) { m = r }
            if m == i { return }
            heap.swapAt(i, m)
            i = m
        }
    }
}
