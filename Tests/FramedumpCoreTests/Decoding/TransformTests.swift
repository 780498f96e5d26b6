import Crypto
import Foundation
import XCTest
@testable import FramedumpCore

/// Runs transform steps on one frame, as the decoder does: the frame's header is one `flags`
/// byte (conditions test it), the rest is the body.
enum TransformRun {
    enum Result: Equatable, CustomStringConvertible {
        case untouched
        case done([UInt8])
        case failed(String)

        /// Sizes and a checksum, not megabytes of numbers, when an assertion fails.
        var description: String {
            switch self {
            case .untouched: return "untouched"
            case .done(let b): return "done(\(b.count) bytes, sum \(b.reduce(UInt64(0)) { $0 &* 31 &+ UInt64($1) }))"
            case .failed(let w): return "failed(\(w))"
            }
        }
    }

    static func schema() -> ProtocolSchema {
        var s = ProtocolSchema(name: "t", file: "t")
        s.header = [HeaderField(name: "flags", width: 1, signed: false, order: .big, constant: nil, isPadding: false,
                                offset: 0, nameBytes: Array("flags".utf8))]
        return s
    }

    static func run(_ specs: [TransformSpec], _ frame: [UInt8], headerSize: Int = 1, limit: Int = 1 << 24,
                    steps: inout [TransformStep]) -> Result {
        var s = schema()
        if headerSize != 1 {
            s.header = [HeaderField(name: "flags", width: headerSize, signed: false, order: .big, constant: nil,
                                    isPadding: false, offset: 0, nameBytes: Array("flags".utf8))]
        }
        let chain = TransformChain(specs, layout: FrameLayout(s), limit: limit)
        return frame.withUnsafeBytes { b in
            switch chain.run(b, headerSize: headerSize, steps: &steps) {
            case .untouched: return .untouched
            case .done(let p): return .done(Array(p))
            case .failed(let w), .tooLarge(let w): return .failed(w)
            }
        }
    }

    static func one(_ k: TransformKind, _ frame: [UInt8], headerSize: Int = 1) -> Result {
        var steps: [TransformStep] = []
        return run([TransformSpec(k)], frame, headerSize: headerSize, steps: &steps)
    }
}

final class TransformTests: XCTestCase {
    /// Bytes made by another program: `python3 -c CODE` writing to stdout, read as hex.
    func python(_ code: String, _ input: [UInt8]) throws -> [UInt8] {
        let py = try TestSupport.oracle("python3")
        let path = NSTemporaryDirectory() + "framedump-transform-in-\(getpid())"
        try Data(input).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try TestSupport.run(py, ["-c", "import sys, zlib, gzip, base64\nd = sys.stdin.buffer.read()\n" + code + "\nsys.stdout.write(out.hex())"],
                                    stdin: path)
        XCTAssertEqual(r.status, 0, r.stderr)
        return BodyCipherSpec.hex(r.stdout)!
    }

    func sampleBody(_ n: Int, seed: UInt64 = 1) -> [UInt8] {
        var g = seed &* 6364136223846793005 &+ 1442695040888963407
        return (0..<n).map { i in
            g = g &* 6364136223846793005 &+ 1442695040888963407
            // Compressible: runs of text with some noise.
            return i % 7 == 0 ? UInt8(truncatingIfNeeded: g >> 33) : Array("the quick brown fox ".utf8)[i % 20]
        }
    }

    /// zlib, gzip (two members) and raw deflate written by Python's zlib inflate to the same bytes.
    func testZlibGzipDeflateMatchPython() throws {
        for n in [1, 100, 5_000, 300_000] {
            let body = sampleBody(n, seed: UInt64(n))
            let cases: [(TransformKind, String)] = [
                (.zlib, "out = zlib.compress(d, 6)"),
                (.gzip, "out = gzip.compress(d[:len(d)//2]) + gzip.compress(d[len(d)//2:])"),
                (.deflate, "c = zlib.compressobj(9, zlib.DEFLATED, -15); out = c.compress(d) + c.flush()"),
            ]
            for (kind, code) in cases {
                let wire = try python(code, body)
                XCTAssertEqual(TransformRun.one(kind, [0x01] + wire), .done([0x01] + body), "\(kind) \(n)")
            }
        }
    }

    /// A body cut short, bytes after the stream, and garbage: a failure each, never a crash.
    func testBrokenCompressedBodiesFail() throws {
        let body = sampleBody(4_000)
        let wire = try python("out = zlib.compress(d)", body)
        XCTAssertGreaterThan(wire.count, 100)
        guard case .failed(let cut) = TransformRun.one(.zlib, [0] + wire.dropLast(9)) else { return XCTFail("cut body accepted") }
        XCTAssertTrue(cut.contains("ends inside the compressed stream"), cut)
        guard case .failed(let extra) = TransformRun.one(.zlib, [0] + wire + [1, 2, 3]) else { return XCTFail("trailing bytes accepted") }
        XCTAssertTrue(extra.contains("3 bytes follow the end"), extra)
        guard case .failed(let junk) = TransformRun.one(.zlib, [0] + Array("not zlib at all".utf8)) else { return XCTFail("junk accepted") }
        XCTAssertTrue(junk.hasPrefix("zlib: "), junk)
        guard case .failed = TransformRun.one(.lz4Frame, [0] + wire) else { return XCTFail("zlib taken for lz4") }
    }

