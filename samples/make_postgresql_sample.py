#!/usr/bin/env python3
"""Record samples/postgresql.pcap: PostgreSQL's frontend/backend protocol (version 3.0) between
the real PostgreSQL server and the real psycopg 3 client (libpq underneath) on loopback; and
samples/postgresql.messages.json, every statement the client ran, in order, with its row count.
Run as root from the repository root (Debian's postgresql and python3-psycopg):

    apt-get install -y postgresql python3-psycopg
    /usr/bin/python3 samples/make_postgresql_sample.py

The protocol: every message is `[u8 type][int32 length][body]`, the length counting itself and
the body but not the type byte; the one exception is the client's first message, the
StartupMessage, which has no type byte: `[int32 length][int32 196608 (protocol 3.0)]` then
`name\\0value\\0` pairs ended by one more `\\0`. Client types: Q simple query, P Parse, B Bind,
D Describe, E Execute, S Sync, C Close, H Flush, d/c/f CopyData/CopyDone/CopyFail, p the SASL
responses, X Terminate. Server types: R authentication (its first int32 says which), S
ParameterStatus, K BackendKeyData, Z ReadyForQuery (I idle, T in a transaction, E in a failed
one), T RowDescription, D DataRow (a column of length -1 is NULL), C CommandComplete, E
ErrorResponse, N NoticeResponse, A NotificationResponse, 1/2/3 Parse/Bind/CloseComplete, t
ParameterDescription, n NoData, I EmptyQueryResponse, G/H CopyIn/CopyOutResponse, d/c copy data.

Scenario: `initdb` into a temporary directory (as the unprivileged `postgres` user, which
Debian's package creates; superuser "framedump" with a password, SCRAM-SHA-256 for TCP), then
`postgres` on 127.0.0.1 port 5432 (its own process, its Unix socket in the temporary directory,
ssl off, stopped by its PID). One psycopg connection with sslmode=disable and gssencmode=disable,
so the first client message is the StartupMessage (no SSLRequest, no GSSENCRequest, and so no
one-byte 'N'/'S' answer without a type byte; every server message has its type byte): the SASL
exchange (AuthenticationSASL, SASLInitialResponse, SASLContinue, SASLResponse, SASLFinal and
AuthenticationOk, the last two in one segment with the ParameterStatus burst, BackendKeyData and
ReadyForQuery), then in autocommit mode: SET TIME ZONE (a ParameterStatus mid-session), DROP
TABLE IF EXISTS of a missing table (a NoticeResponse), CREATE TABLE, a four-row INSERT, a SELECT
of rows with NULLs and UTF-8 text (all simple queries); a SELECT and an INSERT with parameters,
one of them NULL (extended protocol: Parse/Bind/Describe/Execute/Sync of the unnamed statement);
a statement prepared by name ("_pg3_0": Parse and Sync) then run twice (Bind/Describe/Execute/
Sync alone); a query answered in binary; executemany in pipeline mode (two named Parses, as the
NULL parameter gives the second row other types, three Bind/Describe/Execute and one Sync, all
answered in one segment); a SELECT from a missing table (ErrorResponse); a committed transaction
(psycopg's BEGIN and COMMIT go by the extended protocol, ReadyForQuery 'T' inside) and one
rolled back after a unique violation (ReadyForQuery 'E'; psycopg then sends DEALLOCATE ALL); a
DO block raising a NOTICE; LISTEN and NOTIFY (a NotificationResponse between CommandComplete and
ReadyForQuery); COPY TO STDOUT (CopyOutResponse, one CopyData a row, CopyDone) and COPY FROM
STDIN (CopyInResponse, the client's CopyData and CopyDone); two statements in one simple query;
an empty query (EmptyQueryResponse); and Terminate on close.

postgresql.messages.json: {"protocol": "postgresql", "server_port": 5432, "client_port": P,
"statements": [...], "c2s": [...], "s2c": [...]}. Each statement, in the order sent: {"sql",
"params" and "wire_sql" (the query as the Parse carries it, $1 for %s) when there are
parameters, "protocol" ("simple", "extended", "prepared", "binary", "pipeline", "copy"),
"sent_by": "psycopg" for the BEGIN/COMMIT/ROLLBACK/DEALLOCATE ALL it sends by itself,
"rowcount" (psycopg's: -1 where the server gives none; a list for the two-statement query),
"rows" (what the client fetched), "notices", "notifies", "error" ({"sqlstate", "message"})}.
c2s and s2c are the messages in wire order as this script splits the captured streams (tshark's
follow,tcp), each {"type" (the type character; "startup" for the StartupMessage), "length" (the
int32 length field)}, with "auth" (the authentication request code: 10 SASL, 11 SASLContinue,
12 SASLFinal, 0 Ok) on 'R' messages; the recorder checks the lengths against tshark's pgsql
dissector. A new recording differs in timestamps, ports, the SCRAM nonces and proofs, the
BackendKeyData and the server's version in a ParameterStatus.
"""
import glob, json, os, shutil, socket, struct, subprocess, tempfile, time

