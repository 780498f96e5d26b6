/// A connection's HTTP/2 and gRPC stack (the session's `shared`): the two directions' frame
/// readers below, each direction's HPACK table, the calls by stream, and the gRPC messages
/// they carry, handed to `SessionFrames.layered` and decoded here (`MessageLayerDecoder`), as
/// the request or response type of the call's method.
final class HTTP2Connection: MessageLayerDecoder {
    /// (Not owned: `frames.layer` is this object, and the session holds both while it lives.)
    unowned(unsafe) let frames: SessionFrames
    let state: GRPCProtocolState
    unowned(unsafe) let session: Session
    @exclusivity(unchecked) private(set) var readers: [HTTP2Reader] = []
    /// Each sending direction's header table (the peer's decoder of it).
    let hpack = [HPACKDecoder(), HPACKDecoder()]
    @exclusivity(unchecked) var calls: [UInt32: GRPCCall] = [:]
    /// The call whose message is being decoded (pairing reads it).
    @exclusivity(unchecked) var current: GRPCCall?
    let pairing: Bool
    let maxMessage: Int
    /// Compressed messages are inflated here, one at a time.
    let out = ByteBlock()
    @exclusivity(unchecked) var gzip: InflateStep?
    @exclusivity(unchecked) var deflate: InflateStep?

    /// The last `:path` seen, its method number and its types.
    @exclusivity(unchecked) var lastPath: (text: [UInt8], method: UInt32, typed: (request: Int32, response: Int32)?) = ([], GRPCMethodNames.none, nil)

    /// More open calls than this on one connection are not followed (their frames are passed over).
    static let maxCalls = 1024

    init(session: Session, frames: SessionFrames, state: GRPCProtocolState) {
        self.session = session
        self.frames = frames
        self.state = state
        pairing = session.manager.pairing
        maxMessage = frames.runtime.schema.maxFrame
        readers = Direction.allCases.map { HTTP2Reader(connection: self, dir: $0) }
    }

    // MARK: - Frames

