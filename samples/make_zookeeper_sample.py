#!/usr/bin/env python3
"""Record samples/zookeeper.pcap: ZooKeeper's client protocol (jute records) between the real
ZooKeeper server and real kazoo clients on loopback. Run as root from the repository root
(Debian's zookeeper, which brings a JRE, and python3-kazoo; Debian's python3):

    /usr/bin/python3 samples/make_zookeeper_sample.py

The protocol: every message is `[int32 length][payload]`, big-endian. The first client message
is a ConnectRequest (protocolVersion int32, lastZxidSeen int64, timeOut int32, sessionId int64,
passwd as an int32-counted buffer, readOnly bool) answered by a ConnectResponse (protocolVersion,
timeOut, sessionId, passwd, readOnly); after it requests are `[xid int32][type int32][body]` and
replies `[xid int32][zxid int64][err int32][body]`, a reply's body being known only from the
request of the same xid (and absent when err is not 0). Special xids: -1 a watch notification,
-2 a ping, -4 an auth packet.

Scenario: a standalone ZooKeeper 3.8 on 127.0.0.1 port 2181 (its own zoo.cfg and data directory
in a temporary directory, its own process, stopped by its PID); two kazoo sessions of 3 seconds
(two connections; b authenticates with a digest, xid -4): creates (with data, ephemeral,
ephemeral+sequential, a Create2 that returns a stat), get, set, exists of a present and a
missing node, get_children and get_children with stats (GetChildren2), a create of an existing
node (NodeExists, -110) and a get of a missing one (NoNode, -101), a data watch and a child
watch set by a and fired by b's set and create (notifications with xid -1), get_acls, sync, a
transaction that commits (create, set, check, delete) and one that fails (a check with a wrong
version: BadVersion, the rest rolled back), a delete, an idle pause so both sessions ping
(xid -2), and closeSession (-11) from both. `zookeeper.messages.json` lists, in the order they
were sent, the requests the client code made (pings excluded; each with its opcode) and, after
the request that fired it, each watch notification (`"op": "notification"`).
"""
import json, os, shutil, socket, subprocess, tempfile, threading, time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from capture import Capture

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 2181
TIMEOUT = 10
SESSION = 3.0
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"  # its manifest's Class-Path names the other jars


# The request type on the wire of each listed operation (none for the ConnectRequest, which has
# no request header, nor for a notification, which the server sends with xid -1).
OPCODES = {"connect": None, "notification": None, "create": 1, "delete": 2, "exists": 3, "get": 4,
           "set": 5, "get_acls": 6, "get_children": 8, "sync": 9, "get_children2": 12, "multi": 14,
           "create2": 15, "auth": 100, "close": -11}


class Log:
    """What the clients did, in the order they did it."""

    def __init__(self):
        self.entries = []

    def add(self, client, op, path, result):
        self.entries.append({"client": client, "op": op, "opcode": OPCODES[op], "path": path, "result": result})


def stat_summary(stat):
    return "version %d, %d bytes, %d children%s" % (
        stat.version, stat.dataLength, stat.numChildren,
        ", ephemeral" if stat.ephemeralOwner else "")


