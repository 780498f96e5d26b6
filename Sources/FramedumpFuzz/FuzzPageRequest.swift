import FramedumpUI

/// Fuzz entry (`scripts/fuzz.sh page-request`): the bytes as what a client sends the page's
/// server: a request head (bounded, percent-decoded), the checks made on it before any work
/// (the Host, the origin), and the rest read as the live WebSocket's client frames. Whatever
/// they are, each must return without a trap or a hang, and keep nothing past its bounds.
public enum FuzzPageRequest {
    public static func run(_ data: UnsafeRawBufferPointer) {
        FramedumpUI.PageRequestProbe.run(data)
    }
}
