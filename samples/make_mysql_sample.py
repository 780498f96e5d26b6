#!/usr/bin/env python3
"""Record samples/mysql.pcap: the MySQL client/server protocol between the real MariaDB server
and the real PyMySQL client on loopback; and samples/mysql.messages.json, every command the
client sent, in order, with its row count. Run as root from the repository root (Debian's
mariadb-server and python3-pymysql):

    apt-get install -y mariadb-server python3-pymysql
    /usr/bin/python3 samples/make_mysql_sample.py

The protocol: every packet is `[u24le payload length][u8 sequence number][payload]`; the
sequence number starts at 0 with each command (and with the server's greeting) and goes up by
one with each packet of the exchange, whichever side sends it. What a payload is depends on
the state, not on a type byte of its own: the server's first packet is the greeting (protocol
10, version string, the first 8 bytes of the scramble, capabilities, the rest of the scramble,
the auth plugin name), the client's first the handshake response (capabilities, max packet,
collation, user, the 20-byte mysql_native_password token, database, plugin name, connection
attributes); after that each client packet starting a command has the command byte first (0x03
COM_QUERY, 0x0e COM_PING, 0x02 COM_INIT_DB, 0x01 COM_QUIT) and the server answers with an OK
(0x00), an ERR (0xff, error code, '#', SQL state, message) or a result set: a packet holding the
column count, one column definition per column, an EOF (0xfe, under 9 bytes; PyMySQL does not
ask for CLIENT_DEPRECATE_EOF), one packet per row (length-encoded strings, 0xfb for NULL), and a
closing EOF whose status flags say whether another result set follows.

Scenario: `mariadb-install-db` into a temporary directory, then `mariadbd` on 127.0.0.1 port
3306 (its own process, running as the unprivileged `mysql` user, its socket and data in the
temporary directory, no TLS, stopped by its PID); an --init-file creates the databases `game`
and `lobby` and the user `framedump`@127.0.0.1 with a mysql_native_password password, so no
other connection is needed. One PyMySQL connection over TCP (no TLS, so no SSLRequest;
autocommit on, so PyMySQL sends no SET AUTOCOMMIT; CLIENT_MULTI_STATEMENTS asked for): the
greeting and the handshake response with database `game`, the OK; then DROP TABLE IF EXISTS of
a missing table (an OK with one warning) and SHOW WARNINGS, CREATE TABLE, a four-row INSERT
(an OK with its info string), a SELECT of rows with NULLs and UTF-8 text, a SELECT with a
parameter (PyMySQL quotes it into the text, so it is one more COM_QUERY), a SELECT of no rows,
a SELECT of a 10,000-byte value (its length 0xfc-prefixed), an INSERT into an AUTO_INCREMENT
table (an OK with a last insert id), a SELECT from a missing table (ERR 1146), a transaction
(BEGIN, UPDATE, COMMIT), two statements in one COM_QUERY (two result sets, the first ending in
an EOF flagged SERVER_MORE_RESULTS_EXISTS), COM_PING, COM_INIT_DB to `lobby`, SELECT
DATABASE(), and COM_QUIT on close (which the server answers by closing the connection).

mysql.messages.json: {"protocol": "mysql", "server_port": 3306, "client_port": P, "commands":
[...], "c2s": [...], "s2c": [...]}. Each command, in the order sent: {"command" ("COM_QUERY",
"COM_PING", "COM_INIT_DB", "COM_QUIT"), "sql" or "schema", "params" (when PyMySQL quoted some
into the text), "rowcount" (PyMySQL's; a list for the two-statement query), "rows", "error"
({"code", "message"})}. c2s and s2c are the packets in wire order as this script splits the
captured streams (tshark's follow,tcp), each {"length" (the payload length), "seq", "first"
(the payload's first byte, absent for an empty payload)}; the recorder checks them against
tshark's mysql dissector. A new recording differs in timestamps, ports, the scramble and the
token, the connection id and the process id among the connection attributes.
"""
import json, os, shutil, socket, subprocess, tempfile, time

