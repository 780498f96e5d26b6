#!/usr/bin/env python3
"""Record samples/pairs.pcap: a small game protocol whose responses carry other message ids
(cmd values) than their requests, answered after known server delays, between real asyncio
peers on loopback; and samples/pairs.messages.json, every message as the peers sent it, with
each request paired with the response that answers it and the latency the client measured.
Run as root from the repository root (the standard library only):

    /usr/bin/python3 samples/make_pairs_sample.py

The protocol ("pgame", TCP port 8400, big-endian): each frame is `uint32 length` (the whole
frame, this 10-byte header included), `uint16 cmd`, `uint32 seq` (the sender's own counter,
starting at 1 per connection and per direction), then the body:

    1    LoginReq       c2s  uint16 n, n bytes of UTF-8 (the user name)
    2    LoginResp      s2c  uint8 result (0 ok), uint32 playerId
    0x20 EnterRoomReq   c2s  uint16 room
    0x21 EnterRoomResp  s2c  uint32 ackSeq (the seq of the request it answers), uint8 result
    100  Ping           c2s  uint64 clientTime (microseconds)
    101  Pong           s2c  uint64 clientTime (echoed), uint64 serverTime (microseconds)
    50   Notice         s2c  uint16 n, n bytes of UTF-8 (unsolicited: it answers nothing)

Scenario: a server on 127.0.0.1 port 8400 and two concurrent clients, TCP_NODELAY on every
socket so each write is its own segment. The server answers a LoginReq 30 ms after it arrives
(the LoginResp, then a Notice right after it), a Ping at once, and an EnterRoomReq after a delay
set by the room (room 1: 40 ms, room 2: 10 ms, room 3: 25 ms), each delayed answer waited for by
`asyncio.sleep` in a task of its own; it also sends each connection one unsolicited Notice
200 ms after accepting it. Each client logs in (player1, player2), sends 5 Pings 20 ms apart
(each waiting for its Pong), EnterRoom(3) alone (waiting for its answer), then EnterRoom(1) and
EnterRoom(2) in one write (two frames in one segment): room 2's answer goes out first, 30 ms
before room 1's, so the responses come out of request order and only ackSeq tells which is
which. Once the 200 ms Notice has come (so that it lands at the same place in every run), the
client sends 2 more Pings 20 ms apart and closes; client 2 writes the first of these two Pings'
10-byte header apart from its body (two writes, 5 ms apart). Each client takes `time.time()`
when it has written a request's last byte and when it has read a response completely. Every
socket operation has a timeout, the whole run is bounded, and tcpdump is stopped by its own PID.

pairs.messages.json: {"protocol": "pgame", "server_port": 8400, "connections": [{"client": N,
"client_port": P, "c2s": [message, ...], "s2c": [message, ...], "pairs": [pair, ...]}]}; the
messages of each direction in wire order, each {"cmd", "name", "seq", "length" (the whole
frame), "fields": {...}} with the body's fields named as above ("n" and "user" for a LoginReq,
"n" and "text" for a Notice, "result" and "playerId", "room", "ackSeq" and "result",
"clientTime", "clientTime" and "serverTime"); each pair {"request": {"cmd", "seq"}, "response":
{"cmd", "seq"}, "client_latency_ms"} for every LoginReq, Ping and EnterRoomReq, in request order,
the latency being the response's read time minus the request's written time by the client's
clock (rounded to the microsecond). clientTime and serverTime are wall-clock times, so they (and
the latencies) differ from run to run; everything else is the same in every run but the ports.
"""
import asyncio, json, os, socket, struct, subprocess, time

from capture import Capture, follow

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 8400
TIMEOUT = 5
HEADER = struct.Struct(">IHI")

LOGIN_REQ, LOGIN_RESP, ENTER_REQ, ENTER_RESP, PING, PONG, NOTICE = 1, 2, 0x20, 0x21, 100, 101, 50
NAMES = {LOGIN_REQ: "LoginReq", LOGIN_RESP: "LoginResp", ENTER_REQ: "EnterRoomReq", ENTER_RESP: "EnterRoomResp",
         PING: "Ping", PONG: "Pong", NOTICE: "Notice"}
LOGIN_DELAY = 0.030
ROOM_DELAYS = {1: 0.040, 2: 0.010, 3: 0.025}
UNSOLICITED_AT = 0.200
PING_GAP = 0.020
PLAYER_IDS = {"player1": 100001, "player2": 70000002}
UNSOLICITED = "maintenance at 04:00 — back in 5 minutes"

SERVER_LOG = {}  # client port -> the s2c messages, as the server wrote them
CLIENTS = {}     # client port -> what the client sent, received and measured


def now_us():
    return int(time.time() * 1_000_000)


def text_fields(key, text):
    return {"n": len(text.encode()), key: text}


