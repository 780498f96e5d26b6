#!/usr/bin/env python3
"""Write a seeded synthetic capture of the zgame protocol for bench/run.sh: bodies that are
zlib-compressed under a header flag, and on some connections XORed as well.

Frame: [u8 magic 0xA7][u8 flags][u16le msgId][u32le bodyLength][body], server port 7300.
flags: 0x01 body zlib-compressed (RFC 1950), 0x02 body XORed with the repeating key
5a 17 c3 e1 (restarting at each body, applied after compression), 0x04 LZ4 (not used here).
Bodies (after the transforms are undone), little-endian, strings [u8 length][UTF-8]:
  3 ChatSend  (C->S): uint32 channel; String text
  4 ChatPush  (S->C): uint32 channel; uint64 fromPlayer; String text; uint32 sentAt
  5 RoomState (S->C): uint32 roomId; uint16 count; count x {uint64 playerId; String name;
                      int16 x; int16 y; uint8 hp}
  6 Heartbeat (both): uint64 clientTime
The sender compresses every body longer than 64 bytes (RoomState with 5-20 players, the long
chat texts): about half the messages. A tenth of the connections XOR every body. Many
connections, both directions, frames coalesced into and split across TCP segments (MSS 1448).

Usage: genz.py OUT.pcap [MESSAGES] [SEED]
With ZGAME_LOG=FILE in the environment, also writes each message as a JSON line (connection,
direction, id, flags, decoded fields) in sending order, for checking a dissector against it
(checkz.py); the capture is the same either way.
"""
import json, os, random, struct, sys, zlib

sys.path.insert(0, os.path.dirname(__file__))
from pcapgen import Connection, PcapWriter

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 7300
nconn = 100
rng = random.Random(seed)
MSS = 1448
PORT = 7300
SERVER = bytes([10, 0, 0, 1])
KEY = bytes([0x5A, 0x17, 0xC3, 0xE1])
COMPRESS_OVER = 64
WORDS = ["gg", "wp", "boss", "at", "the", "north", "gate", "in", "5", "min", "need", "healer", "tank",
         "anyone", "for", "raid", "tonight", "lol", "ok", "欢迎", "队长", "再来一次", "👍", "🔥",
         "drop", "rate", "is", "terrible", "brb", "who", "has", "the", "key", "to", "room", "7",
         "selling", "epic", "sword", "+12", "cheap", "pm", "me", "guild", "recruiting", "level", "60+"]
NAMES = ["%s%s%d" % (rng.choice(["Dark", "Iron", "Swift", "Lone", "Red", "小", "老", "Frost", "Sky"]),
                     rng.choice(["Wolf", "Blade", "Mage", "Hunter", "龙", "虎", "Knight", "Fox"]),
                     rng.randrange(1000)) for _ in range(5000)]
log = open(os.environ["ZGAME_LOG"], "w") if os.environ.get("ZGAME_LOG") else None


def s(text):
    b = text.encode()
    return struct.pack("<B", len(b)) + b


def chat_text(long):
    """A short line (under 40 bytes) or a long one (60-250 bytes), whole words."""
    lo, hi = (60, 250) if long else (2, 39)
    target = rng.randint(lo, hi)
    words, n = [], -1
    while True:
        w = rng.choice(WORDS)
        m = len(w.encode()) + 1
        if n + m > hi:
            break
        words.append(w)
        n += m
        if n >= target:
            break
    return " ".join(words)


def message(d):
    """(msgId, body, fields) for direction d (0 client->server, 1 server->client)."""
    r = rng.random()
    if (d == 0 and r < 0.3) or (d == 1 and r < 0.2):
        t = rng.randrange(1_700_000_000_000, 1_800_000_000_000)
        return 6, struct.pack("<Q", t), {"clientTime": t}
    if d == 0:
        ch, text = rng.randrange(1, 64), chat_text(rng.random() < 0.5)
        return 3, struct.pack("<I", ch) + s(text), {"channel": ch, "text": text}
    if r < 0.55:
        ch, who, text, at = rng.randrange(1, 64), rng.randrange(1 << 64), chat_text(rng.random() < 0.5), \
            rng.randrange(1_700_000_000, 1_800_000_000)
        return 4, struct.pack("<IQ", ch, who) + s(text) + struct.pack("<I", at), \
            {"channel": ch, "fromPlayer": who, "text": text, "sentAt": at}
    room, n = rng.randrange(1, 100_000), rng.randint(5, 20)
    body = struct.pack("<IH", room, n)
    players = []
    for _ in range(n):
        p = {"playerId": rng.randrange(1 << 64), "name": rng.choice(NAMES), "x": rng.randint(-32768, 32767),
             "y": rng.randint(-32768, 32767), "hp": rng.randrange(101)}
        body += struct.pack("<Q", p["playerId"]) + s(p["name"]) + struct.pack("<hhB", p["x"], p["y"], p["hp"])
        players.append(p)
    return 5, body, {"roomId": room, "count": n, "players": players}


def xor(b):
    k = (KEY * (len(b) // 4 + 1))[:len(b)]
    return (int.from_bytes(b, "little") ^ int.from_bytes(k, "little")).to_bytes(len(b), "little")


pcap = PcapWriter(out, step_us=5)
write = pcap.write
conns = [Connection(write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 42000 + i, SERVER, PORT,
                    (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS) for i in range(nconn)]
xored = set(rng.sample(range(nconn), nconn // 10))
compressed = 0
for k in range(total):
    ci = rng.randrange(nconn)
    c = conns[ci]
    d = rng.randrange(2)
    mid, body, fields = message(d)
    flags = 0
    if len(body) > COMPRESS_OVER:
        body, flags = zlib.compress(body), flags | 0x01
        compressed += 1
    if ci in xored:
        body, flags = xor(body), flags | 0x02
    c.pend[d] += struct.pack("<BBHI", 0xA7, flags, mid, len(body)) + body
    if log:
        log.write(json.dumps({"conn": ci, "dir": d, "id": mid, "flags": flags, "fields": fields},
                             ensure_ascii=False) + "\n")
    # Sticky (several frames in one segment) and split (a frame over several) both happen.
    if len(c.pend[d]) >= rng.choice([1, 40, 200, 1448, 4000]):
        c.flush(d)
for c in conns:
    c.close()
pcap.close()
if log:
    log.close()
print("wrote %s: %d messages on %d connections (%d XORed), %d compressed (%.1f%%)"
      % (out, total, nconn, len(xored), compressed, 100.0 * compressed / max(total, 1)))
