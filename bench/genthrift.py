#!/usr/bin/env python3
"""Write a seeded synthetic pcap of Apache Thrift for the thrift row of bench/run.sh: the strict
binary protocol over the framed transport on TCP port 9090 (each message [int32 length]
[0x80010000 | type][int32 length][method][int32 seqid][struct]), decoded with
Dissectors/thrift.dissector, against tshark's own Thrift dissector.

A game service's calls, each a client's CALL and the server's REPLY with the same sequence id
(counting up from 1 on each connection), written with plain struct packing:
  60% move(1: i32 x, 2: i32 y, 3: i64 ts)          -> {0: bool}
  30% chat(1: string room, 2: string text)          -> {0: i64 id}   (text 20-200 bytes, some UTF-8)
  10% inventory()                                   -> {0: list<Item>} of 5-20 items,
      struct Item {1: i32 id, 2: string name, 3: map<string, i32> stats}
Calls land on CONNECTIONS connections at random; most are sent at once, some wait and go out with
the next call on their connection (several messages in one segment), and messages longer than a
segment (large inventories) are split across 1448-byte segments.

Usage: genthrift.py OUT.pcap [MESSAGES] [CONNECTIONS]   (MESSAGES counts calls and replies)
"""
import os, random, struct, sys

sys.path.insert(0, os.path.dirname(__file__))
from pcapgen import Connection, PcapWriter

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 64
rng = random.Random(9090)
PORT = 9090
MSS = 1448
SERVER = bytes([10, 0, 0, 1])

CALL, REPLY = 1, 2
T_STOP, T_BOOL, T_I32, T_I64, T_STRING, T_STRUCT, T_MAP, T_LIST = 0, 2, 8, 10, 11, 12, 13, 15


def tstring(b):
    return struct.pack(">i", len(b)) + b


def fhead(ttype, fid):
    return struct.pack(">bh", ttype, fid)


def f_i32(fid, v):
    return struct.pack(">bhi", T_I32, fid, v)


def f_i64(fid, v):
    return struct.pack(">bhq", T_I64, fid, v)


def f_bool(fid, v):
    return struct.pack(">bh?", T_BOOL, fid, v)


def f_string(fid, b):
    return fhead(T_STRING, fid) + tstring(b)


STOP = b"\x00"


def message(mtype, method, seqid, body):
    """One framed message: the frame length, then the strict header, name, seqid and struct."""
    m = struct.pack(">I", 0x80010000 | mtype) + tstring(method) + struct.pack(">i", seqid) + body
    return struct.pack(">i", len(m)) + m


ROOMS = [b"lobby", b"world", b"trade", b"team-red", b"team-blue"] + [b"guild-%d" % i for i in range(20)]
WORDS = ["gg", "wp", "anyone up for a raid?", "你好", "on my way", "need heals", "lol", "brb",
         "selling iron ore 12g each", "👍", "who has the key for the north gate", "ok", "ready"]
ITEMS = [b"Iron Sword", b"Oak Shield", b"Health Potion", b"Mana Potion", b"Leather Boots",
         b"Dragon Scale", b"Elven Bow", b"Arrow Bundle", b"Mithril Helm", b"Scroll of Recall",
         "Épée de givre".encode(), "火焰法杖".encode(), b"Lockpick", b"Torch", b"Rope (50 ft)"]
STATS = [b"atk", b"def", b"hp", b"mp", b"spd", b"crit", b"durability", b"weight", b"level"]


def chat_text():
    n = rng.randrange(20, 201)
    t = b""
    while len(t) < n:
        t += (" " if t else "").encode() + rng.choice(WORDS).encode()
    t = t[:n]
    while True:  # never cut a UTF-8 character in two
        try:
            t.decode("utf-8")
            return t
        except UnicodeDecodeError:
            t = t[:-1]


def inventory_result():
    items = b""
    count = rng.randrange(5, 21)
    for _ in range(count):
        stats = rng.sample(STATS, rng.randrange(1, 6))
        m = struct.pack(">bbi", T_STRING, T_I32, len(stats))
        for k in stats:
            m += tstring(k) + struct.pack(">i", rng.randrange(-50, 1000))
        items += (f_i32(1, rng.randrange(1, 100000)) + f_string(2, rng.choice(ITEMS))
                  + fhead(T_MAP, 3) + m + STOP)
    return fhead(T_LIST, 0) + struct.pack(">bi", T_STRUCT, count) + items + STOP


# Pools of chat texts and inventories reused at random (fast to write); moves drawn fresh.
texts = [chat_text() for _ in range(2000)]
inventories = [inventory_result() for _ in range(500)]
INV_ARGS = STOP

pcap = PcapWriter(out, step_us=5)
conns = []
for i in range(nconn):
    c = Connection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 40000 + i, SERVER, PORT,
                   (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS)
    c.seqid = 0
    conns.append(c)

ts = 1_700_000_000_000
chat_id = 1
sent = 0
while sent < total:
    c = rng.choice(conns)
    c.seqid += 1
    ts += rng.randrange(1, 40)
    r = rng.random()
    if r < 0.6:
        args = f_i32(1, rng.randrange(-4096, 4096)) + f_i32(2, rng.randrange(-4096, 4096)) + f_i64(3, ts) + STOP
        c.pend[0] += message(CALL, b"move", c.seqid, args)
        res = f_bool(0, rng.random() < 0.97) + STOP
        c.pend[1] += message(REPLY, b"move", c.seqid, res)
    elif r < 0.9:
        args = f_string(1, rng.choice(ROOMS)) + f_string(2, rng.choice(texts)) + STOP
        c.pend[0] += message(CALL, b"chat", c.seqid, args)
        chat_id += 1
        c.pend[1] += message(REPLY, b"chat", c.seqid, f_i64(0, chat_id) + STOP)
    else:
        c.pend[0] += message(CALL, b"inventory", c.seqid, INV_ARGS)
        c.pend[1] += message(REPLY, b"inventory", c.seqid, rng.choice(inventories))
    sent += 2
    # Most calls go out at once with their reply; some wait for the connection's next call.
    if rng.random() < 0.8 or len(c.pend[0]) >= MSS or len(c.pend[1]) >= MSS:
        c.flush(0)
        c.flush(1)
for c in conns:
    c.close()
pcap.close()
print("wrote %s: %d messages on %d connections" % (out, sent, nconn))
