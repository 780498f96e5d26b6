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

    /// Text made of pieces that hit each fast path at every offset from an 8-byte boundary:
    /// ASCII, two-, three- and four-byte characters, escapes, and broken sequences.
    func mixedText(_ rng: inout SeededRandom, broken: Bool) -> [UInt8] {
        let valid: [[UInt8]] = [Array("a".utf8), Array("héllo ".utf8), Array("打开页面".utf8), Array("😀".utf8),
                                Array("\"".utf8), Array("\\".utf8), [0x0a], [0x01], [0x7f], Array("plain text ".utf8)]
        let invalid: [[UInt8]] = [[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe0, 0x80, 0x80], [0xe4, 0xbd], [0xf4, 0x90, 0x80, 0x80],
                                  [0xff], [0xe6, 0x89, 0x41]]
        var out: [UInt8] = []
        for _ in 0..<Int.random(in: 0...12, using: &rng) {
            if broken && Int.random(in: 0..<5, using: &rng) == 0 {
                out += invalid[Int.random(in: 0..<invalid.count, using: &rng)]
            } else {
                out += valid[Int.random(in: 0..<valid.count, using: &rng)]
            }
        }
        return out
    }

    @Test func validationAgreesWithTheStandardLibrary() {
        var rng = SeededRandom(seed: 21)
        for n in 0..<4000 {
            let bytes = n % 3 == 0 ? (0..<Int.random(in: 0...24, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                                   : mixedText(&rng, broken: n % 3 == 1)
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(bytes.withUnsafeBytes { UTF8Check.isValid($0) } == expected, "\(bytes)")
        }
    }

    @Test func escapedTextReadsBackAsTheSameText() throws {
        var rng = SeededRandom(seed: 22)
        for n in 0..<3000 {
            let bytes = mixedText(&rng, broken: n % 2 == 1)
            let text = encode(bytes)
            let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? String
            if let valid = String(validating: bytes, as: UTF8.self) {
                #expect(parsed == valid, "\(bytes)")
            } else {
                #expect(parsed != nil)
            }
        }
    }

    @Test func flattenedStringsKeepTheirExactRanges() throws {
        var rng = SeededRandom(seed: 23)
        for _ in 0..<1500 {
            let texts = (0..<Int.random(in: 1...4, using: &rng)).compactMap { _ in
                String(validating: mixedText(&rng, broken: false), as: UTF8.self)
            }
            let body = try JSONSerialization.data(withJSONObject: texts)
            let m = DecodedMessage()
            let ok = Array(body).withUnsafeBytes { b -> Bool in
                var p = JSONFlattener(bytes: b, start: 0, into: m)
                guard p.run() else { return false }
                let strings = m.fields.filter { if case .jsonString = $0.value { true } else { false } }
                    .map { JSONText.unescaped(b.slice(Int($0.offset), Int($0.width))) }
                return strings == texts
            }
            #expect(ok, "\(String(decoding: body, as: UTF8.self))")
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
