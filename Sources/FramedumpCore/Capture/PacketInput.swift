/// What a run reads packets from: one capture (`PacketSource`: a file, standard input or an
/// interface) or several files merged in time order (`MergedSource`).
public protocol PacketInput: AnyObject {
    /// The link type of the first packet's capture: what a `-w` file is written in.
    var linkType: Int32 { get }
    /// The link types of the packets read so far, in order of appearance.
    var linkTypesSeen: [Int32] { get }
    /// Installs a BPF filter (libpcap's syntax); a bad expression is `.badFilter`.
    func setFilter(_ expression: String) throws(CaptureError)
    /// Reads packets until the end, `limit` packets, or `stop()`; the closure returns false to
    /// stop. Each packet's `data` is valid only during the call.
    func forEach(limit: UInt64?, _ body: (Packet) -> Bool) throws(CaptureError)
    /// Asks a running `forEach` to return; safe to call from a signal handler.
    func stop()
    /// libpcap's dumper for `-w`, writing this input's link type.
    func openDumper(_ path: String) throws(CaptureError) -> PacketDumper
    /// The regular files read (none for a live capture or stdin).
    var captureFiles: [String] { get }
}

extension PacketInput {
    public var captureFiles: [String] { [] }
}
