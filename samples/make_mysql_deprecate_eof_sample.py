#!/usr/bin/env python3
"""Record samples/mysql-deprecate-eof.pcap: MySQL's client/server protocol with
CLIENT_DEPRECATE_EOF negotiated, between the real MariaDB server and the real
mysql-connector-python client through its C extension (the MySQL client library, libmysqlclient,
that the PyPI wheel bundles) on loopback; and samples/mysql-deprecate-eof.messages.json, the
capability flags both sides sent, every statement the scenario ran with what the client read,
every command on the wire with the server's answer, and the packets. Run as root from the
repository root (Debian's mariadb-server, python3-pymysql for the helpers this script takes from
make_mysql_sample.py, and PyPI's mysql-connector-python with its C extension):

    apt-get install -y mariadb-server python3-pymysql
    /usr/bin/python3 -m pip install --break-system-packages mysql-connector-python
    /usr/bin/python3 samples/make_mysql_deprecate_eof_sample.py

Why this client: CLIENT_DEPRECATE_EOF is capability bit 0x01000000 (bit 0x0100 of the upper
capability word of the greeting and of the handshake response). MariaDB's greeting offers it;
PyMySQL, mysql-connector-python's pure Python implementation and MariaDB Connector/C (Debian's
libmariadb3, under python3-mysqldb) do not ask for it, libmysqlclient does.

The packets are the ones make_mysql_sample.py and make_mysql_prepared_sample.py describe
(`[u24le payload length][u8 sequence number][payload]`, the sequence number back to 0 with each
command); what CLIENT_DEPRECATE_EOF changes is the end of column lists and of rows. A result set
is the column count, one column definition per column and then, with no EOF in between, one
packet per row (text rows: length-encoded strings, 0xfb for NULL; binary rows: 0x00, the NULL
bitmap, the values), and it ends with an OK packet whose first byte is 0xfe instead of 0x00
(0xfe, length-encoded affected rows and last insert id, u16le status flags, u16le warnings: 7
bytes here, so under the 9 bytes that tell an EOF from a row, and not the 5 of an EOF: only the
negotiated flag says which it is); its status flag SERVER_MORE_RESULTS_EXISTS (0x0008) says
whether another result set follows. A result set of no rows is the column count, the column
definitions and the 0xfe OK right after them. The prepare OK of COM_STMT_PREPARE is followed by
the parameter definitions and the column definitions, with no EOF after either group.

Scenario: the server as make_mysql_sample.py starts it (`mariadb-install-db` into a temporary
directory, `mariadbd` on 127.0.0.1 port 3306 as the `mysql` user, no TLS, its --init-file
creating the database `game` and the user `framedump`@127.0.0.1 with a mysql_native_password
password, stopped by its PID within 10 seconds). One connection (use_pure=False, ssl_disabled=True
so no SSLRequest, database `game`, CLIENT_MULTI_STATEMENTS among the client's default flags; the
greeting names mysql_native_password and libmysqlclient answers with it, so no auth switch; the
connector's auth_plugin= is left out, the C extension fails to connect with it): the greeting, the handshake
response, the OK, and what the connector sends by itself (SET NAMES, set
autocommit=1, a COM_PING before each cursor it gives out). Then through a plain cursor
(text protocol, COM_QUERY): DROP TABLE IF EXISTS of a missing table (an OK with one warning),
SHOW WARNINGS (3 columns, 1 row), CREATE TABLE, a three-row INSERT (a plain OK), a SELECT of 3
columns and 3 rows with one NULL, a SELECT of no rows, a SELECT of 1 column and 1 row, a SELECT
from a missing table (ERR 1146), two SELECTs in one COM_QUERY (two result sets, the first ending
in a 0xfe OK flagged SERVER_MORE_RESULTS_EXISTS); then through `cursor(prepared=True)` (binary
protocol): a SELECT with one parameter (COM_STMT_PREPARE, COM_STMT_RESET, COM_STMT_EXECUTE; 3
columns, 2 rows, one NULL), the cursor closed (the connector sends one more COM_STMT_RESET, then
COM_STMT_CLOSE, which gets no answer); and the connection closed (COM_QUIT, which the server
answers by closing it).

mysql-deprecate-eof.messages.json: {"protocol": "mysql", "server_port": 3306, "client_port": P,
"client": "mysql-connector-python V (C extension, libmysqlclient V)", "server": the greeting's
version string, "capabilities": {"server", "client", "negotiated" (server & client), as hex
u32, and "server_mariadb_extended" / "client_mariadb_extended", the 4 bytes MariaDB carries at
the end of the greeting's and the response's filler when the sender leaves bit 0x00000001
(CLIENT_MYSQL) unset, as both do here; 0x00000000 from libmysqlclient},
"statements": [...], "commands": [...], "c2s": [...], "s2c": [...]}. Each statement, in the
order the scenario ran them: {"sql", "protocol" ("text" or "binary"), "params" (binary),
"columns" (how many; 0 for an OK), "rows" (how many), "column_names" and "values" (the rows as
the client read them), "affected_rows" and "warnings" (an OK), "error" ({"code", "sqlstate",
"message"})}; for the two-statement query "columns", "rows", "column_names" and "values" are
lists, one item per result set. Each command, as this script reads the wire: {"command"
("COM_QUERY", "COM_PING", "COM_STMT_PREPARE", ...), "sql" (query and prepare), "statement_id"
(prepare and the statement commands), "response": "ok", "err", "none", "prepare_ok" (with
"num_params" and "num_columns") or "result_sets" (with "result_sets": [{"columns", "rows",
"status"}])}. c2s and s2c are the packets in wire order, {"length", "seq", "first", "kind"}; the
kinds are "greeting", "handshake_response", "ok", "err", a command's name, "column_count",
"column_definition", "parameter_definition", "row", "ok_fe" (the 0xfe OK that ends rows) and
"prepare_ok". The lengths and sequence numbers are checked against tshark's mysql dissector by
make_mysql_sample.py's check(); the statements against the commands (same SQL, same column and
row counts, in order); and every result set for having no EOF: column definitions all start
with the catalog "def", and what ends the rows is a 0xfe packet of more than 5 bytes. A new
recording differs in timestamps, ports, the scramble and the token, the connection id and the
process id among the connection attributes.
"""
# The wheel's C extension links its own libssl.so.3 (OpenSSL 3.2 or later), and the first
# libssl.so.3 loaded into the process is the one every later user gets: it must be imported
# before anything (pymysql, mysql.connector) imports Python's ssl with Debian's OpenSSL 3.0.
import _mysql_connector  # noqa: F401  (first import, see above)