    /// One whole frame of direction `d` (`b`: header and payload), at stream offset `offset`.
    func frame(_ d: Direction, _ b: UnsafeRawBufferPointer, offset: UInt64, first: PacketRef, last: PacketRef) {
        let h = HTTP2FrameHeader(b, at: 0)
        let payload = UnsafeRawBufferPointer(rebasing: b[HTTP2FrameHeader.size...])
        let at = offset + UInt64(HTTP2FrameHeader.size)
        state.frames += 1
        let reader = readers[d.rawValue]
        // A header block's CONTINUATION frames come next, and nothing else (§6.10).
        if reader.block != nil {
            guard h.type == HTTP2FrameHeader.continuation, h.stream == reader.blockStream else {
                return problem(d, "continuation", "a header block of stream \(reader.blockStream) is not continued (a \(h.type) frame came)", offset, b.count, last, lose: true)
            }
            reader.block!.append(contentsOf: payload)
            if reader.block!.count > HPACKDecoder.maxText {
                return problem(d, "headers", "a header block past \(HPACKDecoder.maxText >> 20) MiB", offset, b.count, last, lose: true)
            }
            if h.flags & HTTP2FrameHeader.endHeaders != 0 {
                let block = reader.block!
                reader.block = nil
                block.withUnsafeBytes { headers(d, reader.blockStream, $0, endStream: reader.blockEndsStream, push: reader.blockIsPush, offset, last) }
            }
            return
        }
        switch h.type {
        case HTTP2FrameHeader.data:
            guard h.stream != 0 else { return problem(d, "data", "a DATA frame on stream 0", offset, b.count, last, lose: false) }
            guard let p = HTTP2FrameHeader.unpadded(payload, flags: h.flags) else {
                return problem(d, "padding", "a DATA frame's padding runs past its end", offset, b.count, last, lose: false)
            }
            // (A stream whose request headers were not seen, or one already ended: passed over.)
            if let call = calls[h.stream] {
                let skipped = p.baseAddress.map { UInt64($0 - payload.baseAddress!) } ?? 0
                data(d, call, p, offset: at + skipped, last)
                if h.flags & HTTP2FrameHeader.endStream != 0 { ended(d, call, last) }
            }
        case HTTP2FrameHeader.headers, HTTP2FrameHeader.pushPromise:
            guard h.stream != 0 else { return problem(d, "headers", "a HEADERS frame on stream 0", offset, b.count, last, lose: true) }
            guard var p = HTTP2FrameHeader.unpadded(payload, flags: h.flags) else {
                return problem(d, "padding", "a header frame's padding runs past its end", offset, b.count, last, lose: true)
            }
            let skip = h.type == HTTP2FrameHeader.pushPromise ? 4 : (h.flags & HTTP2FrameHeader.priorityFlag != 0 ? 5 : 0)
            guard p.count >= skip else { return problem(d, "headers", "a header frame shorter than its fields", offset, b.count, last, lose: true) }
            p = UnsafeRawBufferPointer(rebasing: p[skip...])
            let push = h.type == HTTP2FrameHeader.pushPromise
            let endStream = !push && h.flags & HTTP2FrameHeader.endStream != 0
            if h.flags & HTTP2FrameHeader.endHeaders != 0 {
                headers(d, h.stream, p, endStream: endStream, push: push, offset, last)
            } else {
                reader.block = Array(p)
                reader.blockStream = h.stream
                reader.blockEndsStream = endStream
                reader.blockIsPush = push
            }
        case HTTP2FrameHeader.rstStream:
            guard payload.count == 4, let call = calls[h.stream] else { return }
            let code = payload.u32be(0)!
            state.resets += 1
            end(call, d, last, reset: code)
        case HTTP2FrameHeader.settings:
            guard h.flags & HTTP2FrameHeader.ack == 0 else { return }
            var i = 0
            while i + 6 <= payload.count {
                // SETTINGS_HEADER_TABLE_SIZE: how large the other side's encoder may make its table.
                if payload.u16be(i)! == 1 { hpack[d.opposite.rawValue].allowedSize = Int(payload.u32be(i + 2)!) }
                i += 6
            }
        case HTTP2FrameHeader.continuation:
            problem(d, "continuation", "a CONTINUATION frame with no header block before it", offset, b.count, last, lose: true)
        default:
            break  // PRIORITY, PING, GOAWAY, WINDOW_UPDATE and unknown types: nothing for gRPC.
        }
    }

    /// A stretch of direction `d` reported malformed; `lose`: the direction is read no further
    /// (its frames or header table can no longer be followed).
    func problem(_ d: Direction, _ kind: String, _ text: String, _ offset: UInt64, _ length: Int, _ packet: PacketRef, lose: Bool) {
        frames.malformed(d, offset: offset, length: UInt64(length),
                         reason: .layer(LayerProblem(layer: GRPCLayer.name, kind: kind, text: lose ? text + "; the direction is read no further" : text)),
                         packet: packet)
        if lose { readers[d.rawValue].lost = true }
    }

    /// A call on a new stream (nil past `maxCalls`).
    func open(_ stream: UInt32, _ packet: PacketRef) -> GRPCCall? {
        guard calls.count < Self.maxCalls else { state.callsPassedOver += 1; return nil }
        let c = GRPCCall(stream: stream, opened: packet)
        calls[stream] = c
        return c
    }

    // MARK: - Headers

