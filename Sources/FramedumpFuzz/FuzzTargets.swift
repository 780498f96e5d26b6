import FramedumpCore
/// Every fuzz target by the name `scripts/fuzz.sh` gives it: the harnesses of this module, one
/// file each (`Fuzz<Target>.swift`), over the library's parsers of untrusted input. The fuzzer
/// (`framedump-fuzz`) runs them, and `swift test` runs the inputs they once failed on
/// (`Tests/FramedumpCoreTests/Fixtures/fuzz/TARGET-what`) through them again.
public enum FuzzTargets {
    public static let all: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = {
        var t: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
            "proto-parser": FuzzProtobuf.protoParser,
            "protobuf-wire": FuzzProtobuf.protobufWire,
            "msgpack": FuzzMessagePack.run,
            "socketio": FuzzSocketIO.run,
            "text-header": FuzzTextHeader.run,
            "hpack": FuzzHPACK.run,
            "grpc": FuzzGRPC.run,
            "link": FuzzLink.run,
            "dissector": FuzzDissector.fileAndTraffic,
            "display-filter": FuzzDissector.displayFilter,
            "reassembly": FuzzReassembly.run,
            "deframer": FuzzDeframer.run,
            "state": FuzzState.run,
            "pipeline": FuzzPipeline.run,
            "guess": FuzzGuess.run,
            "ui": FuzzUI.run,
            "page-request": FuzzPageRequest.run,
            "pcapng": FuzzPcapng.run,
            "pcap": FuzzPcap.run,
            "ndjson-line": FuzzNDJSON.line,
            "transform-chain": FuzzTransform.chained,
            // The layers' own.
            "websocket": FuzzWebSocket.connection,
            "http-head": FuzzWebSocket.httpHead,
            "kcp": FuzzKCP.run,
            "tls": FuzzTLS.run,
            "tls-sealed": FuzzTLSSealed.run,
        ]
        for name in FuzzTransform.names { t["transform-" + name] = FuzzTransform.single(name) }
        return t
    }()
}