import psycopg

from capture import follow, record_with_server

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 5432
TIMEOUT = 10
USER, PASSWORD, DBNAME = "framedump", "frame-secret", "postgres"
BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
LOG = {"statements": []}


def as_user(user):
    """argv prefix running a command as `user` (setpriv execs, so the PID is the program's own)."""
    return ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "--"]


def jsonable(rows):
    return [[v if v is None or isinstance(v, (int, str, bool)) else str(v) for v in row] for row in rows]


def dollars(sql):
    """The query as psycopg sends it in a Parse: each %s becomes $1, $2, ..."""
    parts = sql.split("%s")
    return "".join(p + ("$%d" % (i + 1) if i < len(parts) - 1 else "") for i, p in enumerate(parts))


def by_psycopg(sql):
    """A statement psycopg sends by itself (extended protocol, no parameters): BEGIN on entering
    conn.transaction(), COMMIT or ROLLBACK on leaving it, DEALLOCATE ALL after a ROLLBACK (so that
    it forgets the statements it prepared)."""
    LOG["statements"].append({"sql": sql, "protocol": "extended", "sent_by": "psycopg", "rowcount": -1})


def run(cur, sql, params=None, protocol="simple", fetch=True, **kw):
    """Executes one statement, logs it with its row count, its rows, notices and error."""
    entry = {"sql": sql}
    if params is not None:
        entry["params"] = list(params)
        entry["wire_sql"] = dollars(sql)
    entry["protocol"] = protocol
    LOG["current"] = entry
    try:
        cur.execute(sql, params, **kw)
        entry["rowcount"] = cur.rowcount
        if fetch and cur.description is not None:
            entry["rows"] = jsonable(cur.fetchall())
    except psycopg.Error as e:
        entry["error"] = {"sqlstate": e.sqlstate, "message": e.diag.message_primary}
    LOG["statements"].append(entry)
    return entry


def on_notice(diag):
    LOG["current"].setdefault("notices", []).append({"severity": diag.severity_nonlocalized,
                                                     "sqlstate": diag.sqlstate, "message": diag.message_primary})


def on_notify(n):
    LOG["current"].setdefault("notifies", []).append({"channel": n.channel, "payload": n.payload})


def wait_ready(datadir):
    """postmaster.pid's eighth line says "ready" once the server accepts connections."""
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        try:
            lines = open(os.path.join(datadir, "postmaster.pid")).read().splitlines()
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise SystemExit("postgres did not become ready")