    func headers(_ d: Direction, _ stream: UInt32, _ block: UnsafeRawBufferPointer, endStream: Bool, push: Bool,
                 _ offset: UInt64, _ packet: PacketRef) {
        let decoder = hpack[d.rawValue]
        if let failure = decoder.decode(block) {
            state.hpackFailures += 1
            return problem(d, "hpack", "stream \(stream): header block not read: \(failure.text)", offset, block.count, packet, lose: false)
        }
        // A server push is no call: its block is read only to keep the table in step.
        guard !push else { return }
        let list = HeaderList(decoder)
        let encoding = list.value("grpc-encoding")
        if d == .c2s {
            guard calls[stream] == nil || calls[stream]!.requestHeaders.isEmpty else {
                // Request trailers (rare in gRPC): kept with the request's headers, up to maxText in all.
                let call = calls[stream]!
                guard call.requestHeaders.text.count + list.text.count <= HPACKDecoder.maxText else {
                    return problem(d, "headers", "stream \(stream): request headers and trailers past \(HPACKDecoder.maxText >> 20) MiB (not kept)",
                                   offset, block.count, packet, lose: false)
                }
                call.requestHeaders.append(list)
                if endStream { ended(d, calls[stream]!, packet) }
                return
            }
            guard let call = request(stream, list, packet) else { return }
            if endStream { ended(d, call, packet) }
        } else {
            guard let call = calls[stream] else { return }
            if !call.responded {
                call.responded = true
                call.responseHeaders = list
                call.encoding[1] = encoding
            } else {
                call.trailers = list
            }
            if endStream { ended(d, call, packet) }
        }
    }

    /// A call's request headers (`list`): the call opened (or found), its method and types.
    func request(_ stream: UInt32, _ list: HeaderList, _ packet: PacketRef) -> GRPCCall? {
        guard let call = calls[stream] ?? open(stream, packet) else { return nil }
        call.requestHeaders = list
        call.encoding[0] = list.value("grpc-encoding")
        if let r = list.range(":path") {
            // (Calls of one connection mostly repeat a few methods: the last one is kept.)
            if !list.text[r].elementsEqual(lastPath.text) {
                let path = String(decoding: list.text[r], as: UTF8.self)
                lastPath = (Array(list.text[r]), GRPCMethodNames.number(path), state.methods[path])
            }
            call.method = lastPath.method
            if let t = lastPath.typed { call.typed = t } else { state.unknownMethods += 1 }
        }
        state.calls += 1
        return call
    }

    // MARK: - Messages

    /// A DATA frame's payload of call `c`, direction `d`, cut into messages.
    func data(_ d: Direction, _ c: GRPCCall, _ p: UnsafeRawBufferPointer, offset: UInt64, _ packet: PacketRef) {
        var i = 0
        let n = p.count
        while i < n {
            var r = c.readers[d.rawValue]
            if r.skip > 0 {
                let k = min(r.skip, n - i)
                r.skip -= k
                i += k
                c.readers[d.rawValue] = r
                continue
            }
            // The common case: a whole message in this frame, read where it lies.
            if r.prefixRead == 0 && n - i >= 5 {
                let len = Int(p.u32be(i + 1)!)
                if len <= n - i - 5 {
                    deliver(d, c, UnsafeRawBufferPointer(rebasing: p[(i + 5)..<(i + 5 + len)]), flag: p[i], length: len,
                            offset: offset + UInt64(i), first: packet, last: packet)
                    i += 5 + len
                    continue
                }
            }
            if r.prefixRead < 5 {
                if r.prefixRead == 0 { r.start = offset + UInt64(i); r.firstPacket = packet; r.length = 0 }
                let byte = p[i]
                if r.prefixRead == 0 { r.flag = byte } else { r.length = r.length << 8 | Int(byte) }
                r.prefixRead += 1
                i += 1
                if r.prefixRead == 5 {
                    if r.length > maxMessage {
                        state.tooLong += 1
                        // (The length of what came, the prefix: not of what it announced.)
                        frames.malformed(d, offset: r.start, length: 5,
                                         reason: .lengthTooLong(Int64(r.length), maximum: maxMessage), packet: packet)
                        r.skip = r.length
                        r.prefixRead = 0
                    } else if r.length == 0 {
                        r.prefixRead = 0
                        c.readers[d.rawValue] = r
                        deliver(d, c, UnsafeRawBufferPointer(start: nil, count: 0), flag: r.flag, length: 0,
                                offset: r.start, first: r.firstPacket, last: packet)
                        continue
                    }
                }
                c.readers[d.rawValue] = r
                continue
            }
            let k = min(r.length - r.body.count, n - i)
            r.body.append(contentsOf: UnsafeRawBufferPointer(rebasing: p[i..<(i + k)]))
            i += k
            if r.body.count == r.length {
                let body = r.body
                r.body.removeAll(keepingCapacity: true)
                r.prefixRead = 0
                c.readers[d.rawValue] = r
                body.withUnsafeBytes {
                    deliver(d, c, $0, flag: r.flag, length: r.length, offset: r.start, first: r.firstPacket, last: packet)
                }
            } else {
                c.readers[d.rawValue] = r
            }
        }
    }

