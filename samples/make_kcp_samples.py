#!/usr/bin/env python3
"""Record samples/kcp.pcap: the game protocol carried by KCP over UDP between real KCP peers,
and samples/kcp.messages.json, every game frame as the peers passed it to KCP. Run as root
from the repository root (needs the `kcp` package, 0.1.6: `pip install kcp`, which builds
ikcp.c, the reference KCP implementation, into a Python extension):

    python3 samples/make_kcp_samples.py

KCP (ikcp.c) is an ARQ protocol over UDP. A datagram holds one or more segments, each
[u32le conv][u8 cmd][u8 frg][u16le wnd][u32le ts][u32le sn][u32le una][u32le len][len bytes],
cmd 81 PUSH (data), 82 ACK (sn and ts echo one PUSH), 83 WASK / 84 WINS (window probe and
answer). In message mode (ikcp's default) every ikcp_send is one message: a message longer
than the mss is cut into segments whose frg counts down to 0 (frg 0: the message ends here).
In stream mode (`stream = 1`) sends are one byte stream: a send is appended to the last
segment still queued while it has room, every segment has frg 0, and segment boundaries fall
anywhere, game frames included.

The payload is the game protocol (port 8000 over TCP in the other samples):
[u32 BE total length, header included][u16 BE message id][body], Dissectors/game.dissector.
There is no login message in the server team's document: a client logs in by entering scene
0 (Cs_20001 with a "login ..." message), which the server answers like any scene request.

Scenario: one server with two UDP ports, 8100 in message mode and 8101 in stream mode, and
three concurrent clients on 127.0.0.1, each with its own UDP socket and conv (0x11223344 + n):
clients 1 and 2 on 8100, client 3 on 8101. MTU 1400 (mss 1376), nodelay 1, update interval
10 ms, fast resend after 2 skipping ACKs, no congestion window, windows 128/128. Each client
logs in, asks for scenes (the server answers with SC_20001 and Sc_30005, sometimes both in one
send, sometimes in two), sends heartbeats (answered by Sc_30005 "tick"), sometimes a request
and a heartbeat in one send (sticky), a Cs_20001 whose message is about 3 KB (fragmented in
message mode), answered by an SC_20001 of about 4.5 KB; the stream client also writes a burst
of 40 small frames in 40 sends (KCP packs them into mss-sized segments that cut frames) and
one frame in two sends with the 6-byte header cut after 3 bytes. The "network" loses
datagrams: each peer's KCP output callback drops a seeded 10% of what KCP hands it instead of
calling sendto, in both directions, so the capture holds retransmitted data segments (a lost
ACK makes a segment appear twice). Every socket has a timeout, every wait is bounded, tcpdump
is stopped by its own PID, and the run ends by itself within about 30 s. After recording, the
capture is checked: every conv and direction has a complete set of PUSH sn, the segments
reassemble into exactly the logged sends (message mode) or byte stream (stream mode), and the
counts of retransmissions are printed.

kcp.messages.json: {"protocol", "mtu", "mss", "interval_ms", "nodelay", "fast_resend",
"no_congestion_window", "window": [snd, rcv], "loss", "connections": [{"client": N,
"client_port": P, "server_port": S, "conv": C, "mode": "message" | "stream",
"datagrams": {"c2s": {"sent", "dropped"}, "s2c": {"sent", "dropped"}}, "c2s": [...],
"s2c": [...]}]}. "sent" datagrams are the ones in the capture, "dropped" the ones the lossy
callback swallowed. Each frame, in the order the application passed it to ikcp_send:
{"id", "name", "frame" (hex of the whole game frame, header included), "send" (the index,
from 0 per direction, of the ikcp_send call that carried it: frames with the same index went
in one send, so in message mode they are one KCP message)}; a frame the application passed in
pieces also has "cuts" (the offsets where it was cut, each piece one more send).
"""
import ctypes, json, os, random, select, socket, struct, sys, threading, time

