#!/usr/bin/env python3
"""Record samples/postgresql-prefer.pcap: PostgreSQL's protocol 3.0 between the real server and
psycopg 3 (libpq underneath) on loopback with libpq's default sslmode=prefer against a server with
ssl off, and a query cancelled by a CancelRequest; and samples/postgresql-prefer.messages.json, the
connections with their untyped first messages and their statements. Run as root from the
repository root (Debian's postgresql and python3-psycopg):

    apt-get install -y postgresql python3-psycopg tshark
    /usr/bin/python3 samples/make_postgresql_prefer_sample.py

On the wire (see make_postgresql_sample.py for the typed messages): before its StartupMessage a
client may send requests that have no type byte either, each `[int32 length][int32 code]`: the
SSLRequest (length 8, code 80877103) and the GSSENCRequest (length 8, code 80877104), each answered
by ONE byte, 'N' (go on in plain text) or 'S'/'G' (start TLS/GSSAPI), with no type and no length;
after an 'N' the client sends its next untyped message on the same connection. The CancelRequest
(length 16, code 80877102, then the process id and the secret key of the BackendKeyData of the
connection whose query is to be cancelled) is the only message of a connection of its own: the
server answers nothing and closes it.

Scenario: the server of make_postgresql_sample.py (`initdb` into a temporary directory as the
`postgres` user, superuser "framedump" with a password, SCRAM-SHA-256 for TCP; `postgres` on
127.0.0.1 port 5432, ssl off, stopped by its PID). KRB5CCNAME names a missing file, so libpq finds
no Kerberos credential cache and never sends a GSSENCRequest (which would depend on who runs this).
Connection A: sslmode=prefer, gssencmode=disable: SSLRequest, the server's 'N', StartupMessage,
the SCRAM exchange; SELECT 1 (simple query), a SELECT with a parameter (extended protocol), a
SELECT from a missing table (ErrorResponse 42P01), Terminate. Connection B: sslmode=prefer,
gssencmode=prefer (no credentials, so the same SSLRequest, 'N', StartupMessage), then SELECT
pg_sleep(5), which another thread cancels after a second (psycopg's conn.cancel(), libpq's
PQcancel): connection C carries the CancelRequest alone, and B gets an ErrorResponse 57014
(query_canceled) before its ReadyForQuery; B then ends with Terminate.

postgresql-prefer.messages.json: {"protocol": "postgresql", "server_port": 5432, "connections":
[...]}, in the order opened, each {"client_port", "sslmode", "gssencmode" (null on C, which libpq
opens by itself without either), "first_c2s" (the untyped messages the client sent first, in order:
"SSLRequest", "GSSENCRequest", "StartupMessage", "CancelRequest"), "ssl_answer" (the one byte that
answered the SSLRequest, or null), "statements" (as in postgresql.messages.json: "sql", "params"
and "wire_sql" when there are parameters, "protocol", "rowcount", "rows", "error"), and on C
"cancel_of" (the client port of the connection whose query it cancelled)}. first_c2s, ssl_answer
and cancel_of are read back from the capture (tshark's follow,tcp), and the typed messages after
them are checked against tshark's pgsql dissector, as make_postgresql_sample.py does. A new
recording differs in timestamps, ports, the SCRAM nonces and proofs, the BackendKeyData (and so
the CancelRequest) and the server's version in a ParameterStatus.
"""
import json, os, socket, struct, subprocess, threading

import psycopg

from capture import follow
from make_postgresql_sample import (DBNAME, PASSWORD, PORT, TIMEOUT, USER, dollars, jsonable, record_server, split,
                                    wait_ready)

HERE = os.path.dirname(os.path.abspath(__file__))
CODES = {80877103: "SSLRequest", 80877104: "GSSENCRequest", 80877102: "CancelRequest", 196608: "StartupMessage"}
LOG = {"connections": []}


def connect(sslmode, gssencmode):
    conn = psycopg.connect(host="127.0.0.1", port=PORT, user=USER, password=PASSWORD, dbname=DBNAME,
                           sslmode=sslmode, gssencmode=gssencmode, application_name="framedump-sample",
                           connect_timeout=TIMEOUT, autocommit=True)
    with socket.fromfd(conn.pgconn.socket, socket.AF_INET, socket.SOCK_STREAM) as s:
        entry = {"client_port": s.getsockname()[1], "sslmode": sslmode, "gssencmode": gssencmode,
                 "first_c2s": None, "ssl_answer": None, "statements": []}
    LOG["connections"].append(entry)
    return conn, entry


def run(conn, entry, sql, params=None, protocol="simple"):
    """Executes one statement, logs it on its connection with its row count, rows and error."""
    st = {"sql": sql}
    if params is not None:
        st["params"] = list(params)
        st["wire_sql"] = dollars(sql)
    st["protocol"] = protocol
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        st["rowcount"] = cur.rowcount
        if cur.description is not None:
            st["rows"] = jsonable(cur.fetchall())
    except psycopg.Error as e:
        st["error"] = {"sqlstate": e.sqlstate, "message": e.diag.message_primary}
    entry["statements"].append(st)
    return st


