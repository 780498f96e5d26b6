#!/usr/bin/env python3
"""Record the WebSocket sample captures: a real WebSocket client and server (Python's
`websockets` package, `pip install websockets`) talking over loopback while tcpdump writes what
crosses `lo`. Run as root from the repository root:

    python3 samples/make_ws_samples.py              # both samples
    python3 samples/make_ws_samples.py bridge       # one of: bridge websocket-deflate

The scenario is seed 003's bridge: an app talks to a local server at ws://127.0.0.1:PORT/service,
sends JSON text heartbeats ({"messageType":"heartBeat"}) and binary messages
[u32 little-endian appId][UTF-8 text]; the server answers both ways. Beside those: a message of
126..65535 bytes (16-bit length), one over 65535 (64-bit length), a fragmented message with a
ping between its fragments, and a close handshake with a code and reason. `bridge.pcap` has no
compression; `websocket-deflate.pcap` negotiates permessage-deflate (with context takeover, so
repeated messages compress to a few bytes). Everything runs on 127.0.0.1 with timeouts, and
tcpdump is stopped by its own PID.
"""
import asyncio, json, os, struct, sys

from capture import Capture

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 10
# Every data message as the library sent it, per direction: written beside the capture
# (NAME.messages.json) so tests can check the decoded payloads against the peers' own view.
LOG = {"c2s": [], "s2c": []}


async def send(ws, direction, msg):
    LOG[direction].append({"opcode": "text" if isinstance(msg, str) else "binary",
                           "payload": (msg.encode() if isinstance(msg, str) else msg).hex()})
    await ws.send(msg)


def app(app_id, text):
    return struct.pack("<I", app_id) + text.encode()


async def handler(ws):
    """The bridge server: answers heartbeats and echoes binary messages with its own appId."""
    async for msg in ws:
        if isinstance(msg, str):
            body = json.loads(msg)
            if body.get("messageType") == "heartBeat":
                await send(ws, "s2c", json.dumps({"messageType": "heartBeatAck", "time": 1700000000 + len(msg)}))
            else:
                await send(ws, "s2c", json.dumps({"messageType": "ack", "of": body.get("messageType"), "ok": True}))
        else:
            app_id = struct.unpack("<I", msg[:4])[0] if len(msg) >= 4 else 0
            await send(ws, "s2c", app(app_id + 1000, "ok: %d bytes" % len(msg)))


async def client(port, compression):
    async with connect("ws://127.0.0.1:%d/service" % port, compression=compression,
                       origin="http://localhost", open_timeout=TIMEOUT, max_size=None) as ws:
        for i in range(3):
            await send(ws, "c2s", json.dumps({"messageType": "heartBeat"}))
            await ws.recv()
        await send(ws, "c2s", app(7, "打开页面 open page /home"))
        await ws.recv()
        await send(ws, "c2s", json.dumps({"messageType": "openUrl", "url": "https://example.invalid/a?b=c", "tab": 2}))
        await ws.recv()
        # 16-bit length (126..65535) and 64-bit length (> 65535).
        await send(ws, "c2s", app(8, "medium " + "m" * 3000))
        await ws.recv()
        await send(ws, "c2s", app(9, "large " + "".join(chr(0x61 + (i * 7) % 26) for i in range(70000))))
        await ws.recv()

        # A fragmented text message with a ping between its fragments.
        async def fragments():
            yield '{"messageType":"report",'
            await ws.ping(b"mid-message")
            yield '"lines":["one","two",'
            yield '"three"]}'
        LOG["c2s"].append({"opcode": "text", "payload": '{"messageType":"report","lines":["one","two","three"]}'.encode().hex()})
        await ws.send(fragments())
        await ws.recv()
        for i in range(2):
            await send(ws, "c2s", json.dumps({"messageType": "heartBeat"}))
            await ws.recv()
        await ws.close(code=1000, reason="bye")


async def scenario(port, compression):
    async with serve(handler, "127.0.0.1", port, compression=compression, max_size=None):
        await asyncio.wait_for(client(port, compression), TIMEOUT)
        await asyncio.sleep(0.2)


SAMPLES = {
    "bridge": (12345, None),
    "websocket-deflate": (12346, "deflate"),
}


def record(name):
    port, compression = SAMPLES[name]
    LOG["c2s"].clear()
    LOG["s2c"].clear()
    with Capture(os.path.join(HERE, name + ".pcap"), port):
        asyncio.run(scenario(port, compression))
    with open(os.path.join(HERE, name + ".messages.json"), "w") as f:
        json.dump(LOG, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    for name in sys.argv[1:] or list(SAMPLES):
        record(name)