import kcp

from capture import Capture
from make_samples import game_frame, gs

HERE = os.path.dirname(os.path.abspath(__file__))
PORTS = {"message": 8100, "stream": 8101}
CONV_BASE = 0x11223344
MTU = 1400
MSS = MTU - 24
INTERVAL = 10           # ms between ikcp_update flushes
FAST_RESEND = 2
WINDOW = (128, 128)
LOSS = 0.10
TIMEOUT = 10            # one wait
DEADLINE = 25           # the whole exchange
CLIENTS = {1: "message", 2: "message", 3: "stream"}
NAMES = {("c2s", 20001): "Cs_20001", ("s2c", 20001): "SC_20001", ("c2s", 10002): "Cs_10002",
         ("s2c", 30005): "Sc_30005"}
CMD = {81: "PUSH", 82: "ACK", 83: "WASK", 84: "WINS"}

T0 = time.monotonic()
LOG_LOCK = threading.Lock()
LOG = {}                # client number -> connection record
ERRORS = []


def now_ms():
    return int((time.monotonic() - T0) * 1000)


# ---------------------------------------------------------------- ikcp's control block
# The kcp package exposes no setter for ikcp's `stream` flag, so stream mode is set in the
# IKCPCB itself: this mirrors `struct IKCPCB` of the ikcp.h the package builds.

class IQUEUEHEAD(ctypes.Structure):
    _fields_ = [("next", ctypes.c_void_p), ("prev", ctypes.c_void_p)]


U32, I32 = ctypes.c_uint32, ctypes.c_int32


class IKCPCB(ctypes.Structure):
    _fields_ = [(n, U32) for n in ("conv", "mtu", "mss", "state", "snd_una", "snd_nxt", "rcv_nxt",
                                   "ts_recent", "ts_lastack", "ssthresh")] + \
               [(n, I32) for n in ("rx_rttval", "rx_srtt", "rx_rto", "rx_minrto")] + \
               [(n, U32) for n in ("snd_wnd", "rcv_wnd", "rmt_wnd", "cwnd", "probe", "current", "interval",
                                   "ts_flush", "xmit", "nrcv_buf", "nsnd_buf", "nrcv_que", "nsnd_que",
                                   "nodelay", "updated", "ts_probe", "probe_wait", "dead_link", "incr")] + \
               [("snd_queue", IQUEUEHEAD), ("rcv_queue", IQUEUEHEAD), ("snd_buf", IQUEUEHEAD),
                ("rcv_buf", IQUEUEHEAD), ("acklist", ctypes.c_void_p), ("ackcount", U32), ("ackblock", U32),
                ("user", ctypes.c_void_p), ("buffer", ctypes.c_void_p), ("fastresend", I32),
                ("fastlimit", I32), ("nocwnd", I32), ("stream", I32), ("logmask", I32),
                ("output", ctypes.c_void_p), ("writelog", ctypes.c_void_p)]


def control_block(k, conv, handler, token):
    """The IKCPCB of a kcp.KCP. The object is [PyObject_HEAD][vtable*][IKCPCB *kcp][_data_handler]
    [identity_token]...; every word is checked against what it must hold before the block is used,
    and the block must name this conv, MTU and the object itself as its `user`."""
    words = (ctypes.c_void_p * 6).from_address(id(k))
    if words[1] != id(type(k)) or words[4] != id(handler) or words[5] != id(token):
        raise SystemExit("kcp.KCP's layout is not the one this script knows (kcp 0.1.6)")
    cb = IKCPCB.from_address(words[3])
    if (cb.conv, cb.mtu, cb.mss, cb.user) != (conv, MTU, MSS, id(k)):
        raise SystemExit("the IKCPCB found does not belong to this kcp.KCP")
    return cb


# ---------------------------------------------------------------- one KCP endpoint