    /// One gRPC message, inflated if it says it is compressed, handed up to be decoded.
    func deliver(_ d: Direction, _ c: GRPCCall, _ bytes: UnsafeRawBufferPointer, flag: UInt8, length: Int,
                 offset: UInt64, first: PacketRef, last: PacketRef) {
        c.messages[d.rawValue] &+= 1
        var info = GRPCInfo(stream: c.stream, method: c.method, sequence: c.messages[d.rawValue], wireLength: UInt32(length),
                            typed: d == .c2s ? c.typed.request : c.typed.response, compressed: flag & 1 != 0, undecodable: false)
        var b = bytes
        if info.compressed {
            state.compressed += 1
            if let step = inflater(c.encoding[d.rawValue]) {
                out.removeAll()
                if case .ok = step.run(bytes, into: out, limit: maxMessage) { b = out.bytes } else { info.undecodable = true }
            } else {
                info.undecodable = true
            }
        }
        current = c
        defer { current = nil }
        frames.layered(Frame(bytes: b, offset: offset, firstPacket: first, lastPacket: last, coalesced: 1), d, GRPCLayer.note(info))
    }

    func inflater(_ encoding: String?) -> InflateStep? {
        switch encoding {
        case "gzip": if gzip == nil { gzip = InflateStep(.gzip) }; return gzip
        case "deflate": if deflate == nil { deflate = InflateStep(.zlib) }; return deflate
        default: return nil
        }
    }

    // MARK: - A call's end

    /// Direction `d` of call `c` ended (END_STREAM): the server's end ends the call.
    func ended(_ d: Direction, _ c: GRPCCall, _ packet: PacketRef) {
        c.ended[d.rawValue] = true
        let r = c.readers[d.rawValue]
        if r.prefixRead > 0 {
            frames.malformed(d, offset: r.start, length: UInt64(r.prefixRead + r.body.count),
                             reason: .layer(LayerProblem(layer: GRPCLayer.name, kind: "message",
                                                         text: "stream \(c.stream) ended inside a gRPC message (had \(r.prefixRead < 5 ? r.prefixRead : 5 + r.body.count) of \(r.prefixRead < 5 ? "at least 5" : String(5 + r.length)) bytes)")),
                             packet: packet)
            c.readers[d.rawValue] = GRPCMessageReader()
        }
        if d == .s2c { end(c, d, packet, reset: nil) }
    }

    /// The call's record (its method, status, headers and trailers), and the call forgotten.
    func end(_ c: GRPCCall, _ d: Direction, _ packet: PacketRef, reset: UInt32?) {
        calls[c.stream] = nil
        let status = c.status
        state.count(status: status, reset: reset != nil)
        Self.record(c, state.manager, status: status, latency: c.opened.ts, end: packet.ts)
        let e = GRPCCallEvent(stream: c.stream, path: c.path, status: status, statusMessage: c.statusMessage, reset: reset,
                              resetBy: d, messages: (c.messages[0], c.messages[1]), requestHeaders: c.requestHeaders,
                              responseHeaders: c.responseHeaders, trailers: c.trailers,
                              nanos: max(0, packet.ts.nanos(since: c.opened.ts)), finished: true)
        session.manager.sink?.layerEvent(e, frames.connection, frames.runtime, d, packet: packet)
    }

