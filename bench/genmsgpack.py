#!/usr/bin/env python3
"""Write a large synthetic pcap of a MessagePack-bodied game protocol for bench/run.sh, decoded
with Dissectors/mpgame.dissector (`[u32 length][u16 cmd][MessagePack body]` on port 7600):
logins and their acks (maps with nested maps, a uint64, a timestamp extension, nil), moves
written as arrays ([x, y, speed float32, facing float64]) and their acks, chats and chat pushes
(UTF-8 text, binary attachments, timestamps), inventories (int-keyed maps, lists of 20 items),
heartbeats. Many connections, both directions, messages packed into 1448-byte TCP segments.
The encoder is this file's own (the format's spec, every width), so a fresh clone needs no
MessagePack library.

Usage: genmsgpack.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import os, random, struct, sys

sys.path.insert(0, os.path.dirname(__file__))
from pcapgen import PcapWriter, Connection


class Ext:
    def __init__(self, type, data):
        self.type, self.data = type, data


class F32(float):
    """A float written as float32."""


def pack(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack(">b", v)
        if v >= 0:
            for code, fmt, lim in ((0xcc, ">B", 1 << 8), (0xcd, ">H", 1 << 16), (0xce, ">I", 1 << 32), (0xcf, ">Q", 1 << 64)):
                if v < lim:
                    return bytes([code]) + struct.pack(fmt, v)
        for code, fmt, lim in ((0xd0, ">b", 1 << 7), (0xd1, ">h", 1 << 15), (0xd2, ">i", 1 << 31), (0xd3, ">q", 1 << 63)):
            if v >= -lim:
                return bytes([code]) + struct.pack(fmt, v)
    if isinstance(v, F32):
        return b"\xca" + struct.pack(">f", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        n = len(b)
        head = bytes([0xa0 | n]) if n < 32 else b"\xd9" + bytes([n]) if n < 256 else b"\xda" + struct.pack(">H", n) if n < 65536 else b"\xdb" + struct.pack(">I", n)
        return head + b
    if isinstance(v, bytes):
        n = len(v)
        head = b"\xc4" + bytes([n]) if n < 256 else b"\xc5" + struct.pack(">H", n) if n < 65536 else b"\xc6" + struct.pack(">I", n)
        return head + v
    if isinstance(v, Ext):
        n = len(v.data)
        fixed = {1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}
        head = bytes([fixed[n]]) if n in fixed else b"\xc7" + bytes([n]) if n < 256 else b"\xc8" + struct.pack(">H", n)
        return head + struct.pack(">b", v.type) + v.data
    if isinstance(v, (list, tuple)):
        n = len(v)
        head = bytes([0x90 | n]) if n < 16 else b"\xdc" + struct.pack(">H", n) if n < 65536 else b"\xdd" + struct.pack(">I", n)
        return head + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        n = len(v)
        head = bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n) if n < 65536 else b"\xdf" + struct.pack(">I", n)
        return head + b"".join(pack(k) + pack(x) for k, x in v.items())
    raise TypeError(type(v))


def timestamp(rng):
    s = 1764262800 + rng.randrange(1 << 20)
    if rng.random() < 0.5:
        return Ext(-1, struct.pack(">I", s))
    return Ext(-1, struct.pack(">Q", rng.randrange(1_000_000_000) << 34 | s))


out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 64
rng = random.Random(7600)
MSS = 1448
SERVER = bytes([10, 0, 0, 1])
TEXTS = ["hi", "gg", "héllo 世界 🎮", "meet at the north gate in five minutes", "x" * 300]


def frame(cmd, value):
    body = pack(value)
    return struct.pack(">IH", len(body), cmd) + body


def pair(n):
    """A request and its reply."""
    r = rng.random()
    if r < 0.05:
        return (frame(1, {"user": "player%d" % n, "token": "t-%d" % rng.randrange(1 << 30), "version": 7,
                          "device": {"os": rng.choice(["ios", "android"]), "model": "Pixel 7", "dpi": 2.625}}),
                frame(2, {"ok": True, "player_id": rng.randrange(1 << 64), "server_time": timestamp(rng), "motd": None}))
    if r < 0.55:
        x, y = rng.randrange(-70000, 70000), rng.randrange(-5000, 5000)
        return (frame(3, [x, y, F32(rng.choice([1.0, 2.5, 0.75])), rng.random() * 6.28]),
                frame(4, [n, rng.random() < 0.9, [x, y]]))
    if r < 0.8:
        text = rng.choice(TEXTS)
        return (frame(5, {"room": "lobby", "text": text}),
                frame(6, {"from": "player%d" % n, "text": text, "at": timestamp(rng),
                          "attachments": [bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 40])))]}))
    if r < 0.85:
        return (frame(9, None),
                frame(7, {"items": [[i, rng.randrange(100), "item%d" % i] for i in range(20)], "gold": rng.randrange(1 << 40),
                          "names": {1: "sword", 2: "shield", 300: "potion", -1: "cursed"}, "custom": Ext(5, b"\x01\x02\x03")}))
    return frame(8, n & 0x7f), frame(8, n & 0x7f)


# A pool of exchanges, reused at random: realistic, and fast to write.
pool = [pair(i) for i in range(4000)]

pcap = PcapWriter(out, step_us=5)
conns = [Connection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 40000 + i, SERVER, 7600,
                    (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS) for i in range(nconn)]
n = 0
while n < total:
    c = conns[rng.randrange(nconn)]
    req, rep = rng.choice(pool)
    c.pend[0] += req
    c.pend[1] += rep
    n += 2
    for d in (0, 1):
        if rng.random() < 0.3 or len(c.pend[d]) >= MSS:
            cut = len(c.pend[d]) if rng.random() < 0.5 else len(c.pend[d]) // MSS * MSS
            c.send(d, c.pend[d][:cut])
            c.pend[d] = c.pend[d][cut:]
for c in conns:
    c.close()
pcap.close()
print("wrote", out, n, "messages")
