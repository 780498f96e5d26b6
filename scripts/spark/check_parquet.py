#!/usr/bin/env python3
"""Checks a framedump_parquet.py export against framedump's own NDJSON, row by row.

    scripts/spark/check_parquet.py OUT CAPTURES [--framedump PATH] [-d DISSECTORS]... [-- OPTION...]

Runs `framedump [OPTION...] -d DISSECTORS -r CAPTURE -T json` on every capture the export's
captures table names (CAPTURES is the folder they were read from) and compares, reading the
Parquet with DuckDB:

- messages and events: one row per NDJSON line, numbered 1..N with none missing; each row
  turned back into its line equals the line parsed (nested JSON parsed too, so numbers compare
  as numbers and key order does not matter; a null column stands for a key the line left out
  or gave as null); `time` is `ts` to the microsecond;
- captures: exit status, status, stderr (on failure), line, message, event, connection and
  problem counts, first and last time, all recomputed from framedump's output.

Prints one line per capture and a total; exit 0 when everything is equal, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
from decimal import Decimal

import duckdb

PROBLEMS = {"gap", "malformed", "cut", "conflict", "late", "reset-ignored", "after-close"}
STDERR_LIMIT = 65536  # the job keeps this much of a failed run's stderr


def parse_arguments(argv):
    ours, theirs = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    p = argparse.ArgumentParser(description="Compare a Parquet export with framedump's NDJSON.")
    p.add_argument("out", help="the export's folder (messages/, events/, captures/)")
    p.add_argument("captures", help="the folder the captures were read from")
    p.add_argument("--framedump", default="framedump")
    p.add_argument("-d", "--dissectors", action="append", default=[])
    args = p.parse_args(ours)
    args.framedump_options = theirs
    return args


def table(con, out, name, columns, capture=None):
    """Rows of one table as dicts (of one capture, if given), ordered; times as epoch microseconds."""
    where = "WHERE capture = ?" if capture is not None else ""
    cur = con.execute(f"SELECT {columns} FROM read_parquet(?) {where} ORDER BY ALL",
                      [os.path.join(out, name, "*.parquet")] + ([capture] if capture is not None else []))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def loads(text):
    return None if text is None else json.loads(text)


def message_line(m):
    pkts = None if m["pkt_first"] is None else [m["pkt_first"], m["pkt_last"]]
    line = {"conn": m["conn"], "dir": m["dir"], "ts": m["ts"], "protocol": m["protocol"], "pkts": pkts,
            "offset": m["stream_offset"], "id": m["id"], "message": m["name"], "length": m["length"],
            "header": loads(m["header"]), "fields": loads(m["fields"]), "warnings": m["warnings"]}
    line.update(loads(m["other"]) or {})
    return line


def event_line(e):
    line = {k: e[k] for k in ("type", "conn", "dir", "ts", "protocol", "pkt", "length", "reason")}
    line["offset"] = e["stream_offset"]
    line.update(loads(e["other"]) or {})
    return line


def without_nulls(line):
    return {k: v for k, v in line.items() if v is not None}


def micros(ts):
    return None if ts is None else int(Decimal(ts).scaleb(6) // 1)


def expected_summary(lines, status, stderr):
    types = [r.get("type") for r in lines]
    times = [micros(r["ts"]) for r in lines if "ts" in r]
    failed = status != 0
    return {"status": "failed" if failed else "ok", "exit_status": status, "stderr": stderr[:STDERR_LIMIT] if failed else None,
            "lines": len(lines), "messages": types.count(None), "events": len(lines) - types.count(None),
            "connections": len({r["conn"] for r in lines if r.get("conn") is not None}),
            "malformed": types.count("malformed"), "gaps": types.count("gap"), "cuts": types.count("cut"),
            "problems": sum(1 for t in types if t in PROBLEMS),
            "warned": sum(1 for r in lines if "type" not in r and r.get("warnings")),
            "limits": types.count("limit"),
            "first": min(times) if times else None, "last": max(times) if times else None}


def differences(capture, got_lines, want_lines, got_summary, want_summary):
    found = []
    if len(got_lines) != len(want_lines):
        found.append(f"{len(got_lines)} rows, framedump wrote {len(want_lines)} lines")
    for n, (got, want) in enumerate(zip(got_lines, want_lines), 1):
        row, when = got
        if row["line"] != n:
            found.append(f"row {n} is numbered line {row['line']}")
        rebuilt = message_line(row) if "name" in row else event_line(row)
        if without_nulls(rebuilt) != without_nulls(want):
            found.append(f"line {n}: the row says {json.dumps(rebuilt, ensure_ascii=False)}, framedump "
                         f"wrote {json.dumps(want, ensure_ascii=False)}")
        if when != micros(want.get("ts")):
            found.append(f"line {n}: time {when} µs, ts {want.get('ts')}")
    for key, value in want_summary.items():
        column = {"first": "first_us", "last": "last_us"}.get(key, key)
        if got_summary[column] != value:
            found.append(f"captures.{column} is {got_summary[column]!r}, framedump's output says {value!r}")
    return [f"{capture}: {d}" for d in found]


def main(argv):
    args = parse_arguments(argv)
    command = [args.framedump] + args.framedump_options
    for d in args.dissectors:
        command += ["-d", d]
    con = duckdb.connect()
    summaries = table(con, args.out, "captures", "* EXCLUDE (first_time, last_time), "
                      "epoch_us(first_time) AS first_us, epoch_us(last_time) AS last_us")
    named = [s["capture"] for s in summaries]
    problems, total = [], 0
    for summary in summaries:
        capture = summary["capture"]
        got = [(row, row.pop("time_us")) for name in ("messages", "events")
               for row in table(con, args.out, name, "* EXCLUDE (time), epoch_us(time) AS time_us", capture)]
        got.sort(key=lambda rw: rw[0]["line"])
        run = subprocess.run(command + ["-r", os.path.join(args.captures, capture), "-T", "json"],
                             capture_output=True)
        want = [json.loads(text) for text in run.stdout.splitlines()]
        expected = expected_summary(want, run.returncode, run.stderr.decode("utf-8", errors="replace"))
        found = differences(capture, got, want, summary, expected)
        total += len(got)
        print(f"{capture}: {len(got)} rows, {expected['messages']} messages, {expected['events']} events, "
              f"status {summary['status']}: {'DIFFERENT' if found else 'equal'}", flush=True)
        problems += found
    for name in ("messages", "events"):
        others = con.execute("SELECT DISTINCT capture FROM read_parquet(?) WHERE capture NOT IN (SELECT unnest(?))",
                             [os.path.join(args.out, name, "*.parquet"), named]).fetchall()
        problems += [f"{c}: rows in {name} for a capture the captures table does not name" for (c,) in others]
    for p in problems[:20]:
        print(p)
    print(f"{len(summaries)} captures, {total} rows: {'DIFFERENT' if problems else 'equal'}"
          f"{f' ({len(problems)} differences)' if problems else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
