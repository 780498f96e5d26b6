import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh hpack`): the bytes as a connection's header blocks, each
/// `[u16 length][block]`, through one HPACK decoder (its table kept from block to block, the
/// allowed table size from the first byte). Checked after each block: every header's name and
/// value lie in the decoded text, its representation in the block, the table within its size,
/// the text within its bound; a refused block leaves the decoder refusing every later one.
public enum FuzzHPACK {
    public static func run(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let d = HPACKDecoder()
        d.allowedSize = [0, 64, 256, 4096, 65536, 1 << 24][Int(first) % 6]
        var pos = 1
        var failed = false
        while pos + 2 <= data.count {
            let n = min(Int(data[pos]) << 8 | Int(data[pos + 1]), data.count - pos - 2)
            let block = UnsafeRawBufferPointer(rebasing: data[(pos + 2)..<(pos + 2 + n)])
            pos += 2 + n
            let failure = d.decode(block)
            precondition(!failed || failure != nil, "a broken decoder refuses every later block")
            if failure != nil { failed = true; continue }
            precondition(d.tableSize <= d.maxSize && d.maxSize <= max(d.allowedSize, 4096), "the table within its size")
            precondition(d.text.count <= HPACKDecoder.maxText, "the block's strings within their bound")
            var end = 0
            for h in d.headers {
                precondition(h.name.upperBound <= d.text.count && h.value.upperBound <= d.text.count, "names and values in the text")
                precondition(h.at >= end && h.at + h.width <= n && h.width > 0, "representations in order, in the block")
                end = h.at + h.width
            }
        }
    }
}