def scenario(datadir):
    wait_ready(datadir)
    conn, a = connect("prefer", "disable")
    run(conn, a, "SELECT 1")
    run(conn, a, "SELECT %s::integer + 1 AS next", (41,), "extended")
    assert run(conn, a, "SELECT * FROM missing_table")["error"]["sqlstate"] == "42P01"
    conn.close()
    conn, b = connect("prefer", "prefer")
    cancel = threading.Timer(1.0, conn.cancel)
    cancel.start()
    st = run(conn, b, "SELECT pg_sleep(5)")
    cancel.join()
    assert st.get("error", {}).get("sqlstate") == "57014", st
    conn.close()
    # The cancel connection's port is only on the wire: check() fills it in.
    LOG["connections"].append({"client_port": None, "sslmode": None, "gssencmode": None, "first_c2s": None,
                               "ssl_answer": None, "statements": [], "cancel_of": b["client_port"]})


def untyped(c2s, s2c):
    """The untyped messages a connection starts with, each [name, length], the one-byte answers to
    its requests ({request: answer}), a CancelRequest's (process id, secret key), and the rest of
    each side (typed messages only)."""
    first, answers, key, pos, spos = [], {}, None, 0, 0
    while pos < len(c2s):
        n, code = struct.unpack_from(">ii", c2s, pos)
        first.append([CODES[code], n])
        if CODES[code] == "CancelRequest":
            key = struct.unpack_from(">ii", c2s, pos + 8)
        pos += n
        if CODES[code] not in ("SSLRequest", "GSSENCRequest"):
            break
        answers[CODES[code]] = chr(s2c[spos])
        spos += 1
    return first, answers, key, c2s[pos:], s2c[spos:]


def backend_key(s2c, messages):
    """The (process id, secret key) of the BackendKeyData among a server's typed messages."""
    pos = 0
    for m in messages:
        if m["type"] == "K":
            return struct.unpack_from(">ii", s2c, pos + 5)
        pos += 1 + m["length"]
    return None


def check(pcap):
    """Fills in each connection's first_c2s and ssl_answer, and the cancel connection's port, from
    the streams as tshark's follow,tcp gives them; checks that the CancelRequest carries the
    BackendKeyData of the connection it cancels, and that every message splits as tshark's pgsql
    dissector sees it, with the same lengths (the one-byte answers have none there)."""
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields",
                          "-e", "tcp.stream", "-e", "tcp.srcport"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    streams = [tuple(map(int, ln.split("\t"))) for ln in out.splitlines()]
    conns = LOG["connections"]
    assert len(streams) == len(conns), (streams, conns)
    mine, keys = {}, {}
    for (stream, port), entry in zip(streams, conns):
        entry["client_port"] = entry["client_port"] or port
        assert entry["client_port"] == port, (streams, conns)
        sides = follow(pcap, stream)
        first, answers, key, c2s, s2c = untyped(sides["c2s"], sides["s2c"])
        entry["first_c2s"], entry["ssl_answer"] = [name for name, _ in first], answers.get("SSLRequest")
        c2s, s2c = split(c2s, False), split(s2c, False)
        mine[port] = [n for _, n in first] + [m["length"] for m in c2s], [m["length"] for m in s2c]
        keys[port] = key or backend_key(sides["s2c"][len(answers):], s2c)
        if "cancel_of" in entry:
            assert entry["first_c2s"] == ["CancelRequest"] and not c2s and not s2c, (first, c2s, s2c)
            assert keys[port] == keys[entry["cancel_of"]], keys
    out = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,pgsql" % PORT, "-T", "fields",
                          "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "pgsql.length"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    theirs = {port: ([], []) for port in mine}
    for ln in out.splitlines():
        src, dst, lengths = ln.split("\t")
        if lengths:
            c2s, s2c = theirs[int(src) if int(dst) == PORT else int(dst)]
            (s2c if int(src) == PORT else c2s).extend(int(n) for n in lengths.split(","))
    assert theirs == mine, (theirs, mine)
    print("checked against tshark's pgsql dissector: %d connections, %d c2s, %d s2c messages"
          % (len(mine), sum(len(c) for c, _ in mine.values()), sum(len(s) for _, s in mine.values())))


def main():
    pcap = os.path.join(HERE, "postgresql-prefer.pcap")
    # (No Kerberos credential cache, whoever records: no GSSENCRequest.)
    record_server(pcap, scenario, env=lambda tmp: {"KRB5CCNAME": "FILE:" + os.path.join(tmp, "no-krb5cc")})
    check(pcap)
    path = os.path.join(HERE, "postgresql-prefer.messages.json")
    with open(path, "w") as f:
        json.dump({"protocol": "postgresql", "server_port": PORT, "connections": LOG["connections"]},
                  f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
