#!/usr/bin/env python3
"""framedump over a directory of captures on Spark, written as Parquet.

    spark-submit scripts/spark/framedump_parquet.py CAPTURES OUT \
        [--framedump PATH] [-d DISSECTORS]... [--glob PATTERN]... [--overwrite] \
        [-- FRAMEDUMP OPTION...]

Every capture in CAPTURES (not its subfolders) that matches a --glob (default *.pcap and
*.pcapng) is one Spark task, which runs `framedump [OPTION...] -d DISSECTORS -r CAPTURE -T json`
on its executor and turns each NDJSON line into a row. Three Parquet tables are written:

    OUT/messages   one row per decoded message
    OUT/events     one row per other line (open, close, gap, malformed, cut, handshake, limit...)
    OUT/captures   one row per capture: counts, first and last time, framedump's exit status,
                   its stderr when it failed (a capture framedump cannot read is a failed row)

The columns are documented in docs/fleet.md. framedump, the captures and the dissectors must
be at the same paths on every executor (framedump on PATH, or --framedump); relative paths
given here are made absolute on the driver. Options after `--` go to framedump unchanged.
Run with plain `python3` it uses Spark in local mode.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from fnmatch import fnmatch
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.types import (ArrayType, DoubleType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

MESSAGES = StructType([
    StructField("capture", StringType(), False),
    StructField("line", LongType(), False),
    StructField("conn", StringType(), True),
    StructField("dir", StringType(), True),
    StructField("ts", StringType(), True),
    StructField("time", TimestampType(), True),
    StructField("protocol", StringType(), True),
    StructField("pkt_first", LongType(), True),
    StructField("pkt_last", LongType(), True),
    StructField("stream_offset", LongType(), True),
    StructField("id", LongType(), True),
    StructField("name", StringType(), True),
    StructField("length", LongType(), True),
    StructField("header", StringType(), True),
    StructField("fields", StringType(), True),
    StructField("warnings", ArrayType(StringType(), False), True),
    StructField("other", StringType(), True),
])

EVENTS = StructType([
    StructField("capture", StringType(), False),
    StructField("line", LongType(), False),
    StructField("type", StringType(), False),
    StructField("conn", StringType(), True),
    StructField("dir", StringType(), True),
    StructField("ts", StringType(), True),
    StructField("time", TimestampType(), True),
    StructField("protocol", StringType(), True),
    StructField("pkt", LongType(), True),
    StructField("stream_offset", LongType(), True),
    StructField("length", LongType(), True),
    StructField("reason", StringType(), True),
    StructField("other", StringType(), True),
])

CAPTURES = StructType([
    StructField("capture", StringType(), False),
    StructField("status", StringType(), False),
    StructField("exit_status", IntegerType(), True),
    StructField("stderr", StringType(), True),
    StructField("seconds", DoubleType(), False),
    StructField("lines", LongType(), False),
    StructField("messages", LongType(), False),
    StructField("events", LongType(), False),
    StructField("connections", LongType(), False),
    StructField("malformed", LongType(), False),
    StructField("gaps", LongType(), False),
    StructField("cuts", LongType(), False),
    StructField("problems", LongType(), False),
    StructField("warned", LongType(), False),
    StructField("limits", LongType(), False),
    StructField("first_time", TimestampType(), True),
    StructField("last_time", TimestampType(), True),
])

# What a task yields for each line: one of the three set, the others null.
LINES = StructType([
    StructField("message", MESSAGES, True),
    StructField("event", EVENTS, True),
    StructField("capture", CAPTURES, True),
])

# Event types that say bytes of a stream were not decoded as sent (counted in `problems`).
PROBLEMS = {"gap", "malformed", "cut", "conflict", "late", "reset-ignored", "after-close"}
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
STDERR_LIMIT = 65536


def parse_arguments(argv):
    ours, theirs = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    p = argparse.ArgumentParser(description="framedump over a directory of captures, as Parquet.")
    p.add_argument("captures", help="folder of capture files")
    p.add_argument("out", help="folder to write messages/, events/ and captures/ into")
    p.add_argument("--framedump", default="framedump", help="framedump binary (default: framedump on PATH)")
    p.add_argument("-d", "--dissectors", action="append", default=[], help="dissector file or folder (repeatable)")
    p.add_argument("--glob", action="append", help="capture file names to take (repeatable; default *.pcap, *.pcapng)")
    p.add_argument("--overwrite", action="store_true", help="replace the tables if OUT already has them")
    args = p.parse_args(ours)
    args.glob = args.glob or ["*.pcap", "*.pcapng"]
    args.framedump_options = theirs
    return args


def absolute_if_path(name):
    """A program name stays as it is (found on PATH); anything with a slash becomes absolute."""
    return os.path.abspath(name) if os.sep in name else name


def list_captures(folder, globs):
    files = sorted(p for p in Path(folder).iterdir() if p.is_file())
    return [(p.name, str(p.resolve())) for p in files if any(fnmatch(p.name, g) for g in globs)]


def nanoseconds(ts):
    """framedump's exact `seconds.nanoseconds` text as an integer (None when the line has no ts)."""
    return None if ts is None else int(Decimal(ts).scaleb(9))


