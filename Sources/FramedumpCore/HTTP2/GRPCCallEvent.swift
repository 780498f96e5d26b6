/// A gRPC call as a record of its own, at its end: its method, its status and message, its
/// messages each way, how long it took, and its headers and trailers.
public struct GRPCCallEvent: LayerEvent {
    let stream: UInt32
    let path: String?
    let status: Int?
    let statusMessage: String?
    /// RST_STREAM's error code, when the stream was reset (by `resetBy`).
    let reset: UInt32?
    let resetBy: Direction
    let messages: (requests: UInt32, responses: UInt32)
    let requestHeaders: HeaderList
    let responseHeaders: HeaderList
    let trailers: HeaderList
    /// From the request headers to the end.
    let nanos: Int64
    /// False: the connection or the capture ended first.
    let finished: Bool

    var statusText: String {
        if let reset { return "reset by the \(resetBy == .c2s ? "client" : "server") (\(HTTP2FrameHeader.errorName(reset)))" }
        guard let status else { return finished ? "no status" : "unfinished" }
        return "\(GRPCStatus.name(status)) (\(status))"
    }

    public func writeTree(_ w: TreeEventWriter) {
        w.write(" grpc call ")
        w.text(path ?? "(no request headers seen)")
        w.write(", stream "); w.decimal(UInt64(stream)); w.write(": ")
        if status == 0 { w.write("OK (0)") } else if status == nil && reset == nil && finished { w.write("no status") } else { w.alarm("call failed: "); w.text(statusText) }
        if let m = statusMessage, !m.isEmpty { w.write(" \""); w.text(m); w.write("\"") }
        w.write(", "); w.decimal(UInt64(messages.requests)); w.write(messages.requests == 1 ? " request, " : " requests, ")
        w.decimal(UInt64(messages.responses)); w.write(messages.responses == 1 ? " response, " : " responses, ")
        w.milliseconds(nanos: nanos); w.write(" ms")
        w.newline()
        requestHeaders.forEach { n, v in w.write("    request "); w.text(n); w.write(": "); w.text(v); w.newline() }
        responseHeaders.forEach { n, v in w.write("    response "); w.text(n); w.write(": "); w.text(v); w.newline() }
        trailers.forEach { n, v in w.write("    trailer "); w.text(n); w.write(": "); w.text(v); w.newline() }
    }

    /// `type` `grpc_call`, the method, stream, status (its code, name and message), the reset
    /// (RST_STREAM's error name, or null), messages each way, duration, and the
    /// headers and trailers as objects (in `--diffable`, without `date`, `user-agent` and
    /// `grpc-timeout`, which change from run to run).
    public func writeJSON(_ out: OutputBuffer, diffable: Bool) {
        out.write(",\"type\":\"grpc_call\",\"method\":")
        if let path { JSONText.string(path, to: out) } else { out.write("null") }
        out.write(",\"stream\":"); out.decimal(UInt64(stream))
        out.write(",\"status\":")
        if let status { out.decimal(UInt64(max(0, status))) } else { out.write("null") }
        out.write(",\"status_name\":")
        if let status { JSONText.string(GRPCStatus.name(status), to: out) } else { out.write("null") }
        out.write(",\"reset\":")
        if let reset { JSONText.string(HTTP2FrameHeader.errorName(reset), to: out) } else { out.write("null") }
        out.write(",\"status_message\":")
        if let m = statusMessage { JSONText.string(m, to: out) } else { out.write("null") }
        out.write(",\"requests\":"); out.decimal(UInt64(messages.requests))
        out.write(",\"responses\":"); out.decimal(UInt64(messages.responses))
        if !diffable { out.write(",\"duration_ns\":"); out.decimal(UInt64(nanos)) }
        out.write(",\"finished\":"); out.write(finished ? "true" : "false")
        for (key, list) in [(",\"request_headers\":{" as StaticString, requestHeaders), (",\"response_headers\":{", responseHeaders),
                            (",\"trailers\":{", trailers)] {
            out.write(key)
            var first = true
            list.forEach { n, v in
                if diffable && (Self.same(n, "date") || Self.same(n, "user-agent") || Self.same(n, "grpc-timeout")) { return }
                if !first { out.byte(0x2c) }
                first = false
                JSONText.utf8(n, to: out); out.byte(0x3a); JSONText.utf8(v, to: out)
            }
            out.byte(0x7d)
        }
    }

    static func same(_ b: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        b.count == s.utf8CodeUnitCount && b.elementsEqual(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// A call that failed is what `check -r` reports (by its status, or its reset).
    public var problems: [LayerProblem] {
        if status == 0 || (status == nil && reset == nil) { return [] }
        return [LayerProblem(layer: GRPCLayer.name, kind: reset != nil ? "reset" : "status",
                             text: "call \(path ?? "(unknown)") failed: \(statusText)" + (statusMessage.map { " \"\($0)\"" } ?? ""))]
    }
}
