#!/usr/bin/env python3
"""Record samples/socketio.pcap: a python-socketio server (on aiohttp) and a python-socketio
client on loopback, Engine.IO v4 / Socket.IO v5 over a WebSocket on port 7700; and
samples/socketio.messages.json, every WebSocket message each peer wrote, as it wrote it. Run as
root from the repository root (`pip install python-socketio aiohttp`):

    python3 samples/make_socketio_sample.py

and the same scenario between peers of python-socketio 4 (Socket.IO v4 on Engine.IO v3, as
Socket.IO 2.x clients speak it: the client pings, the server pongs; auth by query string), into
samples/socketio-eio3.pcap on port 7701 (`python3 -m venv V && V/bin/pip install
"python-socketio<5" "python-engineio<4" aiohttp`):

    V/bin/python samples/make_socketio_sample.py

Connection 1 (transport websocket only, namespaces "/" and "/admin" with the right token):
the Engine.IO open packet and the namespace connects; chat events both ways (no ack); an event
with an ack (`add` → 5); an event whose text has quotes, a backslash, CJK and an emoji; nested
arguments (objects, arrays, numbers, true, false, null); a binary event with two attachments and
an ack; the server asking the client (`question`, an event with an ack the client answers);
a binary event from the server; an event and its ack in "/admin"; the server's pings every
second (ping interval 1 s) and the client's pongs; the server putting the client out of "/admin" (a disconnect packet).
Connection 2: a connect to "/admin" with a wrong token, refused with a connect_error.

socketio.messages.json: {"server_port": 7700, "connections": [{"c2s": [...], "s2c": [...]}]}, each
message {"text": "..."} or {"binary": "hex"}, in the order the peer wrote them (the WebSocket
layer's send_str and send_bytes, wrapped; a message the library refused to write, as it closes,
is not logged), checked against tshark's WebSocket dissector. Every await has a timeout; tcpdump is stopped by its
own PID.
"""
import asyncio, json, os, subprocess, sys

from capture import Capture

import aiohttp
from aiohttp import web, web_ws, client_ws
import socketio

HERE = os.path.dirname(os.path.abspath(__file__))
# python-socketio 4 speaks Engine.IO v3.
EIO3 = socketio.__version__.startswith("4.")
PORT = 7701 if EIO3 else 7700
NAME = "socketio-eio3" if EIO3 else "socketio"
if EIO3:
    # python-socketio 4 hands asyncio.wait coroutines, which Python 3.11 refuses: made tasks.
    _wait = asyncio.wait

    async def wait_tasks(fs, *args, **kwargs):
        return await _wait([asyncio.ensure_future(f) for f in fs], *args, **kwargs)
    asyncio.wait = wait_tasks
TIMEOUT = 10
LOG = []


def record(direction):
    def wrap(cls, name):
        original = getattr(cls, name)

        async def send(self, data, *args, **kwargs):
            entry = {"text": data} if isinstance(data, str) else {"binary": bytes(data).hex()}
            # Logged in the order written; taken back if the library refused it (a message
            # sent while the connection closes never reaches the wire).
            LOG[-1][direction].append(entry)
            try:
                return await original(self, data, *args, **kwargs)
            except BaseException:
                LOG[-1][direction].remove(entry)
                raise
        setattr(cls, name, send)
    return wrap


record("s2c")(web_ws.WebSocketResponse, "send_str")
record("s2c")(web_ws.WebSocketResponse, "send_bytes")
record("c2s")(client_ws.ClientWebSocketResponse, "send_str")
record("c2s")(client_ws.ClientWebSocketResponse, "send_bytes")


def server():
    sio = socketio.AsyncServer(async_mode="aiohttp", ping_interval=1, ping_timeout=5)
    app = web.Application()
    sio.attach(app)

    @sio.event
    async def connect(sid, environ, auth=None):
        return True

    @sio.on("connect", namespace="/admin")
    async def admin_connect(sid, environ, auth=None):
        if EIO3:
            auth = {"token": environ.get("QUERY_STRING", "").partition("token=")[2].partition("&")[0]}
        if not auth or auth.get("token") != "secret":
            raise socketio.exceptions.ConnectionRefusedError("bad token")

    @sio.on("chat")
    async def chat(sid, data):
        await sio.emit("chat", {"from": "server", "echo": data}, to=sid)

    @sio.on("add")
    async def add(sid, a, b):
        return a + b

    @sio.on("nested")
    async def nested(sid, data):
        return {"ok": True, "keys": sorted(data)}

    @sio.on("upload")
    async def upload(sid, meta, first, second):
        return {"name": meta["name"], "sizes": [len(first), len(second)]}

    @sio.on("ready")
    async def ready(sid):
        answer = await sio.call("question", {"q": "name?"}, to=sid, timeout=TIMEOUT)
        await sio.emit("blob", {"answer": answer, "data": bytes(range(16))}, to=sid)

    @sio.on("stats", namespace="/admin")
    async def stats(sid, what):
        return {"what": what, "users": 1}

    @sio.on("leave", namespace="/admin")
    async def leave(sid):
        await sio.disconnect(sid, namespace="/admin")

    return sio, app


