// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "framedump",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "framedump", targets: ["framedump"]),
        .library(name: "FramedumpCore", targets: ["FramedumpCore"]),
    ],
    dependencies: [
        // The command line: options, subcommands, help text and validation.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Compiled descriptor sets (`protoc -o x.desc`): the runtime's descriptor types only.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        // AES for encrypted bodies (`_CryptoExtras`: CBC, CTR, the block function for ECB), and
        // SHA-1 for checking the WebSocket handshake's Sec-WebSocket-Accept.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"4.0.0"),
    ],
    targets: [
        // libpcap, through the system's headers and pkg-config.
        .systemLibrary(
            name: "CPcap",
            pkgConfig: "libpcap",
            providers: [.apt(["libpcap-dev"]), .brew(["libpcap"])]
        ),
        // zlib, for permessage-deflate (RFC 7692) and zlib/gzip/deflate bodies: the system's
        // library, as every WebSocket stack uses it.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        // LZ4 (frame format and raw blocks) for bodies a dissector marks compressed with it: the
        // reference implementation, as the peers that write LZ4 use it.
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // PCRE2 for `-Y`'s `matches`: the regular expressions Wireshark's filters use, with a
        // bound on the backtracking steps of each match (a pathological pattern gives up and is
        // reported instead of running for minutes).
        .systemLibrary(
            name: "CPCRE2",
            pkgConfig: "libpcre2-8",
            providers: [.apt(["libpcre2-dev"]), .brew(["pcre2"])]
        ),
        // The pipeline: Capture → Link → Reassembly → Session (Framing, Decoding) → Output.
        .target(
            name: "FramedumpCore",
            dependencies: [
                "CPcap",
                "CZlib",
                "CLZ4",
                "CPCRE2",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // `framedump ui`: an index of a capture's messages, served with the page in Web/
        // (compiled into the binary, so an installed framedump needs no files beside it).
        .target(
            name: "FramedumpUI",
            dependencies: [
                "FramedumpCore",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [
                .embedInCode("Web/index.html"),
                .embedInCode("Web/app.js"),
                .embedInCode("Web/style.css"),
            ]
        ),
        .executableTarget(
            name: "framedump",
            dependencies: [
                "FramedumpCore",
                "FramedumpUI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The fuzz harnesses (one `Fuzz<Target>` a parser of untrusted input), out of the
        // library: they reach it through `package` access. Also the tests' strict JSON checker.
        .target(
            name: "FramedumpFuzz",
            dependencies: ["FramedumpCore", "FramedumpUI",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "_CryptoExtras", package: "swift-crypto")]
        ),
        // scripts/fuzz.sh: an in-process mutation fuzzer running the harnesses.
        .executableTarget(
            name: "framedump-fuzz",
            dependencies: ["FramedumpFuzz"],
            path: "Sources/framedump-fuzz"
        ),
        .testTarget(
            name: "FramedumpCoreTests",
            // Depends on the executable so `swift test` builds it: the CLI tests run it.
            dependencies: ["FramedumpCore", "FramedumpFuzz", "FramedumpUI", "framedump", "CZlib"],
            exclude: ["Fixtures", "Golden"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
