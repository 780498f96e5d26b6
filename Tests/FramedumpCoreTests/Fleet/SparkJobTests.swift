import Foundation
import XCTest
import FramedumpCore

/// The Spark job (scripts/spark/framedump_parquet.py, docs/fleet.md) in local mode, one Spark
/// session over a copy of samples/ and a file that is not a capture. scripts/spark/check_parquet.py
/// reads the Parquet back with DuckDB and compares every row with framedump's NDJSON of its
/// capture (every key of every line, nested JSON parsed) and every captures row with what that
/// output and framedump's exit status say. The test checks, from framedump's output run here,
/// that each sample was compared with as many rows as framedump wrote lines, and that the
/// unreadable file is a failed row (exit 4), not a missing one.
///
/// Needs python3 with pyspark and duckdb, and Java. Skipped when pyspark cannot be imported,
/// except under CI=true, where anything missing fails (.ci/run installs it all).
final class SparkJobTests: XCTestCase {
    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    func testParquetRowsEqualFramedumpNDJSON() throws {
        let python = try requirements()
        let dir = TestSupport.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let captures = dir + "/captures", out = dir + "/out"
        try FileManager.default.createDirectory(atPath: captures, withIntermediateDirectories: true)
        let samples = try FileManager.default.contentsOfDirectory(atPath: TestSupport.sample(""))
            .filter { $0.hasSuffix(".pcap") }.sorted()
        XCTAssertGreaterThan(samples.count, 10)
        for s in samples {
            try FileManager.default.copyItem(atPath: TestSupport.sample(s), toPath: "\(captures)/\(s)")
        }
        try FileManager.default.copyItem(atPath: TestSupport.root.appendingPathComponent("README.md").path,
                                         toPath: "\(captures)/not-a-capture.pcap")
        let framedump = ["--framedump", TestSupport.binary, "-d", TestSupport.dissectors]
        let script = { (name: String) in TestSupport.root.appendingPathComponent("scripts/spark/\(name)").path }

        let job = try TestSupport.run(python, [script("framedump_parquet.py"), captures, out] + framedump,
                                      cwd: dir, timeout: 900)
        XCTAssertEqual(job.status, 0, job.stderr)
        XCTAssertTrue(job.stdout.hasPrefix("\(samples.count + 1) captures (1 failed: not-a-capture.pcap)"), job.stdout)

        let check = try TestSupport.run(python, [script("check_parquet.py"), out, captures] + framedump,
                                        cwd: dir, timeout: 600)
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        let report = check.stdout.split(separator: "\n").map(String.init)
        var rows = 0
        for s in samples {
            let ndjson = try TestSupport.framedump(["-r", TestSupport.sample(s), "-T", "json", "-d", TestSupport.dissectors])
            XCTAssertEqual(ndjson.status, 0, s)
            let lines = ndjson.stdout.split(separator: "\n")
            let messages = try lines.filter { try JSONValue.parse(String($0))["type"] == nil }.count
            XCTAssertGreaterThan(lines.count, 0, s)
            rows += lines.count
            let want = "\(s): \(lines.count) rows, \(messages) messages, \(lines.count - messages) events, status ok: equal"
            XCTAssertTrue(report.contains(want), "no line '\(want)' in\n\(check.stdout)")
        }
        XCTAssertEqual(try TestSupport.framedump(["-r", "\(captures)/not-a-capture.pcap"]).status, 4)
        XCTAssertTrue(report.contains("not-a-capture.pcap: 0 rows, 0 messages, 0 events, status failed: equal"), check.stdout)
        XCTAssertEqual(report.last, "\(samples.count + 1) captures, \(rows) rows: equal")
    }

    /// python3 with pyspark and duckdb, and Java: skipped without pyspark outside CI, else a failure.
    func requirements() throws -> String {
        let ci = ProcessInfo.processInfo.environment["CI"] == "true"
        let python = TestSupport.which("python3")
        let hasSpark = try python.map { try TestSupport.run($0, ["-c", "import pyspark"]).status == 0 } ?? false
        if !hasSpark {
            if ci { throw Missing(description: "python3 with pyspark is required in CI (installed by .ci/run)") }
            throw XCTSkip("pyspark is not installed (pip install pyspark duckdb)")
        }
        if try TestSupport.run(python!, ["-c", "import duckdb"]).status != 0 {
            throw Missing(description: "duckdb is required beside pyspark (pip install duckdb)")
        }
        if TestSupport.which("java") == nil && ProcessInfo.processInfo.environment["JAVA_HOME"] == nil {
            throw Missing(description: "Spark needs Java 17 or newer (java on PATH or JAVA_HOME)")
        }
        return python!
    }
}
