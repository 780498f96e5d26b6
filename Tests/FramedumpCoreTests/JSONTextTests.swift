import Foundation
import Testing
@testable import FramedumpCore

/// Every NDJSON line must be valid JSON whatever bytes the capture held.
@Suite struct JSONTextTests {
    func encode(_ bytes: [UInt8]) -> String {
        let out = OutputBuffer(fd: nil)
        bytes.withUnsafeBytes { JSONText.utf8($0, to: out) }
        return out.text
    }

    @Test func escapesQuotesBackslashesAndControlCharacters() {
        #expect(encode(Array("a\"b\\c\n\t\r".utf8) + [0x01, 0x1f]) == #""a\"b\\c\n\t\r\u0001\u001f""#)
    }

    @Test func keepsValidUTF8AndReplacesInvalidBytes() {
        #expect(encode(Array("你好".utf8)) == "\"你好\"")
        // A lone continuation byte, an overlong encoding, a surrogate, a truncated sequence.
        #expect(encode([0x80]) == "\"\u{FFFD}\"")
        #expect(encode([0xc0, 0xaf]) == "\"\u{FFFD}\u{FFFD}\"")
        #expect(encode([0xed, 0xa0, 0x80]) == "\"\u{FFFD}\u{FFFD}\u{FFFD}\"")
        #expect(encode([0x61, 0xe4, 0xbd]) == "\"a\u{FFFD}\u{FFFD}\"")
    }

    @Test func randomBytesAlwaysGiveValidJSON() throws {
        var rng = SeededRandom(seed: 9)
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let text = encode(bytes)
            let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
            #expect(parsed is String)
        }
    }

    @Test func sixtyFourBitIntegersAreExact() {
        let out = OutputBuffer(fd: nil)
        out.decimal(UInt64.max)
        out.byte(0x20)
        out.decimal(Int64.min)
        out.byte(0x20)
        out.decimal(UInt64(0))
        #expect(out.text == "18446744073709551615 -9223372036854775808 0")
    }

    @Test func timestampsKeepNanoseconds() {
        let out = OutputBuffer(fd: nil)
        JSONText.timestamp(Timestamp(seconds: 1_700_000_000, nanos: 5), to: out)
        #expect(out.text == "\"1700000000.000000005\"")
    }
}
