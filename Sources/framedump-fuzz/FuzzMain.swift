import FramedumpCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small in-process mutation fuzzer for the parsers of untrusted input (run by
/// `scripts/fuzz.sh`): `framedump-fuzz TARGET SECONDS [SEED_FILE_OR_DIR...]`.
///
/// Each round takes a seed, mutates it (bit flips, byte runs, interesting values, cuts,
/// duplications, splices with another seed) and hands it to the target. A trap or a hang
/// (an input taking more than 10 s) writes the input to `fuzz-crash-TARGET` and exits 1.
@main
struct FuzzMain {
    /// The core targets, then every layer's own (from the layer registry).
    static let targets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "proto-parser": FuzzEntry.protoParser,
        "protobuf-wire": FuzzEntry.protobufWire,
        "link": LinkFuzz.run,
        "dissector": FuzzDissector.fileAndTraffic,
        "display-filter": FuzzDissector.displayFilter,
        "reassembly": ReassemblyFuzz.run,
        "deframer": FuzzDeframer.run,
        "pipeline": PipelineFuzz.run,
        "guess": GuessFuzz.run,
        "pcapng": PcapngFuzz.run,
        "pcap": PcapFuzz.run,
        "ndjson-line": FuzzNDJSON.line,
        "transform-zlib": TransformFuzz.single("zlib"),
        "transform-gzip": TransformFuzz.single("gzip"),
        "transform-deflate": TransformFuzz.single("deflate"),
        "transform-lz4": TransformFuzz.single("lz4"),
        "transform-lz4-block": TransformFuzz.single("lz4-block"),
        "transform-xor": TransformFuzz.single("xor"),
        "transform-base64": TransformFuzz.single("base64"),
        "transform-aes": TransformFuzz.single("aes"),
        "transform-chain": TransformFuzz.chained,
    ].merging(LayerRegistry.fuzzTargets) { a, _ in a }

    static func main() {
        #if LIBFUZZER
        // libFuzzer's driver with our callback; its command line (-max_total_time=N CORPUS...).
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
        #endif
        let args = CommandLine.arguments
        guard args.count >= 3, let target = targets[args[1]], let seconds = Double(args[2]) else {
            print("usage: framedump-fuzz TARGET SECONDS [SEEDS...]; targets: \(targets.keys.sorted().joined(separator: ", "))")
            exit(2)
        }
        var seeds: [[UInt8]] = [[], [0], [1, 0x08, 0x96, 0x01], Array("syntax = \"proto3\"; message A { int32 a = 1; }".utf8)]
        for path in args.dropFirst(3) { seeds += readSeeds(path) }
        Crash.prepare("fuzz-crash-" + args[1])
        var rng = SystemRandomNumberGenerator()
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let start = Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        var runs = 0
        // Every seed as it is first, then mutants until the time is up.
        for s in seeds { run(target, s); runs += 1 }
        while true {
            clock_gettime(CLOCK_MONOTONIC, &ts)
            if Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9 - start >= seconds { break }
            for _ in 0..<64 {
                var input = seeds[Int.random(in: 0..<seeds.count, using: &rng)]
                for _ in 0..<Int.random(in: 1...8, using: &rng) { mutate(&input, seeds, &rng) }
                run(target, input)
                runs += 1
            }
        }
        print("\(args[1]): \(runs) inputs in \(Int(seconds)) s, no crash, no hang")
    }


    static func run(_ target: @Sendable (UnsafeRawBufferPointer) -> Void, _ input: [UInt8]) {
        Crash.current(input)
        alarm(10)
        input.withUnsafeBytes { target($0) }
        alarm(0)
    }

    static let interesting: [[UInt8]] = [
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], [0x80], [0x7f], [0x00],
        [0x0b], [0x0c], [0x0f], [0xd2, 0x01], Array("{".utf8), Array("}".utf8), Array("\"".utf8),
        Array("message ".utf8), Array("map<string, M> m = 1;".utf8), Array("/*".utf8), Array("import \"f.proto\";".utf8),
        Array("group G = 1 {".utf8), Array("[default = 1e400]".utf8), Array("0x7fffffffffffffff".utf8),
    ]

    static func mutate(_ b: inout [UInt8], _ seeds: [[UInt8]], _ rng: inout SystemRandomNumberGenerator) {
        let n = b.count
        switch Int.random(in: 0..<7, using: &rng) {
        case 0 where n > 0:
            b[Int.random(in: 0..<n, using: &rng)] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
        case 1 where n > 0:
            b[Int.random(in: 0..<n, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
        case 2:
            let v = interesting[Int.random(in: 0..<interesting.count, using: &rng)]
            b.insert(contentsOf: v, at: Int.random(in: 0...n, using: &rng))
        case 3 where n > 1:
            let a = Int.random(in: 0..<n, using: &rng)
            b.removeSubrange(a..<min(n, a + Int.random(in: 1...16, using: &rng)))
        case 4 where n > 1 && n < 1 << 16:
            let a = Int.random(in: 0..<n, using: &rng)
            let piece = Array(b[a..<min(n, a + Int.random(in: 1...64, using: &rng))])
            b.insert(contentsOf: piece, at: Int.random(in: 0...n, using: &rng))
        case 5:
            let other = seeds[Int.random(in: 0..<seeds.count, using: &rng)]
            if !other.isEmpty {
                let a = Int.random(in: 0..<other.count, using: &rng)
                b = Array(b.prefix(Int.random(in: 0...n, using: &rng))) + other[a...]
            }
        default:
            b.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...n, using: &rng))
        }
    }

    static func readSeeds(_ path: String) -> [[UInt8]] {
        var st = stat()
        guard stat(path, &st) == 0 else { return [] }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            guard let d = opendir(path) else { return [] }
            defer { closedir(d) }
            var out: [[UInt8]] = []
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix(".") { continue }
                out += readSeeds(path + "/" + name)
            }
            return out
        }
        guard let f = fopen(path, "rb") else { return [] }
        defer { fclose(f) }
        var bytes = [UInt8](repeating: 0, count: 1 << 20)
        let n = fread(&bytes, 1, bytes.count, f)
        return [Array(bytes[0..<max(0, n)])]
    }
}