import json, os, subprocess

import mysql.connector
from mysql.connector.connection_cext import CMySQLConnection

import make_mysql_sample as base  # its server settings, record(), wait_ready(), jsonable(), check()
from capture import follow

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = base.PORT
DEPRECATE_EOF = 0x01000000
CLIENT_MYSQL = 0x00000001  # unset: a MariaDB-aware side, the filler's last 4 bytes its extended capabilities
MORE_RESULTS = 0x0008
COMMANDS = {0x01: "COM_QUIT", 0x02: "COM_INIT_DB", 0x03: "COM_QUERY", 0x0e: "COM_PING", 0x16: "COM_STMT_PREPARE",
            0x17: "COM_STMT_EXECUTE", 0x19: "COM_STMT_CLOSE", 0x1a: "COM_STMT_RESET"}
LOG = {"statements": []}


def run(cur, sql, params=None, protocol="text", multi=False):
    """cur.execute() and what the client read, logged as one statement; with `multi` every
    result set of a multi-statement query, their counts and rows as lists."""
    entry = {"sql": sql, "protocol": protocol}
    if params is not None:
        entry["params"] = list(params)
    LOG["statements"].append(entry)
    try:
        if params is None:
            cur.execute(sql)
        else:
            cur.execute(sql, params)
        sets = []
        while True:
            if cur.description is not None:
                names = [d[0] for d in cur.description]
                rows = base.jsonable(cur.fetchall())
                sets.append({"columns": len(names), "rows": len(rows), "column_names": names, "values": rows})
            else:
                sets.append({"columns": 0, "rows": 0, "affected_rows": cur.rowcount,
                             "warnings": cur.warning_count})
            if not multi or not cur.nextset():
                break
        if multi:
            for key in ("columns", "rows", "column_names", "values"):
                entry[key] = [s.get(key) for s in sets]
        else:
            entry.update(sets[0])
    except mysql.connector.Error as e:
        entry.update({"columns": 0, "rows": 0, "error": {"code": e.errno, "sqlstate": e.sqlstate, "message": e.msg}})
    return entry


