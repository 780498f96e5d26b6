#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `-q` summary (and the closing lines of a live capture), written to stdout.
struct Summary {
    let out: OutputBuffer

    func line(_ s: String) { out.write(s); out.newline() }

    func capture(_ c: CaptureStats) {
        line("packets: \(c.packets) (\(c.bytes) bytes), TCP segments: \(c.tcpSegments)")
        var skipped: [String] = []
        if c.notTCP > 0 { skipped.append("\(c.notTCP) not TCP") }
        if c.unsupported > 0 { skipped.append("\(c.unsupported) unsupported link/network protocol") }
        if c.truncatedHeaders > 0 { skipped.append("\(c.truncatedHeaders) headers cut by snaplen") }
        if c.malformed > 0 { skipped.append("\(c.malformed) malformed headers") }
        if !skipped.isEmpty { line("skipped packets: " + skipped.joined(separator: ", ")) }
        if c.truncatedPayloads > 0 { line("segments with payload cut by snaplen: \(c.truncatedPayloads)") }
        if c.ipLengthBeyondFrame > 0 {
            line("IP length beyond an uncut frame (a lying or corrupt header), captured length used: \(c.ipLengthBeyondFrame) segments")
        }
        if c.compressed > 0 {
            line("IPComp: \(c.compressed) payloads, \(c.ipcompSegments) TCP segments inflated" + (c.ipcompFailed > 0 ? ", \(c.ipcompFailed) would not inflate" : ""))
        }
        if c.ipLengthFromCapture > 0 {
            line("IP length 0 (segmentation offload), captured length used: \(c.ipLengthFromCapture) segments")
        }
    }

    /// `UDP flows: 3 (412 datagrams, 20,100 bytes), 2 closed idle, 1 datagram cut by snaplen`
    func flows(_ f: UDPFlows) {
        let s = f.stats
        guard s.flows > 0 else { return }
        var parts = ["\(s.datagrams) datagrams, \(s.bytes) bytes"]
        if s.truncated > 0 { parts.append("\(s.truncated) cut by snaplen") }
        if s.idleClosed > 0 { parts.append("\(s.idleClosed) closed after \(f.options.idleTimeoutSeconds) s idle") }
        if s.evicted > 0 { parts.append("\(s.evicted) evicted (--max-connections)") }
        line("UDP flows: \(s.flows) (" + parts.joined(separator: ", ") + ")")
    }

    func fragments(_ d: Defragmenter) {
        let s = d.stats
        guard s.fragments > 0 else { return }
        var parts = ["\(s.reassembled) datagrams reassembled"]
        if d.incomplete > 0 { parts.append("\(d.incomplete) incomplete at the end") }
        if s.duplicates > 0 { parts.append("\(s.duplicates) duplicate fragments") }
        if s.overlapsTrimmed > 0 { parts.append("\(s.overlapsTrimmed) IPv4 overlaps (first copy kept)") }
        if s.overlaps > 0 { parts.append("\(s.overlaps) dropped for overlapping IPv6 fragments") }
        if s.timedOut > 0 { parts.append("\(s.timedOut) timed out (\(d.options.timeoutSeconds) s)") }
        if s.evicted > 0 { parts.append("\(s.evicted) evicted (--max-ip-fragments)") }
        if s.cut > 0 { parts.append("\(s.cut) fragments cut by snaplen") }
        if s.malformed > 0 { parts.append("\(s.malformed) malformed fragments") }
        if s.tooManyFragments > 0 { parts.append("\(s.tooManyFragments) dropped for more than \(d.options.maxFragmentsPerDatagram) fragments") }
        if s.dropped > 0 { parts.append("\(s.dropped) fragments of dropped datagrams") }
        line("IP fragments: \(s.fragments), " + parts.joined(separator: ", "))
    }

