#!/usr/bin/env python3
"""Write a seeded synthetic pcap of a game's text sub-protocol over WebSocket, for the wsgame
row of bench/run.sh: each connection opens with an RFC 6455 handshake on /play (port 7710,
Dissectors/wsgame.dissector), then text messages `CMD|SEQ|JSON` both ways: requests (login,
join, chat) answered by CMD+1 with the same seq, chat pushes with seq 0, heartbeats with an
empty object. Client frames are masked; most segments carry one message, some several, long
ones are split.

Usage: genwsgame.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import base64, hashlib, json, os, random, sys

sys.path.insert(0, os.path.dirname(__file__))
import pcapgen
from pcapgen import Connection, PcapWriter

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 32
rng = random.Random(7710)
MSS = 1448
PORT = 7710
SERVER = bytes([10, 0, 0, 1])
WORDS = ["hello", "打开页面", "gg", "ready?", "pay 12.50", "ok", "retry", "lobby"]


def text(c, d, s):
    c.pend[d] += pcapgen.ws_frame(1, s.encode(), d == 0, rng)


def line(cmd, seq, body):
    return "%d|%d|%s" % (cmd, seq, json.dumps(body, separators=(",", ":"), ensure_ascii=False))


pcap = PcapWriter(out, step_us=9)
conns = []
for i in range(nconn):
    c = Connection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 41000 + i, SERVER, PORT,
                   (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS)
    c.next = 1
    c.owed = []
    conns.append(c)
    key = base64.b64encode(bytes(rng.randrange(256) for _ in range(16))).decode()
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    c.send(0, ("GET /play HTTP/1.1\r\nHost: 10.0.0.1:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (PORT, key)).encode())
    c.send(1, ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())


def request(c):
    r = rng.random()
    seq = c.next
    c.next += 1
    if r < 0.05:
        c.owed.append((1, seq))
        return line(0, seq, {})
    if r < 0.15:
        c.owed.append((1002, seq))
        return line(1001, seq, {"user": "p%d" % rng.randrange(1000), "token": "t-%016x" % rng.randrange(1 << 64)})
    if r < 0.3:
        c.owed.append((2002, seq))
        return line(2001, seq, {"room": rng.choice(["lobby", "arena", "duel"])})
    c.owed.append((3002, seq))
    return line(3001, seq, {"text": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 6))),
                            "pos": [rng.randrange(-500, 500), rng.randrange(-500, 500)], "hp": rng.randrange(100)})


def reply(c):
    cmd, seq = c.owed.pop(0)
    if cmd == 1:
        return line(1, seq, {"t": rng.randrange(1 << 40)})
    if cmd == 1002:
        return line(1002, seq, {"ok": True, "player": rng.randrange(1 << 20), "name": "p%d" % rng.randrange(1000)})
    if cmd == 2002:
        return line(2002, seq, {"room": "lobby", "players": [{"id": k, "level": rng.randrange(60)} for k in range(rng.randrange(1, 5))]})
    return line(3002, seq, {"ok": True})


sent = 0
while sent < total:
    c = rng.choice(conns)
    if c.owed and rng.random() < 0.5:
        d, s = 1, reply(c)
    elif rng.random() < 0.1:
        d, s = 1, line(9001, 0, {"from": "p%d" % rng.randrange(1000), "text": rng.choice(WORDS)})
    else:
        d, s = 0, request(c)
    text(c, d, s)
    sent += 1
    if rng.random() < 0.85:
        c.flush(d)
for c in conns:
    c.close()
pcap.close()
print("wrote %s: %d messages on %d connections" % (out, sent, nconn))
