#!/usr/bin/env python3
"""Record one six-connection game scenario several times, for `framedump diff` and the
`--diffable` export. Run as root from the repository root:

    python3 samples/make_diff_samples.py

writes, in samples/:
    scenario-a.pcap        the scenario
    scenario-b.pcap        the same scenario recorded again: other client ports, another
                           interleaving of the connections (they start in a random order, with
                           random pauses), other heartbeat times (ClientTime is the clock)
    scenario-changed.pcap  one field changed: client 4's second scene request says Line 3, not 2
    scenario-edited.pcap   client 5 leaves out its second heartbeat (a c2s message removed) and
                           the server sends client 5 one more status (an s2c message inserted)

Every socket has a timeout; tcpdump is started and stopped by its own PID (capture.py).
"""
import os, random, socket, struct, threading, time

from capture import Capture
from make_samples import Server, game_frame, game_read, gs, nodelay, TIMEOUT

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 8000
CLIENTS = 6


def now_ms():
    return int(time.time() * 1000)


def server_for(variant):
    def serve(conn):
        while True:
            mid, body = game_read(conn)
            if mid == 20001:          # a scene request: the reply and the hero's status
                scene = body[0]
                res = 1 if scene < 100 else 2
                reply = game_frame(20001, struct.pack(">BIBBBI", res, scene, 3, 10 if scene % 2 else 0, 7, 4200)
                                   + gs("welcome" if res == 1 else "cannot enter"))
                status = game_frame(30005, struct.pack(">iH", 950 - scene, 12) + gs("hero-%d" % scene))
                conn.sendall(reply + status)
                if variant == "edited" and scene == 5:
                    conn.sendall(game_frame(30005, struct.pack(">iH", 1, 1) + gs("bonus")))
            # Heartbeats (10002) are not answered.
    return serve


def client(n, variant):
    time.sleep(random.uniform(0, 0.15))
    s = socket.create_connection(("127.0.0.1", PORT), timeout=TIMEOUT)
    nodelay(s)
    enter = lambda scene, line, msg: game_frame(20001, struct.pack(">BI", scene, line) + gs(msg))
    beat = lambda: game_frame(10002, struct.pack(">Q", now_ms()))
    pause = lambda: time.sleep(random.uniform(0.005, 0.04))
    s.sendall(enter(n, 0, "hello from %d" % n))
    for _ in range(3 if variant == "edited" and n == 5 else 2):
        game_read(s)
    pause()
    s.sendall(beat())
    pause()
    s.sendall(enter(n + 10, 3 if variant == "changed" and n == 4 else 2, "line 2"))
    game_read(s); game_read(s)
    pause()
    if not (variant == "edited" and n == 5):
        s.sendall(beat())
        pause()
    s.sendall(enter(n + 150, 7, "boss room"))
    game_read(s); game_read(s)
    s.close()


def record(name, variant):
    out = os.path.join(HERE, name + ".pcap")
    with Capture(out, PORT):
        server = Server(PORT, server_for(variant))
        server.start()
        order = list(range(1, CLIENTS + 1))
        random.shuffle(order)
        threads = [threading.Thread(target=client, args=(n, variant)) for n in order]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        time.sleep(0.3)
        server.stopping = True
        server.join(2)
        server.sock.close()


if __name__ == "__main__":
    for name, variant in [("scenario-a", "base"), ("scenario-b", "base"),
                          ("scenario-changed", "changed"), ("scenario-edited", "edited")]:
        record(name, variant)
