#!/usr/bin/env python3
"""Record samples/msgpack.pcap: a game protocol whose bodies are MessagePack, between real asyncio
peers on loopback using the msgpack library's own encoder and decoder; and
samples/msgpack.messages.json, every message as the peers sent it. Run as root from the
repository root (Debian's python3, with the msgpack library: `pip install
--break-system-packages msgpack` or `apt-get install python3-msgpack`):

    /usr/bin/python3 samples/make_msgpack_sample.py

The protocol ("mpgame", TCP port 7600): each frame is `uint32 length` (big-endian, the body's
length, the header not counted), `uint16 cmd` (big-endian), then the body: one MessagePack value,
`msgpack.packb(value, use_bin_type=True, datetime=False)`. The messages (cmd, direction, body):

    1 Login        c2s  {"user", "token", "version", "device": {"os", "model", "dpi"}}
    2 LoginAck     s2c  {"ok", "player_id" (uint64 max; 2**53 + 1), "server_time" (a timestamp), "motd": nil}
    3 Move         c2s  [x, y, speed, facing], an object as MessagePack-CSharp writes [Key(0)]..[Key(3)]:
                        ints (down to int64), speed a float32, facing a float64
    4 MoveAck      s2c  [seq, accepted, [x, y]]
    5 Chat         c2s  {"room", "text"}: fixstr, UTF-8, str8, str16, empty
    6 ChatPush     s2c  {"from", "text", "at" (a timestamp), "attachments": [bin8, bin16, empty bin]}
    7 Inventory    s2c  first a map with integer keys; then a map with array16, map16, uint64/int64,
                        ext8/fixext16, nested, empty containers
    8 Heartbeat    both a positive fixint counter, echoed
    9 InventoryReq c2s  nil

The timestamps (extension type -1) take all three encodings: 32-bit (whole seconds), 64-bit
(nanoseconds, seconds below 2**34) and 96-bit (seconds before 1970 or past 2514).

Scenario: a server on 127.0.0.1 port 7600 and two concurrent clients, TCP_NODELAY on every socket
so each write is its own segment. Each client logs in, moves five times, sends five chats, asks
for the inventory twice and sends three heartbeats; the server decodes every body with
`msgpack.unpackb(raw=False, timestamp=3)` and answers each message with one frame. Once in the
capture: two Moves in one write (client 1), a 5,000-character Chat written in 1,000-byte pieces
(client 1), and a Chat whose 6-byte header is written apart from its body (client 2). Every
socket operation has a timeout, the whole run is bounded, and tcpdump is stopped by its own PID.

msgpack.messages.json: {"protocol": "mpgame", "server_port": 7600, "connections": [{"client": N,
"client_port": P, "c2s": [message, ...], "s2c": [message, ...]}]}; each message is {"cmd",
"name", "_length" (the body's length), "body"}, the body as the bytes sent decode (the msgpack
library, timestamps kept whole) rendered as JSON: a map is an object (integer keys as strings),
bin is {"bin": "hex"}, an extension is {"ext": type, "hex": "..."}, a timestamp is {"timestamp":
"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (UTC, nine decimals, proleptic Gregorian), "seconds",
"nanoseconds"}, a float the float (a float32 widened to double), nil null.
"""
import asyncio, json, os, socket, struct, subprocess

import msgpack

from capture import Capture, follow

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 7600
TIMEOUT = 5
LOG = {}

NAMES = {1: "Login", 2: "LoginAck", 3: "Move", 4: "MoveAck", 5: "Chat", 6: "ChatPush", 7: "Inventory",
         8: "Heartbeat", 9: "InventoryReq"}
HEADER = struct.Struct(">IH")


def pack(value, **kw):
    return msgpack.packb(value, use_bin_type=True, datetime=False, **kw)


def pack_move(x, y, speed, facing):
    """An array of four as MessagePack-CSharp writes a [Key(n)] object: speed a float32 (what
    `use_single_float=True` writes), facing a float64 (so not the whole message single)."""
    return (msgpack.Packer().pack_array_header(4) + pack(x) + pack(y)
            + pack(speed, use_single_float=True) + pack(facing))


def unpack(body):
    """The body as a peer reads it back, timestamps kept whole (seconds and nanoseconds)."""
    return msgpack.unpackb(body, raw=False, timestamp=0, strict_map_key=False)


