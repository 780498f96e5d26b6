#!/usr/bin/env python3
"""Write a seeded synthetic pcap of Socket.IO (v5 on Engine.IO v4) over WebSocket, for the
socketio row of bench/run.sh: each connection opens with a real RFC 6455 handshake on
/socket.io/?EIO=4&transport=websocket (port 7700, Dissectors/socketio.dissector), the open packet
and a namespace connect, then events both ways with JSON arguments (a third ask for an ack, which
the other side sends), pings and pongs, and now and then a binary event with an attachment.
Client frames are masked; most segments carry one message, some several, long ones are split.

Usage: gensocketio.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import base64, hashlib, json, os, random, struct, sys

sys.path.insert(0, os.path.dirname(__file__))
import pcapgen
from pcapgen import Connection, PcapWriter

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 32
rng = random.Random(2016)
MSS = 1448
PORT = 7700
SERVER = bytes([10, 0, 0, 1])
EVENTS = ["chat", "move", "state", "score", "join", "leave"]
WORDS = ["hello", "打开页面", "gg", "ready?", "pay 12.50", "ok", "retry", "lobby"]


def ws_frame(opcode, payload, mask):
    return pcapgen.ws_frame(opcode, payload, mask, rng)


def text(c, d, s):
    c.pend[d] += ws_frame(1, s.encode(), mask=(d == 0))


pcap = PcapWriter(out, step_us=9)
conns = []
for i in range(nconn):
    c = Connection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 40000 + i, SERVER, PORT,
                   (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS)
    c.acks = [0, 0]          # each side's next ack id
    c.owed = [[], []]        # ack ids each side owes the other
    conns.append(c)
    key = base64.b64encode(bytes(rng.randrange(256) for _ in range(16))).decode()
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    c.send(0, ("GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 10.0.0.1:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (PORT, key)).encode())
    c.send(1, ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
    text(c, 1, '0{"sid":"s%08d","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}' % i)
    c.flush(1)
    text(c, 0, '40')
    c.flush(0)
    text(c, 1, '40{"sid":"n%08d"}' % i)
    c.flush(1)


def message(c, d):
    r = rng.random()
    if c.owed[d] and r < 0.3:
        return "43%d%s" % (c.owed[d].pop(0), json.dumps([{"ok": True, "t": rng.randrange(1 << 40)}], separators=(",", ":")))
    if r < 0.05:
        return "2" if d == 1 else "3"
    args = [{"from": "p%d" % rng.randrange(1000), "text": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 6))),
             "pos": [rng.randrange(-500, 500), rng.randrange(-500, 500)], "hp": rng.randrange(100)}]
    if rng.random() < 0.3:
        args.append(rng.randrange(1 << 20))
    ack = ""
    if rng.random() < 0.33:
        ack = str(c.acks[d])
        c.owed[1 - d].append(c.acks[d])
        c.acks[d] += 1
    return "42" + ack + json.dumps([rng.choice(EVENTS)] + args, separators=(",", ":"), ensure_ascii=False)


sent = 0
while sent < total:
    c = rng.choice(conns)
    d = rng.randrange(2)
    if rng.random() < 0.01:
        # A binary event and its attachment.
        text(c, d, '451-["upload",{"name":"f%d","data":{"_placeholder":true,"num":0}}]' % sent)
        c.pend[d] += ws_frame(2, bytes(rng.randrange(256) for _ in range(rng.randrange(16, 200))), mask=(d == 0))
        sent += 2
    else:
        text(c, d, message(c, d))
        sent += 1
    if rng.random() < 0.85:
        c.flush(d)
for c in conns:
    c.close()
pcap.close()
print("wrote %s: %d messages on %d connections" % (out, sent, nconn))