async def client_one():
    c = socketio.AsyncClient()
    got = asyncio.Event()

    @c.on("question")
    async def question(data):
        return "alice"

    @c.on("blob")
    async def blob(data):
        got.set()

    if EIO3:
        await c.connect("http://127.0.0.1:%d?token=secret" % PORT, transports=["websocket"], namespaces=["/", "/admin"])
    else:
        await c.connect("http://127.0.0.1:%d" % PORT, transports=["websocket"], namespaces=["/", "/admin"],
                        auth={"token": "secret"}, wait_timeout=TIMEOUT)
    await c.emit("chat", {"text": "hello", "room": "lobby"})
    assert await c.call("add", (2, 3), timeout=TIMEOUT) == 5
    await c.emit("chat", {"text": "quote \" backslash \\ 你好 🎮", "room": "lobby"})
    await c.call("nested", {"list": [1, 2.5, -3, [True, False, None]], "obj": {"a": {"b": "c"}}, "empty": {}},
                 timeout=TIMEOUT)
    await c.call("upload", ({"name": "avatar.png"}, b"\x89PNG\r\n\x1a\n" + bytes(40), b"\x00\xff" * 8), timeout=TIMEOUT)
    await c.emit("ready")
    await asyncio.wait_for(got.wait(), TIMEOUT)
    await c.call("stats", "online", namespace="/admin", timeout=TIMEOUT)
    await c.emit("leave", namespace="/admin")
    # Long enough for the server's pings (every second) and the client's pongs.
    await asyncio.sleep(2.5)
    await c.emit("chat", {"text": "bye", "room": "lobby"})
    await asyncio.sleep(0.3)
    await c.disconnect()


async def client_two():
    c = socketio.AsyncClient()
    try:
        if EIO3:
            await c.connect("http://127.0.0.1:%d?token=wrong" % PORT, transports=["websocket"], namespaces=["/admin"])
        else:
            await c.connect("http://127.0.0.1:%d" % PORT, transports=["websocket"], namespaces=["/admin"],
                            auth={"token": "wrong"}, wait_timeout=3)
    except socketio.exceptions.ConnectionError:
        pass
    await asyncio.sleep(0.3)
    await c.disconnect()


async def main():
    sio, app = server()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", PORT)
    await site.start()
    try:
        for run in (client_one, client_two):
            LOG.append({"c2s": [], "s2c": []})
            await asyncio.wait_for(run(), 30)
            await asyncio.sleep(0.5)
    finally:
        await runner.cleanup()


def check(pcap):
    """Each connection's WebSocket messages, as tshark's WebSocket dissector reads them, are the ones logged."""
    if subprocess.run(["which", "tshark"], capture_output=True).returncode != 0:
        print("tshark not found: the capture is not cross-checked")
        return
    rows = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,http" % PORT, "-Y", "websocket.opcode <= 2",
                           "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "websocket.opcode",
                           "-e", "websocket.payload.text", "-e", "data.data"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    seen = {}
    for row in rows:
        stream, port, opcode, text, data = (row.split("\t") + [""] * 5)[:5]
        d = seen.setdefault(int(stream), {"c2s": [], "s2c": []})["s2c" if int(port) == PORT else "c2s"]
        d.append({"text": text} if opcode == "1" else {"binary": data.replace(":", "")})
    got = [seen[k] for k in sorted(seen)]
    assert got == LOG, "tshark's WebSocket messages differ from the log"
    print("checked against tshark's WebSocket dissector:", sum(len(c["c2s"]) + len(c["s2c"]) for c in LOG), "messages")


if __name__ == "__main__":
    out = os.path.join(HERE, NAME + ".pcap")
    with Capture(out, PORT):
        asyncio.run(main())
    check(out)
    with open(os.path.join(HERE, NAME + ".messages.json"), "w") as f:
        json.dump({"server_port": PORT, "connections": LOG}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", os.path.join(HERE, NAME + ".messages.json"))
