#!/usr/bin/env python3
"""Write a seeded synthetic capture of the game protocol (seed 000) for bench/run.sh:
[u32 BE total length, header included][u16 BE id][body], strings [u16 BE length][UTF-8],
server port 8000, many connections, both directions, frames coalesced into and split across
TCP segments (MSS 1448). The messages are those of Dissectors/game_messages.txt:
Cs_20001 {SceneId u8, Line u32, message}, Cs_10002 {ClientTime u64},
Sc_20001 {Res u8, SceneId u32, Pos u8, Status u8, Type u8, DefaultCombat u32, message},
Sc_30005 {Hp i32, Level u16, name}.

Usage: gengame.py OUT.pcap [MESSAGES] [CONNECTIONS] [edited]

With `edited`, the same capture with three edits, for timing `framedump diff`: message
100,000 left out, message 300,000 sent twice, message 500,000 with its first body byte changed
(the random stream is the same, so everything else is as without).
"""
import random, struct, sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from pcapgen import Connection, PcapWriter

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 64
edited = len(sys.argv) > 4 and sys.argv[4] == "edited"
rng = random.Random(20001)
MSS = 1448
PORT = 8000
SERVER = bytes([10, 0, 0, 1])
TEXT = ["enter", "boss room", "line 2", "欢迎 welcome", "captain", "retry", "ok", "scene 7"]


def s(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


def message(d):
    if d == 0:
        if rng.random() < 0.5:
            return 10002, struct.pack(">Q", rng.randrange(1 << 62))
        return 20001, struct.pack(">BI", rng.randrange(256), rng.randrange(1 << 32)) + s(rng.choice(TEXT))
    if rng.random() < 0.5:
        return 30005, struct.pack(">iH", rng.randrange(-500, 90000), rng.randrange(1000)) + s(rng.choice(TEXT))
    return 20001, struct.pack(">BIBBBI", rng.choice([0, 1, 2, 3]), rng.randrange(1 << 32), rng.randrange(256),
                              rng.choice([0, 10]), rng.randrange(256), rng.randrange(1 << 20)) + s(rng.choice(TEXT))




pcap = PcapWriter(out, step_us=5)
write = pcap.write


conns = [Connection(write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 41000 + i, SERVER, PORT,
                    (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS) for i in range(nconn)]

for k in range(total):
    c = rng.choice(conns)
    d = rng.randrange(2)
    mid, body = message(d)
    frame = struct.pack(">IH", len(body) + 6, mid) + body
    if edited and k == 100_000:
        frame = b""
    elif edited and k == 300_000:
        frame += frame
    elif edited and k == 500_000:
        frame = frame[:6] + bytes([frame[6] ^ 1]) + frame[7:]
    c.pend[d] += frame
    # Sticky (several frames in one segment) and split (a frame over several) both happen.
    if len(c.pend[d]) >= rng.choice([1, 40, 200, 1448, 4000]):
        c.flush(d)
for c in conns:
    c.close()
pcap.close()
print("wrote %s: %d messages on %d connections" % (out, total, nconn))
