#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What loading dissector files needs from the command line.
public struct LoadOptions: Sendable {
    /// `--proto-path DIR`: searched for `.proto` files and imports, before the dissector's folder.
    public var protoPaths: [String] = []
    /// `--key NAME=HEX`: values for the keys a dissector names (they override the file's).
    public var keys: [String: [UInt8]] = [:]
    /// `check` of a file alone: a key declared without a value (`key K;`) is given with
    /// `--key` when the capture is read, so its absence is no error here.
    public var keysGivenLater = false
    /// The bounds loading obeys: `--max-frame`, `--max-protocols`, `--max-messages`.
    public var limits = Limits()

    public init(protoPaths: [String] = [], keys: [String: [UInt8]] = [:]) {
        self.protoPaths = protoPaths
        self.keys = keys
    }

    /// These options with the load-time bounds of `limits`.
    public func bounded(by limits: Limits) -> LoadOptions {
        var o = self
        o.limits = limits
        return o
    }
}

/// The protobuf and encryption settings of a protocol block, as written.
struct PendingProto {
    var files: [(String, Token)] = []
    var descriptorSets: [(String, Token)] = []
    var keys: [String: (String?, Token)] = [:]
    /// `transform ...;` and `cipher ...;` lines, in order (see TransformParsing.swift).
    var transforms: [PendingTransform] = []
}

// MARK: - Parsing

// In a protocol block:
//     proto "im.proto", "common.proto";       // .proto files: --proto-path, then this file's folder
//     proto_descriptor "im.desc";             // or a set compiled by protoc -o FILE --include_imports
//     key session = "00112233...";            // a named AES key (hex); --key session=HEX overrides it
//     transform aes_cbc key session iv "0001..." when version == 2;   // see TransformParsing.swift
// After it:
//     Message Login = 1 : im.LoginRequest;    // cid 1, both directions
//     Message Cs_3 : im.SendRequest;          // cid 3 client → server
//     Message Sc_3 : im.SendAck;              // cid 3 server → client
extension Parser {
    mutating func quoted(_ what: String) throws(DissectorError) -> (String, Token) {
        let t = tok
        guard case .string(let s) = t.kind else { throw err(t, "expected \(what) in double quotes, found \(describe(t))") }
        _ = next()
        return (s, t)
    }

    mutating func parseProtoSetting(_ key: String, _ kt: Token, _ p: inout PendingProtocol) throws(DissectorError) {
        switch key {
        case "proto", "proto_file":
            repeat { p.proto.files.append(try quoted("a .proto file name")) } while accept(",")
        case "proto_descriptor":
            repeat { p.proto.descriptorSets.append(try quoted("a descriptor set file name")) } while accept(",")
        case "key":
            let (name, nt) = try ident("a key name")
            if p.proto.keys[name] != nil { throw err(nt, "key '\(name)' is declared twice") }
            if accept("=") {
                let (hex, ht) = try quoted("the key as hex")
                p.proto.keys[name] = (hex, ht)
            } else {
                p.proto.keys[name] = (nil, nt)
            }
        default:  // cipher: the older spelling of an AES transform
            try parseTransform(cipherLine: true, kt, &p)
        }
    }
}

// MARK: - Resolving

extension Resolver {
    func folder(of t: Token) -> String {
        let f = lexers[t.file].file
        guard let slash = f.lastIndex(of: "/") else { return "." }
        return String(f[..<slash])
    }

    func attachProto(_ p: PendingProtocol, to s: inout ProtocolSchema) throws(DissectorError) {
        try attachCipher(p, to: &s)
        let bound = p.messages.contains { $0.protoType != nil }
        guard !p.proto.files.isEmpty || !p.proto.descriptorSets.isEmpty || bound else { return }
        guard let first = p.proto.files.first?.1 ?? p.proto.descriptorSets.first?.1 ?? p.messages.first(where: { $0.protoType != nil })?.protoType?.1 else { return }
        if s.body != .protobuf {
            throw err(first, "protobuf types need 'body protobuf;' in the protocol block")
        }
        let reg = ProtoRegistry(searchPaths: options.protoPaths + [folder(of: first)])
        for (f, t) in p.proto.files {
            do {
                try reg.load(f)
            } catch let e where e.line == 0 && e.file == f {
                throw err(t, e.message)
            }
        }
        for (f, t) in p.proto.descriptorSets {
            let path = f.hasPrefix("/") ? f : folder(of: t) + "/" + f
            guard let bytes = DissectorLoader.readBytes(path, limit: 64 << 20) else { throw err(t, "cannot read descriptor set '\(path)'") }
            try reg.loadDescriptorSet(path: path, bytes: bytes)
        }
        // gRPC: each method's request and response become the protocol's messages.
        let rpcs = s.overLayers.contains(GRPCLayer.name) ? GRPCLayer.define(reg, &s) : []
        let tables = ProtoTables.attach(reg, to: &s)
        s.proto = tables
        for (mi, type) in rpcs { s.messages[mi].protoType = tables.byName[String(type.dropFirst())] }
        for (mi, m) in p.messages.enumerated() {
            guard let (type, t) = m.protoType else { continue }
            let n = type.hasPrefix(".") ? String(type.dropFirst()) : type
            guard let target = tables.byName[n] else {
                let known = tables.byName.keys.sorted().prefix(8).joined(separator: ", ")
                throw err(t, "unknown protobuf message '\(type)' (loaded: \(known.isEmpty ? "none" : known)…)")
            }
            s.messages[mi].protoType = target
        }
    }

    func attachCipher(_ p: PendingProtocol, to s: inout ProtocolSchema) throws(DissectorError) {
        for (name, (hex, t)) in p.proto.keys where options.keys[name] == nil {
            guard let hex else {
                if options.keysGivenLater { continue }
                throw err(t, "key '\(name)' has no value here: give it with --key \(name)=HEX")
            }
            guard let k = BodyCipherSpec.hex(hex), !k.isEmpty else { throw err(t, "key '\(name)' is not hex") }
        }
        try attachTransforms(p, to: &s)
    }
}
