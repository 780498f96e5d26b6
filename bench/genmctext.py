#!/usr/bin/env python3
"""Write a large synthetic pcap of memcached's text protocol for bench/run.sh, decoded with
Dissectors/memcached-text.dissector (`frame_end` lines, `payload` data blocks): storage commands
with their data blocks (some holding CR LF, a few of 20 KB), gets, VALUE replies with their
blocks, STORED/END/DELETED lines, incr and its number. Many connections on port 11311, both
directions, messages packed into 1448-byte TCP segments (so they are coalesced and split, a
count's line and its block cut between segments too).

Usage: genmctext.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import os, random, sys

sys.path.insert(0, os.path.dirname(__file__))
from pcapgen import PcapWriter, Connection

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 64
rng = random.Random(11311)
MSS = 1448
SERVER = bytes([10, 0, 0, 1])


def value(n):
    size = rng.random()
    if size < 0.1:
        return b"line one\r\nline two\r\n"
    if size < 0.999:
        return ("player:%d level %d gold %d" % (n, rng.randrange(100), rng.randrange(1 << 20))).encode()
    return bytes(rng.randrange(32, 127) for _ in range(20000))


def pair(n):
    """A request and its reply (its messages: lines, a VALUE line with its block one)."""
    key = b"user:%d" % rng.randrange(100000)
    r = rng.random()
    if r < 0.45:
        v = value(n)
        return b"set %s %d 300 %d\r\n%s\r\n" % (key, rng.randrange(16), len(v), v), b"STORED\r\n", 2
    if r < 0.85:
        if rng.random() < 0.2:
            return b"get %s\r\n" % key, b"END\r\n", 2
        v = value(n)
        return b"get %s\r\n" % key, b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (key, rng.randrange(16), len(v), v), 3
    if r < 0.95:
        return b"incr %s %d\r\n" % (key, rng.randrange(10)), b"%d\r\n" % rng.randrange(1 << 30), 2
    return b"delete %s\r\n" % key, rng.choice([b"DELETED\r\n", b"NOT_FOUND\r\n"]), 2


# A pool of exchanges, reused at random: realistic, and fast to write.
pool = [pair(i) for i in range(4000)]

pcap = PcapWriter(out, step_us=5)
conns = [Connection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 40000 + i, SERVER, 11311,
                    (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS) for i in range(nconn)]
n = 0
while n < total:
    c = conns[rng.randrange(nconn)]
    req, rep, messages = rng.choice(pool)
    c.pend[0] += req
    c.pend[1] += rep
    n += messages
    for d in (0, 1):
        if rng.random() < 0.3 or len(c.pend[d]) >= MSS:
            cut = len(c.pend[d]) if rng.random() < 0.5 else len(c.pend[d]) // MSS * MSS
            c.send(d, c.pend[d][:cut])
            c.pend[d] = c.pend[d][cut:]
for c in conns:
    c.close()
pcap.close()
print("wrote", out, n, "messages")
