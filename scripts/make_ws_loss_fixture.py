#!/usr/bin/env python3
"""Record the WebSocket loss fixture: ten real WebSocket connections (Python's `websockets`
package as both peers, `pip install websockets`) over loopback while tcpdump writes what crosses
`lo`, every data message the peers sent logged, then a copy of the capture with six TCP data
segments removed. Run as root from the repository root:

    python3 scripts/make_ws_loss_fixture.py

Writes, under Tests/FramedumpCoreTests/Fixtures/:

- `ws_loss.pcap`: the capture without six TCP data segments;
- `ws_loss.messages.json`: every data message as the peers sent it, per connection (by client
  port) and direction, in order (`opcode`, then `text` or `payload` in hex), with `lost`: the
  number of the removed segment that held some of its bytes, where one did (a message runs from
  its first frame to its last: a ping between its fragments is part of it); whether each
  direction kept its compression window (`c2s_context_takeover`, `s2c_context_takeover`); and
  the removed segments: packet number in the capture as recorded, connection, direction, stream
  offset and length, rule, the frame its first byte belongs to (`frame`: start and end offsets),
  the messages it touched, the first message after it (`after`), and the whole pcap record
  (`record`, hex), so the capture as recorded can be rebuilt (`scripts/measure_ws_loss.py` and
  the tests do).

The connections (server on 127.0.0.1:12347, path `/loss`, which no dissector file claims, so
framedump's built-in `websocket` dissector shows them): four without compression, three with
permessage-deflate and context takeover (a lost message takes the window later messages refer
to), three with permessage-deflate and no context takeover either way. Each runs 24 seeded
steps: JSON text heartbeats and small binary messages, bursts of three messages written back to
back (the first sometimes large), uploads of 2-4.5 KB (binary or text), downloads of as much
answered by the content and at once a short message, and a fragmented text message with a ping
between its fragments. Every socket has TCP_NODELAY, a maximum segment size of 1400 and a 2 KiB
receive buffer (so segments stay near 1400 bytes on `lo`, whose MTU is 64 KiB, and a large
message spans several of them).

The removed segments are chosen by a seeded rule over the recorded capture: three that lie
inside the payload of a frame of 2,000 bytes or more (neither its first nor its last segment;
one in each kind of connection), one that holds a frame boundary (the end of one frame and the
start of the next), two that begin with the header of such a large frame (the rest of its
payload is then hunted through); each in a different connection, at least three messages after
it in its direction, both directions among them. Before anything is written the capture is read
back here (TCP reassembled, frames cut, unmasked, inflated) and must give exactly the logged
messages, with no byte missing. Everything runs with timeouts, and tcpdump is stopped by its
own PID.
"""
import asyncio, json, os, random, socket, struct, sys, tempfile, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
from capture import Capture  # noqa: E402

from websockets.asyncio.client import connect  # noqa: E402
from websockets.asyncio.server import serve  # noqa: E402
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "Tests", "FramedumpCoreTests", "Fixtures")
SEED = 28
PORT = 12347
CLIENT_PORT = 40100          # connection i uses client port CLIENT_PORT + i
MSS = 1400
RCVBUF = 2048
STEPS = 24
TIMEOUT = 120
KINDS = ["none", "deflate", "deflate-no-takeover", "none", "deflate", "deflate-no-takeover",
         "none", "deflate", "none", "deflate-no-takeover"]
LARGE, MAX_LARGE = 2000, 4500   # large messages; a frame of LARGE bytes or more can lose a segment from its middle
REMOVE_INSIDE, REMOVE_BOUNDARY, REMOVE_HEADER = 3, 1, 2

# Every data message as the library sent it: LOG[client port]["c2s" | "s2c"].
LOG = {}
# The control frames read back from the capture, per (client port, direction).
CONTROLS = {}

WORDS = ("scene player room item level score chat open close move attack heal buy sell quest "
         "party guild map zone team shield sword potion gold silver ready wait join leave").split()


def tcp_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, MSS)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    return s


def entry(msg):
    if isinstance(msg, str):
        return {"opcode": "text", "text": msg}
    return {"opcode": "binary", "payload": msg.hex()}


async def send(ws, log, msg):
    log.append(entry(msg))
    await ws.send(msg)


def text_of(rng, kind, size):
    """A JSON text message of about `size` bytes made of random words."""
    lines = []
    body = {"messageType": kind, "lines": lines}
    while len(json.dumps(body)) < size:
        lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + " %d" % rng.randint(0, 99999))
    return json.dumps(body)


