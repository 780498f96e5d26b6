import ArgumentParser
import Foundation
import FramedumpCore

/// `framedump guess CAPTURE`: infer an unknown protocol's framing, header fields and body
/// kinds from the reassembled streams, and write its dissector (see docs/guess.md).
struct Guess: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Infer an unknown protocol's framing and message ids from a capture, and write its dissector.")

    @Argument(help: ArgumentHelp("The capture (pcap or pcapng).", valueName: "capture"))
    var capture: String

    @Option(name: .customShort("p"), help: ArgumentHelp("Only this server port (default: every port with TCP data).", valueName: "port"))
    var port: UInt16?

    @Option(name: .customShort("o"), help: ArgumentHelp("Write the dissector to this file, the report to stdout (default, or -: the dissector to stdout, the report to stderr).", valueName: "file"))
    var output: String?

    func run() throws {
        let result: GuessResult
        do {
            result = try Guesser.run(capture: capture, port: port)
        } catch {
            FileHandleErr.write("framedump guess: \(error)\n")
            throw ExitCode(error.exitCode)
        }
        let report = GuessReport.text(result)
        let dissector = DissectorWriter.text(result, source: URL(fileURLWithPath: capture).lastPathComponent)
        // `-o -` is standard output, as tcpdump's `-w -` is (not a file named "-").
        if let output, output != "-" {
            print(report, terminator: "")
            guard let dissector else {
                FileHandleErr.write("framedump guess: no dissector written: nothing in this capture could be framed (by a length, a delimiter or WebSocket)\n")
                throw ExitCode(1)
            }
            guard FileManager.default.createFile(atPath: output, contents: Data(dissector.utf8)) else {
                FileHandleErr.write("framedump guess: cannot write \(output)\n")
                throw ExitCode(9)
            }
            print("wrote \(output)")
        } else {
            FileHandleErr.write(report)
            guard let dissector else {
                FileHandleErr.write("framedump guess: no dissector written: nothing in this capture could be framed (by a length, a delimiter or WebSocket)\n")
                throw ExitCode(1)
            }
            print(dissector, terminator: "")
        }
    }
}