def encode_body(cmd, f):
    if cmd == LOGIN_REQ:
        return struct.pack(">H", f["n"]) + f["user"].encode()
    if cmd == NOTICE:
        return struct.pack(">H", f["n"]) + f["text"].encode()
    if cmd == LOGIN_RESP:
        return struct.pack(">BI", f["result"], f["playerId"])
    if cmd == ENTER_REQ:
        return struct.pack(">H", f["room"])
    if cmd == ENTER_RESP:
        return struct.pack(">IB", f["ackSeq"], f["result"])
    if cmd == PING:
        return struct.pack(">Q", f["clientTime"])
    if cmd == PONG:
        return struct.pack(">QQ", f["clientTime"], f["serverTime"])
    raise ValueError("unknown cmd %d" % cmd)


def decode_body(cmd, body):
    if cmd in (LOGIN_REQ, NOTICE):
        (n,) = struct.unpack_from(">H", body)
        assert len(body) == 2 + n, (cmd, len(body), n)
        return {"n": n, ("user" if cmd == LOGIN_REQ else "text"): body[2:].decode()}
    layouts = {LOGIN_RESP: (">BI", ("result", "playerId")), ENTER_REQ: (">H", ("room",)),
               ENTER_RESP: (">IB", ("ackSeq", "result")), PING: (">Q", ("clientTime",)),
               PONG: (">QQ", ("clientTime", "serverTime"))}
    fmt, keys = layouts[cmd]
    assert len(body) == struct.calcsize(fmt), (cmd, len(body))
    return dict(zip(keys, struct.unpack(fmt, body)))


def message(cmd, seq, fields):
    """The message as logged, and its frame."""
    body = encode_body(cmd, fields)
    data = HEADER.pack(HEADER.size + len(body), cmd, seq) + body
    return {"cmd": cmd, "name": NAMES[cmd], "seq": seq, "length": len(data), "fields": fields}, data


def parse(data, pos):
    """The message at `pos` in `data` and where the next one starts."""
    length, cmd, seq = HEADER.unpack_from(data, pos)
    assert pos + length <= len(data), (pos, length, len(data))
    fields = decode_body(cmd, data[pos + HEADER.size:pos + length])
    return {"cmd": cmd, "name": NAMES[cmd], "seq": seq, "length": length, "fields": fields}, pos + length


async def read_message(reader):
    head = await asyncio.wait_for(reader.readexactly(HEADER.size), TIMEOUT)
    length, _, _ = HEADER.unpack(head)
    body = await asyncio.wait_for(reader.readexactly(length - HEADER.size), TIMEOUT)
    return parse(head + body, 0)[0]


async def serve(reader, writer):
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = writer.get_extra_info("peername")[1]
    log = SERVER_LOG[port] = []
    seq = 0

    def send(cmd, fields):
        """Numbers, logs and writes one frame: nothing is awaited in between, so the log is in
        wire order whichever task sends."""
        nonlocal seq
        seq += 1
        msg, data = message(cmd, seq, fields)
        log.append(msg)
        writer.write(data)

    async def later(delay, *msgs):
        await asyncio.sleep(delay)
        for cmd, fields in msgs:
            send(cmd, fields)
            await asyncio.wait_for(writer.drain(), TIMEOUT)

    tasks = [asyncio.create_task(later(UNSOLICITED_AT, (NOTICE, text_fields("text", UNSOLICITED))))]
    try:
        while True:
            try:
                req = await read_message(reader)
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.TimeoutError):
                break
            f = req["fields"]
            if req["cmd"] == LOGIN_REQ:
                tasks.append(asyncio.create_task(later(
                    LOGIN_DELAY, (LOGIN_RESP, {"result": 0, "playerId": PLAYER_IDS[f["user"]]}),
                    (NOTICE, text_fields("text", "welcome, %s" % f["user"])))))
            elif req["cmd"] == ENTER_REQ:
                tasks.append(asyncio.create_task(later(
                    ROOM_DELAYS[f["room"]], (ENTER_RESP, {"ackSeq": req["seq"], "result": 0}))))
            elif req["cmd"] == PING:
                send(PONG, {"clientTime": f["clientTime"], "serverTime": now_us()})
                await asyncio.wait_for(writer.drain(), TIMEOUT)
            else:
                break
    finally:
        for t in tasks:
            t.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for r in results:
            if isinstance(r, Exception) and not isinstance(r, asyncio.CancelledError):
                print("server task failed:", repr(r))
        writer.close()