def scenario(sock_path):
    base.wait_ready(sock_path)
    conn = mysql.connector.connect(host="127.0.0.1", port=PORT, user=base.USER, password=base.PASSWORD,
                                   database="game", use_pure=False, ssl_disabled=True, charset="utf8mb4",
                                   collation="utf8mb4_general_ci", autocommit=True,
                                   connection_timeout=base.TIMEOUT, read_timeout=base.TIMEOUT,
                                   write_timeout=base.TIMEOUT)
    assert isinstance(conn, CMySQLConnection), type(conn)  # the C extension, libmysqlclient
    LOG["client"] = "mysql-connector-python %s (C extension, libmysqlclient %s)" % (
        mysql.connector.__version__, conn._cmysql.get_client_info())
    cur = conn.cursor()
    e = run(cur, "DROP TABLE IF EXISTS players")
    assert e["warnings"] == 1, e
    run(cur, "SHOW WARNINGS")
    run(cur, "CREATE TABLE players (id INT PRIMARY KEY, name VARCHAR(32) NOT NULL, city VARCHAR(32) NULL) "
             "DEFAULT CHARSET=utf8mb4")
    e = run(cur, "INSERT INTO players VALUES (1, 'ann', 'Lyon'), (2, 'bob', NULL), (3, 'cy', 'Oslo')")
    assert e["affected_rows"] == 3, e
    e = run(cur, "SELECT id, name, city FROM players ORDER BY id")
    assert (e["columns"], e["rows"]) == (3, 3) and e["values"][1][2] is None, e
    e = run(cur, "SELECT id, name FROM players WHERE id > 100")
    assert (e["columns"], e["rows"]) == (2, 0), e
    e = run(cur, "SELECT COUNT(*) AS n FROM players")
    assert e["values"] == [[3]], e
    e = run(cur, "SELECT * FROM missing_table")
    assert e["error"]["code"] == 1146, e
    e = run(cur, "SELECT 1 AS one; SELECT 'two' AS two, NULL AS nothing", multi=True)
    assert e["rows"] == [1, 1], e
    cur.close()
    ps = conn.cursor(prepared=True)
    e = run(ps, "SELECT id, name, city FROM players WHERE id >= ? ORDER BY id", (2,), protocol="binary")
    assert (e["columns"], e["rows"]) == (3, 2) and e["values"][0][2] is None, e
    ps.close()
    conn.close()


def packets(data):
    """The payloads of one direction, in order, with their sequence numbers."""
    out, pos = [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 3], "little")
        out.append((data[pos + 3], data[pos + 4:pos + 4 + n]))
        pos += 4 + n
    assert pos == len(data), "a packet runs past the end of the stream"
    return out


def lenenc(p, i):
    """A length-encoded integer at p[i]: (value, index after it)."""
    if p[i] < 0xfb:
        return p[i], i + 1
    size = {0xfc: 2, 0xfd: 3, 0xfe: 8}[p[i]]
    return int.from_bytes(p[i + 1:i + 1 + size], "little"), i + 1 + size


def capabilities(greeting, response):
    """The capability flags of the greeting and of the handshake response."""
    i = greeting.index(0, 1) + 1 + 4 + 8 + 1                # protocol 10, version, thread id, scramble, filler
    low = int.from_bytes(greeting[i:i + 2], "little")
    high = int.from_bytes(greeting[i + 5:i + 7], "little")  # after the charset and the status flags
    server = low | high << 16
    server_ext = int.from_bytes(greeting[i + 14:i + 18], "little")  # the last 4 of the 10 filler bytes
    client = int.from_bytes(response[0:4], "little")
    client_ext = int.from_bytes(response[28:32], "little")  # the last 4 of the 23 filler bytes
    caps = {"server": "0x%08x" % server, "client": "0x%08x" % client, "negotiated": "0x%08x" % (server & client)}
    if not server & CLIENT_MYSQL:
        caps["server_mariadb_extended"] = "0x%08x" % server_ext
    if not client & CLIENT_MYSQL:
        caps["client_mariadb_extended"] = "0x%08x" % client_ext
    return caps


