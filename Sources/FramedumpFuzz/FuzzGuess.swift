import FramedumpCore
/// Fuzz entry (`scripts/fuzz.sh guess`): arbitrary bytes as the sampled streams of one port,
/// through the whole guesser, the report and the dissector writer.
///
/// Input: `[flags]` then records `[u16 BE length][bytes]`, one piece each (at most 8, each cut
/// to what is there). Flag bit k set: piece k starts at a message boundary (else the guesser
/// resynchronises); bit 7: every piece ends cut. Pieces alternate c2s/s2c over four connections.
public enum FuzzGuess {
    public static func run(_ input: UnsafeRawBufferPointer) {
        guard let flags = input.first else { return }
        var streams: [SampledStream] = []
        var at = 1, k = 0
        while at + 2 <= input.count && k < 8 {
            let n = min(Int(input[at]) << 8 | Int(input[at + 1]), input.count - at - 2)
            let bytes = [UInt8](input[(at + 2)..<(at + 2 + n)])
            at += 2 + n
            let piece = SampledPiece(bytes: bytes, startsAtBoundary: flags & (1 << (k % 7)) != 0, endsCut: flags & 0x80 != 0)
            streams.append(SampledStream(connection: "fuzz-\(k / 2)", serverPort: 9, direction: k % 2 == 0 ? .c2s : .s2c,
                                         pieces: [piece]))
            k += 1
        }
        let g = Guesser.guess(port: 9, streams: streams)
        let result = GuessResult(capture: "fuzz", port: nil, packets: 0, payloadBytes: UInt64(input.count), stoppedEarly: false, ports: [g])
        _ = GuessReport.text(result)
        _ = DissectorWriter.text(result, source: "fuzz")
    }
}
