import ArgumentParser
import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which dissectors decode and what loading them needs: declared once, for every command that
/// loads dissectors (`dump`, `ui`, `diff`, `check`, `dissectors`), so their help cannot drift.
struct DissectorOptions: ParsableArguments {
    @Option(name: .customShort("d"), help: ArgumentHelp("Load a dissector file or folder (repeatable); default ./Dissectors and $FRAMEDUMP_DISSECTORS.", valueName: "path"))
    var paths: [String] = []

    @Option(name: .long, help: ArgumentHelp("Decode this TCP port's connections with this protocol (repeatable; like tshark's -d tcp.port==N,proto; the port is taken from any dissector that lists it).", valueName: "port=protocol"))
    var decodeAs: [String] = []

    @Option(name: .long, help: ArgumentHelp("Also look for .proto files and their imports in this folder (repeatable; searched before the dissector file's folder).", valueName: "dir"))
    var protoPath: [String] = []

    @Option(name: .long, help: ArgumentHelp("A key a dissector names, as hex (repeatable; overrides the file's value; never printed).", valueName: "name=hex"))
    var key: [String] = []

    func validate() throws {
        _ = try keys()
        _ = try decodeAsRules()
    }

    /// `--key NAME=HEX` values; the error never repeats the key. (Whether a key's length suits
    /// its use, AES or XOR, is checked where a dissector's transform names it.)
    func keys() throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for k in key {
            guard let eq = k.firstIndex(of: "="), eq != k.startIndex else {
                throw ValidationError("--key takes NAME=HEX (the name a dissector's 'key' or 'transform' line uses).")
            }
            let name = String(k[..<eq])
            guard let v = BodyCipherSpec.hex(String(k[k.index(after: eq)...])), !v.isEmpty else {
                throw ValidationError("--key \(name)=…: the value must be hex.")
            }
            out[name] = v
        }
        return out
    }

    /// `--decode-as PORT=PROTOCOL` values, checked.
    func decodeAsRules() throws -> [DecodeAs] {
        try decodeAs.map { t in
            guard let r = DecodeAs(t) else {
                throw ValidationError("--decode-as \(t): expected PORT=PROTOCOL, a TCP port 1-65535 and a loaded dissector's name (--decode-as 9000=game).")
            }
            return r
        }
    }

    /// What loading the files needs (`--proto-path`, `--key`).
    func load() throws -> LoadOptions { LoadOptions(protoPaths: protoPath, keys: try keys()) }

    /// Sets a run's dissector paths, `--decode-as` rules and load options.
    func apply(to options: inout PipelineOptions) throws {
        options.dissectorPaths = paths
        options.decodeAs = try decodeAsRules()
        options.load = try load()
    }
}

/// The TLS layer's option: its key logs, for every command that reads a capture.
struct TLSOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Decrypt TLS with this NSS key log (SSLKEYLOGFILE; repeatable; also $FRAMEDUMP_TLS_KEYLOG; re-read as it grows).", valueName: "file"))
    var tlsKeylog: [String] = []

    /// The files given, then `$FRAMEDUMP_TLS_KEYLOG`.
    var keyLogs: [String] { tlsKeylog + (getenv("FRAMEDUMP_TLS_KEYLOG").map { [String(cString: $0)] } ?? []) }
}