class Endpoint:
    """One side of one KCP conversation: its ikcp control block, its lossy output, the frames it
    sends (logged in send order) and the frames it receives."""

    def __init__(self, n, direction, sock, addr, mode):
        self.n, self.direction, self.sock, self.addr, self.mode = n, direction, sock, addr, mode
        conv = CONV_BASE + n
        self.kcp = kcp.KCP(conv, max_transmission=MTU, no_delay=True, update_interval=INTERVAL,
                           resend_count=FAST_RESEND, no_congestion_control=True,
                           send_window_size=WINDOW[0], receive_window_size=WINDOW[1],
                           identity_token=(n, direction))
        self.handler = self.output       # one bound method object, so the layout check can find it
        self.kcp.include_outbound_handler(self.handler)
        self.cb = control_block(self.kcp, conv, self.handler, self.kcp.identity_token)
        if mode == "stream":
            self.cb.stream = 1
        self.loss = random.Random(8100 + 10 * n + (direction == "s2c"))
        self.sent = self.dropped = self.sends = 0
        self.stream = bytearray()
        self.received = []
        self.kcp.update(now_ms())

    def output(self, k, datagram):
        """ikcp's output callback: the lossy network."""
        try:
            if self.loss.random() < LOSS:
                self.dropped += 1
                return
            self.sent += 1
            self.sock.sendto(datagram, self.addr)
        except Exception as e:          # an exception cannot cross ikcp: keep it for the report
            ERRORS.append("output %d %s: %r" % (self.n, self.direction, e))

    def _log(self, frame, send, cuts=None):
        mid = struct.unpack(">H", frame[4:6])[0]
        entry = {"id": mid, "name": NAMES.get((self.direction, mid)), "frame": frame.hex(), "send": send}
        if cuts:
            entry["cuts"] = cuts
        with LOG_LOCK:
            LOG[self.n][self.direction].append(entry)

    def send(self, *frames):
        """Several frames in one ikcp_send (sticky when more than one)."""
        for f in frames:
            self._log(f, self.sends)
        self.kcp.enqueue(b"".join(frames))
        self.sends += 1

    def send_pieces(self, frame, cuts, node):
        """One frame in several ikcp_send calls, letting KCP flush between them."""
        self._log(frame, self.sends, cuts)
        last = 0
        for c in list(cuts) + [len(frame)]:
            self.kcp.enqueue(frame[last:c])
            self.sends += 1
            last = c
            node.pump_for(3 * INTERVAL)

    def input(self, datagram):
        self.kcp.receive(datagram)
        for msg in self.kcp.get_all_received():
            if self.mode == "stream":
                self.stream += msg
                msg = self.stream
            off = 0
            while len(msg) - off >= 6:
                length, mid = struct.unpack_from(">IH", msg, off)
                if len(msg) - off < length:
                    break
                self.received.append(bytes(msg[off:off + length]))
                off += length
            if self.mode == "stream":
                del self.stream[:off]
            elif off != len(msg):
                raise ValueError("a KCP message that is not whole game frames")

    def waiting(self):
        return self.kcp.get_outbound_packets()


class Node:
    """A thread's sockets and endpoints, pumped together: datagrams in, ikcp_update every tick."""

    def __init__(self):
        self.socks, self.endpoints = [], {}
        self.stop = threading.Event()

    def endpoint_for(self, sock, datagram, addr):
        return self.endpoints.get((sock.getsockname()[1], addr))

    def pump_once(self, wait):
        readable, _, _ = select.select(self.socks, [], [], wait)
        for s in readable:
            while True:
                try:
                    datagram, addr = s.recvfrom(65536)
                except BlockingIOError:
                    break
                ep = self.endpoint_for(s, datagram, addr)
                if ep is not None:
                    ep.input(datagram)
        t = now_ms()
        for ep in list(self.endpoints.values()):
            ep.kcp.update(t)

    def pump_for(self, ms):
        end = time.monotonic() + ms / 1000
        while time.monotonic() < end:
            self.pump_once(0.002)

    def pump_until(self, cond, what):
        end = time.monotonic() + TIMEOUT
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError(what)
            self.pump_once(0.002)


