#!/usr/bin/env python3
"""Write a seeded synthetic capture of the game protocol carried by KCP over UDP, for timing
against bench/kcp.lua. (No real peers: samples/kcp.pcap is the real recording.)

KCP (ikcp.c) in message mode, server port 8100, MTU 1400 (mss 1376), one conv per flow (64
flows). A datagram holds one or more segments [u32le conv][u8 cmd][u8 frg][u16le wnd][u32le ts]
[u32le sn][u32le una][u32le len][data]; cmd 81 PUSH, 82 ACK. Each ikcp_send is one message:
one game frame, or two or three (sticky, about 15% of the sends); now and then (0.2% of the
sends) an SC_20001 or Cs_20001 with a 2-6 KB message, cut into segments whose frg counts down
to 0. Segments queue until a flush, so a datagram often carries several (ACKs first, then
data, as ikcp_flush packs them); every PUSH is acknowledged by an ACK of the other side (sn
and ts echoed); about 3% of the data segments are sent again in a later datagram (a
retransmission: same sn, frg and data, newer ts and una).

The game frames are those of bench/gengame.py: [u32 BE total length, header included]
[u16 BE id][body], Cs_20001 {SceneId u8, Line u32, message}, Cs_10002 {ClientTime u64},
SC_20001 {Res u8, SceneId u32, Pos u8, Status u8, Type u8, DefaultCombat u32, message},
Sc_30005 {Hp i32, Level u16, name}; strings [u16 BE length][UTF-8].

Usage: genkcp.py MESSAGES OUT.pcap   (or OUT.pcap MESSAGES; MESSAGES counts game frames)
The capture depends on MESSAGES only.
"""
import os, random, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pcapgen import PcapWriter

args = sys.argv[1:]
if len(args) != 2:
    raise SystemExit("usage: genkcp.py MESSAGES OUT.pcap")
total, out = (int(args[0]), args[1]) if args[0].isdigit() else (int(args[1]), args[0])
rng = random.Random(8100)
PORT = 8100
SERVER = bytes([10, 0, 0, 1])
NFLOWS = 64
MTU = 1400
MSS = MTU - 24
PUSH, ACK = 81, 82
TEXT = ["enter", "boss room", "line 2", "欢迎 welcome", "captain", "retry", "ok", "scene 7"]
WORDS = ["boss", "room", "rules", "no", "potions", "after", "the", "second", "phase", "队长", "欢迎",
         "gate", "north", "guild", "raid", "wipe", "tank", "heal", "loot", "roll", "need", "greed"]


def eth_ip_udp(src, dst, sport, dport, payload):
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), 0, 0x4000, 64, 17, 0, src, dst)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + udp + payload


def s(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


def frame(mid, body):
    return struct.pack(">IH", len(body) + 6, mid) + body


def message(d):
    if d == 0:
        if rng.random() < 0.5:
            return frame(10002, struct.pack(">Q", rng.randrange(1 << 62)))
        return frame(20001, struct.pack(">BI", rng.randrange(256), rng.randrange(1 << 32)) + s(rng.choice(TEXT)))
    if rng.random() < 0.5:
        return frame(30005, struct.pack(">iH", rng.randrange(-500, 90000), rng.randrange(1000)) + s(rng.choice(TEXT)))
    return frame(20001, struct.pack(">BIBBBI", rng.choice([0, 1, 2, 3]), rng.randrange(1 << 32), rng.randrange(256),
                                    rng.choice([0, 10]), rng.randrange(256), rng.randrange(1 << 20)) + s(rng.choice(TEXT)))


def big(d):
    """A scene request or reply whose message is 2-6 KB: more than the mss."""
    words, n, size = [], 0, rng.randrange(2000, 6000)
    while n < size:
        w = rng.choice(WORDS)
        words.append(w)
        n += len(w.encode()) + 1
    text = " ".join(words)
    if d == 0:
        return frame(20001, struct.pack(">BI", 150, rng.randrange(1 << 32)) + s(text))
    return frame(20001, struct.pack(">BIBBBI", 2, 150, 0, 0, 7, 4200) + s(text))


class Flow:
    """One KCP conversation: per direction (0 client to server, 1 back) the next sn, the
    segments queued for the next flush, the ACKs owed, the retransmissions due."""

    def __init__(self, i):
        self.conv = 0x11220000 + i * 0x101
        self.ends = ((bytes([10, 0, 1 + i // 200, 2 + i % 200]), SERVER, 41000 + i, PORT),
                     (SERVER, bytes([10, 0, 1 + i // 200, 2 + i % 200]), PORT, 41000 + i))
        self.clock = rng.randrange(1 << 20)
        self.snd_nxt = [0, 0]
        self.rcv_nxt = [0, 0]        # rcv_nxt[d]: what side d has received in order (its una)
        self.queue = [[], []]        # (sn, frg, data)
        self.resend = [[], []]
        self.acks = [[], []]         # (sn, ts) owed by side d

    def send(self, d, data):
        """ikcp_send in message mode: cut into mss-sized segments, frg counting down."""
        count = max(1, (len(data) + MSS - 1) // MSS)
        for i in range(count):
            self.queue[d].append((self.snd_nxt[d], count - 1 - i, data[i * MSS:(i + 1) * MSS]))
            self.snd_nxt[d] += 1

    def flush(self, d, write):
        """ikcp_flush: the ACKs owed, then the data segments, packed into datagrams up to the MTU."""
        self.clock += rng.randrange(1, 30)
        wnd = 128 - rng.randrange(4)
        una = self.rcv_nxt[d]
        buf = b""
        segs = [(ACK, 0, sn, ts, b"") for sn, ts in self.acks[d]]
        segs += [(PUSH, frg, sn, self.clock, data) for sn, frg, data in self.resend[d] + self.queue[d]]
        # About 3% of the fresh segments go out again at the next flush (their ACK was lost).
        self.resend[d] = [q for q in self.queue[d] if rng.random() < 0.03]
        self.acks[d], self.queue[d] = [], []
        for cmd, frg, sn, ts, data in segs:
            seg = struct.pack("<IBBHIIII", self.conv, cmd, frg, wnd, ts, sn, una, len(data)) + data
            if len(buf) + len(seg) > MTU:
                write(eth_ip_udp(*self.ends[d], buf))
                buf = b""
            buf += seg
            if cmd == PUSH:
                self.acks[1 - d].append((sn, ts))
                self.rcv_nxt[1 - d] = max(self.rcv_nxt[1 - d], sn + 1)
        if buf:
            write(eth_ip_udp(*self.ends[d], buf))


pcap = PcapWriter(out, step_us=5)
write = pcap.write
flows = [Flow(i) for i in range(NFLOWS)]
sent = 0
while sent < total:
    f = rng.choice(flows)
    d = rng.randrange(2)
    r = rng.random()
    if r < 0.002:
        frames = [big(d)]
    else:
        frames = [message(d) for _ in range(1 if r < 0.85 else rng.choice([2, 3]))]
    frames = frames[:total - sent]
    sent += len(frames)
    f.send(d, b"".join(frames))
    # A flush now (alone or with what was queued before), or later with the next sends.
    if rng.random() < 0.6:
        f.flush(d, write)
    if rng.random() < 0.3:
        f.flush(1 - d, write)        # the other side's ACKs (and data) go out
for _ in range(3):
    for f in flows:
        for d in (0, 1):
            if f.queue[d] or f.acks[d] or f.resend[d]:
                f.flush(d, write)
pcap.close()
print("wrote %s: %d game messages on %d KCP conversations" % (out, total, NFLOWS))
