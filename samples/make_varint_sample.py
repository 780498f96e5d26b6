#!/usr/bin/env python3
"""Record samples/varint.pcap: protobuf messages over TCP, each preceded by its length as a
varint (what Netty's ProtobufVarint32LengthFieldPrepender writes), between real asyncio peers
using the protobuf library's own varint encoder and decoder; and samples/varint.messages.json,
every message as the peers sent it. Run as root from the repository root (Debian's python3,
with python3-protobuf and protobuf-compiler installed):

    /usr/bin/python3 samples/make_varint_sample.py

The protocol is Dissectors/chat.dissector (`header { varint32 length; } body_length = length;`)
with Dissectors/chat.proto on port 7500.

Scenario: a server on 127.0.0.1 port 7500 and three concurrent clients, TCP_NODELAY on every
socket so each write is its own segment. A client logs in (a negative timezone: a zigzag
sint32), says a few short lines (1-byte lengths), one of 300 bytes (a 2-byte length), one of
about 20,000 bytes (a 3-byte length) written in 1,000-byte pieces, two messages in one write,
one whose length is written apart from its body, one whose 2-byte length is itself cut in two
writes, and a ping. The server answers a login with a LoginAck, each say with a Said, a ping
with a Pong; a batch of mentions gets its reply and a second Said in the same write. Every
socket has a timeout and tcpdump is stopped by its own PID.

varint.messages.json: {"protocol", "server_port", "connections": [{"client": N,
"client_port": P, "c2s": [message, ...], "s2c": [message, ...]}]}: each Envelope as protobuf's
MessageToDict gives it (lowerCamelCase names, as framedump's NDJSON writes protobuf fields), with
"_length", its encoded size.
"""
import asyncio, json, os, socket, subprocess, sys, tempfile

from capture import Capture, follow

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PORT = 7500
TIMEOUT = 10
LOG = {}

# The Python classes of chat.proto, made by protoc into a temporary folder.
GEN = tempfile.mkdtemp()
subprocess.run(["protoc", "-I", os.path.join(ROOT, "Dissectors"), "--python_out", GEN, "chat.proto"], check=True)
sys.path.insert(0, GEN)
import chat_pb2  # noqa: E402
from google.protobuf.internal.encoder import _VarintBytes  # noqa: E402
from google.protobuf.internal.decoder import _DecodeVarint32  # noqa: E402
from google.protobuf.json_format import MessageToDict  # noqa: E402


def frame(env):
    body = env.SerializeToString()
    return _VarintBytes(len(body)) + body


def logged(env):
    d = MessageToDict(env)  # (field names as protobuf's JSON mapping writes them: lowerCamelCase)
    d["_length"] = env.ByteSize()
    return d


async def read_frame(reader):
    """One varint32-prefixed message, read as Netty's decoder reads it: the varint byte by byte."""
    prefix = b""
    while True:
        prefix += await asyncio.wait_for(reader.readexactly(1), TIMEOUT)
        if prefix[-1] < 0x80:
            break
        if len(prefix) == 5:
            raise ValueError("varint32 longer than 5 bytes")
    length, _ = _DecodeVarint32(prefix, 0)
    env = chat_pb2.Envelope()
    env.ParseFromString(await asyncio.wait_for(reader.readexactly(length), TIMEOUT))
    return env


async def serve(reader, writer):
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = writer.get_extra_info("peername")[1]
    seq = 0
    while True:
        try:
            req = await read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            break
        replies = []
        seq += 1
        kind = req.WhichOneof("body")
        if kind == "login":
            replies.append(chat_pb2.Envelope(seq=seq, login_ack=chat_pb2.LoginAck(ok=True, session=0x1234567890ab + port)))
        elif kind == "say":
            replies.append(chat_pb2.Envelope(seq=seq, said=chat_pb2.Said(echo=req.seq, length=len(req.say.text.encode()))))
            if req.say.mentions:
                seq += 1
                replies.append(chat_pb2.Envelope(seq=seq, said=chat_pb2.Said(echo=req.seq, length=len(req.say.mentions))))
        elif kind == "ping":
            replies.append(chat_pb2.Envelope(seq=seq, pong=chat_pb2.Pong(time_ms=req.ping.time_ms + 1)))
        for r in replies:
            LOG[port]["s2c"].append(logged(r))  # (the client logged itself before its first write)
        writer.write(b"".join(frame(r) for r in replies))
        await writer.drain()
    writer.close()