import pymysql
from pymysql.constants import CLIENT

from capture import follow, record_with_server

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 3306
TIMEOUT = 10
USER, PASSWORD = "framedump", "frame-secret"
LOG = {"commands": []}
INIT_SQL = """CREATE DATABASE game CHARACTER SET utf8mb4;
CREATE DATABASE lobby CHARACTER SET utf8mb4;
CREATE USER '%s'@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('%s');
GRANT ALL PRIVILEGES ON *.* TO '%s'@'127.0.0.1';
""" % (USER, PASSWORD, USER)


def jsonable(rows):
    return [[v if v is None or isinstance(v, (int, str)) else str(v) for v in row] for row in rows]


def query(cur, sql, params=None):
    """Runs one COM_QUERY and logs it with its row count, its rows (for a result set) and error."""
    entry = {"command": "COM_QUERY", "sql": sql}
    if params is not None:
        entry["params"] = list(params)
        entry["sql"] = cur.mogrify(sql, params)
    try:
        cur.execute(sql, params)
        entry["rowcount"] = cur.rowcount
        if cur.description is not None:
            entry["rows"] = jsonable(cur.fetchall())
    except pymysql.MySQLError as e:
        entry["error"] = {"code": e.args[0], "message": e.args[1]}
    LOG["commands"].append(entry)
    return entry


def wait_ready(sock_path):
    """The server's greeting on its Unix socket (not on lo) says it accepts connections: it
    accepts none before the --init-file has run."""
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(TIMEOUT)
                s.connect(sock_path)
                if s.recv(4):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("mariadbd did not become ready")


def scenario(sock_path):
    wait_ready(sock_path)
    conn = pymysql.connect(host="127.0.0.1", port=PORT, user=USER, password=PASSWORD, database="game",
                           charset="utf8mb4", autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS,
                           connect_timeout=TIMEOUT, read_timeout=TIMEOUT, write_timeout=TIMEOUT)
    LOG["client_port"] = conn._sock.getsockname()[1]
    cur = conn.cursor()
    query(cur, "DROP TABLE IF EXISTS players")
    query(cur, "SHOW WARNINGS")
    query(cur, "CREATE TABLE players (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, level INT NULL, "
               "city VARCHAR(64) NULL, score DECIMAL(6,2) NULL) DEFAULT CHARSET=utf8mb4")
    query(cur, "INSERT INTO players VALUES (1, 'ann', 7, 'Lyon', 12.50), (2, 'bob', NULL, 'Zürich', NULL), "
               "(3, 'Ωmega 日本', 3, NULL, 99.99), (4, 'dave', 12, 'São Paulo', 0)")
    query(cur, "SELECT id, name, level, city, score FROM players ORDER BY id")
    query(cur, "SELECT id, name FROM players WHERE level > %s ORDER BY id", (5,))
    query(cur, "SELECT id, name FROM players WHERE id > 100")
    query(cur, "SELECT 7 AS id, REPEAT('ab', 5000) AS big")
    query(cur, "CREATE TABLE events (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(32))")
    query(cur, "INSERT INTO events (what) VALUES ('login'), ('logout')")
    LOG["commands"][-1]["lastrowid"] = cur.lastrowid
    e = query(cur, "SELECT * FROM missing_table")
    assert e["error"]["code"] == 1146, e
    LOG["commands"].append({"command": "COM_QUERY", "sql": "BEGIN", "sent_by": "pymysql (conn.begin())", "rowcount": 0})
    conn.begin()
    query(cur, "UPDATE players SET level = level + 1 WHERE level IS NOT NULL")
    LOG["commands"].append({"command": "COM_QUERY", "sql": "COMMIT", "sent_by": "pymysql (conn.commit())", "rowcount": 0})
    conn.commit()
    e = query(cur, "SELECT 1 AS one; SELECT 'two' AS two, NULL AS nothing")
    e["rowcount"], e["rows"] = [e["rowcount"]], [e["rows"]]
    while cur.nextset():
        e["rowcount"].append(cur.rowcount)
        e["rows"].append(jsonable(cur.fetchall()))
    LOG["commands"].append({"command": "COM_PING"})
    conn.ping(reconnect=False)
    LOG["commands"].append({"command": "COM_INIT_DB", "schema": "lobby"})
    conn.select_db("lobby")
    e = query(cur, "SELECT DATABASE()")
    assert e["rows"] == [["lobby"]], e
    LOG["commands"].append({"command": "COM_QUIT"})
    conn.close()


