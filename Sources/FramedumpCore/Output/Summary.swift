#if canImport(Glibc)
import Glibc
#endif

/// The `-q` summary (and the closing lines of a live capture), written to stdout.
struct Summary {
    let out: OutputBuffer

    func line(_ s: String) { out.write(s); out.newline() }

    func capture(_ c: CaptureStats) {
        line("packets: \(c.packets) (\(c.bytes) bytes), TCP segments: \(c.tcpSegments)")
        var skipped: [String] = []
        if c.notTCP > 0 { skipped.append("\(c.notTCP) not TCP") }
        if c.fragments > 0 { skipped.append("\(c.fragments) IP fragments") }
        if c.unsupported > 0 { skipped.append("\(c.unsupported) unsupported link/network protocol") }
        if c.truncatedHeaders > 0 { skipped.append("\(c.truncatedHeaders) headers cut by snaplen") }
        if c.malformed > 0 { skipped.append("\(c.malformed) malformed headers") }
        if !skipped.isEmpty { line("skipped packets: " + skipped.joined(separator: ", ")) }
        if c.truncatedPayloads > 0 { line("segments with payload cut by snaplen: \(c.truncatedPayloads)") }
    }

    func reassembly(_ r: ReassemblyStats, options: ReassemblyOptions) {
        line("connections: \(r.connections), stream bytes: \(r.deliveredBytes), gaps: \(r.gaps) (\(r.gapBytes) bytes)")
        var extra: [String] = []
        if r.retransmittedSegments > 0 { extra.append("\(r.retransmittedSegments) retransmitted segments") }
        if r.outOfOrderSegments > 0 { extra.append("\(r.outOfOrderSegments) out of order") }
        if r.conflicts > 0 { extra.append("\(r.conflicts) conflicting overlaps") }
        if !extra.isEmpty { line("reassembly: " + extra.joined(separator: ", ")) }
        if r.bufferLimitHits > 0 {
            line("bound hit: out-of-order buffer (\(options.maxBufferedBytes) bytes per direction) forced \(r.bufferLimitHits) gaps")
        }
        if r.evicted > 0 {
            line("bound hit: connection table full (\(options.maxConnections)): \(r.evicted) connections evicted")
        }
        if r.idleClosed > 0 { line("idle timeout (\(options.idleTimeoutSeconds) s): \(r.idleClosed) connections closed") }
    }

    func live(_ s: (received: UInt32, dropped: UInt32, ifDropped: UInt32)) {
        line("\(s.received) packets received by filter, \(s.dropped) packets dropped by kernel, \(s.ifDropped) dropped by interface")
    }

    func memory() {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        line("peak memory: \(u.ru_maxrss / 1024) MiB")
    }
}