async def client(k):
    reader, writer = await asyncio.open_connection("127.0.0.1", PORT)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = sock.getsockname()[1]
    LOG[port] = {"client": k, "client_port": port, "c2s": [], "s2c": []}
    sent = LOG[port]["c2s"]
    seq = 0

    def env(**kw):
        nonlocal seq
        seq += 1
        e = chat_pb2.Envelope(seq=seq, **kw)
        sent.append(logged(e))
        return e

    async def send(*envs, pieces=None):
        data = b"".join(frame(e) for e in envs)
        if pieces is None:
            writer.write(data)
            await writer.drain()
        else:
            at = 0
            for p in pieces + [len(data)]:
                writer.write(data[at:p])
                await writer.drain()
                await asyncio.sleep(0.02)
                at = p
        replies = sum(1 + (1 if e.WhichOneof("body") == "say" and e.say.mentions else 0)
                      for e in envs if e.WhichOneof("body") in ("login", "say", "ping"))
        for _ in range(replies):
            await read_frame(reader)

    await send(env(login=chat_pb2.Login(user="player%d" % k, token="t-%04x" % (k * 4099), timezone=-480 + 60 * k)))
    for i in range(3):
        await send(env(say=chat_pb2.Say(room="lobby", text="hello %d from %d" % (i, k))))
    await send(env(say=chat_pb2.Say(room="lobby", text="x" * (280 + k))))
    big = env(say=chat_pb2.Say(room="world", text="".join("line %05d of a long text\n" % i for i in range(800))))
    await send(big, pieces=list(range(1000, big.ByteSize(), 1000)))
    await send(env(say=chat_pb2.Say(room="lobby", text="two")), env(say=chat_pb2.Say(room="lobby", text="in one write")))
    await send(env(say=chat_pb2.Say(room="lobby", text="length apart", mentions=[1, 2, 300])), pieces=[1])
    cut = env(say=chat_pb2.Say(room="lobby", text="y" * 200))
    await send(cut, pieces=[1, 2])
    await send(env(ping=chat_pb2.Ping(time_ms=1700000000000 + k)))
    writer.close()
    await writer.wait_closed()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT)
    async with server:
        await asyncio.wait_for(asyncio.gather(*(client(k) for k in range(1, 4))), 30)
        await asyncio.sleep(0.3)


def check(pcap):
    """Each direction's bytes in the capture, as tshark's follow,tcp gives them, are the frames logged."""
    if subprocess.run(["which", "tshark"], capture_output=True).returncode != 0:
        print("tshark not found: the capture is not cross-checked")
        return
    for port, c in LOG.items():
        sides = follow(pcap, "127.0.0.1:%d,127.0.0.1:%d" % (port, PORT))
        for d in ("c2s", "s2c"):
            pos, n = 0, 0
            data = sides[d]
            while pos < len(data):
                length, pos = _DecodeVarint32(data, pos)
                e = chat_pb2.Envelope()
                e.ParseFromString(data[pos:pos + length])
                pos += length
                assert logged(e) == c[d][n], (port, d, n)
                n += 1
            assert n == len(c[d]), (port, d, n, len(c[d]))
    print("checked against tshark's follow,tcp:", sum(len(c["c2s"]) + len(c["s2c"]) for c in LOG.values()), "messages")


if __name__ == "__main__":
    out = os.path.join(HERE, "varint.pcap")
    with Capture(out, PORT):
        asyncio.run(main())
    check(out)
    conns = sorted(LOG.values(), key=lambda c: c["client"])
    with open(os.path.join(HERE, "varint.messages.json"), "w") as f:
        json.dump({"protocol": "chat", "server_port": PORT, "connections": conns}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", os.path.join(HERE, "varint.messages.json"))
