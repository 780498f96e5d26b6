/// One direction's HPACK decoder (RFC 7541): reads a header block into `headers`, each name and
/// value a range of `text` (the block's strings, Huffman-decoded or copied, laid end to end;
/// reused from block to block), and keeps the dynamic table from block to block, as the peer's
/// encoder does. A block it cannot read leaves the table in a state the peer's is not: the
/// decoder is then `broken`, and says so for every later block (HTTP/2's COMPRESSION_ERROR).
///
/// Bounded by what came, not by what was announced: a string's length is checked against the
/// block before anything is read, the table holds copies of strings that came (at most
/// `maxTableCeiling` bytes by RFC 7541's count), and a block's strings at most `maxText` bytes.
package final class HPACKDecoder {
    package init() {}

    package enum Representation: UInt8, Sendable {
        /// §6.1: a table entry by its index.
        case indexed
        /// §6.2.1: a literal added to the dynamic table.
        case incremental
        /// §6.2.2 and §6.2.3: a literal not added (never indexed: not by any intermediary either).
        case withoutIndexing
        case neverIndexed
    }

    package struct Header: Sendable {
        package var name: Range<Int>
        package var value: Range<Int>
        /// Where the representation lies in the block, and which it is.
        package var at: Int
        package var width: Int
        package var how: Representation
        /// The table entry it names or takes its name from (0: a literal name).
        package var index: Int
    }

    package struct Failure: Error, Sendable, Equatable {
        package var at: Int
        package var text: String
    }

    /// A dynamic table entry: its name and value, copied from the block that added it.
    struct Entry {
        var name: [UInt8]
        var value: [UInt8]
        var size: Int { name.count + value.count + 32 }
    }

    package static let maxTableCeiling = 1 << 20
    package static let maxText = 1 << 20

    @exclusivity(unchecked) package private(set) var headers: [Header] = []
    @exclusivity(unchecked) package private(set) var text: [UInt8] = []
    /// Entries, oldest first from `first`; the newest is dynamic index 62.
    @exclusivity(unchecked) private var entries: [Entry] = []
    @exclusivity(unchecked) private var first = 0
    @exclusivity(unchecked) package private(set) var tableSize = 0
    /// The table's size limit as the encoder last set it (§4.2), and the most it may set
    /// (SETTINGS_HEADER_TABLE_SIZE of the decoding side; 4,096 until it says otherwise).
    @exclusivity(unchecked) package private(set) var maxSize = 4096
    @exclusivity(unchecked) package var allowedSize = 4096 {
        didSet { allowedSize = min(allowedSize, Self.maxTableCeiling) }
    }
    /// A block could not be read: the table no longer follows the peer's.
    @exclusivity(unchecked) package private(set) var broken: Failure?

    package var dynamicCount: Int { entries.count - first }

    /// Reads one header block (a HEADERS or PUSH_PROMISE fragment and its CONTINUATIONs, joined).
    package func decode(_ b: UnsafeRawBufferPointer) -> Failure? {
        headers.removeAll(keepingCapacity: true)
        text.removeAll(keepingCapacity: true)
        if let broken { return Failure(at: 0, text: "the header table is lost since an earlier block (\(broken.text))") }
        var pos = 0
        while pos < b.count {
            let start = pos
            let byte = b[pos]
            do throws(Failure) {
                if byte & 0x80 != 0 {
                    let i = try integer(b, &pos, prefix: 7)
                    guard i > 0 else { throw Failure(at: start, text: "index 0 (§6.1)") }
                    let (n, v) = try entry(i, at: start)
                    headers.append(Header(name: n, value: v, at: start, width: pos - start, how: .indexed, index: i))
                } else if byte & 0xc0 == 0x40 {
                    try literal(b, &pos, prefix: 6, how: .incremental, start: start)
                } else if byte & 0xe0 == 0x20 {
                    let size = try integer(b, &pos, prefix: 5)
                    guard headers.isEmpty else { throw Failure(at: start, text: "a table size update after a header (§4.2)") }
                    guard size <= allowedSize else {
                        throw Failure(at: start, text: "a table size update to \(size) bytes, over the \(allowedSize) allowed")
                    }
                    maxSize = size
                    evict(to: size)
                } else {
                    try literal(b, &pos, prefix: 4, how: byte & 0x10 != 0 ? .neverIndexed : .withoutIndexing, start: start)
                }
            } catch {
                broken = error
                return error
            }
        }
        return nil
    }

    /// §5.1: an integer of an `prefix`-bit prefix; at most 2³¹ - 1.
    func integer(_ b: UnsafeRawBufferPointer, _ pos: inout Int, prefix: Int) throws(Failure) -> Int {
        let start = pos
        let mask = (1 << prefix) - 1
        var v = Int(b[pos]) & mask
        pos += 1
        guard v == mask else { return v }
        var shift = 0
        while true {
            guard pos < b.count else { throw Failure(at: start, text: "an integer cut by the block's end") }
            let c = Int(b[pos])
            pos += 1
            v += (c & 0x7f) << shift
            shift += 7
            guard v < Int(Int32.max) && shift <= 28 else { throw Failure(at: start, text: "an integer past 2³¹") }
            if c & 0x80 == 0 { return v }
        }
    }

    /// The name and value of table entry `i` (1-based; 62 on: dynamic), copied into `text`.
    func entry(_ i: Int, at: Int) throws(Failure) -> (Range<Int>, Range<Int>) {
        if i <= HPACKTables.staticTable.count {
            let e = HPACKTables.staticTable[i - 1]
            try room(e.name.utf8CodeUnitCount + e.value.utf8CodeUnitCount, at: at)
            return (append(e.name), append(e.value))
        }
        let d = i - HPACKTables.staticTable.count - 1
        guard d < dynamicCount else {
            throw Failure(at: at, text: "index \(i): the table has \(HPACKTables.staticTable.count + dynamicCount) entries")
        }
        let e = entries[entries.count - 1 - d]
        try room(e.name.count + e.value.count, at: at)
        return (append(e.name), append(e.value))
    }

    /// A block's strings stay within `maxText`, those copied from the tables too (a one-byte
    /// index of a 4 KiB entry, repeated, would otherwise grow `text` without bound).
    func room(_ n: Int, at: Int) throws(Failure) {
        guard text.count + n <= Self.maxText else { throw Failure(at: at, text: "the block's strings run past \(Self.maxText >> 20) MiB") }
    }

    func append(_ s: StaticString) -> Range<Int> {
        let start = text.count
        s.withUTF8Buffer { text.append(contentsOf: $0) }
        return start..<text.count
    }

    func append(_ s: [UInt8]) -> Range<Int> {
        let start = text.count
        text.append(contentsOf: s)
        return start..<text.count
    }

    /// §6.2: a literal header field, its name indexed or literal.
    func literal(_ b: UnsafeRawBufferPointer, _ pos: inout Int, prefix: Int, how: Representation, start: Int) throws(Failure) {
        let i = try integer(b, &pos, prefix: prefix)
        let name: Range<Int>
        if i == 0 {
            name = try string(b, &pos)
        } else {
            name = try entry(i, at: start).0
        }
        let value = try string(b, &pos)
        headers.append(Header(name: name, value: value, at: start, width: pos - start, how: how, index: i))
        if how == .incremental { add(Entry(name: Array(text[name]), value: Array(text[value]))) }
    }

    /// §5.2: a string literal, plain or Huffman-coded, into `text`.
    func string(_ b: UnsafeRawBufferPointer, _ pos: inout Int) throws(Failure) -> Range<Int> {
        let start = pos
        guard pos < b.count else { throw Failure(at: start, text: "a string missing at the block's end") }
        let huffman = b[pos] & 0x80 != 0
        let n = try integer(b, &pos, prefix: 7)
        guard n <= b.count - pos else {
            throw Failure(at: start, text: "a string of \(n) bytes, \(b.count - pos) left in the block")
        }
        let out = text.count
        if huffman {
            // A Huffman string is at most 8/5 as long decoded (the shortest code has 5 bits).
            guard text.count + n * 8 / 5 <= Self.maxText else { throw Failure(at: start, text: "the block's strings past \(Self.maxText) bytes") }
            if let why = HPACKHuffman.decode(UnsafeRawBufferPointer(rebasing: b[pos..<(pos + n)]), into: &text) {
                throw Failure(at: start, text: why)
            }
        } else {
            guard text.count + n <= Self.maxText else { throw Failure(at: start, text: "the block's strings past \(Self.maxText) bytes") }
            text.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[pos..<(pos + n)]))
        }
        pos += n
        return out..<text.count
    }

    /// §4.4: a new entry; older ones are evicted to make room (an entry larger than the table
    /// empties it and is not added).
    func add(_ e: Entry) {
        evict(to: maxSize - e.size)
        guard e.size <= maxSize else { return }
        entries.append(e)
        tableSize += e.size
    }

    func evict(to size: Int) {
        while tableSize > max(0, size) && first < entries.count {
            tableSize -= entries[first].size
            first += 1
        }
        if first > 64 && first * 2 > entries.count {
            entries.removeFirst(first)
            first = 0
        }
    }
}

