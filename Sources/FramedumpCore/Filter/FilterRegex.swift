import CPCRE2

/// A `matches` pattern, compiled by PCRE2 (the library Wireshark's `matches` uses, so a
/// pattern means what it means there). A backtracking engine can take exponential time on
/// some patterns (`(.|.)*Z`): every match is bounded in steps, a message on which the bound is
/// reached counts as not matching and is counted, and after `maxGiveUps` such messages the
/// pattern is tried no more. The run then says so and fails (`FilterRegexGaveUp`): never a
/// quiet answer.
///
/// Text is matched as UTF-8 (`.` is one character; invalid bytes never match a character),
/// bytes one byte per character (`\x00` matches a zero byte), as before. One per evaluator:
/// the match data is written by each match, so a FilterRegex is used by one thread.
final class FilterRegex {
    /// Backtracking steps one match may take (PCRE2's own default is 10 million).
    static let matchLimit: UInt32 = 1_000_000
    /// Messages on which a pattern may give up before it is no longer tried.
    static let maxGiveUps = 10

    let pattern: String
    private let text: OpaquePointer
    private let bytes: OpaquePointer
    private let data: OpaquePointer
    private let context: OpaquePointer
    /// Messages on which the bound was reached, and those not tried after `maxGiveUps`.
    private(set) var gaveUp = 0
    private(set) var notTried = 0

    /// Why a pattern does not compile: PCRE2's message and the offset in the pattern.
    struct CompileError: Error {
        let message: String
        let offset: Int
    }

    init(_ pattern: String) throws(CompileError) {
        self.pattern = pattern
        text = try Self.compile(pattern, options: PCRE2_UTF | PCRE2_MATCH_INVALID_UTF)
        do {
            bytes = try Self.compile(pattern, options: 0)
        } catch {
            pcre2_code_free_8(text)
            throw error
        }
        data = pcre2_match_data_create_8(1, nil)
        context = pcre2_match_context_create_8(nil)
        pcre2_set_match_limit_8(context, Self.matchLimit)
        pcre2_set_depth_limit_8(context, Self.matchLimit)
    }

    deinit {
        pcre2_code_free_8(text)
        pcre2_code_free_8(bytes)
        pcre2_match_data_free_8(data)
        pcre2_match_context_free_8(context)
    }

    /// Whether a pattern compiles, for the filter's parser (its error at the pattern's column).
    static func check(_ pattern: String) throws(CompileError) {
        let code = try compile(pattern, options: PCRE2_UTF | PCRE2_MATCH_INVALID_UTF)
        pcre2_code_free_8(code)
    }

    private static func compile(_ pattern: String, options: UInt32) throws(CompileError) -> OpaquePointer {
        var errorCode: Int32 = 0
        var offset = 0
        var p = pattern
        let code: OpaquePointer? = p.withUTF8 { b in
            pcre2_compile_8(b.baseAddress ?? UnsafePointer(bitPattern: 1), b.count, options, &errorCode, &offset, nil)
        }
        guard let code else { throw CompileError(message: message(errorCode), offset: offset) }
        // The JIT is an optimisation: a pattern it cannot take is matched by the interpreter.
        _ = pcre2_jit_compile_8(code, PCRE2_JIT_COMPLETE)
        return code
    }

    static func message(_ code: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBufferPointer { pcre2_get_error_message_8(code, $0.baseAddress, $0.count) }
        return n > 0 ? String(decoding: buffer[..<Int(n)], as: UTF8.self) : "error \(code)"
    }

    func matches(text s: String) -> Bool {
        var s = s
        return s.withUTF8 { run(text, UnsafeRawBufferPointer($0)) }
    }

    func matches(bytes b: [UInt8]) -> Bool {
        b.withUnsafeBytes { run(bytes, $0) }
    }

    private func run(_ code: OpaquePointer, _ subject: UnsafeRawBufferPointer) -> Bool {
        if gaveUp >= Self.maxGiveUps {
            notTried += 1
            return false
        }
        let start = subject.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bitPattern: 1)
        let rc = pcre2_match_8(code, start, subject.count, 0, 0, data, context)
        if rc >= 0 { return true }
        if rc != PCRE2_ERROR_NOMATCH { gaveUp += 1 }
        return false
    }
}

/// A `matches` that gave up on some messages: what the run says at its end, as its error.
public struct FilterRegexGaveUp: Error, CustomStringConvertible {
    public let pattern: String
    public let gaveUp: Int
    public let notTried: Int

    public var description: String { "-Y: " + explanation }

    /// Without the option's name (the page says it under its filter box).
    public var explanation: String {
        var s = "matches \"\(pattern)\" reached its bound of \(FilterRegex.matchLimit) backtracking steps on \(gaveUp) message\(gaveUp == 1 ? "" : "s")"
        if notTried > 0 { s += " and was not tried on \(notTried) more" }
        return s + "; they count as not matching: simplify the pattern"
    }
}
