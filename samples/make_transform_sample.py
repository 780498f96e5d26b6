#!/usr/bin/env python3
"""Record samples/zgame.pcap: real game peers whose message bodies are compressed and XORed
under header flags, and samples/zgame.messages.json, every message as the peers sent it.
Run as root from the repository root (needs the `lz4` package: `pip install lz4` or
`apt-get install python3-lz4`):

    python3 samples/make_transform_sample.py

The protocol "zgame" (port 7300, little-endian, Dissectors/zgame.dissector):

    [u8 magic 0xA7][u8 flags][u16 msgId][u32 bodyLength][body of bodyLength bytes]

flags 0x01: the body is zlib-compressed (RFC 1950), 0x02: XORed with the repeating key
5a 17 c3 e1 (restarting at each body), 0x04: LZ4-compressed in the LZ4 frame format. The
sender compresses first (zlib or lz4, never both) and XORs last. Bodies of more than 64 bytes
are compressed: by the server with zlib, by client 1 with zlib, by clients 2 and 3 with lz4.
Client 3 negotiated obfuscation: it XORs every body, and the server XORs every body it sends
back on that connection. So the capture holds every combination: plain, zlib, lz4, xor,
zlib+xor, lz4+xor. Heartbeats (8 bytes) are never compressed.

One server, three concurrent clients over 127.0.0.1, TCP_NODELAY so each write is its own
segment; sticky sends (several frames in one write), split sends (one frame over several
writes, once with the 8-byte header itself cut after 3 bytes), an unknown msgId (99), and an
Inventory of more than 64 KiB (decompressed) that crosses several TCP segments. Every socket
has a timeout and tcpdump is stopped by its own PID. Random data is seeded.

zgame.messages.json (one message a line): {"protocol", "port", "xor_key", "connections": [{"client": N,
"client_port": P, "c2s": [...], "s2c": [...]}]}, each message in the order it was written:
{"msgId", "name", "flags", "transforms", "bodyLength" (on the wire), "body" (hex, before
the transforms), "fields" (the decoded values, keyed by the dissector's field names; arrays of
structs as lists of objects; null for the unknown id)}.
"""
import json, os, random, socket, struct, threading, time, zlib

import lz4.frame

from capture import Capture

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 7300
TIMEOUT = 10
MAGIC = 0xA7
F_ZLIB, F_XOR, F_LZ4 = 0x01, 0x02, 0x04
XOR_KEY = bytes.fromhex("5a17c3e1")
COMPRESS_ABOVE = 64

NAMES = {1: "LoginReq", 2: "LoginResp", 3: "ChatSend", 4: "ChatPush", 5: "RoomState", 6: "Heartbeat",
         7: "Inventory"}

# ---------------------------------------------------------------- the peers' log

LOG_LOCK = threading.Lock()
LOG = {}          # client number -> {"client": n, "client_port": p, "c2s": [], "s2c": []}


def log_conn(n, port):
    with LOG_LOCK:
        LOG[n] = {"client": n, "client_port": port, "c2s": [], "s2c": []}


# ---------------------------------------------------------------- encoding

def s8(text):
    b = text.encode()
    assert len(b) < 256, text
    return struct.pack("<B", len(b)) + b


def encode(mid, f):
    """The body of message `mid` from its field values (the same dict goes into the log)."""
    if mid == 1:
        return s8(f["account"]) + s8(f["token"]) + struct.pack("<IB", f["clientVersion"], f["platform"])
    if mid == 2:
        return struct.pack("<BQ", f["result"], f["playerId"]) + s8(f["nickname"]) + struct.pack("<I", f["serverTime"])
    if mid == 3:
        return struct.pack("<I", f["channel"]) + s8(f["text"])
    if mid == 4:
        return struct.pack("<IQ", f["channel"], f["fromPlayer"]) + s8(f["text"]) + struct.pack("<I", f["sentAt"])
    if mid == 5:
        assert f["count"] == len(f["players"])
        return struct.pack("<IH", f["roomId"], f["count"]) + b"".join(
            struct.pack("<Q", p["playerId"]) + s8(p["name"]) + struct.pack("<hhB", p["x"], p["y"], p["hp"])
            for p in f["players"])
    if mid == 6:
        return struct.pack("<Q", f["clientTime"])
    if mid == 7:
        assert f["count"] == len(f["items"])
        return struct.pack("<H", f["count"]) + b"".join(
            struct.pack("<IH", i["itemId"], i["amount"]) + s8(i["name"]) for i in f["items"])
    raise ValueError(mid)