    static func record(_ c: GRPCCall, _ m: GRPCManagerState?, status: Int?, latency: Timestamp, end: Timestamp) {
        m?.call(c.path ?? "(no path)", status: status, requests: c.messages[0], responses: c.messages[1],
                nanos: max(0, end.nanos(since: latency)))
    }

    /// The connection's end: calls still open are said, unfinished.
    func finish(_ d: Direction, _ packet: PacketRef) {
        guard d == .s2c || readers[Direction.s2c.rawValue].finished else { return }
        for c in calls.values.sorted(by: { $0.stream < $1.stream }) {
            calls[c.stream] = nil
            state.unfinished += 1
            let e = GRPCCallEvent(stream: c.stream, path: c.path, status: c.status, statusMessage: c.statusMessage, reset: nil,
                                  resetBy: d, messages: (c.messages[0], c.messages[1]), requestHeaders: c.requestHeaders,
                                  responseHeaders: c.responseHeaders, trailers: c.trailers,
                                  nanos: max(0, packet.ts.nanos(since: c.opened.ts)), finished: false)
            session.manager.sink?.layerEvent(e, frames.connection, frames.runtime, d, packet: packet)
        }
    }

    // MARK: - Decoding (MessageLayerDecoder)

    func decode(_ f: Frame, _ dir: Direction, _ note: LayerNote, _ frames: SessionFrames) {
        let info = GRPCLayer.info(note)
        let p = frames.runtime
        p.bytes += UInt64(f.bytes.count)
        let decoded = frames.decoded
        if info.undecodable {
            decoded.reset()
            decoded.frame = f
            decoded.direction = dir
            decoded.bodyOffset = 0
            if !f.bytes.isEmpty {
                decoded.fields.append(DecodedField(name: .builtin(.payload), value: .bytes, offset: 0, width: Int32(f.bytes.count), depth: 0))
            }
            let enc = current?.encoding[dir.rawValue] ?? "none"
            decoded.warnings.append(.layer(LayerProblem(layer: GRPCLayer.name, kind: "compression",
                                                        text: "compressed with grpc-encoding \(enc), which could not be undone: shown as it came")))
        } else {
            frames.decoder.decode(f, dir, into: decoded, as: info.typed >= 0 ? Int(info.typed) : nil)
        }
        frames.messages += 1
        decoded.number = frames.messages
        if pairing, let c = current { pair(c, decoded, f, dir) }
        decoded.layerNotes.setOnly(note)
        p.count(decoded.message, id: decoded.id)
        if !decoded.warnings.isEmpty { p.warnings += 1; p.limitHits.count(decoded.warnings) }
        frames.sink.message(decoded, frames.connection, p)
    }

    /// A call's first request waits for its first response (latency per call), for the methods
    /// the services declare (the others' calls are timed by `-z grpc` alone).
    func pair(_ c: GRPCCall, _ m: DecodedMessage, _ f: Frame, _ dir: Direction) {
        guard c.typed.request >= 0 else { return }
        if dir == .c2s {
            guard c.messages[0] == 1 else { return }
            m.pair.role = .request
            c.request = PairMark(role: .answered, request: Int32(m.message ?? -1), number: m.number, ts: f.lastPacket.ts,
                                 firstPacket: f.firstPacket.number, lastPacket: f.lastPacket.number, offset: f.offset)
        } else if c.messages[1] == 1 {
            if let r = c.request { m.pair = r } else { m.pair.role = .unmatched }
        }
    }
}

