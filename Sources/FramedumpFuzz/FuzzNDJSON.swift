import FramedumpCore
/// `ndjson-line` for `scripts/fuzz.sh`: an NDJSON line as `framedump diff` reads one (exports
/// are untrusted input). The scanner and the value parser must agree on what is JSON, and the
/// line with its `--ignore`d members cut out must still be JSON.
public enum FuzzNDJSON {
    nonisolated(unsafe) static let scanner = LineScanner(ignore: ["a", "fields.*", "b.c", "*x*"].compactMap(IgnorePattern.init))

    public static func line(_ data: UnsafeRawBufferPointer) {
        let scanned = try? scanner.scan(data)
        let parsed = try? JSONValue.parse(data)
        var isObject = false
        if case .object? = parsed { isObject = true }
        precondition((scanned != nil) == isObject, "scanner and parser disagree")
        guard let f = scanned else { return }
        var out: [UInt8] = [0x7b]
        var at = f.tailStart
        // As the export does: the tail after conn/dir, without the cuts in it.
        for c in scanner.cuts where c.upperBound > at {
            precondition(c.lowerBound >= at && c.upperBound <= data.count, "cuts overlap or leave the line")
            out += data[at..<c.lowerBound]
            at = c.upperBound
        }
        out += data[at...]
        // With conn and dir gone, the comma after them goes too.
        while out.count > 1 && [0x20, 0x0a, 0x0d, 0x09].contains(out[1]) { out.remove(at: 1) }
        if out.count > 1 && out[1] == 0x2c { out.remove(at: 1) }
        let ok = out.withUnsafeBytes { (try? JSONValue.parse($0)) != nil }
        precondition(ok, "the line with ignored members cut is not JSON")
    }
}
