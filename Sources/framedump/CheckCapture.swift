import ArgumentParser
import FramedumpCore

/// `framedump check -r CAPTURE`: the capture validated against the loaded dissectors; one
/// line per problem, a summary per class on stderr; exit 0 when clean (or every problem is of
/// an allowed class), 1 when a problem was found, 2 on error.
enum CheckCapture {
    static func classes(_ names: [String]) throws -> Set<ProblemClass> {
        Set(try names.map { n in
            // `cipher` was the class's name before every transform shared it.
            guard let k = ProblemClass(rawValue: n == "cipher" ? "transform" : n) else {
                throw ValidationError("--allow \(n): not a problem class (\(ProblemClass.names)).")
            }
            return k
        })
    }

    static func run(captures arguments: [String], options: PipelineOptions, allow: [String], unclaimed: Bool) throws {
        let out = OutputBuffer(fd: 1)
        let check = CaptureCheck(output: out, allowed: try classes(allow), unclaimed: unclaimed)
        let pipeline: Pipeline
        let files: [String]
        var cut: CaptureError?
        do {
            files = try CaptureFiles.expand(arguments)
        } catch {
            FileHandleErr.write("framedump check: \(error)\n")
            throw ExitCode(2)
        }
        // The summary names the capture, or the set by its first and last file.
        let capture = files.count == 1 ? files[0] : "\(files.count) files merged (\(files[0]) … \(files[files.count - 1]))"
        do {
            pipeline = try Pipeline(options: options, output: OutputBuffer(fd: nil), messageSink: check)
            let source = try MergedSource.open(files)
            // Cut off mid-record: checked up to its last whole record, and said.
            cut = try pipeline.runToLastWholeRecord(source)
        } catch let e as DissectorError {
            FileHandleErr.write("\(e.description)\n")
            throw ExitCode(2)
        } catch let e as DecodeAsError {
            FileHandleErr.write("framedump check: \(e.description)\n")
            throw ExitCode(2)
        } catch let e as TLSKeyLogError {
            FileHandleErr.write("framedump check: \(e.message)\n")
            throw ExitCode(2)
        } catch {
            out.flush()
            FileHandleErr.write("framedump check: \(error)\n")
            throw ExitCode(2)
        }
        pipeline.finish()
        out.flush()
        FileHandleErr.write(check.summary(capture, messages: pipeline.messageCount) + "\n")
        if let cut { FileHandleErr.write("framedump check: \(cut): checked up to its last whole record\n") }
        if check.failures > 0 { throw ExitCode(1) }
        // Passed as far as it goes: a cut capture still exits as a run on it does (5).
        if cut != nil { throw ExitCode(5) }
        // Nothing decoded is nothing checked: not a pass.
        if pipeline.messageCount == 0 { throw ExitCode(1) }
    }
}