/// One direction of an HTTP/2 connection: the client's preface, then frames, each handed whole
/// to the connection (read where it lies when a chunk holds it, else gathered).
final class HTTP2Reader: StreamLayer {
    unowned(unsafe) let connection: HTTP2Connection
    let dir: Direction
    @exclusivity(unchecked) private(set) var started = false
    /// Bytes of the preface still to check (the client's direction).
    @exclusivity(unchecked) var prefaceLeft: Int
    /// A frame not whole yet, where it starts and its first packet.
    @exclusivity(unchecked) var pending: [UInt8] = []
    @exclusivity(unchecked) var pendingOffset: UInt64 = 0
    @exclusivity(unchecked) var pendingPacket = PacketRef(number: 0, ts: Timestamp(seconds: 0, nanos: 0))
    /// A header block waiting for its CONTINUATION frames.
    @exclusivity(unchecked) var block: [UInt8]?
    @exclusivity(unchecked) var blockStream: UInt32 = 0
    @exclusivity(unchecked) var blockEndsStream = false
    @exclusivity(unchecked) var blockIsPush = false
    /// Frames can no longer be followed (a gap, the capture joined late, a broken frame).
    @exclusivity(unchecked) var lost = false
    @exclusivity(unchecked) var finished = false
    /// `Upgrade: h2c`: an HTTP/1.1 head being read (the client's request, the server's 101).
    @exclusivity(unchecked) var head: HTTP1Head?
    /// The upgrade request (stream 1) while its body is read, and the body's bytes still to come.
    @exclusivity(unchecked) var upgradeCall: GRPCCall?
    @exclusivity(unchecked) var bodyLeft = 0
    @exclusivity(unchecked) var upgraded = false
    @exclusivity(unchecked) var atStart = true

    init(connection: HTTP2Connection, dir: Direction) {
        self.connection = connection
        self.dir = dir
        prefaceLeft = dir == .c2s ? HTTP2FrameHeader.preface.count : 0
    }

    func start(atBoundary: Bool) {
        started = true
        if !atBoundary {
            lost = true
            connection.state.joinedLate += 1
        }
    }

