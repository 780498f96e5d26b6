#!/usr/bin/env python3
"""SQL over a framedump_parquet.py export, with DuckDB.

    scripts/spark/query.py OUT [SQL]

The three tables are views named as their folders: messages, events, captures (columns in
docs/fleet.md). Without SQL it answers: how many messages of each name, per capture.
"""
import argparse
import os

import duckdb

MESSAGES_PER_NAME = """
SELECT capture, protocol, name, count(*) AS messages, sum(length) AS bytes
FROM messages
GROUP BY ALL
ORDER BY capture, messages DESC, name
"""


def main():
    p = argparse.ArgumentParser(description="SQL over a framedump Parquet export (views: messages, events, captures).")
    p.add_argument("out", help="the export's folder")
    p.add_argument("sql", nargs="?", default=MESSAGES_PER_NAME, help="a query (default: messages per name per capture)")
    args = p.parse_args()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for table in ("messages", "events", "captures"):
        path = os.path.join(args.out, table, "*.parquet").replace("'", "''")
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{path}')")
    con.sql(args.sql).show(max_rows=100000, max_width=200)


if __name__ == "__main__":
    main()