def xor(data):
    return bytes(b ^ XOR_KEY[i % 4] for i, b in enumerate(data))


def wrap(body, compressor, obfuscate):
    """The sender's steps: compress large bodies (zlib or lz4), then XOR. Returns (flags, wire body)."""
    flags, wire = 0, body
    if compressor and len(body) > COMPRESS_ABOVE:
        if compressor == "zlib":
            flags, wire = flags | F_ZLIB, zlib.compress(wire)
        else:
            flags, wire = flags | F_LZ4, lz4.frame.compress(wire)
    if obfuscate:
        flags, wire = flags | F_XOR, xor(wire)
    return flags, wire


def unwrap(flags, wire):
    """The receiver's steps: un-XOR first, then decompress."""
    body = wire
    if flags & F_XOR:
        body = xor(body)
    if flags & F_ZLIB:
        body = zlib.decompress(body)
    if flags & F_LZ4:
        body = lz4.frame.decompress(body)
    return body


class Peer:
    """One side of a connection: builds frames and logs each one as it is built, in write order."""

    def __init__(self, sock, n, direction, compressor, obfuscate=False):
        self.sock, self.n, self.direction = sock, n, direction
        self.compressor, self.obfuscate = compressor, obfuscate

    def frame(self, mid, fields=None, raw=None, compress=True):
        body = raw if raw is not None else encode(mid, fields)
        flags, wire = wrap(body, self.compressor if compress else None, self.obfuscate)
        assert unwrap(flags, wire) == body
        steps = [s for bit, s in [(F_ZLIB, "zlib"), (F_LZ4, "lz4"), (F_XOR, "xor")] if flags & bit]
        with LOG_LOCK:
            LOG[self.n][self.direction].append({
                "msgId": mid, "name": NAMES.get(mid), "flags": flags, "transforms": steps,
                "bodyLength": len(wire), "body": body.hex(), "fields": fields})
        return struct.pack("<BBHI", MAGIC, flags, mid, len(wire)) + wire

    def send(self, *frames):
        """Several frames in one write (sticky when more than one)."""
        self.sock.sendall(b"".join(frames))

    def send_split(self, data, cuts):
        """One frame over several writes, pausing so each is its own segment."""
        last = 0
        for c in [c for c in cuts if c < len(data)] + [len(data)]:
            self.sock.sendall(data[last:c])
            last = c
            time.sleep(0.02)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 16))
        if not chunk:
            raise EOFError("peer closed")
        buf += chunk
    return buf


def read(s):
    """One frame: (msgId, flags, body after undoing the transforms)."""
    magic, flags, mid, length = struct.unpack("<BBHI", recv_exact(s, 8))
    if magic != MAGIC:
        raise ValueError("bad magic %#x" % magic)
    return mid, flags, unwrap(flags, recv_exact(s, length))


def nodelay(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(TIMEOUT)


# ---------------------------------------------------------------- content (seeded)

PLAYER_NAMES = ["Aria", "Borin", "Caelum", "Dario", "Elin", "Fenna", "Gwyn", "Hiro", "Isolde", "Jarek",
                "小明", "李雷", "Zoë", "Łucja", "Søren", "Ömer", "Настя", "ゆき", "민준", "Renée"]
ITEM_NAMES = ["Iron Sword", "Health Potion", "Mana Potion", "Leather Boots", "魔法书", "Dragon Scale",
              "Elixir of Björn", "Arrow", "Torch", "Rope (10 m)", "Gold Ring", "Épée rouillée"]
CHATS = ["hi all", "anyone for the boss run?", "gg", "lfg 副本 tonight",
         "Trading 20 Dragon Scale for a Gold Ring, whisper me if you are interested, thanks!",
         "brb", "Grüße aus Berlin 👋", "need heal!!!",
         "The north gate is under attack, every guild member please come to the north gate now!",
         "ok", "where is the merchant? I looked everywhere in the market square already",
         "😀😀😀 nice drop"]


def room(rng, room_id, count):
    players = [{"playerId": 100000 + rng.randrange(900000), "name": rng.choice(PLAYER_NAMES) + str(rng.randrange(100)),
                "x": rng.randrange(-2000, 2000), "y": rng.randrange(-2000, 2000), "hp": rng.randrange(256)}
               for _ in range(count)]
    return {"roomId": room_id, "count": count, "players": players}


def inventory(rng, count, long_names=False):
    items = []
    for _ in range(count):
        name = rng.choice(ITEM_NAMES)
        if long_names:
            # Engraved names: seeded random letters, so the big Inventory stays big when compressed.
            name += " #" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randrange(8, 24)))
        items.append({"itemId": rng.randrange(1, 1 << 32), "amount": rng.randrange(1, 65536), "name": name})
    return {"count": count, "items": items}


