#!/usr/bin/env python3
"""Record samples/wsgame.pcap: a game's text sub-protocol over WebSocket, between a real
WebSocket server and client (Python's `websockets` package, `pip install websockets`), and
samples/wsgame.messages.json, every message as the peers sent it. Run as root from the
repository root:

    python3 samples/make_wsgame_sample.py

The protocol is Dissectors/wsgame.dissector: each text message is `CMD|SEQ|JSON` (a command
number, a sequence number the reply repeats, then a JSON body), as many H5 and mini-game
servers write them; `header text { decimal("|") cmd; decimal("|") seq; }` reads it.

Scenario: a server at ws://127.0.0.1:7710/play and two concurrent clients. A client logs in
(1001 → 1002), joins a room (2001 → 2002, a reply of about 300 bytes: a 16-bit WebSocket
length), chats (3001 → 3002; the server also pushes 9001 with seq 0 to every client), sends a
heartbeat (0 → 1, an empty JSON object), a command the server does not know (4242 → 4243 with
an error), a text with no header at all ("hello"), one binary message (the server echoes its
size as text), a message with a negative seq (-1, a retry marker), and a chat sent in three
WebSocket fragments; then closes. Every step has a timeout, and tcpdump is stopped by its own
PID.

wsgame.messages.json: {"server_port", "connections": [{"client": N, "c2s": [...], "s2c": [...]}]},
each message {"opcode": "text"|"binary", "payload": hex} in the order sent.
"""
import asyncio, json, os, sys

from capture import Capture

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 7710
TIMEOUT = 10
LOG = {}
CLIENTS = {}  # connection → its s2c log


def text(cmd, seq, body):
    return "%d|%d|%s" % (cmd, seq, json.dumps(body, ensure_ascii=False, separators=(",", ":")))


async def send(ws, log, msg):
    log.append({"opcode": "text" if isinstance(msg, str) else "binary",
                "payload": (msg.encode() if isinstance(msg, str) else msg).hex()})
    await ws.send(msg)


async def handler(ws):
    """The game server: answers each command with CMD+1 and the same seq."""
    name = ws.request.headers.get("X-Client")
    log = LOG[name]["s2c"]
    CLIENTS[ws] = log
    try:
        async for msg in ws:
            if isinstance(msg, bytes):
                await send(ws, log, text(5002, 0, {"binary": len(msg)}))
                continue
            head = msg.split("|", 2)
            if len(head) < 3 or not head[0].lstrip("-").isdigit():
                await send(ws, log, text(9999, 0, {"error": "no header", "len": len(msg)}))
                continue
            cmd, seq, body = int(head[0]), int(head[1]), json.loads(head[2])
            if cmd == 0:
                await send(ws, log, text(1, seq, {}))
            elif cmd == 1001:
                await send(ws, log, text(1002, seq, {"ok": True, "player": 7 + len(body["user"]), "name": body["user"]}))
            elif cmd == 2001:
                players = [{"id": i, "name": "player-%d" % i, "level": 10 + i} for i in range(8)]
                await send(ws, log, text(2002, seq, {"room": body["room"], "players": players}))
            elif cmd == 3001:
                await send(ws, log, text(3002, seq, {"ok": True}))
                for other, olog in list(CLIENTS.items()):
                    await send(other, olog, text(9001, 0, {"from": name, "text": body["text"]}))
            else:
                await send(ws, log, text(cmd + 1, seq, {"error": "unknown command", "cmd": cmd}))
    finally:
        CLIENTS.pop(ws, None)


async def client(name, user):
    log = LOG[name]["c2s"]
    async with connect("ws://127.0.0.1:%d/play" % PORT, additional_headers={"X-Client": name},
                       compression=None, open_timeout=TIMEOUT) as ws:
        async def ask(msg):
            await send(ws, log, msg)
            await asyncio.sleep(0.05)

        await ask(text(1001, 1, {"user": user, "token": "t-" + user * 3}))
        await ask(text(2001, 2, {"room": "lobby"}))
        await ask(text(3001, 3, {"text": "hello from " + user}))
        await ask(text(0, 4, {}))
        await ask(text(4242, 5, {"x": 1}))
        await ask("hello")
        await ask(bytes(range(32)))
        await ask(text(3001, -1, {"text": "retry 你好"}))
        whole = text(3001, 6, {"text": "fragmented " + user, "parts": 3})

        async def fragments():
            yield whole[:5]
            yield whole[5:20]
            yield whole[20:]
        log.append({"opcode": "text", "payload": whole.encode().hex()})
        await ws.send(fragments())
        await asyncio.sleep(0.3)
        await ws.close(code=1000, reason="bye")


async def scenario():
    async with serve(handler, "127.0.0.1", PORT, compression=None):
        await asyncio.wait_for(asyncio.gather(client("1", "ann"), client("2", "bob")), TIMEOUT)
        await asyncio.sleep(0.2)


if __name__ == "__main__":
    LOG.update({n: {"client": int(n), "c2s": [], "s2c": []} for n in ("1", "2")})
    with Capture(os.path.join(HERE, "wsgame.pcap"), PORT):
        asyncio.run(scenario())
    with open(os.path.join(HERE, "wsgame.messages.json"), "w") as f:
        json.dump({"server_port": PORT, "connections": [LOG["1"], LOG["2"]]}, f, indent=1)
        f.write("\n")
