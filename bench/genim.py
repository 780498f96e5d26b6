#!/usr/bin/env python3
"""Write a large synthetic pcap of the im protocol (seed 002) for bench/run.sh.

Frames: [u16 headLength=12][u16 version][u16 cid][u32 bid][u16 bodyLength][protobuf body],
bodies encoded by Python's protobuf package from Dissectors/im.proto (protoc generates the
module into a temporary folder). Many connections, both directions, frames packed into
1448-byte TCP segments (so frames are coalesced and split). Not encrypted.

Usage: genim.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import importlib, os, random, struct, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(__file__))
from pcapgen import PcapWriter, eth_ip_tcp

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 500_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 64
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
gen = tempfile.mkdtemp(prefix="genim_")
subprocess.run(["protoc", "--python_out=" + gen, "-I", os.path.join(root, "Dissectors"),
                os.path.join(root, "Dissectors", "im.proto")], check=True)
sys.path.insert(0, gen)
pb = importlib.import_module("im_pb2")
rng = random.Random(7)
WORDS = ["hello", "你好 bob", "on my way", "see you at 8", "👍", "meeting moved to room 3", "ok"]
MSS = 1448
SERVER = bytes([10, 0, 0, 1])


def body(cid, n):
    if cid == 1:
        m = pb.LoginRequest(username="user%d" % n, token="tok-%08x" % rng.randrange(1 << 32), platform=rng.randrange(3))
        m.device["os"] = rng.choice(["ios 17", "android 14"])
        return m
    if cid == 2:
        m = pb.LoginAck(code=rng.choice([0, 0, 0, 401]), message="welcome")
        m.profile.age = rng.randrange(18, 80); m.profile.username = "user%d" % n; m.profile.phone = "1%010d" % n
        m.server_time.seconds = 1700000000 + n; m.server_time.nanos = rng.randrange(10 ** 9)
        return m
    if cid == 3:
        m = pb.SendRequest(sender_seq="seq-%d" % n)
        m.msg.to = "user%d" % rng.randrange(1000); m.msg.type = rng.randrange(3); m.msg.content = rng.choice(WORDS)
        m.msg.m_type = rng.randrange(2)
        return m
    if cid == 4:
        return pb.SendAck(sender_seq="seq-%d" % n, code=rng.choice([0, 1]), msg_id=rng.randrange(1 << 64))
    if cid == 5:
        m = pb.MsgPush(**{"from": "user%d" % rng.randrange(1000)}, msg_id=rng.randrange(1 << 64),
                       mentions=["user%d" % rng.randrange(1000) for _ in range(rng.randrange(3))],
                       read_by=[rng.randrange(1 << 20) for _ in range(rng.randrange(4))],
                       clock_skew_ms=rng.randrange(-5000, 5000))
        m.msg.to = "group-%d" % rng.randrange(50); m.msg.content = rng.choice(WORDS); m.msg.m_type = 1
        return m
    return pb.Heartbeat()


# A pool of encoded bodies per (direction, cid), reused at random: realistic, and fast to write.
C2S, S2C = [1, 3, 3, 3, 7], [2, 4, 5, 5, 7]
pool = {cid: [body(cid, i).SerializeToString() for i in range(400)] for cid in set(C2S + S2C)}


def frame(cid, bid):
    b = rng.choice(pool[cid])
    return struct.pack(">HHHIH", 12, 1, cid, bid, len(b)) + b




pcap = PcapWriter(out, step_us=5)
write = pcap.write


conns = []
for i in range(nconn):
    c = {"cli": bytes([10, 0, 1 + i // 200, 2 + i % 200]), "port": 40000 + i,
         "seq": [rng.randrange(1 << 32), rng.randrange(1 << 32)], "pend": [b"", b""]}
    conns.append(c)
    write(eth_ip_tcp(c["cli"], SERVER, c["port"], 9000, c["seq"][0], 0, 0x02, b""))
    write(eth_ip_tcp(SERVER, c["cli"], 9000, c["port"], c["seq"][1], c["seq"][0] + 1, 0x12, b""))
    c["seq"] = [c["seq"][0] + 1, c["seq"][1] + 1]


def flush(c, d, force=False):
    while len(c["pend"][d]) >= MSS or (force and c["pend"][d]):
        seg, c["pend"][d] = c["pend"][d][:MSS], c["pend"][d][MSS:]
        src, dst, sp, dp = (c["cli"], SERVER, c["port"], 9000) if d == 0 else (SERVER, c["cli"], 9000, c["port"])
        write(eth_ip_tcp(src, dst, sp, dp, c["seq"][d], c["seq"][1 - d], 0x18, seg))
        c["seq"][d] += len(seg)


for n in range(total):
    c = conns[rng.randrange(nconn)]
    d = n & 1
    c["pend"][d] += frame(rng.choice(C2S if d == 0 else S2C), n)
    if rng.random() < 0.3:
        flush(c, d, force=True)   # a short segment now and then
    else:
        flush(c, d)
for c in conns:
    flush(c, 0, True); flush(c, 1, True)
pcap.close()
print("wrote", out, total, "messages")
