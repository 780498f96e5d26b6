/// A shard counts in its own objects (its protocols, its layers' states, its filter): at the
/// end of the run each shard's counts are added into the run's, which the summary, `-q`'s
/// lines and the limit report read as they would after one thread.
extension SessionManager {
    func absorb(_ shard: SessionManager) {
        for (mine, theirs) in zip(protocols, shard.protocols) { mine.absorb(theirs) }
        undissectedConnections += shard.undissectedConnections
        undissectedBytes += shard.undissectedBytes
        for k in LayerRegistry.kinds { k.absorbStates(manager: self, shard) }
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
        repliesWaiting += o.repliesWaiting
        repliesDropped += o.repliesDropped
        repliesOrphaned += o.repliesOrphaned
        pairsForgotten += o.pairsForgotten
        for (id, n) in o.unknownIDs { unknownIDs[id, default: 0] += n }
        limitHits = limitHits + o.limitHits
        if let t = decoder.transforms, let u = o.decoder.transforms { t.absorb(u) }
        for k in LayerRegistry.kinds { k.absorbStates(protocol: self, o) }
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
    static func absorb(protocol m: WebSocketProtocolState, _ t: WebSocketProtocolState) {
        m.counters.absorb(t.counters)
    }

    static func absorb(manager m: WebSocketManagerState, _ t: WebSocketManagerState) {
        // (Its default protocol is one of the manager's, added with them.)
        m.httpPassedOver += t.httpPassedOver
    }
}

extension KCPLayer {
    static func absorb(protocol m: KCPProtocolState, _ t: KCPProtocolState) {
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
    static func absorb(manager m: KCPManagerState, _ t: KCPManagerState) {
        m.absorb(t)
    }
}

extension TLSLayer {
    static func absorb(manager m: TLSManagerState, _ t: TLSManagerState) {
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
        m.startTLS += t.startTLS
        m.alerts += t.alerts
        m.plaintextBytes += t.plaintextBytes
        m.defaultProtocol.absorb(t.defaultProtocol)
    }
}
