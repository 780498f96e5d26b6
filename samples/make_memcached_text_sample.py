#!/usr/bin/env python3
"""Record samples/memcached-text.pcap: memcached's text protocol between the real memcached
server and the real pymemcache client on loopback. Run as root from the repository root
(Debian's memcached; `pip install --break-system-packages pymemcache` into Debian's python3):

    /usr/bin/python3 samples/make_memcached_text_sample.py

The protocol is lines ended by "\r\n": a command line (`set <key> <flags> <exptime> <bytes>
[noreply]`, `get <key>*`, ...) followed, for storage commands, by a data block of exactly
<bytes> bytes and its own "\r\n"; a retrieval answer is `VALUE <key> <flags> <bytes> [<cas>]`
lines each followed by its data block, then `END`. The data block's length comes from the line
before it, so a value holding "\r\n" is not cut there.

Scenario: memcached on 127.0.0.1 port 11311, TCP only (its own process, stopped by its PID);
two clients, each its own connection: set with flags and an expiration, get of a present key
and of a missing one (a bare END), gets and cas (one stored, one refused with EXISTS), add of an
existing key (NOT_STORED), replace, append, prepend, incr and decr (and incr of a missing key,
NOT_FOUND), delete of a present key and of a missing one (NOT_FOUND), touch, set_many (several
sets in one write), get_many of four keys, one missing (several VALUE blocks then END), a value
whose bytes hold "\r\n", an empty value (0 bytes), a 100,000-byte value (sent and answered over
many segments), a set with noreply (no answer), stats, version, flush_all. Every key and value is
fixed, so a new recording differs only in timestamps, ports, CAS values and stats.
"""
import os

from pymemcache.client.base import Client

from capture import record_with_server

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 11311
TIMEOUT = 10


def client():
    # default_noreply=False: pymemcache otherwise sends every storage command with noreply.
    return Client(("127.0.0.1", PORT), connect_timeout=TIMEOUT, timeout=TIMEOUT, default_noreply=False)


def scenario():
    a = client()
    b = client()
    assert a.set("player:1", b"ann level 7", expire=300, flags=5)
    assert a.get("player:1") == b"ann level 7"
    assert b.get("missing") is None
    value, cas = b.gets("player:1")
    assert value == b"ann level 7"
    assert a.set("player:1", b"ann level 8", expire=300, flags=5)
    assert b.cas("player:1", b"ann level 9", cas, expire=300, flags=5) is False  # EXISTS
    value, cas = b.gets("player:1")
    assert b.cas("player:1", b"ann level 9", cas, expire=300, flags=5) is True  # STORED
    assert a.add("player:1", b"someone else") is False  # NOT_STORED
    assert a.add("fresh", b"new") is True
    assert a.replace("fresh", b"newer") is True
    assert a.append("fresh", b"-tail") is True
    assert a.prepend("fresh", b"head-") is True
    assert b.get("fresh") == b"head-newer-tail"
    assert a.set("counter", b"10")
    assert a.incr("counter", 5) == 15
    assert a.decr("counter", 20) == 0
    assert a.incr("no-counter", 1) is None  # NOT_FOUND
    assert a.touch("counter", 600) is True
    assert b.set_many({"k1": b"v1", "k2": b"v2", "k3": b"v3"}) == []
    assert a.get_many(["k1", "k2", "nope", "k3"]) == {"k1": b"v1", "k2": b"v2", "k3": b"v3"}
    assert a.delete("k2") is True
    assert a.delete("k2") is False  # NOT_FOUND
    assert b.set("crlf", b"line one\r\nline two\r\n")
    assert a.get("crlf") == b"line one\r\nline two\r\n"
    assert b.set("empty", b"")
    assert a.get("empty") == b""
    big = bytes(b"0123456789abcdef"[i % 16] for i in range(100000))
    assert b.set("big", big, flags=1)
    assert a.get("big") == big
    assert a.set("quiet", b"no answer", noreply=True)
    assert a.get("quiet") == b"no answer"
    assert b.stats()[b"curr_connections"] >= 2
    assert a.version()
    assert b.flush_all()
    a.close()
    b.close()


def main():
    record_with_server(os.path.join(HERE, "memcached-text.pcap"), PORT,
                       ["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(PORT), "-U", "0", "-m", "64"],
                       scenario)


if __name__ == "__main__":
    main()