    /// A bomb (20 MB of zeros in 20 KB) stops at the limit with a report.
    func testBombStopsAtTheLimit() throws {
        let wire = try python("out = zlib.compress(bytes(20_000_000), 9)", [])
        var steps: [TransformStep] = []
        let r = TransformRun.run([TransformSpec(.zlib)], [0] + wire, limit: 1 << 20, steps: &steps)
        guard case .failed(let w) = r else { return XCTFail("bomb inflated: \(r)") }
        XCTAssertTrue(w.contains("--max-inflate 1048576"), w)
        XCTAssertEqual(steps, [])
        // Under the limit it inflates whole.
        XCTAssertEqual(TransformRun.run([TransformSpec(.zlib)], [0] + wire, limit: 20_000_000, steps: &steps),
                       .done([0] + [UInt8](repeating: 0, count: 20_000_000)))
    }

    /// LZ4 frames written by the lz4 command (several block sizes, checksums), and a raw block
    /// taken out of such a frame with its size given three ways.
    func testLZ4MatchesTheLZ4Tool() throws {
        let lz4 = try TestSupport.oracle("lz4")
        for (n, flags) in [(10, ""), (70_000, "-B4"), (300_000, "-B4 --content-size -BX"), (5_000, "-9 --no-frame-crc")] {
            let body = sampleBody(n, seed: UInt64(n))
            let path = NSTemporaryDirectory() + "framedump-lz4-\(getpid())-\(n)"
            try Data(body).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: path + ".lz4") }
            let r = try TestSupport.run("/bin/sh", ["-c", "\"$0\" -q -f \(flags) \"$1\" \"$1.lz4\"", lz4, path])
            XCTAssertEqual(r.status, 0, r.stderr)
            let frame = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + ".lz4")))
            XCTAssertEqual(TransformRun.one(.lz4Frame, [7] + frame), .done([7] + body), "lz4 \(flags) \(n)")
            XCTAssertNotEqual(TransformRun.one(.lz4Frame, [7] + frame.dropLast(3)), .done([7] + body))
            guard flags.isEmpty else { continue }
            // A default frame of a small input: magic, FLG, BD, HC, then one block's size and bytes.
            let size = Int(frame[7]) | Int(frame[8]) << 8 | Int(frame[9]) << 16 | Int(frame[10] & 0x7f) << 24
            guard frame[10] & 0x80 == 0 else { continue }  // stored uncompressed: no block to take
            let block = Array(frame[11..<(11 + size)])
            let le = withUnsafeBytes(of: UInt32(n).littleEndian, Array.init)
            XCTAssertEqual(TransformRun.one(.lz4Block(.prefixed), [7] + le + block), .done([7] + body))
            XCTAssertEqual(TransformRun.one(.lz4Block(.atMost(1000)), [7] + block), .done([7] + body))
            XCTAssertEqual(TransformRun.one(.lz4Block(.field(0)), [UInt8(n)] + block), .done([UInt8(n)] + body))
            guard case .failed(let w) = TransformRun.one(.lz4Block(.field(0)), [UInt8(n + 1)] + block) else { return XCTFail("size lie accepted") }
            XCTAssertTrue(w.contains("\(n + 1) were announced"), w)
        }
    }

    func testXorAndBase64() throws {
        let body = Array("héllo, 世界".utf8)
        let key: [UInt8] = [0x5a, 0x17, 0xc3]
        let wire = body.enumerated().map { $0.element ^ key[$0.offset % 3] }
        XCTAssertEqual(TransformRun.one(.xor(key), [9] + wire), .done([9] + body))
        let b64 = try python("out = base64.b64encode(d)", body)
        XCTAssertEqual(TransformRun.one(.base64, [9] + b64), .done([9] + body))
        let url = try python("out = base64.urlsafe_b64encode(d).rstrip(b'=') + b'\\n'", body + [0xfb, 0xff])
        XCTAssertEqual(TransformRun.one(.base64, [9] + url), .done([9] + body + [0xfb, 0xff]))
        guard case .failed(let w) = TransformRun.one(.base64, [9] + Array("ab*d".utf8)) else { return XCTFail("not base64 accepted") }
        XCTAssertTrue(w.contains("offset 2"), w)
    }

    /// Steps run in order, each only when its condition holds on the header.
    func testChainOrderAndConditions() throws {
        let body = sampleBody(2_000)
        let z = try python("out = zlib.compress(d)", body)
        let key: [UInt8] = [0x5a, 0x17, 0xc3, 0xe1]
        let xz = z.enumerated().map { $0.element ^ key[$0.offset % 4] }
        let specs = [TransformSpec(.xor(key), when: TransformCondition(field: 0, mask: 0x02)),
                     TransformSpec(.zlib, when: TransformCondition(field: 0, mask: 0x01))]
        var steps: [TransformStep] = []
        XCTAssertEqual(TransformRun.run(specs, [0x03] + xz, steps: &steps), .done([0x03] + body))
        XCTAssertEqual(steps.map { "\($0.name) \($0.before)→\($0.after)" }, ["xor \(z.count)→\(z.count)", "zlib \(z.count)→2000"])
        steps = []
        XCTAssertEqual(TransformRun.run(specs, [0x01] + z, steps: &steps), .done([0x01] + body))
        XCTAssertEqual(steps.count, 1)
        steps = []
        XCTAssertEqual(TransformRun.run(specs, [0x00] + body, steps: &steps), .untouched)
        // A bit field with a value, == and != tests.
        XCTAssertTrue(TransformCondition(field: 0, mask: 0x0c, shift: 2, test: .equal(2)).holds(0x08))
        XCTAssertFalse(TransformCondition(field: 0, mask: 0x0c, shift: 2, test: .equal(2)).holds(0x04))
        XCTAssertTrue(TransformCondition(field: 0, test: .notEqual(1)).holds(2))
        XCTAssertFalse(TransformCondition(field: 0, mask: 0x01, test: .nonZero).holds(0x02))
    }

    /// AES-GCM: the nonce at the body's start and the tag at its end; a tag that does not
    /// match is a failure, never plaintext.
    func testAESGCM() throws {
        let key = SymmetricKey(size: .bits128)
        let plain = Array("gcm body".utf8)
        let box = try AES.GCM.seal(plain, using: key)
        let wire = Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        let spec = BodyCipherSpec(mode: .gcm, keyName: "k", key: key.withUnsafeBytes { Array($0) }, iv: [])
        XCTAssertEqual(TransformRun.one(.aes(spec), [1] + wire), .done([1] + plain))
        var bad = wire
        bad[bad.count - 1] ^= 1
        guard case .failed(let w) = TransformRun.one(.aes(spec), [1] + bad) else { return XCTFail("forged tag accepted") }
        XCTAssertTrue(w.contains("authentication failed"), w)
        // A fixed nonce from the dissector: the body is ciphertext and tag only.
        var fixed = spec
        fixed.iv = Array(box.nonce)
        XCTAssertEqual(TransformRun.one(.aes(fixed), [1] + Array(box.ciphertext) + Array(box.tag)), .done([1] + plain))
    }

    /// What the language says about transforms and bit fields, and its errors with locations.
    func testTransformLinesAndErrors() throws {
        let head = "protocol z { port 7300; byte_order little; header { uint8 flags [hex] { compressed = 0x01; xored = 0x02; codec = 0x0c; } uint16 id; uint32 len; } body_length = len; message_id = id; "
        let s = try DissectorLoader.parse(text: head + "transform xor key \"5a17\" when flags.xored; transform zlib when flags & 0x01; transform lz4 when flags.codec == 2; transform lz4_block size len when flags != 0; }", file: "z.dissector")[0]
        XCTAssertEqual(s.transforms.map { $0.text(in: s) },
                       ["xor key of 2 bytes when flags.xored", "zlib when flags.compressed", "lz4 when flags.codec == 2",
                        "lz4_block size len when flags != 0"])
        XCTAssertEqual(s.header[0].bits.map(\.name), ["compressed", "xored", "codec"])
        let cases: [(String, String)] = [
            ("transform brotli; }", "z.dissector:1:"),
            ("transform brotli; }", "unknown transform 'brotli'"),
            ("transform zlib when flags.nope; }", "'nope' is not a bit field of 'flags' (it has compressed, xored, codec)"),
            ("transform zlib when flags = 1; }", "to compare write '=='"),
            ("transform zlib when flags & 0x100; }", "mask 0x100"),
            ("transform zlib when flags == 300; }", "can never be 300"),
            ("transform xor; }", "xor needs its key"),
            ("transform xor key \"zz\"; }", "not hex"),
            ("transform zlib key \"00\"; }", "'zlib' takes no key"),
            ("transform aes_gcm key \"0011\"; }", "AES needs 16, 24 or 32"),
            ("transform zlib when nothere; }", "'nothere' is not a header field"),
        ]
        for (tail, fragment) in cases {
            XCTAssertThrowsError(try DissectorLoader.parse(text: head + tail, file: "z.dissector"), tail) { e in
                XCTAssertTrue("\(e)".contains(fragment), "\(tail): \(e)")
            }
        }
        for bad in ["uint8 f { a = 0x05; }", "uint8 f { a = 0x01; b = 0x03; }", "uint8 f { a = 0x100; }", "uint8 f { }"] {
            XCTAssertThrowsError(try DissectorLoader.parse(text: "protocol q { port 1; header { \(bad) uint8 len; } body_length = len; }", file: "q.dissector"), bad)
        }
    }
}
