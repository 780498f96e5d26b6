#!/usr/bin/env python3
"""Record samples/mysql-prepared.pcap: MySQL's server-side prepared statements (the binary
protocol) between the real MariaDB server and the real mysql-connector-python client (its pure
Python implementation) on loopback; and samples/mysql-prepared.messages.json, every command the
client sent, in order, with the statement ids the server gave and the rows the client read. Run
as root from the repository root (Debian's mariadb-server, python3-pymysql for the helpers this
script takes from make_mysql_sample.py, and PyPI's mysql-connector-python):

    apt-get install -y mariadb-server python3-pymysql
    /usr/bin/python3 -m pip install --break-system-packages mysql-connector-python
    /usr/bin/python3 samples/make_mysql_prepared_sample.py

The packets are the ones make_mysql_sample.py describes (`[u24le payload length][u8 sequence
number][payload]`, the sequence number back to 0 with each command, the greeting, the handshake
response, OK/ERR/EOF); what is new is the commands. COM_STMT_PREPARE (0x16, the SQL with `?`
placeholders) is answered by an ERR or by a prepare OK (0x00, u32le statement id, u16le column
count, u16le parameter count, a filler byte, u16le warning count), then one column definition
per parameter and an EOF, then one per result column and an EOF (each group left out when its
count is 0). COM_STMT_RESET (0x1a, the u32le statement id) gets an OK. COM_STMT_EXECUTE (0x17:
u32le statement id, u8 cursor flags 0, u32le iteration count 1, then, when there are parameters,
the NULL bitmap ((n + 7) / 8 bytes, bit i for parameter i), u8 new-params-bound
(mysql-connector-python sends 1 every time), a (u8 type, u8 flags) pair per parameter and the
values of the non-NULL ones: the connector gives an int the smallest type it fits (here TINY,
flags 0x80 for unsigned, one byte), a str STRING (0xfe) and a Decimal DECIMAL (0x00), both
length-encoded text, a datetime DATETIME (0x0c: a length byte, 7 here, u16le year, month, day,
hour, minute, second), None type NULL (0x06) and its bitmap bit) is answered by an OK or by a
binary result set: the column count, the column definitions, an EOF, one packet per row (0x00, a
NULL bitmap of (columns + 9) / 8 bytes whose bits start at bit 2, then the non-NULL values in
the binary encoding of each column's type: INT 4 bytes, BIGINT 8, VARCHAR and DECIMAL
length-encoded text, DATETIME as above), and an EOF. COM_STMT_CLOSE (0x19, the u32le statement
id) gets no answer at all. mysql-connector-python does not ask for CLIENT_DEPRECATE_EOF, so the
EOFs are there.

Scenario: the server as make_mysql_sample.py starts it (`mariadb-install-db` into a temporary
directory, `mariadbd` on 127.0.0.1 port 3306 as the `mysql` user, no TLS, its --init-file
creating the database `game` and the user `framedump`@127.0.0.1 with a mysql_native_password
password, stopped by its PID). One mysql-connector-python connection (use_pure=True,
ssl_disabled=True, so no SSLRequest; auth plugin mysql_native_password, so no auth switch;
database `game`): the greeting, the handshake response, the OK, and the two COM_QUERYs the
connector sends by itself after connecting (SET NAMES, SET @@session.autocommit); a COM_PING the
connector sends before each cursor it gives out; a CREATE TABLE through a plain cursor
(COM_QUERY); then with one `cursor(prepared=True)`: an INSERT of five parameters prepared once
and executed three times (ints, strings, a Decimal, a datetime, NULLs); a SELECT with one
parameter returning three rows of INT, VARCHAR, DECIMAL and DATETIME columns with NULLs among
them; a SELECT with no parameters (COUNT, SUM, MAX); a statement that fails to prepare (a syntax
error: ERR 1064); closing the cursor; closing the connection (COM_QUIT, which the server answers
by closing it). The connector sends a COM_STMT_RESET before every execute, and closes a cursor's
statement (COM_STMT_CLOSE) when the cursor is given a different SQL string. After the failed
prepare the cursor still holds the id of the statement it closed before that prepare, so closing
the cursor sends a COM_STMT_CLOSE for that id a second time (the server ignores it).

mysql-prepared.messages.json: {"protocol": "mysql", "server_port": 3306, "client_port": P,
"client": "mysql-connector-python V (pure Python)", "commands": [...], "c2s": [...], "s2c":
[...]}. Each command, in the order sent, as the client's own method calls were logged:
{"command" ("COM_QUERY", "COM_PING", "COM_STMT_PREPARE", "COM_STMT_RESET", "COM_STMT_EXECUTE",
"COM_STMT_CLOSE", "COM_QUIT"), "sql" (query and prepare), "statement_id" (the server's, for
prepare, reset, execute, close), "num_params" and "num_columns" (prepare), "params" (execute;
Decimals and datetimes as text), "rowcount", "columns" and "rows" (a result set, as the client
read it; Decimals and datetimes as text), "lastrowid" and "warnings" (from the OK), "error"
({"code", "sqlstate", "message"}), "sent_by" (which call of the scenario made the connector send
it)}. c2s and s2c are the packets in wire order, {"length", "seq", "first"}, split and checked
against tshark's mysql dissector by make_mysql_sample.py's check(); each command's byte is also
checked against the client packets that start an exchange (seq 0). A new recording differs in
timestamps, ports, the scramble and the token, the connection id and the process id among the
connection attributes; the statement ids are the server's counter and come out the same.
"""
import datetime, decimal, functools, json, os

