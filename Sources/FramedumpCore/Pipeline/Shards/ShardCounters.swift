/// A shard counts in its own objects (its protocols, its layers' states, its filter): at the
/// end of the run each shard's counts are added into the run's, which the summary, `-q`'s
/// lines and the limit report read as they would after one thread.
extension SessionManager {
    func absorb(_ shard: SessionManager) {
        for (mine, theirs) in zip(protocols, shard.protocols) { mine.absorb(theirs) }
        undissectedConnections += shard.undissectedConnections
        undissectedBytes += shard.undissectedBytes
        for (i, k) in LayerRegistry.kinds.enumerated() {
            k.absorb(manager: layerStates[i], shard.layerStates[i])
        }
    }
}

extension ProtocolRuntime {
    func absorb(_ o: ProtocolRuntime) {
        for i in messageCounts.indices { messageCounts[i] += o.messageCounts[i] }
        bytes += o.bytes
        malformed += o.malformed
        malformedBytes += o.malformedBytes
        cutAtEnd += o.cutAtEnd
        cutAtEndBytes += o.cutAtEndBytes
        gaps += o.gaps
        gapBytes += o.gapBytes
        connections += o.connections
        warnings += o.warnings
        for (id, n) in o.unknownIDs { unknownIDs[id, default: 0] += n }
        limitHits = limitHits + o.limitHits
        if let t = decoder.transforms, let u = o.decoder.transforms { t.absorb(u) }
        for (i, k) in LayerRegistry.kinds.enumerated() {
            k.absorb(protocol: layerStates[i], o.layerStates[i])
        }
    }
}

extension WebSocketCounters {
    func absorb(_ o: WebSocketCounters) {
        for i in 0..<16 { perOpcode[i] += o.perOpcode[i] }
        handshakes += o.handshakes
        compressed += o.compressed
        compressedBytes += o.compressedBytes
        inflatedBytes += o.inflatedBytes
        framingViolations += o.framingViolations
        invalidTextOnly += o.invalidTextOnly
    }
}

extension WebSocketLayer {
    static func absorb(protocol mine: AnyObject?, _ theirs: AnyObject?) {
        guard let m = mine as? WebSocketProtocolState, let t = theirs as? WebSocketProtocolState else { return }
        m.counters.absorb(t.counters)
    }

    static func absorb(manager mine: AnyObject?, _ theirs: AnyObject?) {
        guard let m = mine as? WebSocketManagerState, let t = theirs as? WebSocketManagerState else { return }
        // (Its default protocol is one of the manager's, added with them.)
        m.httpPassedOver += t.httpPassedOver
    }
}

extension KCPLayer {
    static func absorb(protocol mine: AnyObject?, _ theirs: AnyObject?) {
        guard let m = mine as? KCPProtocolState, let t = theirs as? KCPProtocolState else { return }
        m.conversations += t.conversations
        m.segments += t.segments
        m.acks += t.acks
        m.windowSegments += t.windowSegments
        m.retransmitted += t.retransmitted
        m.lost += t.lost
        m.messages += t.messages
        m.fragments += t.fragments
        m.malformedDatagrams += t.malformedDatagrams
        m.heldLimit += t.heldLimit
        m.conversationLimit += t.conversationLimit
    }

    /// `-z kcp`'s rows, put back in the run's order.
    static func absorb(manager mine: AnyObject?, _ theirs: AnyObject?) {
        guard let m = mine as? KCPManagerState, let t = theirs as? KCPManagerState else { return }
        m.absorb(t)
    }
}

extension TLSLayer {
    static func absorb(protocol mine: AnyObject?, _ theirs: AnyObject?) {}

    static func absorb(manager mine: AnyObject?, _ theirs: AnyObject?) {
        guard let m = mine as? TLSManagerState, let t = theirs as? TLSManagerState else { return }
        m.handshakes += t.handshakes
        for (v, n) in t.versions { m.versions[v, default: 0] += n }
        m.records += t.records
        m.decrypted += t.decrypted
        m.failed += t.failed
        m.undecryptable += t.undecryptable
        m.undecrypted += t.undecrypted
        m.undecryptedBytes += t.undecryptedBytes
        m.alignmentLost += t.alignmentLost
        m.realigned += t.realigned
        m.keyUpdates += t.keyUpdates
        m.sessionTickets += t.sessionTickets
        m.alerts += t.alerts
        m.plaintextBytes += t.plaintextBytes
        m.defaultProtocol.absorb(t.defaultProtocol)
    }
}
