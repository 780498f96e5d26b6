#!/usr/bin/env python3
"""Live load: framed game messages over many loopback connections at a fixed rate, while
`framedump -i lo -q` captures them. For each rate it reports what was sent, what framedump
decoded, what the kernel dropped, gaps and malformed frames, and the CPU framedump used.

    sudo bench/live_load.py --framedump .build-release/release/framedump \\
        --rates 100000,200000,400000 --seconds 5 --connections 32 [--buffer-kib 8192]

Every message is `[u32 total length][u16 id][u32 sequence][pad]` (the game protocol's
header); each send carries --batch of them (TCP_NODELAY), as a game server flushing a tick's
worth of updates. Needs root (live capture); runs only on 127.0.0.1 and stops by itself.
"""
import argparse
import multiprocessing as mp
import os
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


def server(port, ready, stop):
    """Accepts every connection and reads it to the end (nothing is echoed)."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1024)
    ls.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ)
    ready.set()
    deadline = time.time() + 3600
    while not stop.is_set() and time.time() < deadline:
        for key, _ in sel.select(0.2):
            if key.fileobj is ls:
                c, _ = ls.accept()
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ)
            else:
                try:
                    data = key.fileobj.recv(1 << 20)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
    ls.close()


def sender(port, conns, rate, seconds, batch, size, start_at, result):
    """Keeps `rate` messages/s over `conns` connections for `seconds`, `batch` per send."""
    socks = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    # One batch, built once: the sequence numbers are the batch's own (the count is what is checked).
    payload = b"".join(struct.pack(">IHI", size, 1, k) + bytes(size - 10) for k in range(batch))
    sent = 0
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.time()
    i = 0
    while True:
        now = time.time()
        if now - t0 >= seconds:
            break
        due = int((now - t0) * rate)
        if sent + batch > due:
            time.sleep(min(0.0005, max(0.0, (sent + batch - due) / rate)))
            continue
        socks[i % len(socks)].sendall(payload)
        sent += batch
        i += 1
    for s in socks:
        s.close()
    result.put(sent)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def run(args, rate, port, dissectors):
    cmd = [args.framedump, "-i", "lo", "-q", "-d", dissectors, "tcp", "port", str(port)]
    if args.buffer_kib:
        cmd[3:3] = ["-B", str(args.buffer_kib)]
    fd = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Ready once it has dropped root (that comes right after the handle is open), or after 3 s.
    for _ in range(30):
        with open(f"/proc/{fd.pid}/status") as f:
            if re.search(r"^Uid:\s+65534", f.read(), re.M):
                break
        time.sleep(0.1)
    ready, stop = mp.Event(), mp.Event()
    srv = mp.Process(target=server, args=(port, ready, stop))
    srv.start()
    ready.wait(5)
    procs = min(args.senders, args.connections)
    result = mp.Queue()
    start_at = time.time() + 1.0
    senders = [mp.Process(target=sender, args=(port, args.connections // procs, rate / procs, args.seconds,
                                               args.batch, args.size, start_at, result)) for _ in range(procs)]
    for s in senders:
        s.start()
    time.sleep(max(0.0, start_at - time.time()))
    ticks0 = cpu_ticks(fd.pid)
    for s in senders:
        s.join(args.seconds + 30)
    sent = sum(result.get(timeout=10) for _ in senders)
    time.sleep(1.0)
    ticks1 = cpu_ticks(fd.pid)
    fd.send_signal(signal.SIGINT)
    out, err = fd.communicate(timeout=30)
    stop.set()
    srv.join(5)
    summary = out + err
    m = re.search(r"^load: \d+ connections, (\d+) messages, .*?(\d+) malformed .*?(\d+) gaps", summary, re.M)
    k = re.search(r"(\d+) packets received by filter, (\d+) packets dropped by kernel", summary)
    captured = re.search(r"^packets: (\d+)", summary, re.M)
    decoded, malformed, gaps = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (-1, -1, -1)
    received = int(captured.group(1)) if captured else -1
    dropped = int(k.group(2)) if k else -1
    cpu = (ticks1 - ticks0) / os.sysconf("SC_CLK_TCK") / (args.seconds + 1.0)
    return sent, decoded, received, dropped, gaps, malformed, cpu, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framedump", default=".build-release/release/framedump")
    ap.add_argument("--rates", default="50000,100000,200000,400000,800000", help="messages per second, comma-separated")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--senders", type=int, default=2, help="sender processes (the connections are shared among them)")
    ap.add_argument("--batch", type=int, default=20, help="messages per send()")
    ap.add_argument("--size", type=int, default=32, help="bytes per message, header included")
    ap.add_argument("--buffer-kib", type=int, help="framedump -B (default: framedump's own)")
    ap.add_argument("--port", type=int, default=18000)
    ap.add_argument("--stop-at-loss", action="store_true", help="stop raising the rate once something is lost")
    ap.add_argument("-v", action="store_true", help="print framedump's summary for each rate")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("live capture needs root")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "load.dissector"), "w") as f:
            f.write(f"protocol load {{ port {args.port}; header {{ uint32 length; uint16 id; }} "
                    "frame_length = length; message_id = id; }\nMessage Cs_1 { Uint32 seq; Bytes(rest) pad; }\n")
        print(f"{'rate/s':>9} {'sent':>9} {'decoded':>9} {'pkts':>8} {'k-drop':>7} {'gaps':>5} {'malf':>5} {'cpu':>6}")
        for rate in (int(r) for r in args.rates.split(",")):
            sent, decoded, received, dropped, gaps, malformed, cpu, summary = run(args, rate, args.port, d)
            print(f"{rate:>9} {sent:>9} {decoded:>9} {received:>8} {dropped:>7} {gaps:>5} {malformed:>5} {cpu:>6.0%}", flush=True)
            if args.v:
                print(summary)
            if args.stop_at_loss and (dropped != 0 or decoded != sent):
                break


if __name__ == "__main__":
    main()