import mysql.connector
from mysql.connector.connection import MySQLConnection

import make_mysql_sample as base  # its server settings, wait_ready(), jsonable(), check()

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = base.PORT
LOG = {"commands": []}
SENT_BY = [None]  # the scenario call now running, for "sent_by"
CODES = {"COM_QUIT": 0x01, "COM_QUERY": 0x03, "COM_PING": 0x0e, "COM_STMT_PREPARE": 0x16, "COM_STMT_EXECUTE": 0x17,
         "COM_STMT_CLOSE": 0x19, "COM_STMT_RESET": 0x1a}


def value(v):
    return base.jsonable([[v]])[0][0]


def logged(name, method):
    """Wraps one of MySQLConnection's command methods so that each call, whoever makes it (the
    scenario, a cursor, the connector itself), is logged in order with what the server said."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        entry = {"command": name}
        if name in ("COM_QUERY", "COM_STMT_PREPARE"):
            sql = args[0]
            entry["sql"] = sql.decode() if isinstance(sql, bytes) else sql
        elif name not in ("COM_QUIT", "COM_PING"):
            entry["statement_id"] = args[0]
        if name == "COM_STMT_EXECUTE":
            entry["params"] = [value(v) for v in kwargs.get("data", args[1] if len(args) > 1 else ())]
        if SENT_BY[0]:
            entry["sent_by"] = SENT_BY[0]
        LOG["commands"].append(entry)
        try:
            res = method(self, *args, **kwargs)
        except mysql.connector.Error as e:
            entry["error"] = {"code": e.errno, "sqlstate": e.sqlstate, "message": e.msg}
            raise
        if name == "COM_STMT_PREPARE":
            entry.update({"statement_id": res["statement_id"], "num_params": res["num_params"],
                          "num_columns": res["num_columns"]})
        elif isinstance(res, tuple) or isinstance(res, dict) and "columns" in res:  # a result set
            entry["columns"] = [d[0] for d in (res[1] if isinstance(res, tuple) else res["columns"])]
        elif isinstance(res, dict) and name in ("COM_QUERY", "COM_STMT_EXECUTE"):  # an OK
            entry.update({"rowcount": res.get("affected_rows"), "lastrowid": res.get("insert_id"),
                          "warnings": res.get("warning_count")})
        return res
    return wrapper


for _name, _attr in (("COM_QUERY", "cmd_query"), ("COM_STMT_PREPARE", "cmd_stmt_prepare"),
                     ("COM_STMT_RESET", "cmd_stmt_reset"), ("COM_STMT_EXECUTE", "cmd_stmt_execute"),
                     ("COM_STMT_CLOSE", "cmd_stmt_close"), ("COM_PING", "cmd_ping"), ("COM_QUIT", "cmd_quit")):
    setattr(MySQLConnection, _attr, logged(_name, getattr(MySQLConnection, _attr)))


def run(cur, call, sql, params=None, fails=False):
    """cur.execute() (the scenario call `call`), then the rows it read into the command that
    returned the result set; with `fails` the error it must raise (logged in the command that
    got it)."""
    SENT_BY[0] = call
    try:
        cur.execute(sql, params)
        assert not fails, sql
        if cur.description is not None:
            rows = base.jsonable(cur.fetchall())
            last = [c for c in LOG["commands"] if c["command"] in ("COM_QUERY", "COM_STMT_EXECUTE")][-1]
            last["rowcount"], last["rows"] = len(rows), rows
    except mysql.connector.Error:
        if not fails:
            raise
    finally:
        SENT_BY[0] = None


def scenario(sock_path):
    base.wait_ready(sock_path)
    SENT_BY[0] = "mysql.connector.connect()"
    conn = mysql.connector.connect(host="127.0.0.1", port=PORT, user=base.USER, password=base.PASSWORD,
                                   database="game", use_pure=True, ssl_disabled=True,
                                   auth_plugin="mysql_native_password", charset="utf8mb4",
                                   collation="utf8mb4_general_ci", autocommit=True,
                                   connection_timeout=base.TIMEOUT, read_timeout=base.TIMEOUT,
                                   write_timeout=base.TIMEOUT)
    SENT_BY[0] = None
    assert isinstance(conn, MySQLConnection), type(conn)  # the pure Python implementation
    LOG["client_port"] = conn._socket.sock.getsockname()[1]
    SENT_BY[0] = "connection.cursor()"  # the connector pings before giving a cursor
    cur = conn.cursor()
    run(cur, "cursor().execute()", "CREATE TABLE scores (id INT PRIMARY KEY, name VARCHAR(32) NOT NULL, "
        "level INT NULL, score DECIMAL(6,2) NULL, seen DATETIME NULL) DEFAULT CHARSET=utf8mb4")
    cur.close()
    SENT_BY[0] = "connection.cursor(prepared=True)"
    ps = conn.cursor(prepared=True)
    insert = "INSERT INTO scores (id, name, level, score, seen) VALUES (?, ?, ?, ?, ?)"
    for params in ((1, "ann", 7, decimal.Decimal("12.50"), datetime.datetime(2024, 5, 1, 12, 30, 5)),
                   (2, "bob", None, None, datetime.datetime(2024, 5, 2, 8, 0, 0)),
                   (3, "Ωmega 日本", 3, decimal.Decimal("-0.75"), None)):
        run(ps, "cursor(prepared=True).execute()", insert, params)  # the same str: prepared once
    run(ps, "cursor(prepared=True).execute()",
        "SELECT id, name, level, score, seen FROM scores WHERE id >= ? ORDER BY id", (1,))
    run(ps, "cursor(prepared=True).execute()",
        "SELECT COUNT(*) AS n, SUM(score) AS total, MAX(seen) AS last_seen FROM scores")
    run(ps, "cursor(prepared=True).execute()", "SELEC id FROM scores WHERE id = ?", (1,), fails=True)
    assert LOG["commands"][-1].get("error", {}).get("code") == 1064, LOG["commands"][-1]
    SENT_BY[0] = "cursor(prepared=True).close()"
    ps.close()
    SENT_BY[0] = "connection.close()"
    conn.close()
    SENT_BY[0] = None


def check_commands():
    """The client packets that start an exchange (seq 0, after the handshake response) carry
    the logged commands' bytes, in the same order."""
    starts = [m.get("first") for m in LOG["c2s"][1:] if m["seq"] == 0]
    logged_codes = [CODES[c["command"]] for c in LOG["commands"]]
    assert starts == logged_codes, (starts, logged_codes)
    print("checked: %d commands on the wire, as logged" % len(starts))


def main():
    pcap = base.record("mysql-prepared.pcap", scenario)
    base.check(pcap)  # fills base.LOG["c2s"] and ["s2c"]
    LOG["c2s"], LOG["s2c"] = base.LOG["c2s"], base.LOG["s2c"]
    check_commands()
    path = os.path.join(HERE, "mysql-prepared.messages.json")
    with open(path, "w") as f:
        json.dump({"protocol": "mysql", "server_port": PORT, "client_port": LOG["client_port"],
                   "client": "mysql-connector-python %s (pure Python)" % mysql.connector.__version__,
                   "commands": LOG["commands"], "c2s": LOG["c2s"], "s2c": LOG["s2c"]},
                  f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