def binary_of(rng, app_id, size):
    """[u32 little-endian appId][random bytes]."""
    return struct.pack("<I", app_id) + rng.randbytes(max(size - 4, 0))


async def handler(ws):
    """The server: answers every message; a `get` is answered with a large message."""
    port = ws.remote_address[1]
    log = LOG[port]["s2c"]
    rng = random.Random(SEED * 100003 + port)
    async for msg in ws:
        if isinstance(msg, str):
            body = json.loads(msg)
            t = body.get("messageType")
            if t == "heartBeat":
                reply = json.dumps({"messageType": "heartBeatAck", "seq": body["seq"], "time": 1700000000 + body["seq"]})
            elif t == "get":
                # The content, and at once a short message whose head shares the content's last segment.
                if body["kind"] == "binary":
                    await send(ws, log, binary_of(rng, 2000 + body["seq"], body["size"]))
                else:
                    await send(ws, log, text_of(rng, "content", body["size"]))
                reply = json.dumps({"messageType": "done", "seq": body["seq"]})
            else:
                reply = json.dumps({"messageType": "ack", "of": t, "length": len(msg)})
        else:
            app_id = struct.unpack("<I", msg[:4])[0] if len(msg) >= 4 else 0
            reply = struct.pack("<I", app_id + 1000) + b"ok: %d bytes" % len(msg)
        await send(ws, log, reply)


async def client(i):
    kind = KINDS[i]
    port = CLIENT_PORT + i
    rng = random.Random(SEED * 1009 + i)
    log = LOG[port]["c2s"]
    s = tcp_socket()
    s.bind(("127.0.0.1", port))
    s.settimeout(TIMEOUT)
    s.connect(("127.0.0.1", PORT))
    s.setblocking(False)
    if kind == "none":
        options = {"compression": None}
    elif kind == "deflate":
        options = {"compression": "deflate"}
    else:
        options = {"compression": None, "extensions": [ClientPerMessageDeflateFactory(
            server_no_context_takeover=True, client_no_context_takeover=True, server_max_window_bits=12,
            client_max_window_bits=12, compress_settings={"memLevel": 5})]}
    seq = 0

    def small():
        nonlocal seq
        seq += 1
        if rng.random() < 0.55:
            return json.dumps({"messageType": "heartBeat", "seq": seq})
        return binary_of(rng, seq, rng.randint(8, 240))

    def large():
        nonlocal seq
        seq += 1
        size = rng.randint(LARGE, MAX_LARGE)
        return binary_of(rng, seq, size) if rng.random() < 0.5 else text_of(rng, "upload", size)

    async with connect("ws://127.0.0.1:%d/loss" % PORT, sock=s, max_size=None, open_timeout=TIMEOUT,
                       ping_interval=None, origin="http://localhost", **options) as ws:
        for _ in range(STEPS):
            step = rng.choices(["small", "burst", "upload", "download", "fragmented"], weights=[50, 15, 12, 15, 8])[0]
            if step == "small":
                await send(ws, log, small())
                await ws.recv()
            elif step == "burst":
                # Written back to back: a large first message's tail shares segments with the next.
                await send(ws, log, large() if rng.random() < 0.5 else small())
                for _ in range(2):
                    await send(ws, log, small())
                for _ in range(3):
                    await ws.recv()
            elif step == "upload":
                await send(ws, log, large())
                await ws.recv()
            elif step == "download":
                seq += 1
                await send(ws, log, json.dumps({"messageType": "get", "seq": seq,
                                                "kind": rng.choice(["binary", "text"]), "size": rng.randint(LARGE, MAX_LARGE)}))
                await ws.recv()
                await ws.recv()
            else:
                parts = [text_of(rng, "report", rng.randint(40, 400)) for _ in range(3)]
                whole = json.dumps({"messageType": "report", "parts": parts})
                cuts = sorted(rng.sample(range(1, len(whole)), 2))
                pieces = [whole[:cuts[0]], whole[cuts[0]:cuts[1]], whole[cuts[1]:]]

                async def fragments():
                    yield pieces[0]
                    await ws.ping(b"between fragments")
                    yield pieces[1]
                    yield pieces[2]
                log.append(entry(whole))
                await ws.send(fragments())
                await ws.recv()
        await ws.close(code=1000, reason="done")


async def scenario():
    listener = tcp_socket()
    listener.bind(("127.0.0.1", PORT))
    listener.listen(16)
    listener.setblocking(False)
    async with serve(handler, sock=listener, compression="deflate", max_size=None, ping_interval=None):
        for i in range(len(KINDS)):
            LOG[CLIENT_PORT + i] = {"kind": KINDS[i], "c2s": [], "s2c": []}
            await client(i)
        await asyncio.sleep(0.2)


