/// An array that grows by fixed chunks: appending never copies what it holds, so a table of a
/// million connections never has two copies alive while it grows (a doubling array's peak).
struct ChunkedArray<Element> {
    private static var chunkSize: Int { 1 << 16 }
    private var chunks: [[Element]] = []
    private(set) var count = 0

    mutating func append(_ e: Element) {
        if count % Self.chunkSize == 0 {
            var c: [Element] = []
            c.reserveCapacity(Self.chunkSize)
            chunks.append(c)
        }
        chunks[chunks.count - 1].append(e)
        count += 1
    }

    subscript(i: Int) -> Element {
        get { chunks[i >> 16][i & 0xffff] }
        set { chunks[i >> 16][i & 0xffff] = newValue }
    }

    var indices: Range<Int> { 0..<count }
}
