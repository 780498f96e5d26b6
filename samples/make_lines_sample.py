#!/usr/bin/env python3
"""Record samples/lines.pcap: JSON lines over TCP (one JSON object a line, ended by CR LF)
between real asyncio peers, and samples/lines.messages.json, every line as the peers wrote it.
Run as root from the repository root:

    python3 samples/make_lines_sample.py

The protocol is Dissectors/lines.dissector: `frame_end "\\r\\n"; body json;` on port 7400. The
server reads with asyncio's StreamReader.readuntil(b"\\r\\n"), the line framing of Python's own
library, and answers every request line with one reply line.

Scenario: a server on 127.0.0.1 port 7400 and three concurrent clients, each on a connection of
its own, TCP_NODELAY on every socket so each write is its own segment. A client sends a hello, a
few requests, then: two lines in one write; a line written in two pieces cut between its CR and
its LF; a line of about 6,000 bytes (a list of items) written in 1,000-byte pieces; an empty
object; a line with escaped quotes and non-ASCII text; bye. The server answers each line with
{"ok": ..., "echo": n, ...}; for the long line a long reply, written at once. Every socket has a
timeout, and tcpdump is stopped by its own PID. After recording, each direction's bytes in the
capture (as tshark's follow,tcp gives them, when tshark is there) are checked against the log.

lines.messages.json: {"protocol", "server_port", "connections": [{"client": N, "client_port": P,
"c2s": [line, ...], "s2c": [line, ...]}]}: each line as written, without its CR LF.
"""
import asyncio, json, os, socket, subprocess, sys

from capture import Capture, follow

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 7400
TIMEOUT = 10
LOG = {}


def line(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


async def serve(reader, writer):
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n = 0
    while True:
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n"), TIMEOUT)
        except (asyncio.IncompleteReadError, ConnectionError):
            break
        n += 1
        req = json.loads(raw[:-2].decode())
        port = writer.get_extra_info("peername")[1]
        if "items" in req:
            reply = {"ok": True, "echo": n, "stored": [{"id": i["id"], "slot": i["id"] % 7} for i in req["items"]]}
        elif req.get("op") == "bye":
            reply = {"ok": True, "echo": n, "bye": True}
        else:
            reply = {"ok": "op" in req or req == {}, "echo": n, "got": req}
        text = line(reply)
        LOG[port]["s2c"].append(text)
        writer.write((text + "\r\n").encode())
        await writer.drain()
        if req.get("op") == "bye":
            break
    writer.close()


async def client(k):
    reader, writer = await asyncio.open_connection("127.0.0.1", PORT)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = sock.getsockname()[1]
    LOG[port] = {"client": k, "client_port": port, "c2s": [], "s2c": []}
    sent = LOG[port]["c2s"]

    async def send(*texts, pieces=None):
        data = b"".join((t + "\r\n").encode() for t in texts)
        sent.extend(texts)
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
        for _ in texts:
            await asyncio.wait_for(reader.readuntil(b"\r\n"), TIMEOUT)

    await send(line({"op": "hello", "client": k, "version": "1.%d" % k}))
    for i in range(3):
        await send(line({"op": "move", "x": i * 10 + k, "y": -i, "speed": 1.5 + i}))
    await send(line({"op": "ping", "seq": 1}), line({"op": "ping", "seq": 2}))
    chat = line({"op": "chat", "text": "hi from %d" % k})
    await send(chat, pieces=[len(chat) + 1])  # cut between CR and LF
    items = line({"op": "store", "items": [{"id": i, "name": "item-%04d" % i, "tags": ["a", "b"]} for i in range(120)]})
    await send(items, pieces=list(range(1000, len(items), 1000)))
    await send(line({}))
    await send(line({"op": "chat", "text": "say \"héllo\" — 你好"}))
    await send(line({"op": "bye"}))
    writer.close()
    await writer.wait_closed()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT)
    async with server:
        await asyncio.wait_for(asyncio.gather(*(client(k) for k in (1, 2, 3))), 3 * TIMEOUT)


if __name__ == "__main__":
    out = os.path.join(HERE, "lines.pcap")
    with Capture(out, PORT):
        asyncio.run(main())
    conns = sorted(LOG.values(), key=lambda c: c["client"])
    with open(os.path.join(HERE, "lines.messages.json"), "w") as f:
        json.dump({"protocol": "lines", "server_port": PORT, "connections": conns}, f, ensure_ascii=False, indent=1)
    if subprocess.run(["which", "tshark"], capture_output=True).returncode == 0:
        by_port = {c["client_port"]: c for c in conns}
        for i in range(len(conns)):
            sides = follow(out, i)
            c = next(c for c in conns if all(((t + "\r\n").encode() in sides["c2s"]) for t in c["c2s"][:1]))
            for d in ("c2s", "s2c"):
                want = b"".join((t + "\r\n").encode() for t in c[d])
                if sides[d] != want:
                    sys.exit("stream %d %s: the capture differs from what the peers wrote" % (i, d))
    print("lines.pcap: %d connections, %d lines" % (len(conns), sum(len(c["c2s"]) + len(c["s2c"]) for c in conns)))