# ---------------------------------------------------------------- content (seeded)

WORDS = ["boss", "room", "rules", "no", "potions", "after", "the", "second", "phase", "队长", "欢迎",
         "gate", "north", "guild", "raid", "wipe", "tank", "heal", "loot", "roll", "need", "greed",
         "ready", "check", "Søren", "ゆき", "🔥", "stack", "spread", "kite", "adds", "interrupt"]


def text_of(rng, size):
    """Seeded words, about `size` bytes of UTF-8."""
    out, n = [], 0
    while n < size:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w.encode()) + 1
    return " ".join(out)


def enter(scene, line, msg):
    return game_frame(20001, struct.pack(">BI", scene, line) + gs(msg))


def beat(t):
    return game_frame(10002, struct.pack(">Q", t))


# ---------------------------------------------------------------- server

class Server(Node):
    def __init__(self):
        super().__init__()
        self.ports = {}
        for mode, port in PORTS.items():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", port))
            s.setblocking(False)
            self.socks.append(s)
            self.ports[port] = mode
        self.answered = {}

    def endpoint_for(self, sock, datagram, addr):
        port = sock.getsockname()[1]
        key = (port, addr)
        if key not in self.endpoints:
            if len(datagram) < 24:
                return None
            n = struct.unpack_from("<I", datagram)[0] - CONV_BASE
            if n not in LOG or LOG[n]["client_port"] != addr[1] or LOG[n]["server_port"] != port:
                return None
            self.endpoints[key] = Endpoint(n, "s2c", sock, addr, self.ports[port])
            self.answered[key] = 0
        return self.endpoints[key]

    def serve(self):
        rng = random.Random(8100)
        while not self.stop.is_set():
            self.pump_once(0.002)
            for key, ep in self.endpoints.items():
                while self.answered[key] < len(ep.received):
                    frame = ep.received[self.answered[key]]
                    self.answered[key] += 1
                    self.answer(ep, frame, rng)

    def answer(self, ep, frame, rng):
        length, mid = struct.unpack(">IH", frame[:6])
        body = frame[6:]
        if mid == 20001:
            scene, line = struct.unpack(">BI", body[:5])
            text = body[7:].decode()
            if scene == 0:
                res, msg = 1, "welcome " + text.split()[1]
            elif scene < 100:
                res, msg = 1, "欢迎 welcome to scene %d" % scene
            else:
                # The boss room's rules: longer than the mss, so message mode fragments it.
                res, msg = 2, "cannot enter: " + text_of(rng, 4500)
            reply = game_frame(20001, struct.pack(">BIBBBI", res, scene, 3, 10 if scene % 2 else 0, 7, 4200 + scene)
                               + gs(msg))
            status = game_frame(30005, struct.pack(">iH", 950 - scene, 12 + ep.n) + gs("hero-%d" % scene))
            if ep.sends % 3 == 1:
                ep.send(reply)             # two sends: two KCP messages
                ep.send(status)
            else:
                ep.send(reply, status)     # sticky: one send
        elif mid == 10002:
            ep.send(game_frame(30005, struct.pack(">iH", -5, 1) + gs("tick")))


# ---------------------------------------------------------------- clients

