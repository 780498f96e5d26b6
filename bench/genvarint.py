#!/usr/bin/env python3
"""Write a large synthetic pcap of the chat protocol for bench/run.sh: protobuf messages, each
preceded by its length as a varint (Netty's ProtobufVarint32LengthFieldPrepender), decoded with
Dissectors/chat.dissector and Dissectors/chat.proto.

Bodies are chat.Envelope messages encoded by Python's protobuf package (protoc generates the
module into a temporary folder; needs python3-protobuf): logins, acks, short and long says
(lengths of one and two varint bytes, and a few of three), saids, pings and pongs. Many connections on port
7500, both directions, frames packed into 1448-byte TCP segments (so frames are coalesced and
split, varints cut between segments too).

Usage: genvarint.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import importlib, os, random, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(__file__))
from pcapgen import PcapWriter, Connection

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 64
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
gen = tempfile.mkdtemp(prefix="genvarint_")
subprocess.run(["protoc", "--python_out=" + gen, "-I", os.path.join(root, "Dissectors"),
                os.path.join(root, "Dissectors", "chat.proto")], check=True)
sys.path.insert(0, gen)
pb = importlib.import_module("chat_pb2")
from google.protobuf.internal.encoder import _VarintBytes  # noqa: E402

rng = random.Random(7500)
WORDS = ["hello", "你好", "on my way", "gg", "👍", "who is in room 3?", "ok", "brb"]
MSS = 1448
SERVER = bytes([10, 0, 0, 1])


def envelope(kind, n):
    e = pb.Envelope(seq=n & 0xffffffff)
    if kind == "login":
        e.login.user = "player%d" % n; e.login.token = "t-%08x" % rng.randrange(1 << 32)
        e.login.timezone = rng.choice([-480, -300, 0, 60, 480, 540])
    elif kind == "login_ack":
        e.login_ack.ok = rng.random() < 0.95; e.login_ack.session = rng.randrange(1 << 48)
    elif kind == "say":
        e.say.room = rng.choice(["lobby", "world", "guild-%d" % rng.randrange(100)])
        size = rng.random()
        e.say.text = " ".join(rng.choice(WORDS) for _ in range(1 if size < 0.6 else 40 if size < 0.998 else 3000))
        e.say.mentions.extend(rng.randrange(1 << 20) for _ in range(rng.randrange(3)))
    elif kind == "said":
        e.said.echo = rng.randrange(1 << 20); e.said.length = rng.randrange(1 << 14)
    elif kind == "ping":
        e.ping.time_ms = 1700000000000 + n
    else:
        e.pong.time_ms = 1700000000000 + n
    b = e.SerializeToString()
    return _VarintBytes(len(b)) + b


# A pool of encoded frames per direction, reused at random: realistic, and fast to write.
C2S, S2C = ["login", "say", "say", "say", "ping"], ["login_ack", "said", "said", "said", "pong"]
pool = [[envelope(k, i) for i in range(400) for k in C2S], [envelope(k, i) for i in range(400) for k in S2C]]

pcap = PcapWriter(out, step_us=5)
conns = [Connection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 40000 + i, SERVER, 7500,
                    (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS) for i in range(nconn)]
for n in range(total):
    c = conns[rng.randrange(nconn)]
    d = n & 1
    c.pend[d] += rng.choice(pool[d])
    if rng.random() < 0.3 or len(c.pend[d]) >= MSS:
        # Whole segments now; a short one now and then (the rest stays pending).
        cut = len(c.pend[d]) if rng.random() < 0.3 else len(c.pend[d]) // MSS * MSS
        c.send(d, c.pend[d][:cut])
        c.pend[d] = c.pend[d][cut:]
for c in conns:
    c.close()
pcap.close()
print("wrote", out, total, "messages")