def split(data):
    """The packets of one direction: [{"length", "seq", "first"}]."""
    out, pos = [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 3], "little")
        m = {"length": n, "seq": data[pos + 3]}
        if n:
            m["first"] = data[pos + 4]
        out.append(m)
        pos += 4 + n
    assert pos == len(data), "a packet runs past the end of the stream"
    return out


def check(pcap):
    """Splits the streams as tshark's follow,tcp gives them and checks the split against tshark's
    own mysql dissector: the same packets, with the same lengths and sequence numbers, each way."""
    sides = follow(pcap)
    LOG["c2s"], LOG["s2c"] = split(sides["c2s"]), split(sides["s2c"])
    out = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,mysql" % PORT, "-T", "fields",
                          "-e", "tcp.srcport", "-e", "mysql.packet_length", "-e", "mysql.packet_number"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    seen = {"c2s": [], "s2c": []}
    for ln in out.splitlines():
        port, lengths, numbers = (ln.split("\t") + ["", ""])[:3]
        if lengths:
            seen["s2c" if int(port) == PORT else "c2s"] += list(zip(map(int, lengths.split(",")),
                                                                    map(int, numbers.split(","))))
    for d in ("c2s", "s2c"):
        assert seen[d] == [(m["length"], m["seq"]) for m in LOG[d]], (d, seen[d], LOG[d])
    print("checked against tshark's mysql dissector: %d c2s, %d s2c packets" % (len(LOG["c2s"]), len(LOG["s2c"])))


def record(name, run):
    """The MariaDB server in a temporary directory on 127.0.0.1:PORT, recorded into samples/NAME
    while run(socket path) plays the client; the server stopped and its directory removed."""
    tmp = tempfile.mkdtemp(prefix="framedump-mysql-")
    try:
        shutil.chown(tmp, "mysql", "mysql")
        datadir, sock_path, init = (os.path.join(tmp, n) for n in ("data", "sock", "init.sql"))
        with open(init, "w") as f:
            f.write(INIT_SQL)
        shutil.chown(init, "mysql", "mysql")
        subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + datadir, "--user=mysql",
                        "--auth-root-authentication-method=socket", "--skip-test-db"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        pcap = os.path.join(HERE, name)
        # --user=mysql: mariadbd started as root drops to the mysql user itself (same PID).
        record_with_server(pcap, PORT,
                           ["mariadbd", "--no-defaults", "--datadir=" + datadir, "--user=mysql",
                            "--port=%d" % PORT, "--bind-address=127.0.0.1", "--socket=" + sock_path,
                            "--pid-file=" + os.path.join(tmp, "pid"), "--log-error=" + os.path.join(tmp, "err.log"),
                            "--init-file=" + init, "--skip-name-resolve", "--innodb-buffer-pool-size=16M",
                            "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci"],
                           lambda: run(sock_path))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return pcap


def main():
    pcap = record("mysql.pcap", scenario)
    if shutil.which("tshark"):
        check(pcap)
    else:
        print("tshark not found: the capture is not cross-checked")
    path = os.path.join(HERE, "mysql.messages.json")
    with open(path, "w") as f:
        json.dump({"protocol": "mysql", "server_port": PORT, "client_port": LOG["client_port"],
                   "commands": LOG["commands"], "c2s": LOG.get("c2s", []), "s2c": LOG.get("s2c", [])},
                  f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