# MARK: - Reading the capture back

def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack("<I", data[:4])
    assert magic == 0xa1b2c3d4, "a little-endian microsecond pcap from tcpdump"
    linktype, = struct.unpack("<I", data[20:24])
    assert linktype == 1, "Ethernet (tcpdump -i lo)"
    records, i = [], 24
    while i < len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[i:i + 16])
        records.append(data[i:i + 16 + incl])
        i += 16 + incl
    return data[:24], records


def tcp_of(record):
    """(client port, direction, seq, flags, payload) of a record, or None."""
    frame = record[16:]
    if struct.unpack(">H", frame[12:14])[0] != 0x0800:
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0f) * 4
    total = struct.unpack(">H", ip[2:4])[0]
    if ip[9] != 6:
        return None
    tcp = ip[ihl:total]
    sport, dport, seq = struct.unpack(">HHI", tcp[:8])
    flags = tcp[13]
    payload = tcp[(tcp[12] >> 4) * 4:]
    if sport == PORT:
        return dport, "s2c", seq, flags, payload
    return sport, "c2s", seq, flags, payload


def streams(records):
    """Each connection's two byte streams, and the data segments (record index, start, end)."""
    isn, segs = {}, {}
    for n, r in enumerate(records):
        t = tcp_of(r)
        if t is None:
            continue
        port, d, seq, flags, payload = t
        if flags & 0x02:
            isn[(port, d)] = seq
        if payload:
            start = (seq - isn[(port, d)] - 1) % (1 << 32)
            segs.setdefault((port, d), []).append((n, start, start + len(payload), payload))
    out = {}
    for key, ss in segs.items():
        buf = bytearray()
        for n, a, b, p in sorted(ss, key=lambda s: s[1]):
            if b <= len(buf):
                assert bytes(buf[a:b]) == p, "a retransmission with other bytes"
                continue
            assert a <= len(buf), "bytes missing from the capture at %s offset %d: record again" % (key, len(buf))
            buf += p[len(buf) - a:]
        out[key] = (bytes(buf), [(n, a, b) for n, a, b, _ in ss])
    return out


def parse_ws(stream, port, d, takeover):
    """The data messages of one direction: (opcode, payload, [frame spans]) in order."""
    head_end = stream.index(b"\r\n\r\n") + 4
    i, msgs, current = head_end, [], None
    controls = CONTROLS.setdefault((port, d), [])
    inflater = zlib.decompressobj(-15)
    while i < len(stream):
        b0, b1 = stream[i], stream[i + 1]
        op, n, h = b0 & 0x0f, b1 & 0x7f, 2
        if n == 126:
            n, h = struct.unpack(">H", stream[i + 2:i + 4])[0], 4
        elif n == 127:
            n, h = struct.unpack(">Q", stream[i + 2:i + 10])[0], 10
        key = stream[i + h:i + h + 4] if b1 & 0x80 else b"\0\0\0\0"
        h += 4 if b1 & 0x80 else 0
        payload = bytes(c ^ key[k % 4] for k, c in enumerate(stream[i + h:i + h + n]))
        span = (i, i + h, i + h + n)   # header, payload, end
        i += h + n
        if op >= 8:
            controls.append({"spans": [span]})
            continue
        if op != 0:
            current = {"opcode": "text" if op == 1 else "binary", "compressed": bool(b0 & 0x40), "data": b"", "spans": []}
        current["data"] += payload
        current["spans"].append(span)
        if b0 & 0x80:
            if current["compressed"]:
                if not takeover:
                    inflater = zlib.decompressobj(-15)
                current["data"] = inflater.decompress(current["data"] + b"\x00\x00\xff\xff")
            msgs.append(current)
            current = None
    return msgs


def extension_params(stream):
    head = stream[:stream.index(b"\r\n\r\n")].decode().lower()
    for line in head.split("\r\n"):
        if line.startswith("sec-websocket-extensions:"):
            return line.split(":", 1)[1].strip()
    return None


