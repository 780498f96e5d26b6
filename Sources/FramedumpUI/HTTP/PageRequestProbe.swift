/// What the `page-request` fuzz target drives: the server's parsing of what a client sends,
/// without a socket.
package enum PageRequestProbe {
    package static func run(_ data: UnsafeRawBufferPointer) {
        var rest = Array(data)
        if let (head, length) = try? HTTPHead.parse(data) {
            precondition(length <= HTTPHead.maxBytes && head.fields.count <= HTTPHead.maxFields)
            _ = UIServer.crossOrigin(head)
            _ = head.fields["host"].map(UIServer.isLoopbackHost)
            _ = LiveSocket.isUpgrade(head)
            rest.removeFirst(length)
        }
        // The client's frames, one after another, as the live feed reads them.
        while let frame = try? LiveSocket.clientFrame(rest) {
            precondition(frame.length > 0 && frame.length <= rest.count && frame.payload.count <= LiveSocket.maxFrame)
            rest.removeFirst(frame.length)
        }
    }
}
