#!/usr/bin/env python3
"""Record samples/udp.pcap: the game protocol over plain UDP (no KCP) between real peers, and
samples/udp.messages.json, every game frame as the peers sent it. Run as root from the
repository root:

    python3 samples/make_udp_sample.py

The payload is the game protocol: [u32 BE total length, header included][u16 BE message id]
[body], Dissectors/game.dissector. Over UDP each datagram carries whole frames and nothing
carries over to the next datagram: a frame cut at the end of a datagram stays cut.

Scenario: a server on 127.0.0.1 UDP port 8200 and two concurrent clients, each with its own
socket. A client logs in (Cs_20001 to scene 0: the server team's document has no login
message), asks for scenes and sends heartbeats, one frame per datagram mostly; twice it puts
several frames in one datagram (a heartbeat and a scene request; then a heartbeat, a request
and a heartbeat). Client 2 also sends one datagram of a heartbeat followed by a Cs_20001 whose
header declares more bytes than the datagram holds (the frame is cut in its body); the server
answers the heartbeat and drops the cut frame. The server answers each scene request with
SC_20001 and Sc_30005, in one datagram for even scenes and in two for odd ones, and each
heartbeat with Sc_30005 "tick". Every socket has a timeout and tcpdump is stopped by its own
PID. After recording, the capture is checked against the log datagram by datagram.

udp.messages.json: {"protocol", "server_port", "connections": [{"client": N, "client_port": P,
"datagrams": {"c2s": count, "s2c": count}, "c2s": [...], "s2c": [...]}]}. Each frame in the
order it was sent: {"id", "name", "frame" (hex of the bytes sent, header included),
"datagram" (its datagram's index, from 0 per direction: frames with the same index shared one
datagram)}; the cut frame also has "cut": true and "declared_length" (its header's length
field; "frame" holds only the bytes that were sent).
"""
import json, os, random, socket, struct, threading, time

from capture import Capture
from make_samples import game_frame, gs

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 8200
TIMEOUT = 10
NAMES = {("c2s", 20001): "Cs_20001", ("s2c", 20001): "SC_20001", ("c2s", 10002): "Cs_10002",
         ("s2c", 30005): "Sc_30005"}

LOG_LOCK = threading.Lock()
LOG = {}          # client number -> connection record
ERRORS = []


class Peer:
    """One direction of one client's exchange: sends datagrams of frames, logging each frame."""

    def __init__(self, sock, addr, n, direction):
        self.sock, self.addr, self.n, self.direction = sock, addr, n, direction
        self.datagrams = 0

    def send(self, *frames, cut=None):
        """Whole frames in one datagram; with `cut`, the last frame is cut to that many bytes."""
        with LOG_LOCK:
            for i, f in enumerate(frames):
                length, mid = struct.unpack(">IH", f[:6])
                entry = {"id": mid, "name": NAMES.get((self.direction, mid)), "frame": f.hex(),
                         "datagram": self.datagrams}
                if cut is not None and i == len(frames) - 1:
                    entry.update(frame=f[:cut].hex(), cut=True, declared_length=length)
                LOG[self.n][self.direction].append(entry)
        data = b"".join(frames)
        if cut is not None:
            data = data[:len(data) - len(frames[-1]) + cut]
        self.sock.sendto(data, self.addr)
        self.datagrams += 1


def frames_of(datagram):
    """The whole frames of a datagram (a cut last frame is left out)."""
    out, off = [], 0
    while len(datagram) - off >= 6:
        length, mid = struct.unpack_from(">IH", datagram, off)
        if length < 6 or len(datagram) - off < length:
            break
        out.append((mid, datagram[off + 6:off + length]))
        off += length
    return out


def enter(scene, line, msg):
    return game_frame(20001, struct.pack(">BI", scene, line) + gs(msg))


def beat(t):
    return game_frame(10002, struct.pack(">Q", t))


# ---------------------------------------------------------------- server