def civil(seconds):
    """`seconds` since 1970 as a UTC date, proleptic Gregorian, any year (Hinnant's algorithm)."""
    days, secs = divmod(seconds, 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return "%s%04d-%02d-%02dT%02d:%02d:%02d" % ("-" if year < 0 else "", abs(year), month, day,
                                                secs // 3600, secs // 60 % 60, secs % 60)


def render(v):
    if isinstance(v, msgpack.Timestamp):
        return {"timestamp": "%s.%09dZ" % (civil(v.seconds), v.nanoseconds), "seconds": v.seconds,
                "nanoseconds": v.nanoseconds}
    if isinstance(v, msgpack.ExtType):
        return {"ext": v.code, "hex": v.data.hex()}
    if isinstance(v, (bytes, bytearray)):
        return {"bin": bytes(v).hex()}
    if isinstance(v, dict):
        return {str(k): render(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [render(x) for x in v]
    return v  # None, bool, int, float, str


def logged(cmd, body):
    return {"cmd": cmd, "name": NAMES[cmd], "_length": len(body), "body": render(unpack(body))}


def frame(cmd, body):
    return HEADER.pack(len(body), cmd) + body


async def read_frame(reader):
    length, cmd = HEADER.unpack(await asyncio.wait_for(reader.readexactly(HEADER.size), TIMEOUT))
    return cmd, await asyncio.wait_for(reader.readexactly(length), TIMEOUT)


# What the server answers with (fixed, so that a second run writes the same messages).
PLAYER_IDS = {"player1": 18446744073709551615, "player2": 9007199254740993}
LOGIN_TIMES = {"player1": msgpack.Timestamp(1764262800, 0),            # 32-bit
               "player2": msgpack.Timestamp(1764262800, 123456789)}    # 64-bit
CHAT_TIMES = [msgpack.Timestamp(1764262801, 0),                        # 32-bit
              msgpack.Timestamp(1764262802, 987654321),                # 64-bit
              msgpack.Timestamp(-1, 500),                              # 96-bit, before 1970
              msgpack.Timestamp(20000000000, 1),                       # 96-bit, past 2514
              msgpack.Timestamp(4294967295, 0),                        # 32-bit, the largest
              msgpack.Timestamp(17179869183, 999999999)]               # 64-bit, the largest
ATTACHMENTS = [b"\x01\x02\x03", bytes(i * 7 % 256 for i in range(300)), b""]


def inventory(n):
    if n == 1:
        return {1: "sword", 2: "shield", 300: "potion", -1: "cursed"}
    return {
        "items": [[1000 + i, i * 3 % 17, "item-%02d" % i] for i in range(20)],
        "gold": 1 << 40,
        "flags": 0xff,
        "neg": [-1, -33, -129, -32769, -2147483649],
        "nums": [0, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296],
        "custom": msgpack.ExtType(5, b"\x01\x02\x03"),
        "fixext": msgpack.ExtType(7, b"\xaa" * 16),
        "ext8": msgpack.ExtType(9, bytes(range(20))),
        "f32": 0.5,
        "empty_map": {},
        "empty_list": [],
        "bools": [True, False],
        "nested": {"a": {"b": {"c": [1, [2, [3]]]}}},
        "bigmap": {"key%02d" % i: i * i for i in range(20)},
    }


async def serve(reader, writer):
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = writer.get_extra_info("peername")[1]
    user, moves, chats, invs = None, 0, 0, 0
    try:
        while True:
            try:
                cmd, body = await read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.TimeoutError):
                break
            req = msgpack.unpackb(body, raw=False, timestamp=3)
            if cmd == 1:
                user = req["user"]
                reply = (2, pack({"ok": True, "player_id": PLAYER_IDS[user], "server_time": LOGIN_TIMES[user], "motd": None}))
            elif cmd == 3:
                moves += 1
                x, y = req[0], req[1]
                reply = (4, pack([moves, abs(x) < 1 << 31, [x, y]]))
            elif cmd == 5:
                reply = (6, pack({"from": user, "text": req["text"], "at": CHAT_TIMES[chats],
                                  "attachments": ATTACHMENTS}))
                chats += 1
            elif cmd == 9:
                assert req is None
                invs += 1
                reply = (7, pack(inventory(invs)))
            elif cmd == 8:
                reply = (8, pack(req))
            else:
                break
            LOG[port]["s2c"].append(logged(*reply))  # (the client logged itself before its first write)
            writer.write(frame(*reply))
            await asyncio.wait_for(writer.drain(), TIMEOUT)
    finally:
        writer.close()


LONG_TEXT = "".join("chunk %04d of a long chat line. " % i for i in range(200))[:5000]
TEXTS = ["hi", "héllo 世界 🎮", "forty characters of chat text, exactly!!", "".join(chr(0x61 + i % 26) for i in range(300)), ""]
MOVES = {1: [(10, 20, 2.5, 1.5707963267948966), (-5, 21, 3.25, 0.0), (-200, -22, 6.3, -3.141592653589793),
             (-70000, 70000, 0.1, 2.356194490192345), (-5000000000, 5000000000, 1e-3, 6.283185307179586)],
         2: [(-5000000000, 1, 7.75, 1.5707963267948966), (-70000, -1, 0.5, 0.7853981633974483),
             (-200, 128, 1.1, -1.5707963267948966), (-5, -129, 100.0, 1e-300), (2147483647, -2147483648, 0.0, -0.0)]}


async def client(k):
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), TIMEOUT)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = sock.getsockname()[1]
    LOG[port] = {"client": k, "client_port": port, "c2s": [], "s2c": []}
    sent = LOG[port]["c2s"]

    async def send(*msgs, pieces=None):
        """Writes the frames of `msgs` ((cmd, body) pairs) in one write, or cut at the offsets
        `pieces` into several writes; then reads one reply for each."""
        for cmd, body in msgs:
            sent.append(logged(cmd, body))
        data = b"".join(frame(cmd, body) for cmd, body in msgs)
        at = 0
        for p in (pieces or []) + [len(data)]:
            writer.write(data[at:p])
            await asyncio.wait_for(writer.drain(), TIMEOUT)
            if p < len(data):
                await asyncio.sleep(0.05)
            at = p
        for _ in msgs:
            cmd, body = await read_frame(reader)
            assert cmd in NAMES, cmd
            unpack(body)

    user = "player%d" % k
    await send((1, pack({"user": user, "token": "t-%d" % (1002 + k), "version": 7,
                         "device": {"os": "android", "model": "Pixel 7", "dpi": 2.625}})))
    moves = [(3, pack_move(*m)) for m in MOVES[k]]
    if k == 1:
        for m in moves[:3]:
            await send(m)
        await send(*moves[3:])  # two frames in one write
    else:
        for m in moves:
            await send(m)
    for i, text in enumerate(TEXTS):
        chat = (5, pack({"room": "lobby", "text": text}))
        if k == 2 and i == 1:
            await send(chat, pieces=[HEADER.size])  # the header apart from its body
        else:
            await send(chat)
    if k == 1:
        big = (5, pack({"room": "world", "text": LONG_TEXT}))
        await send(big, pieces=list(range(1000, HEADER.size + len(big[1]), 1000)))
    for _ in range(2):
        await send((9, pack(None)))
    for n in range(1, 4):
        await send((8, pack(n)))
    writer.close()
    await asyncio.wait_for(writer.wait_closed(), TIMEOUT)


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT)
    try:
        await asyncio.wait_for(asyncio.gather(*(client(k) for k in (1, 2))), 15)
        await asyncio.sleep(0.3)
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), TIMEOUT)


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
                length, cmd = HEADER.unpack_from(data, pos)
                pos += HEADER.size
                assert logged(cmd, data[pos:pos + length]) == c[d][n], (port, d, n)
                pos += length
                n += 1
            assert n == len(c[d]), (port, d, n, len(c[d]))
    print("checked against tshark's follow,tcp:", sum(len(c["c2s"]) + len(c["s2c"]) for c in LOG.values()), "messages")


if __name__ == "__main__":
    out = os.path.join(HERE, "msgpack.pcap")
    with Capture(out, PORT):
        asyncio.run(main())
    check(out)
    conns = sorted(LOG.values(), key=lambda c: c["client"])
    with open(os.path.join(HERE, "msgpack.messages.json"), "w") as f:
        json.dump({"protocol": "mpgame", "server_port": PORT, "connections": conns}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", os.path.join(HERE, "msgpack.messages.json"))
