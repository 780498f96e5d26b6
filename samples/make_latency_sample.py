#!/usr/bin/env python3
"""Record samples/game-latency.pcap: a real game client and server (the game protocol of
seed 000, port 8000) over loopback, where the server waits a known time before answering,
so `framedump -z rtt` can be checked: each Cs_20001 (scene request) is answered by an
Sc_20001 after 20 ms (scenes below 100) or 50 ms (scenes from 100); heartbeats (Cs_10002)
get no Sc_10002, so they stay unanswered. Run as root from the repository root:

    python3 samples/make_latency_sample.py
"""
import os, socket, struct, threading, time

from capture import Capture

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 8000
TIMEOUT = 10


def gs(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


def frame(mid, body):
    return struct.pack(">IH", len(body) + 6, mid) + body


def read(s):
    head = b""
    while len(head) < 6:
        chunk = s.recv(6 - len(head))
        if not chunk:
            raise EOFError
        head += chunk
    length, mid = struct.unpack(">IH", head)
    body = b""
    while len(body) < length - 6:
        chunk = s.recv(length - 6 - len(body))
        if not chunk:
            raise EOFError
        body += chunk
    return mid, body


def server(listener):
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.settimeout(TIMEOUT)
    try:
        while True:
            mid, body = read(conn)
            if mid == 20001:
                scene = body[0]
                time.sleep(0.020 if scene < 100 else 0.050)   # the known server delay
                conn.sendall(frame(20001, struct.pack(">BIBBBI", 1, scene, 1, 0, 7, 100) + gs("ok")))
            elif mid == 10002:
                conn.sendall(frame(30005, struct.pack(">iH", 100, 1) + gs("tick")))
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


def client():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for scene in [1, 2, 3, 150, 151]:
        s.sendall(frame(20001, struct.pack(">BI", scene, 0) + gs("scene %d" % scene)))
        read(s)
        s.sendall(frame(10002, struct.pack(">Q", 1700000000000 + scene)))
        read(s)
    s.close()


def main():
    with Capture(os.path.join(HERE, "game-latency.pcap"), PORT):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", PORT))
        listener.listen(1)
        listener.settimeout(TIMEOUT)
        t = threading.Thread(target=server, args=(listener,), daemon=True)
        t.start()
        client()
        t.join(TIMEOUT)
        listener.close()


if __name__ == "__main__":
    main()