    func data(_ bytes: UnsafeRawBufferPointer, offset: UInt64, packet: PacketRef) {
        started = true
        guard !lost else { return }
        var i = 0
        let n = bytes.count
        // A server that answers an upgrade starts with its HTTP/1.1 101 (a frame never with 'H').
        if atStart && n > 0 {
            atStart = false
            if dir == .s2c && bytes[0] == 0x48 { head = HTTP1Head(offset: offset, packet: packet) }
        }
        if head != nil && !upgradeHead(bytes, &i, offset: offset, packet: packet) { return }
        if upgradeCall != nil && !upgradeBody(bytes, &i, offset: offset, packet: packet) { return }
        while prefaceLeft > 0 && i < n {
            let k = HTTP2FrameHeader.preface.count - prefaceLeft
            guard bytes[i] == HTTP2FrameHeader.preface[k] else {
                // Not "PRI ": an HTTP/1.1 request, which may ask to upgrade to h2c.
                // (A method and its space are at most 8 bytes: no more is copied to look.)
                let rest = Array(HTTP2FrameHeader.preface[0..<k]) + UnsafeRawBufferPointer(rebasing: bytes[i..<min(n, i + 8)])
                if dir == .c2s && k < 4 && !upgraded && rest.withUnsafeBytes({ HTTPHandshake.looksLikeHTTP($0, request: true) }) {
                    head = HTTP1Head(bytes: Array(HTTP2FrameHeader.preface[0..<k]), offset: offset + UInt64(i) - UInt64(k), packet: packet)
                    prefaceLeft = HTTP2FrameHeader.preface.count
                    // (True only once the request's body is read too: the preface follows.)
                    guard upgradeHead(bytes, &i, offset: offset, packet: packet) else { return }
                    continue
                }
                connection.problem(dir, "preface", "not the HTTP/2 client preface (h2c with prior knowledge, as gRPC speaks it) nor an HTTP/1.1 request",
                                   offset + UInt64(i), n - i, packet, lose: true)
                return
            }
            prefaceLeft -= 1
            i += 1
        }
        while i < n && !lost {
            if pending.isEmpty {
                if n - i >= HTTP2FrameHeader.size {
                    let len = HTTP2FrameHeader(bytes, at: i).length
                    if n - i - HTTP2FrameHeader.size >= len {
                        connection.frame(dir, UnsafeRawBufferPointer(rebasing: bytes[i..<(i + HTTP2FrameHeader.size + len)]),
                                         offset: offset + UInt64(i), first: packet, last: packet)
                        i += HTTP2FrameHeader.size + len
                        continue
                    }
                }
                pendingOffset = offset + UInt64(i)
                pendingPacket = packet
            }
            // Gathered as it comes (never reserved by what a length announces).
            let need = pending.count < HTTP2FrameHeader.size
                ? HTTP2FrameHeader.size - pending.count
                : pending.withUnsafeBytes { HTTP2FrameHeader($0, at: 0).length } + HTTP2FrameHeader.size - pending.count
            let k = min(need, n - i)
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + k)]))
            i += k
            if pending.count >= HTTP2FrameHeader.size {
                let whole = pending.withUnsafeBytes { HTTP2FrameHeader($0, at: 0).length } + HTTP2FrameHeader.size
                if pending.count == whole {
                    let f = pending
                    pending.removeAll(keepingCapacity: true)
                    f.withUnsafeBytes { connection.frame(dir, $0, offset: pendingOffset, first: pendingPacket, last: packet) }
                }
            }
        }
    }

    /// Reads the HTTP/1.1 head on, from `i`; true once it is read and HTTP/2 follows.
    func upgradeHead(_ bytes: UnsafeRawBufferPointer, _ i: inout Int, offset: UInt64, packet: PacketRef) -> Bool {
        guard head!.take(bytes, &i) else {
            if head!.full {
                connection.problem(dir, "upgrade", "an HTTP/1.1 head longer than \(HTTPHandshake.maxLength) bytes", head!.offset, head!.bytes.count, packet, lose: true)
                head = nil
            }
            return false
        }
        let h = head!
        head = nil
        upgraded = true
        guard dir == .c2s else { return connection.upgradeResponse(h, packet) }
        guard let (call, body) = connection.upgradeRequest(h, packet) else { return false }
        upgradeCall = call
        bodyLeft = body
        return upgradeBody(bytes, &i, offset: offset, packet: packet)
    }

    /// The upgrade request's body (stream 1's request messages), from `i`; true once it is all read.
    func upgradeBody(_ bytes: UnsafeRawBufferPointer, _ i: inout Int, offset: UInt64, packet: PacketRef) -> Bool {
        let call = upgradeCall!
        let k = min(bodyLeft, bytes.count - i)
        if k > 0 {
            connection.data(.c2s, call, UnsafeRawBufferPointer(rebasing: bytes[i..<(i + k)]), offset: offset + UInt64(i), packet)
            i += k
            bodyLeft -= k
        }
        guard bodyLeft == 0 else { return false }
        upgradeCall = nil
        connection.ended(.c2s, call, packet)
        return true
    }

    func gap(offset: UInt64, length: UInt64, packet: PacketRef) {
        guard !lost else { return }
        lost = true
        connection.state.gaps += 1
    }

    func finish(packet: PacketRef, captureEnded: Bool) {
        finished = true
        if let h = head, !lost {
            let reason: MalformedReason = captureEnded ? .cutByCaptureEnd(have: h.bytes.count, need: nil) : .incompleteAtEnd(have: h.bytes.count, need: nil)
            connection.frames.malformed(dir, offset: h.offset, length: UInt64(h.bytes.count), reason: reason, packet: packet)
            head = nil
        }
        if !pending.isEmpty && !lost {
            let reason: MalformedReason = captureEnded ? .cutByCaptureEnd(have: pending.count, need: nil) : .incompleteAtEnd(have: pending.count, need: nil)
            connection.frames.malformed(dir, offset: pendingOffset, length: UInt64(pending.count), reason: reason, packet: packet)
            pending.removeAll()
        }
        connection.finish(dir, packet)
    }
}