def scenario(datadir):
    wait_ready(datadir)
    conn = psycopg.connect(host="127.0.0.1", port=PORT, user=USER, password=PASSWORD, dbname=DBNAME,
                           sslmode="disable", gssencmode="disable", application_name="framedump-sample",
                           connect_timeout=TIMEOUT, autocommit=True)
    with socket.fromfd(conn.pgconn.socket, socket.AF_INET, socket.SOCK_STREAM) as s:
        LOG["client_port"] = s.getsockname()[1]
    conn.add_notice_handler(on_notice)
    conn.add_notify_handler(on_notify)
    cur = conn.cursor()
    run(cur, "SET TIME ZONE 'UTC'")
    run(cur, "DROP TABLE IF EXISTS players")
    run(cur, "CREATE TABLE players (id integer PRIMARY KEY, name text NOT NULL, level integer, "
             "city text, score numeric(6,2))")
    run(cur, "INSERT INTO players VALUES (1, 'ann', 7, 'Lyon', 12.50), (2, 'bob', NULL, 'Zürich', NULL), "
             "(3, 'Ωmega 日本', 3, NULL, 99.99), (4, 'dave', 12, 'São Paulo', 0)")
    run(cur, "SELECT id, name, level, city, score FROM players ORDER BY id")
    run(cur, "SELECT id, name FROM players WHERE level > %s ORDER BY id", (5,), "extended")
    run(cur, "INSERT INTO players (id, name, level, city) VALUES (%s, %s, %s, %s)",
        (5, "eve", None, "Kraków"), "extended")
    run(cur, "SELECT name, city FROM players WHERE id = %s", (1,), "prepared", prepare=True)
    run(cur, "SELECT name, city FROM players WHERE id = %s", (3,), "prepared", prepare=True)
    run(conn.cursor(binary=True), "SELECT id, name, level FROM players WHERE id = %s", (2,), "binary")
    sql = "INSERT INTO players (id, name, level) VALUES (%s, %s, %s)"
    LOG["current"] = entry = {"sql": sql, "params": [[6, "finn", 1], [7, "gus", None], [8, "hana", 4]],
                              "wire_sql": dollars(sql), "protocol": "pipeline"}
    cur.executemany(entry["sql"], entry["params"])
    entry["rowcount"] = cur.rowcount
    LOG["statements"].append(entry)
    e = run(cur, "SELECT * FROM missing_table")
    assert e["error"]["sqlstate"] == "42P01", e
    by_psycopg("BEGIN")
    with conn.transaction():
        run(cur, "UPDATE players SET level = level + 1 WHERE level IS NOT NULL")
        run(cur, "INSERT INTO players (id, name) VALUES (9, 'ivy')")
    by_psycopg("COMMIT")
    by_psycopg("BEGIN")
    try:
        with conn.transaction():
            e = run(cur, "INSERT INTO players (id, name) VALUES (1, 'duplicate')")
            if "error" in e:
                raise psycopg.errors.UniqueViolation(e["error"]["message"])
    except psycopg.errors.UniqueViolation:
        by_psycopg("ROLLBACK")
        by_psycopg("DEALLOCATE ALL")
    assert e["error"]["sqlstate"] == "23505", e
    run(cur, "DO $$ BEGIN RAISE NOTICE 'hello from plpgsql: %', 42; END $$")
    run(cur, "LISTEN events")
    run(cur, "NOTIFY events, 'player 1 levelled up'")
    LOG["current"] = entry = {"sql": "COPY players (id, name, level, city) TO STDOUT", "protocol": "copy"}
    with cur.copy(entry["sql"]) as copy:
        entry["rows"] = [bytes(b).decode() for b in copy]
    entry["rowcount"] = cur.rowcount
    LOG["statements"].append(entry)
    LOG["current"] = entry = {"sql": "COPY players (id, name, level) FROM STDIN", "protocol": "copy",
                              "rows_sent": [[10, "copy one", 2], [11, "copy two", None]]}
    with cur.copy(entry["sql"]) as copy:
        for row in entry["rows_sent"]:
            copy.write_row(row)
    entry["rowcount"] = cur.rowcount
    LOG["statements"].append(entry)
    e = run(cur, "SELECT 1 AS one; SELECT 'two' AS two, NULL AS nothing")
    e["rowcount"] = [e["rowcount"]]
    e["rows"] = [e["rows"]]
    while cur.nextset():
        e["rowcount"].append(cur.rowcount)
        e["rows"].append(jsonable(cur.fetchall()))
    e = run(cur, "")
    run(cur, "SELECT count(*), count(level), sum(score) FROM players")
    conn.close()
    del LOG["current"]


