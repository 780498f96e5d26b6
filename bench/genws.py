#!/usr/bin/env python3
"""Write a seeded synthetic pcap of WebSocket traffic with permessage-deflate, for the
WebSocket row of bench/run.sh (the seed 003 bridge: JSON text heartbeats and
[u32 LE appId][UTF-8] binary messages, both ways).

Each connection opens with a real RFC 6455 handshake (key and accept computed), negotiates
permessage-deflate with context takeover both ways, then exchanges messages compressed by
zlib (raw DEFLATE, Z_SYNC_FLUSH, tail removed, RFC 7692 §7.2.1); client frames are masked.
Most segments carry one message, as real peers write them (the recorded samples show it);
some carry several (sticky), and messages longer than the MSS (1448) are split.

Usage: genws.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import base64, hashlib, json, os, random, struct, sys, zlib

sys.path.insert(0, os.path.dirname(__file__))
import pcapgen
from pcapgen import Connection, PcapWriter

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 32
rng = random.Random(6455)
MSS = 1448
PORT = 8080
SERVER = bytes([10, 0, 0, 1])
WORDS = ["open page /home", "打开页面", "heartBeat", "scan", "pay 12.50", "share to friends", "ok", "retry"]


def ws_frame(opcode, payload, mask, rsv1):
    return pcapgen.ws_frame(opcode, payload, mask, rng, rsv1)


pcap = PcapWriter(out, step_us=9)
write = pcap.write


conns = []
for i in range(nconn):
    c = Connection(write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 40000 + i, SERVER, PORT,
                   (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS)
    # Each direction's compression context (context takeover: one stream per direction).
    c.z = [zlib.compressobj(6, zlib.DEFLATED, -15), zlib.compressobj(6, zlib.DEFLATED, -15)]
    conns.append(c)
    key = base64.b64encode(bytes(rng.randrange(256) for _ in range(16))).decode()
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    c.send(0, ("GET /service HTTP/1.1\r\nHost: 10.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n" % (PORT, key)).encode())
    c.send(1, ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n" % accept).encode())


def message(c, d):
    kind = rng.randrange(4)
    if kind == 0:
        text = json.dumps({"messageType": "heartBeat" if d == 0 else "heartBeatAck", "seq": rng.randrange(1 << 31)})
        opcode, payload = 1, text.encode()
    elif kind == 1:
        text = json.dumps({"messageType": "openUrl", "url": "https://example.invalid/p/%d" % rng.randrange(1000),
                           "tab": rng.randrange(8), "note": rng.choice(WORDS)})
        opcode, payload = 1, text.encode()
    else:
        opcode = 2
        payload = struct.pack("<I", rng.randrange(1 << 32)) + " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 12))).encode()
    z = c.z[d].compress(payload) + c.z[d].flush(zlib.Z_SYNC_FLUSH)
    return ws_frame(opcode, z[:-4], mask=(d == 0), rsv1=True)


sent = 0
while sent < total:
    c = rng.choice(conns)
    d = rng.randrange(2)
    c.pend[d] += message(c, d)
    sent += 1
    # Real peers (see samples/) write each message as it is made: mostly one message per
    # segment; now and then a few in one segment (sticky), and long ones split by the MSS.
    if rng.random() < 0.85:
        c.flush(d)
for c in conns:
    c.close()
pcap.close()
print("wrote %s: %d messages on %d connections" % (out, sent, nconn))