def to_time(ns):
    """Nanoseconds since the epoch as a UTC datetime (microseconds; None when out of range)."""
    try:
        return None if ns is None else EPOCH + timedelta(microseconds=ns // 1000)
    except OverflowError:
        return None


def as_json(value):
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def rest(record, taken):
    """The keys of a line that have no column of their own, as a JSON object (None if none)."""
    left = {k: v for k, v in record.items() if k not in taken}
    return as_json(left) if left else None


MESSAGE_KEYS = {"conn", "dir", "ts", "protocol", "pkts", "offset", "id", "message", "length",
                "header", "fields", "warnings"}
EVENT_KEYS = {"type", "conn", "dir", "ts", "protocol", "pkt", "offset", "length", "reason"}


INT64 = range(-2 ** 63, 2 ** 63)


def int64(value, key):
    """A number for an int64 column (a u64 id with its top bit set does not fit: ValueError)."""
    if value is None or (isinstance(value, int) and value in INT64):
        return value
    raise ValueError(f"{key} {value!r} does not fit a 64-bit integer column")


def message_row(capture, line, when, r):
    first, last = r.get("pkts") or (None, None)
    return (capture, line, r.get("conn"), r.get("dir"), r.get("ts"), when, r.get("protocol"),
            int64(first, "pkts"), int64(last, "pkts"), int64(r.get("offset"), "offset"), int64(r.get("id"), "id"),
            r.get("message"), int64(r.get("length"), "length"), as_json(r.get("header")), as_json(r.get("fields")),
            r.get("warnings"), rest(r, MESSAGE_KEYS))


def event_row(capture, line, when, r):
    return (capture, line, r["type"], r.get("conn"), r.get("dir"), r.get("ts"), when, r.get("protocol"),
            int64(r.get("pkt"), "pkt"), int64(r.get("offset"), "offset"), int64(r.get("length"), "length"),
            r.get("reason"), rest(r, EVENT_KEYS))


class Tally:
    """What the captures table says of one capture, counted line by line."""

    def __init__(self):
        self.lines = self.messages = self.warned = 0
        self.types = {}
        self.conns = set()
        self.first = self.last = None

    def add(self, r, ns):
        self.lines += 1
        if "type" in r:
            self.types[r["type"]] = self.types.get(r["type"], 0) + 1
        else:
            self.messages += 1
            self.warned += 1 if r.get("warnings") else 0
        if r.get("conn") is not None:
            self.conns.add(r["conn"])
        if ns is not None:
            self.first = ns if self.first is None else min(self.first, ns)
            self.last = ns if self.last is None else max(self.last, ns)

    def row(self, capture, exit_status, stderr, failed, seconds):
        n = self.types.get
        return (capture, "failed" if failed else "ok", exit_status,
                stderr[:STDERR_LIMIT] if failed else None, seconds, self.lines, self.messages,
                self.lines - self.messages, len(self.conns), n("malformed", 0), n("gap", 0), n("cut", 0),
                sum(n(t, 0) for t in PROBLEMS), self.warned, n("limit", 0),
                to_time(self.first), to_time(self.last))


def run_capture(capture, path, command):
    """One task: framedump on one capture; yields a LINES row per NDJSON line, then its captures row."""
    started = time.monotonic()
    tally = Tally()
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(command + ["-r", path, "-T", "json"], stdout=subprocess.PIPE, stderr=err)
        except OSError as e:
            yield None, None, tally.row(capture, None, f"cannot run {command[0]}: {e}", True, time.monotonic() - started)
            return
        bad = ""
        for number, text in enumerate(proc.stdout, 1):
            try:
                r = json.loads(text)
                ns = nanoseconds(r.get("ts"))
                row = (None, event_row(capture, number, to_time(ns), r), None) if "type" in r else \
                      (message_row(capture, number, to_time(ns), r), None, None)
            except ValueError as e:
                bad = f"line {number} of framedump's output cannot be stored ({e}): {text[:200]!r}"
                proc.kill()
                break
            tally.add(r, ns)
            yield row
        status = proc.wait()
        err.seek(0)
        stderr = (bad + "\n" if bad else "") + err.read().decode("utf-8", errors="replace")
    yield None, None, tally.row(capture, status, stderr, status != 0 or bool(bad), time.monotonic() - started)


def main(argv):
    args = parse_arguments(argv)
    captures = list_captures(args.captures, args.glob)
    if not captures:
        sys.exit(f"no file in {args.captures} matches {' or '.join(args.glob)}")
    command = [absolute_if_path(args.framedump)] + args.framedump_options
    for d in args.dissectors:
        command += ["-d", os.path.abspath(d)]

    spark = (SparkSession.builder.appName("framedump-parquet")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    started = time.monotonic()
    # One partition per capture, so one task each. The rows are converted from Python once and
    # kept (memory, then disk) until the three tables are written: framedump runs once per capture.
    rows = spark.sparkContext.parallelize(captures, len(captures)).flatMap(lambda c: run_capture(c[0], c[1], command))
    lines = spark.createDataFrame(rows, LINES).persist()
    mode = "overwrite" if args.overwrite else "errorifexists"
    for table, kind in (("messages", "message"), ("events", "event"), ("captures", "capture")):
        lines.where(f"{kind} IS NOT NULL").select(f"{kind}.*").write.mode(mode).parquet(os.path.join(args.out, table))
    summary = spark.read.parquet(os.path.join(args.out, "captures")).collect()
    seconds = time.monotonic() - started
    lines.unpersist()
    spark.stop()
    messages = sum(s.messages for s in summary)
    failed = sorted(s.capture for s in summary if s.status == "failed")
    print(f"{len(summary)} captures ({len(failed)} failed{': ' + ', '.join(failed) if failed else ''}), "
          f"{messages} messages, {sum(s.events for s in summary)} events in {seconds:.1f} s "
          f"({messages / seconds:.0f} messages/s) -> {args.out}")


if __name__ == "__main__":
    main(sys.argv[1:])