def split(data, first_untyped):
    """The messages of one direction: [{"type", "length"}], "startup" for the untyped first one."""
    out, pos = [], 0
    if first_untyped:
        (n,) = struct.unpack_from(">i", data, 0)
        out.append({"type": "startup", "length": n})
        pos = n
    while pos < len(data):
        t = chr(data[pos])
        (n,) = struct.unpack_from(">i", data, pos + 1)
        m = {"type": t, "length": n}
        if t == "R":
            m["auth"] = struct.unpack_from(">i", data, pos + 5)[0]
        out.append(m)
        pos += 1 + n
    assert pos == len(data), "a message runs past the end of the stream"
    return out


def check(pcap):
    """Splits the streams as tshark's follow,tcp gives them and checks the split against tshark's
    own pgsql dissector: the same number of messages, with the same lengths, each way."""
    sides = follow(pcap)
    LOG["c2s"], LOG["s2c"] = split(sides["c2s"], True), split(sides["s2c"], False)
    out = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,pgsql" % PORT, "-T", "fields",
                          "-e", "tcp.srcport", "-e", "pgsql.length"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    lengths = {"c2s": [], "s2c": []}
    for ln in out.splitlines():
        port, _, ls = ln.partition("\t")
        if ls:
            lengths["s2c" if int(port) == PORT else "c2s"] += [int(x) for x in ls.split(",")]
    for d in ("c2s", "s2c"):
        assert lengths[d] == [m["length"] for m in LOG[d]], (d, lengths[d], LOG[d])
    print("checked against tshark's pgsql dissector: %d c2s, %d s2c messages" % (len(LOG["c2s"]), len(LOG["s2c"])))


def record_server(pcap, scenario, env=None):
    """A fresh cluster in a temporary directory (initdb as `postgres`, SCRAM for TCP), its server
    on 127.0.0.1:PORT without TLS, and `scenario(datadir)` recorded into `pcap`; `env`: variables
    set for the clients while the directory exists (given the directory)."""
    tmp = tempfile.mkdtemp(prefix="framedump-pg-")
    try:
        shutil.chown(tmp, "postgres", "postgres")
        if env:
            os.environ.update(env(tmp))
        datadir = os.path.join(tmp, "data")
        pwfile = os.path.join(tmp, "pw")
        with open(pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        shutil.chown(pwfile, "postgres", "postgres")
        subprocess.run(as_user("postgres") + [BIN + "/initdb", "-D", datadir, "-U", USER, "--pwfile=" + pwfile,
                                              "--auth-local=trust", "--auth-host=scram-sha-256",
                                              "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"],
                       check=True, stdout=subprocess.DEVNULL, timeout=120, cwd=tmp)
        record_with_server(pcap, PORT,
                           as_user("postgres") + [BIN + "/postgres", "-D", datadir, "-p", str(PORT), "-k", tmp,
                                                  "-c", "listen_addresses=127.0.0.1", "-c", "ssl=off",
                                                  "-c", "fsync=off", "-c", "password_encryption=scram-sha-256"],
                           lambda: scenario(datadir))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    pcap = os.path.join(HERE, "postgresql.pcap")
    record_server(pcap, scenario)
    if shutil.which("tshark"):
        check(pcap)
    else:
        print("tshark not found: the capture is not cross-checked")
    path = os.path.join(HERE, "postgresql.messages.json")
    with open(path, "w") as f:
        json.dump({"protocol": "postgresql", "server_port": PORT, "client_port": LOG["client_port"],
                   "statements": LOG["statements"], "c2s": LOG.get("c2s", []), "s2c": LOG.get("s2c", [])},
                  f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