def walk(pcap):
    """Reads the captured streams: the packets' kinds, the commands and the server's answers.
    Checks that no result set or prepare answer holds an EOF."""
    sides = follow(pcap)
    c2s, s2c = packets(sides["c2s"]), packets(sides["s2c"])
    ckind, skind = ["handshake_response"], ["greeting"]
    LOG["server"] = s2c[0][1][1:s2c[0][1].index(0, 1)].decode()
    LOG["capabilities"] = caps = capabilities(s2c[0][1], c2s[0][1])
    assert int(caps["negotiated"], 16) & DEPRECATE_EOF, caps
    j = 1

    def take(kind):
        nonlocal j
        assert j < len(s2c), "the server's answers end early"
        skind.append(kind)
        j += 1
        return s2c[j - 1][1]

    def definitions(n, kind):
        for _ in range(n):
            assert s2c[j][1][:4] == b"\x03def", ("not a definition: an EOF?", s2c[j])
            take(kind)

    def result_set(count_packet):
        """After the column count: the column definitions, the rows, the 0xfe OK."""
        columns = lenenc(count_packet, 0)[0]
        definitions(columns, "column_definition")
        rows = 0
        while not (s2c[j][1][:1] == b"\xfe" and len(s2c[j][1]) < 0xffffff):
            assert s2c[j][1][:1] != b"\xff", ("an ERR among the rows", s2c[j])
            take("row")
            rows += 1
        end = take("ok_fe")
        assert len(end) > 5, ("an EOF, not an OK, ends the rows", end.hex())
        i = lenenc(end, lenenc(end, 1)[1])[1]
        return {"columns": columns, "rows": rows, "status": int.from_bytes(end[i:i + 2], "little")}

    def answer(entry):
        """A query's or an execute's answer: OK, ERR or result sets, as many as MORE_RESULTS says."""
        sets = []
        while True:
            p = s2c[j][1]
            if p[0] == 0x00:
                take("ok")
                status = int.from_bytes(p[lenenc(p, lenenc(p, 1)[1])[1]:][:2], "little")
            elif p[0] == 0xff:
                take("err")
                entry["response"] = "err"
                return
            else:
                sets.append(result_set(take("column_count")))
                status = sets[-1]["status"]
            if not status & MORE_RESULTS:
                break
        if sets:
            entry.update({"response": "result_sets", "result_sets": sets})
        else:
            entry["response"] = "ok"

    assert s2c[1][1][:1] == b"\x00", ("no OK after the handshake response (an auth switch?)", s2c[1])
    take("ok")
    for seq, p in c2s[1:]:
        if seq != 0:  # (no auth switch, no long data: every client packet starts a command)
            raise SystemExit("a client packet that starts no command: seq %d" % seq)
        name = COMMANDS[p[0]]
        ckind.append(name)
        entry = {"command": name}
        LOG["commands"].append(entry)
        if name in ("COM_QUERY", "COM_STMT_PREPARE"):
            entry["sql"] = p[1:].decode()
        elif name.startswith("COM_STMT_"):
            entry["statement_id"] = int.from_bytes(p[1:5], "little")
        if name in ("COM_QUIT", "COM_STMT_CLOSE"):
            entry["response"] = "none"
        elif name == "COM_STMT_PREPARE" and s2c[j][1][0] == 0x00:
            ok = take("prepare_ok")
            entry.update({"response": "prepare_ok", "statement_id": int.from_bytes(ok[1:5], "little"),
                          "num_columns": int.from_bytes(ok[5:7], "little"),
                          "num_params": int.from_bytes(ok[7:9], "little")})
            definitions(entry["num_params"], "parameter_definition")
            definitions(entry["num_columns"], "column_definition")
        else:
            answer(entry)
    assert j == len(s2c), "server packets left over"
    for m, k in zip(base.LOG["c2s"], ckind):
        m["kind"] = k
    for m, k in zip(base.LOG["s2c"], skind):
        m["kind"] = k


def check_statements():
    """Each statement is the next COM_QUERY (text) or COM_STMT_PREPARE and COM_STMT_EXECUTE
    (binary) on the wire, with the column and row counts the client read."""
    cmds = iter(LOG["commands"])
    for st in LOG["statements"]:
        want = "COM_QUERY" if st["protocol"] == "text" else "COM_STMT_PREPARE"
        c = next(c for c in cmds if c["command"] == want and c["sql"] == st["sql"])
        if st["protocol"] == "binary" and "error" not in st:
            prepared = c["statement_id"]
            c = next(c for c in cmds if c["command"] == "COM_STMT_EXECUTE" and c["statement_id"] == prepared)
        if "error" in st:
            assert c["response"] == "err", (st, c)
            continue
        sets = c.get("result_sets", [])
        cols, rows = [s["columns"] for s in sets] or [0], [s["rows"] for s in sets] or [0]
        if not isinstance(st["columns"], list):
            cols, rows = cols[0], rows[0]
        assert (cols, rows) == (st["columns"], st["rows"]), (st, c)
    print("checked: %d statements against %d commands on the wire; no EOF in any result set"
          % (len(LOG["statements"]), len(LOG["commands"])))


def main():
    LOG["commands"] = []
    pcap = base.record("mysql-deprecate-eof.pcap", scenario)
    base.check(pcap)  # fills base.LOG["c2s"] and ["s2c"]
    walk(pcap)
    check_statements()
    client_port = int(subprocess.run(["tshark", "-r", pcap, "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0",
                                      "-T", "fields", "-e", "tcp.srcport"], capture_output=True, text=True,
                                     check=True, timeout=60).stdout.split()[0])
    path = os.path.join(HERE, "mysql-deprecate-eof.messages.json")
    with open(path, "w") as f:
        json.dump({"protocol": "mysql", "server_port": PORT, "client_port": client_port, "client": LOG["client"],
                   "server": LOG["server"], "capabilities": LOG["capabilities"],
                   "statements": LOG["statements"], "commands": LOG["commands"],
                   "c2s": base.LOG["c2s"], "s2c": base.LOG["s2c"]}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