# ---------------------------------------------------------------- server

SERVER_TIME = 1795300000


def server_conn(conn):
    port = conn.getpeername()[1]
    # The client number is the login's account (player1..3): wait for it before logging.
    mid, flags, body = read(conn)
    assert mid == 1, mid
    account = body[1:1 + body[0]].decode()
    n = int(account[-1])
    while n not in LOG:
        time.sleep(0.01)
    assert LOG[n]["client_port"] == port
    rng = random.Random(7300 + n)
    # Obfuscation is negotiated by the client XORing its login: mirrored for the whole connection.
    me = Peer(conn, n, "s2c", "zlib", obfuscate=bool(flags & F_XOR))
    player_id = 10_000_000_000 + n
    chats = 0
    while True:
        if mid == 1:
            token = body[1 + body[0]:][1:1 + body[1 + body[0]]].decode()
            if token.startswith("bad"):
                me.send(me.frame(2, {"result": 1, "playerId": 0, "nickname": "", "serverTime": SERVER_TIME}))
            else:
                # Sticky: the login answer, the room and the bag in one write.
                nick = ["", "小明 the Brave", "Søren", "ゆき"][n]
                me.send(me.frame(2, {"result": 0, "playerId": player_id, "nickname": nick, "serverTime": SERVER_TIME + n}),
                        me.frame(5, room(rng, 500 + n, 30 + 12 * n)),
                        me.frame(7, inventory(rng, 25 + 5 * n)))
        elif mid == 3:
            channel = struct.unpack("<I", body[:4])[0]
            text = body[5:5 + body[4]].decode()
            chats += 1
            push = me.frame(4, {"channel": channel, "fromPlayer": player_id, "text": text,
                                "sentAt": SERVER_TIME + 10 * chats})
            if text == "/bag all":
                # More than 64 KiB once inflated, written in 16 KiB pieces (the server's send
                # buffer), so it crosses several TCP segments whatever the window.
                me.send_split(push + me.frame(7, inventory(rng, 2400, long_names=True)), range(16384, 1 << 20, 16384))
            elif text == "/bag":
                me.send(push, me.frame(7, inventory(rng, 1)))           # small: not compressed
            elif chats % 5 == 0:
                state = me.frame(5, room(rng, 500 + n, rng.randrange(30, 61)))
                if n == 3 and chats == 10:
                    # A compressed and XORed RoomState over three writes (the header whole).
                    me.send(push)
                    me.send_split(state, [8 + 10, 8 + 200])
                else:
                    me.send(push, state)
            elif chats % 7 == 0:
                me.send(push, me.frame(5, room(rng, 900 + n, 2)))        # a small room: not compressed
            else:
                me.send(push)
        elif mid == 6:
            client_time = struct.unpack("<Q", body)[0]
            me.send(me.frame(6, {"clientTime": client_time + 1}))
        # Anything else (the unknown id 99) gets no answer.
        mid, flags, body = read(conn)