/// On a trap (SIGILL/SIGTRAP), a crash (SIGSEGV/SIGBUS/SIGABRT) or a hang (SIGALRM), the
/// input being run is written out with write(2), which a signal handler may call.
enum Crash {
    nonisolated(unsafe) static var path: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1 << 22)
    nonisolated(unsafe) static var length = 0

    static func prepare(_ path: String) {
        Crash.path = strdup(path)
        for sig in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGALRM] {
            signal(sig) { s in
                // open(2) and write(2) are async-signal-safe.
                let fd = open(Crash.path!, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                _ = write(fd, Crash.buffer, Crash.length)
                let msg = s == SIGALRM ? "framedump-fuzz: HANG, input saved\n" : "framedump-fuzz: CRASH, input saved\n"
                msg.withCString { _ = write(2, $0, strlen($0)) }
                _exit(1)
            }
        }
    }

    static func current(_ input: [UInt8]) {
        length = min(input.count, 1 << 22)
        input.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: length) }
    }
}

#if LIBFUZZER
/// Built by `scripts/fuzz.sh` with `-sanitize=fuzzer -DLIBFUZZER`: libFuzzer's driver runs
/// the target named by `$FRAMEDUMP_FUZZ_TARGET`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let name = getenv("FRAMEDUMP_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzMain.targets[name] else {
        print("set FRAMEDUMP_FUZZ_TARGET to one of: \(FuzzMain.targets.keys.sorted().joined(separator: ", "))")
        exit(2)
    }
    target(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#endif