class Client(Node):
    def __init__(self, n):
        super().__init__()
        self.n, self.mode = n, CLIENTS[n]
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setblocking(False)
        self.socks.append(s)
        port = PORTS[self.mode]
        with LOG_LOCK:
            LOG[n] = {"client": n, "client_port": s.getsockname()[1], "server_port": port, "conv": CONV_BASE + n,
                      "mode": self.mode, "datagrams": None, "c2s": [], "s2c": []}
        self.ep = Endpoint(n, "c2s", s, ("127.0.0.1", port), self.mode)
        self.endpoints[(s.getsockname()[1], ("127.0.0.1", port))] = self.ep
        self.expected = 0
        self.done = threading.Event()

    def run(self):
        try:
            self.script()
            # Everything answered and acknowledged: keep answering until the server is done too.
            self.pump_until(lambda: self.ep.waiting() == 0, "client %d: unacknowledged data" % self.n)
            self.done.set()
            while not self.stop.is_set():
                self.pump_once(0.002)
        except Exception as e:
            ERRORS.append("client %d: %r" % (self.n, e))
            self.done.set()

    def expect(self, k):
        self.expected += k
        self.pump_until(lambda: len(self.ep.received) >= self.expected, "client %d: answers" % self.n)

    def script(self):
        n, ep = self.n, self.ep
        rng = random.Random(n)
        clock = 1_700_000_000_000 + 1000 * n
        ep.send(enter(0, 0, "login player%d token-%04x" % (n, rng.randrange(1 << 16))))
        self.expect(2)
        for i in range(8):
            scene = 10 * n + i
            if i % 3 == 1:
                clock += 5000
                ep.send(beat(clock), enter(scene, i, "line %d" % i))   # sticky: one send
                self.expect(3)
            elif i % 3 == 2:
                clock += 5000
                ep.send(enter(scene, i, "scene %d please" % scene))   # two sends, one flush
                ep.send(beat(clock))
                self.expect(3)
            else:
                ep.send(enter(scene, 0, "enter %d" % scene))
                self.expect(2)
        # About 3 KB: message mode cuts it into three segments, frg 2, 1, 0.
        ep.send(enter(150 + n, 7, "boss room: " + text_of(rng, 3000)))
        self.expect(2)
        if self.mode == "stream":
            # A burst of 40 frames in 40 sends, faster than the 10 ms flush: KCP packs them
            # into segments of up to mss bytes, cutting frames at segment boundaries.
            for i in range(40):
                if i % 2:
                    clock += 100
                    ep.send(beat(clock))
                else:
                    ep.send(enter(20 + i, i, "burst %d %s" % (i, text_of(rng, rng.randrange(10, 60)))))
            self.expect(60)
            # One frame in two sends, the 6-byte header cut after 3 bytes, a flush in between.
            ep.send_pieces(enter(60, 3, "header cut after 3 bytes"), [3], self)
            self.expect(2)
        # Three heartbeats in one send.
        ep.send(*[beat(clock + 100 * k) for k in range(1, 4)])
        self.expect(3)


# ---------------------------------------------------------------- the check of the capture