class Server(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", PORT))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stopping = False
        self.errors = []

    def run(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            nodelay(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()
        self.sock.close()

    def serve(self, conn):
        try:
            server_conn(conn)
        except (EOFError, ConnectionResetError):
            pass
        except Exception as e:                       # reported, so a broken sample is not written
            self.errors.append(repr(e))
        finally:
            conn.close()


# ---------------------------------------------------------------- clients

CLIENTS = {
    # n: (compressor for bodies > 64 bytes, XOR every body, platform)
    1: ("zlib", False, 1),
    2: ("lz4", False, 2),
    3: ("lz4", True, 3),
}
CLIENT_ERRORS = []


def client(n):
    try:
        run_client(n)
    except Exception as e:
        CLIENT_ERRORS.append("client %d: %r" % (n, e))


def run_client(n):
    compressor, obfuscate, platform = CLIENTS[n]
    rng = random.Random(n)
    s = socket.create_connection(("127.0.0.1", PORT), timeout=TIMEOUT)
    nodelay(s)
    log_conn(n, s.getsockname()[1])
    me = Peer(s, n, "c2s", compressor, obfuscate)
    login = lambda token: me.frame(1, {"account": "player%d" % n, "token": token,
                                       "clientVersion": 10203 + n, "platform": platform})
    if n == 3:
        me.send(login("bad-token"))
        read(s)                                                  # result 1: bad token
    me.send(login("tok-%d-%s" % (n, "ключ" if n == 2 else "abc")))
    for _ in range(3):                                           # LoginResp, RoomState, Inventory
        read(s)
    clock = 1_700_000_000_000 + 1000 * n
    for i in range(22):
        text = CHATS[(i + n) % len(CHATS)]
        if i % 6 == 5:
            text += " " + "!" * rng.randrange(1, 4) + " (x%d)" % (i + 1)
        chat = me.frame(3, {"channel": [0, 1, 7][i % 3], "text": text})
        answers = 1 + (1 if (i + 1) % 5 == 0 or ((i + 1) % 7 == 0) else 0)
        if n == 1 and i == 4:
            # Split: the 8-byte header cut after 3 bytes, the body in two more writes.
            me.send_split(chat, [3, 12])
        elif n == 2 and i == 8:
            # Split inside the (lz4-compressed) body only.
            me.send_split(chat, [8 + 9])
        elif i % 4 == 3:
            # Sticky: a chat and a heartbeat in one write.
            clock += 5000
            me.send(chat, me.frame(6, {"clientTime": clock}))
            answers += 1
        else:
            me.send(chat)
        for _ in range(answers):
            read(s)
        if n == 1 and i == 10:
            # An id no dissector line knows: a small plain body, no answer.
            me.send(me.frame(99, raw=b"\x01\x02\x03\x04hello"))
    # The bag: small for clients 1 and 3, the big one for client 2.
    me.send(me.frame(3, {"channel": 0, "text": "/bag all" if n == 2 else "/bag"}))
    read(s); read(s)
    # Sticky: three heartbeats in one write.
    me.send(*[me.frame(6, {"clientTime": clock + 100 * k}) for k in range(1, 4)])
    for _ in range(3):
        read(s)
    s.close()


def dump(log):
    """The log as JSON with one message a line."""
    line = lambda o: json.dumps(o, ensure_ascii=False, separators=(",", ":"))
    out = ['{"protocol":%s,"port":%d,"xor_key":%s,"connections":[' % (line(log["protocol"]), log["port"], line(log["xor_key"]))]
    for ci, c in enumerate(log["connections"]):
        out.append(' {"client":%d,"client_port":%d,' % (c["client"], c["client_port"]))
        for d in ("c2s", "s2c"):
            out.append('  "%s":[' % d)
            out.append(",\n".join("   " + line(m) for m in c[d]))
            out.append("  ]" + ("," if d == "c2s" else ""))
        out.append(" }" + ("," if ci < len(log["connections"]) - 1 else ""))
    out.append("]}")
    return "\n".join(out) + "\n"


def main():
    LOG.clear()
    out = os.path.join(HERE, "zgame.pcap")
    with Capture(out, PORT):
        server = Server()
        server.start()
        clients = []
        for n in CLIENTS:
            t = threading.Thread(target=client, args=(n,))
            t.start()
            clients.append(t)
            time.sleep(0.05)
        for t in clients:
            t.join(3 * TIMEOUT)
        time.sleep(0.3)
        server.stopping = True
        server.join(2)
    errors = CLIENT_ERRORS + server.errors + ["client still running" for t in clients if t.is_alive()]
    if errors:
        raise SystemExit("recording failed: " + "; ".join(errors))
    log = {"protocol": "zgame", "port": PORT, "xor_key": XOR_KEY.hex(),
           "connections": [LOG[n] for n in sorted(LOG)]}
    with open(os.path.join(HERE, "zgame.messages.json"), "w") as f:
        f.write(dump(log))
    counts = {}
    for c in log["connections"]:
        for d in ("c2s", "s2c"):
            for m in c[d]:
                k = "+".join(m["transforms"]) or "plain"
                counts[k] = counts.get(k, 0) + 1
    print("messages:", sum(counts.values()), counts)


if __name__ == "__main__":
    main()