/// RFC 7541 Appendix B's code, decoded through a binary tree built once from the table.
enum HPACKHuffman {
    /// Per node: its children (negative: a leaf, -1 - symbol); node 0 is the root.
    static let tree: [(zero: Int32, one: Int32)] = {
        var t: [(zero: Int32, one: Int32)] = [(0, 0)]
        for symbol in 0..<257 {
            let code = HPACKTables.codes[symbol], length = Int(HPACKTables.lengths[symbol])
            var node = 0
            for bit in stride(from: length - 1, through: 0, by: -1) {
                let one = (code >> UInt32(bit)) & 1 == 1
                let next = one ? t[node].one : t[node].zero
                if bit == 0 {
                    if one { t[node].one = Int32(-1 - symbol) } else { t[node].zero = Int32(-1 - symbol) }
                } else if next > 0 {
                    node = Int(next)
                } else {
                    t.append((0, 0))
                    let made = Int32(t.count - 1)
                    if one { t[node].one = made } else { t[node].zero = made }
                    node = Int(made)
                }
            }
        }
        return t
    }()

    /// Appends the decoded bytes to `out`; returns why the string is no Huffman code (nil: read).
    static func decode(_ b: UnsafeRawBufferPointer, into out: inout [UInt8]) -> String? {
        let t = tree
        var node = 0
        // Bits read since the last symbol, and whether all were ones (§5.2: the padding is
        // the EOS code's first bits, fewer than 8).
        var pending = 0
        var allOnes = true
        for byte in b {
            for bit in stride(from: 7, through: 0, by: -1) {
                let one = (byte >> UInt8(bit)) & 1 == 1
                let next = one ? t[node].one : t[node].zero
                pending += 1
                allOnes = allOnes && one
                if next < 0 {
                    let symbol = Int(-1 - next)
                    if symbol == 256 { return "a Huffman string holds EOS (§5.2)" }
                    out.append(UInt8(symbol))
                    node = 0
                    pending = 0
                    allOnes = true
                } else if next == 0 {
                    return "no Huffman code"
                } else {
                    node = Int(next)
                }
            }
        }
        if pending > 7 { return "a Huffman string padded with more than 7 bits (§5.2)" }
        if !allOnes { return "a Huffman string padded with other bits than EOS's (§5.2)" }
        return nil
    }
}
