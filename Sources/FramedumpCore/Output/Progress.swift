#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The progress line on stderr while a large file is read (stderr a terminal, not turned off
/// with --no-progress): bytes of the total, packets, messages, rate and time left, redrawn at
/// most four times a second, and erased when the run ends.
public final class Progress {
    let total: UInt64
    let messages: () -> UInt64
    var bytes: UInt64 = 24
    var packets: UInt64 = 0
    let start: Double
    var lastDraw: Double
    var drawn = false

    /// `fileSize`: the capture's size in bytes; `messages`: how many messages so far.
    public init(fileSize: UInt64, messages: @escaping () -> UInt64) {
        total = max(fileSize, 1)
        self.messages = messages
        start = Self.now()
        // Nothing is drawn for the first half second: short runs never show the line.
        lastDraw = start + 0.25
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Called per packet: cheap, and looks at the clock only every 4,096 packets.
    @inline(__always)
    func packet(caplen: Int) {
        packets += 1
        bytes += UInt64(caplen) + 16
        if packets & 4095 == 0 { tick() }
    }

    func tick() {
        let t = Self.now()
        guard t - lastDraw >= 0.25 else { return }
        lastDraw = t
        let elapsed = t - start
        let rate = Double(bytes) / max(elapsed, 1e-6)
        let left = Double(total > bytes ? total - bytes : 0) / max(rate, 1)
        let pct = min(100, Int(Double(bytes) * 100 / Double(total)))
        let line = "\r\(Self.size(bytes)) of \(Self.size(total)) (\(pct)%), \(packets) packets, \(messages()) messages, "
            + "\(Self.size(UInt64(rate)))/s, \(Int(left.rounded(.up))) s left\u{1b}[K"
        write(line)
        drawn = true
    }

    /// Erases the line (at the end of the run, before the summary).
    public func finish() {
        if drawn { write("\r\u{1b}[K") }
        drawn = false
    }

    func write(_ s: String) {
        var s = s
        s.withUTF8 { b in _ = Platform.write(2, b.baseAddress, b.count) }
    }

    static func size(_ n: UInt64) -> String {
        if n < 1 << 20 { return "\(n / 1024) KB" }
        let mb = Double(n) / 1_048_576
        return mb < 100 ? String(Int(mb * 10) / 10) + "." + String(Int(mb * 10) % 10) + " MB" : "\(Int(mb)) MB"
    }
}
