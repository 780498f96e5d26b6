#!/usr/bin/env python3
"""Write the capture fixtures the tests read (Tests/FramedumpCoreTests/Fixtures).

Two kinds:
- real loopback traffic captured by tcpdump: `-i any` (Linux cooked v2) while a small
  client and server talk the game protocol on 127.0.0.1 (needs root);
- scapy-built files for what loopback cannot produce: VLAN and QinQ tags, IPv6 extension
  headers, raw IP, BSD NULL/LOOP, Linux SLL v1, a snaplen that cuts payloads, pcapng,
  nanosecond timestamps, fragments and UDP (to be skipped), and reassembly edge cases
  (out of order, retransmission, conflicting overlap, a lost segment, sequence wrap).

Usage: python3 scripts/make_fixtures.py   (from the repository root)
"""
import os, socket, struct, subprocess, sys, threading, time

from scapy.all import (Ether, Dot1Q, Dot1AD, IP, IPv6, IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt,
                       IPv6ExtHdrRouting, TCP, UDP, Raw, CookedLinux, Loopback, wrpcap, PcapWriter)
from scapy.utils import PcapNgWriter
from scapy.config import conf

conf.verb = 0

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "FramedumpCoreTests", "Fixtures")
os.makedirs(OUT, exist_ok=True)
T0 = 1700000000.0


def game(mid, body):
    return struct.pack(">IH", len(body) + 6, mid) + body


def gs(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


C2S = [game(20001, struct.pack(">BI", 7, 2) + gs("hello")), game(10002, struct.pack(">Q", 12345))]
S2C = [game(20001, struct.pack(">BIBBBI", 1, 7, 3, 10, 7, 4200) + gs("ok")),
       game(30005, struct.pack(">iH", 900, 12) + gs("hero"))]


def conversation(l3, cport=40000, sport=8000, isn_c=1000, isn_s=5000):
    """A SYN handshake, game frames both ways (the first c2s frame split), FIN/ACK close."""
    def seg(c2s, flags, seq, ack, data=b""):
        ip = l3(c2s)
        t = TCP(sport=cport if c2s else sport, dport=sport if c2s else cport, flags=flags, seq=seq, ack=ack, window=512)
        return ip / t / Raw(data) if data else ip / t
    cs, ss = isn_c, isn_s
    pkts = [seg(True, "S", cs, 0), seg(False, "SA", ss, cs + 1), seg(True, "A", cs + 1, ss + 1)]
    cs += 1; ss += 1
    a, b = C2S[0][:4], C2S[0][4:] + C2S[1]
    for d in (a, b):
        pkts.append(seg(True, "PA", cs, ss, d)); cs += len(d)
    d = S2C[0] + S2C[1]
    pkts.append(seg(False, "PA", ss, cs, d)); ss += len(d)
    pkts += [seg(True, "FA", cs, ss), seg(False, "FA", ss, cs + 1), seg(True, "A", cs + 1, ss + 1)]
    for i, p in enumerate(pkts):
        p.time = T0 + i * 0.001
    return pkts


def v4(c2s):
    return IP(src="10.0.0.2", dst="10.0.0.1") if c2s else IP(src="10.0.0.1", dst="10.0.0.2")


def v6ext(c2s):
    src, dst = ("2001:db8::2", "2001:db8::1") if c2s else ("2001:db8::1", "2001:db8::2")
    return IPv6(src=src, dst=dst) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / IPv6ExtHdrRouting(addresses=[])


def eth(l3):
    return lambda c2s: Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01") / l3(c2s)


def write(name, pkts, linktype=None, nano=False, snaplen=65535):
    path = os.path.join(OUT, name)
    with PcapWriter(path, linktype=linktype, nano=nano, snaplen=snaplen, sync=True) as w:
        for p in pkts:
            w.write(p)
    print("wrote", path)


def scapy_fixtures():
    write("vlan.pcap", conversation(lambda c: Ether() / Dot1Q(vlan=42) / v4(c)))
    write("qinq.pcap", conversation(lambda c: Ether() / Dot1AD(vlan=100) / Dot1Q(vlan=42) / v4(c)))
    write("ipv6_ext.pcap", conversation(eth(v6ext)))
    write("ipv4_options.pcap", conversation(lambda c: Ether() / (IP(src="10.0.0.2", dst="10.0.0.1", options=[b"\x01\x01\x01\x00"]) if c else IP(src="10.0.0.1", dst="10.0.0.2", options=[b"\x01\x01\x01\x00"]))))
    write("rawip.pcap", conversation(v4), linktype=101)
    write("null.pcap", conversation(lambda c: Loopback(type=2) / v4(c)), linktype=0)
    loop = []
    for p in conversation(v4):
        r = Raw(struct.pack(">I", 2) + bytes(p[IP]))
        r.time = p.time
        loop.append(r)
    write("loop.pcap", loop, linktype=108)
    write("sll.pcap", conversation(lambda c: CookedLinux(pkttype=0, lladdrtype=772, lladdrlen=6, src=b"\0" * 8, proto=0x0800) / v4(c)), linktype=113)
    write("nanosecond.pcap", conversation(eth(v4)), nano=True)
    # A snaplen of 70 bytes cuts every data segment's payload: the rest is a gap.
    cut = []
    for p in conversation(eth(v4)):
        b = bytes(p)
        cut.append((b, p.time))
    path = os.path.join(OUT, "snaplen.pcap")
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 70, 1))
        for b, t in cut:
            cap = b[:70]
            f.write(struct.pack("<IIII", int(t), int(round((t % 1) * 1e6)), len(cap), len(b)) + cap)
    print("wrote", path)
    # pcapng, with UDP and IPv4 fragments mixed in (counted and skipped).
    pkts = conversation(eth(v4))
    extra = [Ether() / IP(src="10.0.0.9", dst="10.0.0.1") / UDP(sport=5353, dport=5353) / Raw(b"x" * 20)]
    extra += [Ether() / IP(src="10.0.0.9", dst="10.0.0.1", flags="MF", frag=0, proto=6) / Raw(b"y" * 40),
              Ether() / IP(src="10.0.0.9", dst="10.0.0.1", frag=5, proto=6) / Raw(b"z" * 40)]
    for i, p in enumerate(extra):
        p.time = T0 + 0.5 + i * 0.001
    path = os.path.join(OUT, "mixed.pcapng")
    w = PcapNgWriter(path)
    for p in sorted(pkts + extra, key=lambda p: p.time):
        w.write(p)
    w.close()
    print("wrote", path)
    reassembly_fixtures()