def choose_removals(streams_, parsed):
    """The seeded rule: three segments inside large frames (one in each kind of connection), one
    holding a frame boundary, two holding the header of a large frame."""
    inside, boundary, header = [], [], []
    for (port, d), (stream, segs) in sorted(streams_.items()):
        msgs = parsed[(port, d)]
        frames = [(m, s) for m, msg in enumerate(msgs) for s in msg["spans"]]
        for n, a, b in segs:
            if len({m for m, (x, _, _) in frames if x >= b}) < 3:
                continue
            for m, (x, p, y) in frames:
                if y - p >= LARGE and p < a and b < y:
                    inside.append((port, d, n, a, b))
                if a < x < b:
                    boundary.append((port, d, n, a, b))
                if y - p >= LARGE and x == a and b < y:
                    header.append((port, d, n, a, b))
    inside, boundary, header = sorted(set(inside)), sorted(set(boundary)), sorted(set(header))
    print("candidates: %d inside large frames, %d holding a frame boundary, %d holding a large frame's header"
          % (len(inside), len(boundary), len(header)))
    rng = random.Random(SEED)
    rules = [(inside, REMOVE_INSIDE, "inside a frame"), (boundary, REMOVE_BOUNDARY, "frame boundary"),
             (header, REMOVE_HEADER, "header of a large frame")]
    for _ in range(10000):
        picks = [(p, rule) for pool, count, rule in rules for p in rng.sample(pool, count)]
        ports = [p[0] for p, _ in picks]
        kinds = {LOG[p[0]]["kind"] for p, _ in picks[:REMOVE_INSIDE]}
        if len(set(ports)) == len(picks) and len(kinds) == 3 and {p[1] for p, _ in picks} == {"c2s", "s2c"}:
            return picks
    raise SystemExit("no choice of segments meets the rule: record again")


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, "ws_loss_full.pcap")
        with Capture(full, PORT):
            asyncio.run(asyncio.wait_for(scenario(), TIMEOUT))
        header, records = read_pcap(full)
    streams_ = streams(records)
    parsed = {}
    for port in LOG:
        ext = extension_params(streams_[(port, "s2c")][0]) or ""
        LOG[port]["extensions"] = ext or None
        for d, flag in (("c2s", "client_no_context_takeover"), ("s2c", "server_no_context_takeover")):
            takeover = flag not in ext
            LOG[port][d + "_context_takeover"] = takeover if ext else None
            msgs = parse_ws(streams_[(port, d)][0], port, d, takeover)
            got = [entry(m["data"].decode() if m["opcode"] == "text" else m["data"]) for m in msgs]
            assert got == LOG[port][d], "port %d %s: the capture does not give the logged messages" % (port, d)
            parsed[(port, d)] = msgs
    removals = choose_removals(streams_, parsed)
    removed = []
    for k, ((port, d, n, a, b), rule) in enumerate(removals):
        # A message's extent runs from its first frame to its last (control frames between its
        # fragments included: a gap there may have held fragments, so the message is cut).
        touched = [m for m, msg in enumerate(parsed[(port, d)]) if msg["spans"][0][0] < b and a < msg["spans"][-1][2]]
        for m in touched:
            LOG[port][d][m]["lost"] = k
        # The first message after the segment: with context takeover, it and those after it may
        # need the window the segment's bytes were part of.
        after = next(m for m, msg in enumerate(parsed[(port, d)]) if msg["spans"][0][0] >= b)
        # The frame the segment's first byte belongs to (data or control): where it starts and ends.
        frame = next([x, y] for msg in parsed[(port, d)] + CONTROLS[(port, d)] for x, _, y in msg["spans"] if x <= a < y)
        removed.append({"packet": n + 1, "conn": port, "dir": d, "offset": a, "length": b - a, "rule": rule,
                        "frame": frame, "messages": touched, "after": after, "record": records[n].hex()})
    drop = {r["packet"] - 1 for r in removed}
    with open(os.path.join(OUT, "ws_loss.pcap"), "wb") as f:
        f.write(header)
        for n, r in enumerate(records):
            if n not in drop:
                f.write(r)
    log = {"seed": SEED, "server_port": PORT,
           "removed": removed,
           "connections": [dict(client_port=port, **LOG[port]) for port in sorted(LOG)]}
    with open(os.path.join(OUT, "ws_loss.messages.json"), "w") as f:
        json.dump(log, f, indent=0, separators=(",", ":"))
        f.write("\n")
    total = sum(len(c[d]) for c in LOG.values() for d in ("c2s", "s2c"))
    lost = sum(1 for c in LOG.values() for d in ("c2s", "s2c") for m in c[d] if "lost" in m)
    print("%d connections, %d messages, %d touched by the %d removed segments" % (len(LOG), total, lost, len(removed)))
    for r in removed:
        print("  packet %(packet)d, %(conn)d %(dir)s, offset %(offset)d+%(length)d, %(rule)s: messages %(messages)s" % r)


if __name__ == "__main__":
    main()
