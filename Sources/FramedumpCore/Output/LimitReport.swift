/// The bounds a run ran into, one row per flag: the same rows make the summary's
/// `limit hit:` lines and NDJSON's `{"type":"limit",...}` lines.
struct LimitReport {
    struct Row {
        let flag: String
        let value: Int
        let hits: UInt64
        /// What happened each time, in a few words ("gaps forced ...").
        let what: String
    }

    let rows: [Row]

    init(limits: Limits, reassembly: ReassemblyStats?, fragments: Defragmenter.Stats, sessions: SessionManager?) {
        let h = sessions?.protocols.reduce(LimitHits()) { $0 + $1.limitHits } ?? LimitHits()
        let r = reassembly ?? ReassemblyStats()
        let all: [Row] = [
            Row(flag: "--max-frame", value: limits.maxFrame, hits: h.frameTooLong,
                what: "frames announced more than max_frame (reported malformed, never held)"),
            Row(flag: "--max-ws-message", value: limits.maxWebSocketMessage, hits: h.webSocketTooLarge,
                what: "WebSocket messages larger than this on the wire or inflated (skipped)"),
            Row(flag: "--max-inflate", value: limits.maxInflate, hits: h.inflateTooLarge,
                what: "bodies whose transforms would produce more than this (shown as they came)"),
            Row(flag: "--max-buffer", value: limits.maxBufferPerStream, hits: r.bufferLimitHits,
                what: "gaps forced by out-of-order bytes held in one direction"),
            Row(flag: "--max-buffer-total", value: limits.maxBufferTotal, hits: r.totalBufferLimitHits,
                what: "gaps forced by out-of-order bytes held over every connection"),
            Row(flag: "--max-connections", value: limits.maxConnections, hits: r.evicted,
                what: "connections evicted (least recently used)"),
            Row(flag: "--max-ip-fragments", value: limits.maxFragmentBytes, hits: fragments.evicted,
                what: "incomplete IP datagrams evicted (fragment bytes held, or 1024 datagrams)"),
            Row(flag: "--max-depth", value: limits.maxDepth, hits: h.tooDeep,
                what: "messages nested deeper (the rest shown raw)"),
            Row(flag: "--max-array", value: limits.maxArray, hits: h.arrayTooLong,
                what: "messages with a longer array (the rest shown raw)"),
            Row(flag: "--max-string", value: limits.maxString, hits: h.stringCut,
                what: "strings printed cut"),
        ]
        rows = all.filter { $0.hits > 0 }
    }

    /// `limit hit: --max-buffer 4194304: 3 gaps forced by ...`
    func text(_ line: (String) -> Void) {
        for r in rows { line("limit hit: \(r.flag) \(r.value): \(r.hits) \(r.what)") }
    }

    /// `{"type":"limit","flag":"--max-buffer","value":4194304,"hits":3,"what":"..."}`
    func json(to out: OutputBuffer) {
        for r in rows {
            out.write("{\"type\":\"limit\",\"flag\":\"")
            out.write(r.flag)
            out.write("\",\"value\":")
            out.decimal(Int64(r.value))
            out.write(",\"hits\":")
            out.decimal(r.hits)
            out.write(",\"what\":")
            JSONText.string(r.what, to: out)
            out.byte(0x7d)
            out.newline()
        }
    }
}

/// One bound a run hit, as the summary's `limit hit:` line says it.
package struct LimitHit: Sendable {
    package let flag: String
    package let value: Int
    package let hits: UInt64
    package let what: String
}