    func reassembly(_ r: ReassemblyStats, options: ReassemblyOptions) {
        line("connections: \(r.connections), stream bytes: \(r.deliveredBytes), gaps: \(r.gaps) (\(r.gapBytes) bytes)")
        var extra: [String] = []
        if r.retransmittedSegments > 0 { extra.append("\(r.retransmittedSegments) retransmitted segments") }
        if r.outOfOrderSegments > 0 { extra.append("\(r.outOfOrderSegments) out of order") }
        if r.conflicts > 0 { extra.append("\(r.conflicts) conflicting overlaps") }
        if r.lateSegments > 0 { extra.append("\(r.lateSegments) late data for reported gaps (\(r.lateBytes) bytes)") }
        if r.outOfWindowResets > 0 { extra.append("\(r.outOfWindowResets) out-of-window RSTs ignored") }
        if r.afterCloseSegments > 0 { extra.append("\(r.afterCloseSegments) segments after close") }
        if r.continuedAfterClose > 0 { extra.append("\(r.continuedAfterClose) connections continued by new bytes after close") }
        if r.clockJumps > 0 { extra.append("\(r.clockJumps) packets with a timestamp jump not followed") }
        if r.retriedHandshakes > 0 { extra.append("\(r.retriedHandshakes) handshakes answered again with another ISN (the latest kept)") }
        if r.sequenceJumps > 0 { extra.append("\(r.sequenceJumps) sequence jumps of over 2^31 (the bytes between are gaps)") }
        if r.implausibleAcks > 0 { extra.append("\(r.implausibleAcks) ACKs of bytes their sender could not have seen, ignored") }
        if !extra.isEmpty { line("reassembly: " + extra.joined(separator: ", ")) }
        if r.idleClosed > 0 { line("idle timeout (\(options.idleTimeoutSeconds) s): \(r.idleClosed) connections closed") }
    }

    func protocols(_ m: SessionManager) {
        for p in m.protocols where p.connections > 0 {
            let total = p.messageCounts.reduce(0, +)
            line("\(p.schema.name): \(p.connections) connections, \(total) messages, \(p.bytes) bytes in frames, \(p.malformed) malformed (\(p.malformedBytes) bytes), \(p.gaps) gaps (\(p.gapBytes) bytes)" + (p.warnings > 0 ? ", \(p.warnings) messages with warnings" : "")
                 + (p.cutAtEnd > 0 ? ", \(p.cutAtEnd) frames cut by the end of the capture (\(p.cutAtEndBytes) bytes)" : ""))
            var rows: [(String, UInt64)] = []
            for (i, msg) in p.schema.messages.enumerated() where p.messageCounts[i] > 0 {
                rows.append((msg.name + (msg.idText.map { " (id \($0))" } ?? ""), p.messageCounts[i]))
            }
            for (id, n) in p.unknownIDs.sorted(by: { $0.key < $1.key }) { rows.append(("unknown id \(id)", n)) }
            if !p.schema.replies.isEmpty {
                let unanswered = UInt64(max(0, p.repliesWaiting)) + p.repliesDropped
                if unanswered > 0 { rows.append(("requests never answered", unanswered)) }
                if p.repliesOrphaned > 0 { rows.append(("replies without their request", p.repliesOrphaned)) }
            }
            if p.pairsForgotten > 0 {
                rows.append(("requests forgotten (after \(PairTable.limit) newer)", p.pairsForgotten))
            }
            let known = p.messageCounts.last ?? 0
            let listedUnknown = p.unknownIDs.values.reduce(0, +)
            if known > listedUnknown { rows.append(("no message id", known - listedUnknown)) }
            let width = rows.map { $0.0.count }.max() ?? 0
            for (name, n) in rows {
                line("  " + name + String(repeating: " ", count: width - name.count) + "  \(n)")
            }
            for k in LayerRegistry.kinds { for l in k.summary(p) { line(l) } }
            if let chain = p.decoder.transforms { transforms(chain) }
        }
        for k in LayerRegistry.kinds { for l in k.summary(m) { line(l) } }
        if m.undissectedConnections > 0 {
            line("no dissector: \(m.undissectedConnections) connections, \(m.undissectedBytes) bytes (not decoded)")
        }
    }

    /// `  transforms: xor 70 bodies (20334 → 20334 bytes), zlib 43 bodies (50723 → 85301 bytes), 1 failed`
    func transforms(_ chain: TransformChain) {
        var parts: [String] = []
        var failed: UInt64 = 0
        for (spec, s) in zip(chain.specs, chain.stats) {
            failed += s.failed
            parts.append("\(spec.name) \(s.bodies) bodies (\(s.bytesIn) → \(s.bytesOut) bytes)")
        }
        line("  transforms: " + parts.joined(separator: ", ") + ", \(failed) failed")
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