def read_pcap(path):
    """(ts, src port, dst port, UDP payload) of every IPv4 UDP packet."""
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    link = struct.unpack_from(end + "I", data, 20)[0]
    skip = {1: 14, 113: 16, 276: 20, 0: 4}[link]
    off, out = 24, []
    while off + 16 <= len(data):
        sec, usec, caplen, _ = struct.unpack_from(end + "IIII", data, off)
        pkt = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        ip = pkt[skip:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 17:
            continue
        udp = ip[(ip[0] & 15) * 4:]
        sport, dport, ulen = struct.unpack_from(">HHH", udp)
        out.append((sec + usec / 1e6, sport, dport, bytes(udp[8:ulen])))
    return out


def segments(payload):
    off = 0
    while len(payload) - off >= 24:
        conv, cmd, frg, wnd, ts, sn, una, length = struct.unpack_from("<IBBHIIII", payload, off)
        yield conv, cmd, frg, wnd, ts, sn, una, payload[off + 24:off + 24 + length]
        off += 24 + length
    if off != len(payload):
        raise ValueError("a datagram that is not whole KCP segments")


def check(path, log):
    pkts = read_pcap(path)
    by_conv = {c["conv"]: c for c in log["connections"]}
    stats = {"datagrams": len(pkts), "multi_segment_datagrams": 0, "cmd": {}, "max_segments_per_datagram": 0}
    push = {}          # (conv, dir) -> sn -> [(frg, data)]
    datagrams = {}
    wnds = set()
    for _, sport, dport, payload in pkts:
        segs = list(segments(payload))
        stats["max_segments_per_datagram"] = max(stats["max_segments_per_datagram"], len(segs))
        if len(segs) > 1:
            stats["multi_segment_datagrams"] += 1
        for conv, cmd, frg, wnd, ts, sn, una, data in segs:
            c = by_conv[conv]
            d = "c2s" if dport == c["server_port"] else "s2c"
            assert (sport, dport) == ((c["client_port"], c["server_port"]) if d == "c2s" else
                                      (c["server_port"], c["client_port"]))
            name = CMD.get(cmd, str(cmd))
            stats["cmd"][name] = stats["cmd"].get(name, 0) + 1
            wnds.add(wnd)
            if cmd == 81:
                push.setdefault((conv, d), {}).setdefault(sn, []).append((frg, data))
        conv = segs[0][0]
        d = "c2s" if dport == by_conv[conv]["server_port"] else "s2c"
        datagrams[(conv, d)] = datagrams.get((conv, d), 0) + 1
    problems, lines = [], []
    for c in log["connections"]:
        for d in ("c2s", "s2c"):
            key = (c["conv"], d)
            if datagrams.get(key, 0) != c["datagrams"][d]["sent"]:
                problems.append("%s %s: %d datagrams captured, %d sent" % (hex(key[0]), d, datagrams.get(key, 0),
                                                                          c["datagrams"][d]["sent"]))
            sns = push.get(key, {})
            if sorted(sns) != list(range(len(sns))):
                problems.append("%s %s: sn set not complete" % (hex(key[0]), d))
                continue
            copies = [sns[sn] for sn in range(len(sns))]
            if any(len(set(cs)) != 1 for cs in copies):
                problems.append("%s %s: copies of one sn differ" % (hex(key[0]), d))
            frgs = [cs[0][0] for cs in copies]
            datas = [cs[0][1] for cs in copies]
            if c["mode"] == "message":
                # Reassemble: frg counts down to 0 within one message.
                msgs, cur, want = [], b"", None
                for frg, data in zip(frgs, datas):
                    if want is not None and frg != want:
                        problems.append("%s %s: frg out of order" % (hex(key[0]), d))
                    cur += data
                    want = frg - 1 if frg else None
                    if frg == 0:
                        msgs.append(cur)
                        cur = b""
                sends = {}
                for m in c[d]:
                    sends.setdefault(m["send"], []).append(bytes.fromhex(m["frame"]))
                if msgs != [b"".join(sends[k]) for k in sorted(sends)]:
                    problems.append("%s %s: reassembled messages differ from the log" % (hex(key[0]), d))
            else:
                if any(frgs):
                    problems.append("%s %s: stream mode segment with frg != 0" % (hex(key[0]), d))
                if b"".join(datas) != b"".join(bytes.fromhex(m["frame"]) for m in c[d]):
                    problems.append("%s %s: reassembled stream differs from the log" % (hex(key[0]), d))
            seen = sum(len(cs) for cs in copies)
            dup = sum(1 for cs in copies if len(cs) > 1)
            lines.append("  conv %s %-7s %s: %3d frames, %3d sends, %3d PUSH sn, %3d PUSH seen, %2d sn seen more "
                         "than once, max frg %d; datagrams %d sent, %d dropped"
                         % (hex(c["conv"]), c["mode"], d, len(c[d]), len({m["send"] for m in c[d]}), len(sns), seen,
                            dup, max(frgs or [0]), c["datagrams"][d]["sent"], c["datagrams"][d]["dropped"]))
    total_dup = sum(1 for sns in push.values() for cs in sns.values() if len(cs) > 1)
    stats["push_sn_seen_more_than_once"] = total_dup
    stats["retransmitted_push_copies"] = sum(len(cs) - 1 for sns in push.values() for cs in sns.values())
    stats["wnd_values"] = sorted(wnds)
    print("\n".join(lines))
    print("capture:", json.dumps(stats))
    if total_dup == 0:
        problems.append("no PUSH segment appears twice")
    if problems:
        raise SystemExit("check failed: " + "; ".join(problems))


# ---------------------------------------------------------------- main

def dump(log):
    """The log as JSON with one frame a line."""
    line = lambda o: json.dumps(o, ensure_ascii=False, separators=(",", ":"))
    head = {k: v for k, v in log.items() if k != "connections"}
    out = [line(head)[:-1] + ',"connections":[']
    for ci, c in enumerate(log["connections"]):
        out.append(" " + line({k: v for k, v in c.items() if k not in ("c2s", "s2c")})[:-1] + ",")
        for d in ("c2s", "s2c"):
            out.append('  "%s":[' % d)
            out.append(",\n".join("   " + line(m) for m in c[d]))
            out.append("  ]" + ("," if d == "c2s" else ""))
        out.append(" }" + ("," if ci < len(log["connections"]) - 1 else ""))
    out.append("]}")
    return "\n".join(out) + "\n"


def main():
    out = os.path.join(HERE, "kcp.pcap")
    with Capture(out, bpf="udp portrange %d-%d" % (min(PORTS.values()), max(PORTS.values()))):
        server = Server()
        st = threading.Thread(target=lambda: _guard("server", server.serve), daemon=True)
        st.start()
        clients = []
        for n in CLIENTS:
            c = Client(n)
            t = threading.Thread(target=c.run, daemon=True)
            t.start()
            clients.append((c, t))
            time.sleep(0.05)
        end = time.monotonic() + DEADLINE
        # Done when every client finished its script and nothing is left unacknowledged anywhere.
        while time.monotonic() < end and not ERRORS:
            if all(c.done.is_set() for c, _ in clients) and len(server.endpoints) == len(clients) and \
                    all(ep.waiting() == 0 for ep in list(server.endpoints.values())):
                break
            time.sleep(0.05)
        else:
            ERRORS.append("the exchange did not finish within %d s" % DEADLINE)
        time.sleep(0.2)
        for c, t in clients:
            c.stop.set()
        server.stop.set()
        for c, t in clients:
            t.join(2)
        st.join(2)
    if ERRORS:
        raise SystemExit("recording failed: " + "; ".join(ERRORS))
    for c, _ in clients:
        sep = next(ep for ep in server.endpoints.values() if ep.n == c.n)
        LOG[c.n]["datagrams"] = {"c2s": {"sent": c.ep.sent, "dropped": c.ep.dropped},
                                 "s2c": {"sent": sep.sent, "dropped": sep.dropped}}
        # What each side received is what the other sent.
        assert [bytes.fromhex(m["frame"]) for m in LOG[c.n]["c2s"]] == sep.received
        assert [bytes.fromhex(m["frame"]) for m in LOG[c.n]["s2c"]] == c.ep.received
        print("client %d: retransmissions by timeout %d c2s, %d s2c" % (c.n, c.ep.cb.xmit, sep.cb.xmit))
    cb = clients[0][0].ep.cb
    log = {"protocol": "game over KCP over UDP", "mtu": cb.mtu, "mss": cb.mss, "interval_ms": cb.interval,
           "nodelay": cb.nodelay, "fast_resend": cb.fastresend, "no_congestion_window": cb.nocwnd,
           "window": [cb.snd_wnd, cb.rcv_wnd], "loss": LOSS,
           "connections": [LOG[n] for n in sorted(LOG)]}
    with open(os.path.join(HERE, "kcp.messages.json"), "w") as f:
        f.write(dump(log))
    check(out, log)


def _guard(who, fn):
    try:
        fn()
    except Exception as e:
        ERRORS.append("%s: %r" % (who, e))


if __name__ == "__main__":
    main()
