#!/usr/bin/env python3
"""Write a seeded synthetic pcap of gRPC over HTTP/2 (h2c, port 50051), for the grpc row of
bench/run.sh: each connection opens with the client preface and both sides' SETTINGS, then
calls of Dissectors/grpcchat.proto's Chat service (unary Send, server-streaming Subscribe,
bidirectional Talk) on new streams, each a HEADERS block (HPACK: static-table indices and
literals, as grpcio writes them, no Huffman), length-prefixed messages in DATA frames,
WINDOW_UPDATEs, and trailers. Most segments carry one frame group, some several.

Usage: gengrpc.py OUT.pcap [MESSAGES] [CONNECTIONS]
"""
import os, random, struct, sys

sys.path.insert(0, os.path.dirname(__file__))
from pcapgen import Connection, PcapWriter

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
nconn = int(sys.argv[3]) if len(sys.argv) > 3 else 32
rng = random.Random(2024)
PORT = 50051
SERVER = bytes([10, 0, 0, 1])
WORDS = ["hello", "你好", "gg", "ready?", "pay 12.50", "ok", "retry", "lobby", "🎉"]


def frame(t, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", stream) + payload


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(n, wire, v):
    key = varint(n << 3 | wire)
    if wire == 0:
        return key + varint(v)
    return key + varint(len(v)) + v


def chat_message(i):
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 6))).encode()
    user = field(1, 2, ("p%d" % rng.randrange(1000)).encode()) + field(2, 0, rng.randrange(1, 100000))
    m = field(1, 2, b"lobby") + field(2, 2, user) + field(3, 2, text) + field(4, 0, rng.randrange(1, 4))
    m += field(5, 0, 1_700_000_000_000 + i)
    for _ in range(rng.randrange(3)):
        m += field(6, 2, rng.choice([b"a", b"vip", b"new"]))
    if rng.random() < 0.2:
        m += field(8, 2, field(1, 2, b"like") + field(2, 0, rng.randrange(1, 9)))
    return m


def send_reply(i):
    return field(1, 0, 1) + field(2, 0, 1000 + i) + field(3, 0, 1_700_000_000_000 + i)


def hstring(s):
    return varint_prefix(len(s), 7, 0) + s


def varint_prefix(v, bits, flags):
    top = (1 << bits) - 1
    if v < top:
        return bytes([flags | v])
    out = bytearray([flags | top])
    v -= top
    while v >= 128:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def literal(name_index, value):
    # Literal without indexing, indexed name (RFC 7541 6.2.2).
    return varint_prefix(name_index, 4, 0) + hstring(value)


def literal_new(name, value):
    return b"\x00" + hstring(name) + hstring(value)


def request_block(method):
    return (b"\x83\x86" + literal(4, b"/grpcchat.Chat/" + method) + literal(1, b"10.0.0.1:50051")
            + literal(31, b"application/grpc") + literal_new(b"te", b"trailers")
            + literal_new(b"user-agent", b"grpc-python/1.85.3 grpc-c/58.0.0 (linux; chttp2)"))


RESPONSE = b"\x88" + literal(31, b"application/grpc")
TRAILERS = literal_new(b"grpc-status", b"0") + literal_new(b"grpc-message", b"")


def msg(body):
    return b"\x00" + struct.pack(">I", len(body)) + body


pcap = PcapWriter(out, step_us=9)
conns = []
for i in range(nconn):
    c = Connection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 40000 + i, SERVER, PORT,
                   (rng.randrange(1 << 32), rng.randrange(1 << 32)), 1448)
    c.send(1, frame(4, 0, 0, struct.pack(">HI", 4, 4194304)) + frame(8, 0, 0, struct.pack(">I", 4128769)))
    c.send(0, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, struct.pack(">HI", 2, 0)) + frame(8, 0, 0, struct.pack(">I", 4128769)))
    c.send(0, frame(4, 1, 0, b""))
    c.send(1, frame(4, 1, 0, b""))
    c.next_stream = 1
    conns.append(c)

sent = 0
while sent < total:
    c = rng.choice(conns)
    s = c.next_stream
    c.next_stream += 2
    r = rng.random()
    if r < 0.6:
        c.pend[0] += frame(1, 4, s, request_block(b"Send")) + frame(0, 1, s, msg(chat_message(sent)))
        c.flush(0)
        c.pend[1] += frame(1, 4, s, RESPONSE) + frame(0, 0, s, msg(send_reply(sent))) + frame(1, 5, s, TRAILERS)
        sent += 2
    elif r < 0.8:
        n = rng.randrange(2, 6)
        c.pend[0] += frame(1, 4, s, request_block(b"Subscribe")) + frame(0, 1, s, msg(field(1, 2, b"lobby") + field(2, 0, n)))
        c.flush(0)
        c.pend[1] += frame(1, 4, s, RESPONSE)
        for k in range(n):
            c.pend[1] += frame(0, 0, s, msg(chat_message(sent + k)))
            if rng.random() < 0.5:
                c.flush(1)
        c.pend[1] += frame(1, 5, s, TRAILERS)
        sent += 1 + n
    else:
        n = rng.randrange(2, 5)
        c.pend[0] += frame(1, 4, s, request_block(b"Talk"))
        c.pend[1] += frame(1, 4, s, RESPONSE)
        for k in range(n):
            c.pend[0] += frame(0, 0, s, msg(chat_message(sent + 2 * k)))
            c.flush(0)
            c.pend[1] += frame(0, 0, s, msg(chat_message(sent + 2 * k + 1)))
            c.flush(1)
        c.pend[0] += frame(0, 1, s, b"") + frame(8, 0, 0, struct.pack(">I", 1000))
        c.pend[1] += frame(1, 5, s, TRAILERS)
        sent += 2 * n
    if rng.random() < 0.85:
        c.flush(0)
        c.flush(1)
for c in conns:
    c.close()
pcap.close()
print("wrote %s: %d messages on %d connections" % (out, sent, nconn))