class Server(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", PORT))
        self.sock.settimeout(0.2)
        self.peers = {}
        self.stopping = False

    def run(self):
        try:
            while not self.stopping:
                try:
                    datagram, addr = self.sock.recvfrom(65536)
                except socket.timeout:
                    continue
                if addr not in self.peers:
                    n = next(n for n, c in LOG.items() if c["client_port"] == addr[1])
                    self.peers[addr] = Peer(self.sock, addr, n, "s2c")
                me = self.peers[addr]
                for mid, body in frames_of(datagram):
                    self.answer(me, mid, body)
        except Exception as e:
            ERRORS.append("server: %r" % e)

    def answer(self, me, mid, body):
        if mid == 20001:
            scene, line = struct.unpack(">BI", body[:5])
            text = body[7:].decode()
            res = 1 if scene < 100 else 2
            msg = ("welcome " + text.split()[1]) if scene == 0 else ("欢迎 welcome" if res == 1 else "cannot enter")
            reply = game_frame(20001, struct.pack(">BIBBBI", res, scene, 3, 10 if scene % 2 else 0, 7, 4200 + scene)
                               + gs(msg))
            status = game_frame(30005, struct.pack(">iH", 950 - scene, 12 + me.n) + gs("hero-%d" % scene))
            if scene % 2 == 0:
                me.send(reply, status)      # two frames in one datagram
            else:
                me.send(reply)
                me.send(status)
        elif mid == 10002:
            me.send(game_frame(30005, struct.pack(">iH", -5, 1) + gs("tick")))


# ---------------------------------------------------------------- clients

def client(n):
    try:
        run_client(n)
    except Exception as e:
        ERRORS.append("client %d: %r" % (n, e))


def run_client(n):
    rng = random.Random(8200 + n)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(TIMEOUT)
    with LOG_LOCK:
        LOG[n] = {"client": n, "client_port": s.getsockname()[1], "datagrams": None, "c2s": [], "s2c": []}
    me = Peer(s, ("127.0.0.1", PORT), n, "c2s")
    received = []

    def expect(k):
        while k > 0:
            datagram, _ = s.recvfrom(65536)
            got = frames_of(datagram)
            received.extend(got)
            k -= len(got)
        assert k == 0, "more frames than expected"

    clock = 1_700_000_000_000 + 1000 * n
    me.send(enter(0, 0, "login player%d token-%04x" % (n, rng.randrange(1 << 16))))
    expect(2)
    for i in range(6):
        scene = 10 * n + i
        me.send(enter(scene, i, "enter %d" % scene))
        expect(2)
        clock += 5000
        me.send(beat(clock))
        expect(1)
        if i == 2:
            # Two frames in one datagram.
            clock += 5000
            me.send(beat(clock), enter(scene + 50, 1, "two in one"))
            expect(3)
        if i == 4:
            # Three frames in one datagram.
            me.send(beat(clock + 1), enter(scene + 60, 2, "three in one, 第三"), beat(clock + 2))
            expect(4)
    if n == 2:
        # A heartbeat, then a request whose header declares more bytes than the datagram holds.
        clock += 5000
        me.send(beat(clock), enter(77, 9, "this frame is cut in its body"), cut=15)
        expect(1)
    me.send(beat(clock + 5000))
    expect(1)
    LOG[n]["datagrams"] = {"c2s": me.datagrams}
    LOG[n]["received"] = received
    s.close()


# ---------------------------------------------------------------- the check of the capture

def read_pcap(path):
    """(src port, dst port, UDP payload) of every IPv4 UDP packet."""
    data = open(path, "rb").read()
    end = "<" if struct.unpack_from("<I", data)[0] in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    skip = {1: 14, 113: 16, 276: 20, 0: 4}[struct.unpack_from(end + "I", data, 20)[0]]
    off, out = 24, []
    while off + 16 <= len(data):
        caplen = struct.unpack_from(end + "I", data, off + 8)[0]
        ip = data[off + 16 + skip:off + 16 + caplen]
        off += 16 + caplen
        if len(ip) >= 20 and ip[0] >> 4 == 4 and ip[9] == 17:
            udp = ip[(ip[0] & 15) * 4:]
            sport, dport, ulen = struct.unpack_from(">HHH", udp)
            out.append((sport, dport, bytes(udp[8:ulen])))
    return out


def check(path, log):
    got = {}
    for sport, dport, payload in read_pcap(path):
        key = (dport, "s2c") if sport == PORT else (sport, "c2s")
        got.setdefault(key, []).append(payload)
    for c in log["connections"]:
        for d in ("c2s", "s2c"):
            want = {}
            for m in c[d]:
                want.setdefault(m["datagram"], []).append(bytes.fromhex(m["frame"]))
            want = [b"".join(want[k]) for k in sorted(want)]
            have = got.get((c["client_port"], d), [])
            if have != want:
                raise SystemExit("check failed: client %d %s: the capture differs from the log" % (c["client"], d))
            multi = sum(1 for k in {m["datagram"] for m in c[d]} if sum(m["datagram"] == k for m in c[d]) > 1)
            print("  client %d %s: %2d frames in %2d datagrams (%d with several frames, %d cut frame)"
                  % (c["client"], d, len(c[d]), len(have), multi, sum(1 for m in c[d] if m.get("cut"))))


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
    out = os.path.join(HERE, "udp.pcap")
    with Capture(out, bpf="udp port %d" % PORT):
        server = Server()
        server.start()
        clients = []
        for n in (1, 2):
            t = threading.Thread(target=client, args=(n,))
            t.start()
            clients.append(t)
            time.sleep(0.05)
        for t in clients:
            t.join(3 * TIMEOUT)
        time.sleep(0.3)
        server.stopping = True
        server.join(2)
    errors = ERRORS + ["client still running" for t in clients if t.is_alive()]
    if errors:
        raise SystemExit("recording failed: " + "; ".join(errors))
    for n, c in LOG.items():
        peer = next(p for p in server.peers.values() if p.n == n)
        c["datagrams"]["s2c"] = peer.datagrams
        received = c.pop("received")
        # What the client read is what the server sent (the server sends no cut frame).
        assert [game_frame(mid, body) for mid, body in received] == [bytes.fromhex(m["frame"]) for m in c["s2c"]]
    log = {"protocol": "game over UDP", "server_port": PORT, "connections": [LOG[n] for n in sorted(LOG)]}
    with open(os.path.join(HERE, "udp.messages.json"), "w") as f:
        f.write(dump(log))
    check(out, log)


if __name__ == "__main__":
    main()
