#!/usr/bin/env python3
"""Record samples/memcached.pcap: memcached's binary protocol between the real memcached server
and the real python-binary-memcached client (bmemcached) on loopback. Run as root from the
repository root (Debian's memcached; `pip install python-binary-memcached` into Debian's python3):

    /usr/bin/python3 samples/make_memcached_sample.py

The protocol is Dissectors/memcached.dissector: a 24-byte header whose key and extras lengths
size the body's fields (`String(key_length) key;`, `Bytes(extras_length) extras;`), the value
being what remains of `total_body`; fields present only under a status (`when status == 0`).

Scenario: memcached on 127.0.0.1 port 11211 (its own process, stopped by its PID); two clients,
each its own connection: sets with flags and expirations (a pickled dict, a 2,000-byte string,
a 300,000-byte one cut by the server into several segments), gets of present and missing keys
(a "Not found" response), add of an existing key (refused), replace, incr and decr (one on a
missing key, refused), delete, gets (with a CAS) and cas, get_multi and set_multi (quiet
commands ended by a no-op), stats, flush_all. tshark's memcache dissector is the oracle the
tests compare with.
"""
import os

import bmemcached

from capture import record_with_server

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 11211
TIMEOUT = 10


def scenario():
    a = bmemcached.Client(("127.0.0.1:%d" % PORT,), socket_timeout=TIMEOUT)
    b = bmemcached.Client(("127.0.0.1:%d" % PORT,), socket_timeout=TIMEOUT)
    a.set("player:1", {"name": "ann", "level": 7}, time=300)
    a.set("motd", "welcome " * 250)
    b.set("big", "z" * 300000)
    assert a.get("player:1")["level"] == 7
    assert b.get("missing") is None
    assert len(b.get("big")) == 300000
    assert not a.add("motd", "again")
    assert a.add("fresh", "new")
    assert a.replace("fresh", "newer")
    a.set("counter", 10)
    assert a.incr("counter", 5) == 15
    assert a.decr("counter", 20) == 0
    try:
        a.incr("no-counter", 1)
    except Exception:
        pass
    value, cas = b.gets("fresh")
    assert b.cas("fresh", "newest", cas)
    a.set_multi({"k1": "v1", "k2": "v2", "k3": "v3"})
    got = b.get_multi(["k1", "k2", "k3", "nope"])
    assert got == {"k1": "v1", "k2": "v2", "k3": "v3"}, got
    assert a.delete("k2")
    b.stats()
    a.flush_all()
    a.disconnect_all()
    b.disconnect_all()


def main():
    record_with_server(os.path.join(HERE, "memcached.pcap"), PORT,
                       ["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(PORT), "-U", "0", "-m", "64"],
                       scenario)


if __name__ == "__main__":
    main()