def scenario(log):
    a = KazooClient(hosts="127.0.0.1:%d" % PORT, timeout=SESSION)
    a.start(TIMEOUT)
    log.add("a", "connect", None, "session 0x%x, timeout %d ms asked" % (a.client_id[0], SESSION * 1000))
    b = KazooClient(hosts="127.0.0.1:%d" % PORT, timeout=SESSION, auth_data=[("digest", "bob:s3cret")])
    b.start(TIMEOUT)
    log.add("b", "connect", None, "session 0x%x, timeout %d ms asked" % (b.client_id[0], SESSION * 1000))
    log.add("b", "auth", None, "digest bob")

    created = a.create("/app", b"framedump")
    log.add("a", "create", "/app", "created " + created)
    created = a.create("/app/config", b'{"mode":"fast","level":3}')
    log.add("a", "create", "/app/config", "created " + created)
    created = b.create("/app/lock", b"b holds it", ephemeral=True)
    log.add("b", "create", "/app/lock", "created " + created)
    created = b.create("/app/worker-", b"w", ephemeral=True, sequence=True)
    log.add("b", "create", "/app/worker-", "created " + created)
    created, stat = a.create("/app/stats", b"0", include_data=True)
    log.add("a", "create2", "/app/stats", "created %s, %s" % (created, stat_summary(stat)))

    data, stat = b.get("/app/config")
    log.add("b", "get", "/app/config", "%r, %s" % (data.decode(), stat_summary(stat)))
    stat = a.exists("/app/lock")
    log.add("a", "exists", "/app/lock", "present, " + stat_summary(stat))
    stat = a.exists("/app/nothing")
    log.add("a", "exists", "/app/nothing", "missing (NoNode)")
    children = a.get_children("/app")
    log.add("a", "get_children", "/app", str(sorted(children)))
    children, stat = b.get_children("/app", include_data=True)
    log.add("b", "get_children2", "/app", "%s, %s" % (sorted(children), stat_summary(stat)))

    try:
        b.create("/app/config", b"again")
        raise SystemExit("creating an existing node should fail")
    except NodeExistsError:
        log.add("b", "create", "/app/config", "NodeExists (-110)")
    try:
        a.get("/app/missing")
        raise SystemExit("getting a missing node should fail")
    except NoNodeError:
        log.add("a", "get", "/app/missing", "NoNode (-101)")

    # a watches /app/config's data and /app's children; b fires both watches.
    # A notification is listed after the request that fired it (it may reach a before b has
    # its reply: they are two connections).
    fired = {"data": threading.Event(), "child": threading.Event()}
    events = {}

    def on_data(event):
        events["data"] = event
        fired["data"].set()

    def on_child(event):
        events["child"] = event
        fired["child"].set()

    def notified(which):
        if not fired[which].wait(TIMEOUT):
            raise SystemExit("the %s watch did not fire" % which)
        event = events[which]
        log.add("a", "notification", event.path, "%s (%s)" % (event.type, event.state))

    data, stat = a.get("/app/config", watch=on_data)
    log.add("a", "get", "/app/config", "%r, %s, data watch set" % (data.decode(), stat_summary(stat)))
    stat = b.set("/app/config", b'{"mode":"safe","level":4}')
    log.add("b", "set", "/app/config", stat_summary(stat))
    notified("data")
    children = a.get_children("/app", watch=on_child)
    log.add("a", "get_children", "/app", "%s, child watch set" % sorted(children))
    created = b.create("/app/late", b"")
    log.add("b", "create", "/app/late", "created " + created)
    notified("child")

    acls, stat = a.get_acls("/app")
    log.add("a", "get_acls", "/app", "%s, %s" % (["%s:%s:%d" % (x.id.scheme, x.id.id, x.perms) for x in acls],
                                                 stat_summary(stat)))
    path = b.sync("/app")
    log.add("b", "sync", "/app", "synced " + path)

    t = a.transaction()
    t.create("/app/txn", b"in a transaction")
    t.set_data("/app/stats", b"1")
    t.check("/app/config", 1)
    t.delete("/app/late")
    results = t.commit()
    log.add("a", "multi", None, "committed: create /app/txn, set /app/stats, check /app/config, delete /app/late -> %s"
            % [r if isinstance(r, (str, bool)) else type(r).__name__ for r in results])
    t = b.transaction()
    t.create("/app/never", b"rolled back")
    t.check("/app/config", 99)
    results = t.commit()
    log.add("b", "multi", None, "failed: create /app/never, check /app/config version 99 -> %s"
            % [type(r).__name__ for r in results])
    assert not b.exists("/app/never")
    log.add("b", "exists", "/app/never", "missing (NoNode)")

    data, stat = b.get("/app/stats")
    log.add("b", "get", "/app/stats", "%r, %s" % (data.decode(), stat_summary(stat)))
    a.delete("/app/txn")
    log.add("a", "delete", "/app/txn", "deleted")

    # Sessions of 3 s: kazoo pings once idle for about a third of it.
    time.sleep(2.5)

    for name, c in (("b", b), ("a", a)):
        c.stop()
        log.add(name, "close", None, "closed")
        c.close()


def wait_for_port(proc):
    """Waits (at most TIMEOUT) until the server accepts connections (before the capture starts)."""
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("zookeeper exited with %d" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("zookeeper did not listen on port %d" % PORT)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(TIMEOUT)


def main():
    work = tempfile.mkdtemp(prefix="zookeeper-sample-")
    conf = os.path.join(work, "zoo.cfg")
    os.mkdir(os.path.join(work, "data"))
    with open(conf, "w") as f:
        f.write("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                "minSessionTimeout=1000\nmaxSessionTimeout=30000\nadmin.enableServer=false\n"
                % (os.path.join(work, "data"), PORT))
    out = os.path.join(HERE, "zookeeper.pcap")
    log = Log()
    started = time.time()
    server = subprocess.Popen(["java", "-Xmx128m", "-cp", ZOOKEEPER_JAR,
                               "org.apache.zookeeper.server.ZooKeeperServerMain", conf],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(server)
        with Capture(out, PORT):
            scenario(log)
    finally:
        stop(server)
        shutil.rmtree(work)
    path = os.path.join(HERE, "zookeeper.messages.json")
    with open(path, "w") as f:
        json.dump(log.entries, f, indent=1)
        f.write("\n")
    print("wrote", path, "(%d entries) in %.1f s" % (len(log.entries), time.time() - started))


if __name__ == "__main__":
    main()