async def client(k):
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), TIMEOUT)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = sock.getsockname()[1]
    sent, received = [], []  # (message, written time) and (message, read time), in wire order
    CLIENTS[port] = {"client": k, "sent": sent, "received": received, "pairs": []}
    arrived = asyncio.Event()
    seq = 0

    async def read_loop():
        while True:
            try:
                msg = await read_message(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            received.append((msg, time.time()))
            arrived.set()

    async def expect(pred):
        """The first received message `pred` accepts, and when it was read; waits for it."""
        async def look():
            while True:
                for msg, t in received:
                    if pred(msg):
                        return msg, t
                arrived.clear()
                await arrived.wait()
        return await asyncio.wait_for(look(), TIMEOUT)

    async def send(*reqs, pieces=None):
        """Writes the frames of `reqs` ((cmd, fields) pairs) in one write, or cut at the offsets
        `pieces` into writes 5 ms apart; returns the messages sent, once the last byte is written."""
        nonlocal seq
        msgs, data = [], b""
        for cmd, fields in reqs:
            seq += 1
            msg, frame = message(cmd, seq, fields)
            msgs.append(msg)
            data += frame
        at = 0
        for p in (pieces or []) + [len(data)]:
            if at:
                await asyncio.sleep(0.005)
            writer.write(data[at:p])
            # The bytes are with the kernel once the transport holds none of them back.
            written = time.time() if writer.transport.get_write_buffer_size() == 0 else None
            await asyncio.wait_for(writer.drain(), TIMEOUT)
            at = p
        written = written or time.time()
        sent.extend((m, written) for m in msgs)
        return msgs

    def pair(req, resp):
        (q, written), (r, read) = req, resp
        CLIENTS[port]["pairs"].append({"request": {"cmd": q["cmd"], "seq": q["seq"]},
                                       "response": {"cmd": r["cmd"], "seq": r["seq"]},
                                       "client_latency_ms": round((read - written) * 1000, 3)})

    def last_sent(msg):
        return next(s for s in sent if s[0] is msg)

    async def ping(pieces=None):
        (req,) = await send((PING, {"clientTime": now_us()}), pieces=pieces)
        t0 = req["fields"]["clientTime"]
        pair(last_sent(req), await expect(lambda m: m["cmd"] == PONG and m["fields"]["clientTime"] == t0))

    reading = asyncio.create_task(read_loop())
    try:
        user = "player%d" % k
        (login,) = await send((LOGIN_REQ, text_fields("user", user)))
        pair(last_sent(login), await expect(lambda m: m["cmd"] == LOGIN_RESP))
        for i in range(5):
            if i:
                await asyncio.sleep(PING_GAP)
            await ping()
        (enter3,) = await send((ENTER_REQ, {"room": 3}))
        pair(last_sent(enter3), await expect(lambda m: m["cmd"] == ENTER_RESP and m["fields"]["ackSeq"] == enter3["seq"]))
        enter1, enter2 = await send((ENTER_REQ, {"room": 1}), (ENTER_REQ, {"room": 2}))  # two frames, one write
        resp1 = await expect(lambda m: m["cmd"] == ENTER_RESP and m["fields"]["ackSeq"] == enter1["seq"])
        resp2 = await expect(lambda m: m["cmd"] == ENTER_RESP and m["fields"]["ackSeq"] == enter2["seq"])
        assert resp2[0]["seq"] < resp1[0]["seq"], "room 2's answer should go out before room 1's"
        pair(last_sent(enter1), resp1)
        pair(last_sent(enter2), resp2)
        # The unsolicited Notice (the second Notice) before the last Pings, so it sits at the same
        # place in every run.
        await expect(lambda m: m["cmd"] == NOTICE and m["fields"]["text"] == UNSOLICITED)
        await ping(pieces=[HEADER.size] if k == 2 else None)  # client 2: the header apart from its body
        await asyncio.sleep(PING_GAP)
        await ping()
    finally:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), TIMEOUT)


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT)
    try:
        await asyncio.wait_for(asyncio.gather(*(client(k) for k in (1, 2))), 10)
        await asyncio.sleep(0.3)
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), TIMEOUT)


def connections():
    conns = []
    for port, c in sorted(CLIENTS.items(), key=lambda kv: kv[1]["client"]):
        s2c = SERVER_LOG[port]
        assert [m for m, _ in c["received"]] == s2c, "the client read what the server wrote"
        conns.append({"client": c["client"], "client_port": port, "c2s": [m for m, _ in c["sent"]],
                      "s2c": s2c, "pairs": c["pairs"]})
    return conns


def check(pcap, conns):
    """Each direction's bytes in the capture, as tshark's follow,tcp gives them, are the frames logged."""
    if subprocess.run(["which", "tshark"], capture_output=True).returncode != 0:
        print("tshark not found: the capture is not cross-checked")
        return
    for c in conns:
        sides = follow(pcap, "127.0.0.1:%d,127.0.0.1:%d" % (c["client_port"], PORT))
        for d in ("c2s", "s2c"):
            pos, n, data = 0, 0, sides[d]
            while pos < len(data):
                msg, pos = parse(data, pos)
                assert msg == c[d][n], (c["client_port"], d, n)
                n += 1
            assert n == len(c[d]), (c["client_port"], d, n, len(c[d]))
    print("checked against tshark's follow,tcp:", sum(len(c["c2s"]) + len(c["s2c"]) for c in conns), "messages")


if __name__ == "__main__":
    out = os.path.join(HERE, "pairs.pcap")
    with Capture(out, PORT):
        asyncio.run(main())
    conns = connections()
    check(out, conns)
    for c in conns:
        print("client %d (port %d): %d c2s, %d s2c; latencies:" % (c["client"], c["client_port"], len(c["c2s"]), len(c["s2c"])),
              ", ".join("%s %.3f ms" % (NAMES[p["request"]["cmd"]], p["client_latency_ms"]) for p in c["pairs"]))
    with open(os.path.join(HERE, "pairs.messages.json"), "w") as f:
        json.dump({"protocol": "pgame", "server_port": PORT, "connections": conns}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", os.path.join(HERE, "pairs.messages.json"))