def stream_segments(data, cport, isn_c, isn_s, cuts, order, extra=()):
    """c2s data cut at `cuts`, sent in `order`; `extra` adds (index, bytes-override) copies."""
    l3 = lambda c: Ether() / v4(c)
    pieces = []
    last = 0
    for c in list(cuts) + [len(data)]:
        pieces.append((last, data[last:c]))
        last = c
    pkts = [l3(True) / TCP(sport=cport, dport=8000, flags="S", seq=isn_c),
            l3(False) / TCP(sport=8000, dport=cport, flags="SA", seq=isn_s, ack=(isn_c + 1) & 0xFFFFFFFF)]
    for i in order:
        i, override = i if isinstance(i, tuple) else (i, None)
        off, d = pieces[i]
        pkts.append(l3(True) / TCP(sport=cport, dport=8000, flags="PA", seq=(isn_c + 1 + off) & 0xFFFFFFFF,
                                   ack=isn_s + 1) / Raw(override if override is not None else d))
    for i, override in extra:
        off, d = pieces[i]
        pkts.append(l3(True) / TCP(sport=cport, dport=8000, flags="PA", seq=(isn_c + 1 + off) & 0xFFFFFFFF,
                                   ack=isn_s + 1) / Raw(override if override is not None else d))
    end = (isn_c + 1 + len(data)) & 0xFFFFFFFF
    pkts.append(l3(True) / TCP(sport=cport, dport=8000, flags="FA", seq=end, ack=isn_s + 1))
    pkts.append(l3(False) / TCP(sport=8000, dport=cport, flags="FA", seq=isn_s + 1, ack=(end + 1) & 0xFFFFFFFF))
    for i, p in enumerate(pkts):
        p.time = T0 + i * 0.001
    return pkts


def reassembly_fixtures():
    data = b"".join(C2S * 6)
    n = len(data)
    cuts = [13, 40, 41, 90, 150]
    # Out of order, with a duplicate of piece 2 and the whole stream crossing 2^32.
    write("reorder_wrap.pcap", stream_segments(data, 40001, 0xFFFFFF80, 7000, cuts, [0, 2, 1, 4, 3, 5], extra=[(2, None)]))
    # A retransmission carrying different bytes for the same range: first copy wins.
    # (The second copy arrives while the first is still waiting for the hole before it.)
    write("conflict.pcap", stream_segments(data, 40002, 100, 7000, cuts, [0, 2, (2, b"X" * (cuts[2] - cuts[1])), 1, 3, 4, 5]))
    # A lost segment (piece 3 never sent): a gap, then the deframer resynchronises.
    write("lost_segment.pcap", stream_segments(data, 40003, 100, 7000, cuts, [0, 1, 2, 4, 5]))


def live_any():
    """Real traffic on loopback captured with `-i any` (Linux cooked v2)."""
    path = os.path.join(OUT, "any_sll2.pcap")
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 8011))
    srv.listen(1)
    srv.settimeout(5)
    dump = subprocess.Popen(["tcpdump", "-i", "any", "-U", "-w", path, "tcp port 8011"],
                            stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(5):
            if "listening" in dump.stderr.readline():
                break
        else:
            raise SystemExit("tcpdump did not start")
        time.sleep(2.0)  # "listening" comes a little before `any` really captures

        def serve():
            c, _ = srv.accept()
            c.settimeout(5)
            got = b""
            while len(got) < sum(map(len, C2S)):
                got += c.recv(4096)
            c.sendall(b"".join(S2C))
            time.sleep(0.1)
            c.close()
        t = threading.Thread(target=serve)
        t.start()
        s = socket.create_connection(("127.0.0.1", 8011), timeout=5)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for f in C2S:
            s.sendall(f)
            time.sleep(0.02)
        got = b""
        while len(got) < sum(map(len, S2C)):
            got += s.recv(4096)
        s.close()
        t.join(5)
        time.sleep(1.0)
    finally:
        dump.terminate()
        dump.wait(5)
        srv.close()
    print("wrote", path)


if __name__ == "__main__":
    scapy_fixtures()
    if os.geteuid() == 0:
        live_any()
    else:
        print("not root: any_sll2.pcap (live capture) left as it is", file=sys.stderr)
    # Not a capture at all, and a capture cut off in the middle of a record.
    with open(os.path.join(OUT, "not_a_capture.pcap"), "w") as f:
        f.write("this is a text file, not a capture\n")
    whole = open(os.path.join(OUT, "vlan.pcap"), "rb").read()
    with open(os.path.join(OUT, "cut.pcap"), "wb") as f:
        f.write(whole[:len(whole) - 30])
    print("wrote not_a_capture.pcap, cut.pcap")
