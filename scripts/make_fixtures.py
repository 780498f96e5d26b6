#!/usr/bin/env python3
"""Write the capture fixtures the tests read (Tests/FramedumpCoreTests/Fixtures).

Two kinds:
- real loopback traffic captured by tcpdump: `-i any` (Linux cooked v2) while a small
  client and server talk the game protocol on 127.0.0.1 (needs root);
- scapy-built files for what loopback cannot produce (and, in `fidelity_fixtures`, the
  capture patterns of issue 11: ACKs captured before their data, IPv4 total length 0 from
  segmentation offload, IPv4/IPv6 fragments and IPv6 atomic fragments, an out-of-window RST,
  duplicates and retransmissions after FIN, the link layers PPP, PPP in HDLC, Cisco
  HDLC, NFLOG, MPLS, 802.3 LLC/SNAP, 802.1ah PBB, FDDI, PPPoE over QinQ, IP over InfiniBand,
  PPI and Apple PKTAP,
  and GRE/VXLAN/Geneve/GTP-U tunnels);
- and, as before, scapy-built files for VLAN and QinQ tags, IPv6 extension
  headers, raw IP, BSD NULL/LOOP, Linux SLL v1, a snaplen that cuts payloads, pcapng,
  nanosecond timestamps, fragments and UDP (to be skipped), and reassembly edge cases
  (out of order, retransmission, conflicting overlap, a lost segment, sequence wrap).

Usage: python3 scripts/make_fixtures.py   (from the repository root)
"""
import os, socket, struct, subprocess, sys, threading, time

from scapy.all import (Ether, Dot1Q, Dot1AD, IP, IPv6, IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt,
                       IPv6ExtHdrRouting, IPOption_NOP, IPOption_RR, IPOption_Router_Alert, TCP, UDP, Raw, CookedLinux, Loopback, wrpcap, PcapWriter)
from scapy.all import fragment, fragment6, IPv6ExtHdrFragment
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
    # (UDP in fragments: reassembled, counted, and not TCP.)
    extra += [Ether() / IP(src="10.0.0.9", dst="10.0.0.1", flags="MF", frag=0, proto=17) / Raw(b"y" * 40),
              Ether() / IP(src="10.0.0.9", dst="10.0.0.1", frag=5, proto=17) / Raw(b"z" * 40)]
    for i, p in enumerate(extra):
        p.time = T0 + 0.5 + i * 0.001
    path = os.path.join(OUT, "mixed.pcapng")
    w = PcapNgWriter(path)
    for p in sorted(pkts + extra, key=lambda p: p.time):
        w.write(p)
    w.close()
    print("wrote", path)
    reassembly_fixtures()
    fidelity_fixtures()
    ip_header_fixtures()
    output_fixtures()


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


class Talk:
    """A hand-driven TCP conversation: each call appends one packet, 1 ms apart unless told."""

    def __init__(self, l3=None, cport=40000, sport=8000, isn_c=1000, isn_s=5000, t0=T0):
        self.l3 = l3 or (lambda c2s: Ether() / v4(c2s))
        self.cport, self.sport = cport, sport
        self.cs, self.ss = isn_c, isn_s
        self.isn_c, self.isn_s = isn_c, isn_s
        self.t = t0
        self.pkts = []

    def pkt(self, c2s, flags, seq, ack, data=b"", dt=0.001, l3=None):
        ip = (l3 or self.l3)(c2s)
        t = TCP(sport=self.cport if c2s else self.sport, dport=self.sport if c2s else self.cport,
                flags=flags, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, window=512)
        p = ip / t / Raw(data) if data else ip / t
        self.t += dt
        p.time = self.t
        self.pkts.append(p)
        return p

    def handshake(self):
        self.pkt(True, "S", self.cs, 0)
        self.pkt(False, "SA", self.ss, self.cs + 1)
        self.cs += 1; self.ss += 1
        self.pkt(True, "A", self.cs, self.ss)

    def send(self, c2s, data, ack_first=False):
        """Data one way; the peer's ACK follows it, or (ack_first) is captured 5 us before it."""
        seq = self.cs if c2s else self.ss
        end = seq + len(data)
        if ack_first:
            self.pkt(not c2s, "A", self.ss if c2s else self.cs, end)
            self.pkt(c2s, "PA", seq, self.ss if c2s else self.cs, data, dt=0.000005)
        else:
            self.pkt(c2s, "PA", seq, self.ss if c2s else self.cs, data)
            self.pkt(not c2s, "A", self.ss if c2s else self.cs, end)
        if c2s:
            self.cs = end
        else:
            self.ss = end

    def close(self):
        self.pkt(True, "FA", self.cs, self.ss)
        self.pkt(False, "FA", self.ss, self.cs + 1)
        self.cs += 1; self.ss += 1
        self.pkt(True, "A", self.cs, self.ss)

    def game(self):
        """The usual exchange: two client messages, two server messages."""
        self.send(True, C2S[0])
        self.send(True, C2S[1])
        self.send(False, S2C[0] + S2C[1])


def fidelity_fixtures():
    # ACKs captured before the data they acknowledge (host-side capture, GRO/TSO), with one
    # pair of data segments also out of order.
    k = Talk()
    k.handshake()
    big = b"".join(C2S * 4)
    for i in range(0, len(big), 40):
        k.send(True, big[i:i + 40], ack_first=True)
    k.send(False, S2C[0], ack_first=True)
    a, b = S2C[1][:10], S2C[1][10:]
    k.pkt(True, "A", k.cs, k.ss + len(S2C[1]))
    k.pkt(False, "PA", k.ss + 10, k.cs, b, dt=0.000005)
    k.pkt(False, "PA", k.ss, k.cs, a, dt=0.000005)
    k.ss += len(S2C[1])
    k.close()
    write("ack_before_data.pcap", k.pkts)

    # An ACK for bytes that only arrive 80 packets later: past the grace, so the hole is
    # reported as an acked-unseen gap, and the bytes when they come as late data.
    k = Talk()
    k.handshake()
    k.send(True, C2S[0])
    held = C2S[1]
    k.pkt(False, "A", k.ss, k.cs + len(held))
    late_seq = k.cs
    k.cs += len(held)
    for _ in range(40):
        k.send(False, S2C[0])
    k.pkt(True, "PA", late_seq, k.ss, held)
    k.close()
    write("late_data.pcap", k.pkts)

    # IPv4 total length 0 (TSO/LSO on the capturing host): one 6 KB "segment" the NIC would
    # have cut up, between ordinary ones.
    tso_ip = lambda c2s: IP(src="10.0.0.2", dst="10.0.0.1", len=0) if c2s else v4(c2s)
    k = Talk()
    k.handshake()
    k.send(True, C2S[0])
    bulk = b"".join(C2S * 150)
    k.pkt(True, "PA", k.cs, k.ss, bulk, l3=lambda c: Ether() / tso_ip(c))
    k.cs += len(bulk)
    k.pkt(False, "A", k.ss, k.cs)
    k.send(True, C2S[1])
    k.send(False, b"".join(S2C))
    k.close()
    write("tso_len0.pcap", k.pkts)

    # IP fragments: IPv4 segments in fragments (one datagram's fragments out of order, one
    # duplicated), an IPv6 connection in fragments, IPv6 atomic fragments.
    pkts = []
    k = Talk(cport=40100)
    k.handshake()
    k.send(True, C2S[0])
    k.send(True, b"".join(C2S * 3))
    k.send(False, b"".join(S2C * 3))
    k.close()
    for p in k.pkts:
        if Raw in p and len(p[Raw].load) > 30:
            frags = fragment(p[IP], fragsize=24)
            if p[IP].src == "10.0.0.1":
                frags = frags[1:] + frags[1:2] + frags[:1]  # one duplicate, first fragment last
            for j, f in enumerate(frags):
                e = Ether() / f
                e.time = p.time + j * 0.00001
                pkts.append(e)
        else:
            pkts.append(p)
    v6 = lambda c2s: Ether() / (IPv6(src="2001:db8::2", dst="2001:db8::1") if c2s else IPv6(src="2001:db8::1", dst="2001:db8::2"))
    k = Talk(l3=v6, cport=40101, t0=T0 + 1)
    k.handshake()
    k.game()
    k.close()
    for p in k.pkts:
        if Raw in p and len(p[Raw].load) > 30:
            q = p[IPv6].copy()
            q.remove_payload()
            whole = q / IPv6ExtHdrFragment(id=0x1234 + len(pkts)) / p[TCP]
            for j, f in enumerate(fragment6(whole, 80)):
                e = Ether() / f
                e.time = p.time + j * 0.00001
                pkts.append(e)
        else:
            pkts.append(p)
    atomic = lambda c2s: v6(c2s) / IPv6ExtHdrFragment(offset=0, m=0, id=7)
    k = Talk(l3=atomic, cport=40102, t0=T0 + 2)
    k.handshake()
    k.game()
    k.close()
    pkts += k.pkts
    write("ip_fragments.pcap", pkts)

    # A RST outside the window (RFC 5961: an injected one), then the conversation goes on.
    k = Talk()
    k.handshake()
    k.send(True, C2S[0])
    k.pkt(True, "R", k.cs + 0x40000000, 0)
    k.send(True, C2S[1])
    k.send(False, b"".join(S2C))
    k.close()
    write("rst_out_of_window.pcap", k.pkts)

    # Segments after FIN: a span port copying everything twice (two VLANs), a retransmitted
    # FIN and data after the close, a stray ACK; then the port reused with a new ISN.
    k = Talk()
    k.handshake()
    k.game()
    k.close()
    k.pkt(False, "FA", k.ss - 1, k.cs)
    k.pkt(True, "PA", k.cs - 1 - len(C2S[1]), k.ss, C2S[1])
    k.pkt(True, "A", k.cs, k.ss)
    dup = []
    for p in k.pkts:
        for vlan in (10, 20):
            q = Ether() / Dot1Q(vlan=vlan) / p[IP]
            q.time = p.time + (0.0000005 if vlan == 20 else 0)
            dup.append(q)
    k = Talk(isn_c=900000, isn_s=700000, t0=k.t + 1)
    k.handshake()
    k.game()
    k.close()
    write("after_fin.pcap", dup + k.pkts)

    # Link layers, each carrying the usual conversation.
    def hdr(raw, l3=v4):
        return lambda c2s: Raw(raw) / l3(c2s)
    write("ppp.pcap", conversation(hdr(b"\x00\x21")), linktype=9)
    write("ppp_hdlc.pcap", conversation(hdr(b"\xff\x03\x00\x21")), linktype=50)
    write("c_hdlc.pcap", conversation(hdr(b"\x0f\x00\x08\x00")), linktype=104)

    nf = []
    for p in conversation(v4):
        ip = bytes(p[IP])
        # Family AF_INET, version 0, resource id 0 (big-endian); TLVs with length and type in
        # the capturing host's order (little-endian here): a packet header, a prefix, the payload.
        tlvs = struct.pack("<HH", 8, 1) + struct.pack(">HBB", 0x0800, 1, 0)
        prefix = b"fd\0\0"
        tlvs += struct.pack("<HH", 4 + len(prefix), 10) + prefix
        body = struct.pack("<HH", 4 + len(ip), 9) + ip
        body += b"\0" * (-len(body) % 4)
        r = Raw(struct.pack(">BBH", 2, 0, 0) + tlvs + body)
        r.time = p.time
        nf.append(r)
    write("nflog.pcap", nf, linktype=239)
    # PPPoE over QinQ (a broadband access network), where pure ACKs carry an IP length 6
    # bytes longer than their PPPoE session (Ethernet padding follows): the session length
    # wins, as in tshark (Zeek's pppoe-over-qinq trace).
    from scapy.layers.ppp import PPPoE, PPP
    from scapy.packet import Padding
    pq = []
    for p in conversation(lambda c2s: Ether() / Dot1AD(vlan=100) / Dot1Q(vlan=42) / PPPoE(sessionid=7) / PPP(proto=0x21) / v4(c2s)):
        if Raw not in p:
            p[IP].len = 46
            p[PPPoE].len = 42
            p = p / Padding(b"\0" * 6)
        pq.append(p)
    write("pppoe_qinq.pcap", pq)
    mpls = lambda c2s: Ether(type=0x8847) / Raw(struct.pack(">II", (100 << 12) | 64, (200 << 12) | 0x100 | 64)) / v4(c2s)
    write("mpls.pcap", conversation(mpls))
    from scapy.all import Dot3, LLC, SNAP
    write("llc_snap.pcap", conversation(lambda c2s: Dot3(src="02:00:00:00:00:02", dst="02:00:00:00:00:01") / LLC(dsap=0xaa, ssap=0xaa, ctrl=3) / SNAP(OUI=0, code=0x0800) / v4(c2s)))
    write("fddi.pcap", conversation(hdr(b"\x50" + bytes(12) + b"\xaa\xaa\x03\x00\x00\x00\x08\x00")), linktype=10)
    pbb = lambda c2s: Ether(type=0x88e7) / Raw(b"\x00\x00\x01\x00" + b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00") / v4(c2s)
    write("pbb.pcap", conversation(pbb))
    write("ipoib.pcap", conversation(lambda c2s: Raw(bytes(40) + b"\x08\x00\x00\x00") / v4(c2s)), linktype=242)
    write("ppi.pcap", conversation(lambda c2s: Raw(struct.pack("<BBHI", 0, 0, 8, 1)) / Ether() / v4(c2s)), linktype=192)

    def pktap(dlt, ifname):
        # struct pktap_header (108 bytes, little-endian as on a Mac): length, type (1 =
        # packet), inner DLT, interface name, flags, protocol family, pre/post lengths, pid,
        # command, service class, interface type and unit, effective pid and command.
        h = struct.pack("<III24sIIIIi20sIHHi20s", 108, 1, dlt, ifname, 0, 2, 0, 0, 4242, b"MyGame", 0, 6, 0, 4242, b"MyGame")
        assert len(h) == 108
        return h
    pk = conversation(lambda c2s: Raw(pktap(12, b"rvi0")) / v4(c2s))
    pk += conversation(lambda c2s: Raw(pktap(1, b"en0")) / Ether() / v4(c2s), cport=40001)
    for i, p in enumerate(pk[len(pk) // 2:]):
        p.time += 1
    write("pktap.pcap", pk, linktype=258)

    # pcapng with one-second timestamp units (if_tsresol 10^0) and 64-bit timestamps at the
    # ends of the range: libpcap hands on seconds anywhere in the signed 64-bit range.
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)
    ng = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    ng += block(1, struct.pack("<HHI", 1, 0, 65535) + struct.pack("<HHB3x", 9, 1, 0) + struct.pack("<HH", 0, 0))
    for i, (p, ts) in enumerate(zip(conversation(eth(v4)), [1, 2**63 - 16, 2**63 + 16, 2**64 - 1, 0, 2**62, 2**63, 5, 2**63 - 1])):
        d = bytes(p)
        ng += block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(d), len(d)) + d)
    path = os.path.join(OUT, "extreme_timestamps.pcapng")
    with open(path, "wb") as f:
        f.write(ng)
    print("wrote", path)

    # TCP in tunnels: GRE (IPv4 inside, and transparent Ethernet inside), VXLAN, Geneve, GTP-U.
    from scapy.layers.l2 import GRE
    from scapy.layers.vxlan import VXLAN
    from scapy.contrib.geneve import GENEVE
    outer = lambda: Ether() / IP(src="192.0.2.1", dst="192.0.2.2")
    tun = conversation(lambda c2s: outer() / GRE(proto=0x0800) / v4(c2s), cport=40010)
    tun += conversation(lambda c2s: outer() / GRE(proto=0x6558, key_present=1, key=7) / Ether() / v4(c2s), cport=40011)
    tun += conversation(lambda c2s: outer() / UDP(sport=50000, dport=4789) / VXLAN(vni=42) / Ether() / v4(c2s), cport=40012)
    tun += conversation(lambda c2s: outer() / UDP(sport=50001, dport=6081) / GENEVE(vni=43, proto=0x6558) / Ether() / v4(c2s), cport=40013)
    from scapy.contrib.gtp import GTP_U_Header
    tun += conversation(lambda c2s: outer() / UDP(sport=2152, dport=2152) / GTP_U_Header(teid=0x1234, S=1, seq=9) / v4(c2s), cport=40014)
    for i, p in enumerate(tun):
        p.time = T0 + i * 0.001
    write("tunnels.pcap", tun)

    # Timestamps: a microsecond field of 10^6 or more (tcpdump prints it as it is), and a
    # packet of another connection stamped 13 years ahead, in the middle of a conversation
    # (it must not time the conversation out and split it in two). Written by hand: scapy
    # normalises the fraction.
    conv = conversation(eth(v4))
    stray = Ether() / IP(src="10.0.0.7", dst="10.0.0.1") / TCP(sport=41000, dport=8000, flags="PA", seq=1, ack=1) / Raw(C2S[1])
    recs = []
    for i, p in enumerate(conv):
        usec = 1500000 if i == 3 else int(round((p.time % 1) * 1e6))
        recs.append((int(p.time), usec, bytes(p)))
        if i == 4:
            recs.append((int(T0) + 400_000_000, 0, bytes(stray)))
    path = os.path.join(OUT, "timestamps.pcap")
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for sec, usec, b in recs:
            f.write(struct.pack("<IIII", sec, usec, len(b), len(b)) + b)
    print("wrote", path)


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


def tcp_conversation(cport, sport, c2s=(), s2c=(), lose=None, t0=T0):
    """A SYN handshake, the c2s chunks then the s2c chunks (each its own segment; chunk number
    `lose` of c2s left out, so the stream has a hole), and a FIN close."""
    l3 = lambda c2s_: Ether() / (IP(src="10.0.0.2", dst="10.0.0.1") if c2s_ else IP(src="10.0.0.1", dst="10.0.0.2"))
    seg = lambda c, flags, seq, ack: l3(c) / TCP(sport=cport if c else sport, dport=sport if c else cport,
                                                  flags=flags, seq=seq, ack=ack, window=512)
    cs, ss = 1000, 5000
    pkts = [seg(True, "S", cs, 0), seg(False, "SA", ss, cs + 1), seg(True, "A", cs + 1, ss + 1)]
    cs += 1; ss += 1
    for n, d in enumerate(c2s):
        if n != lose:
            pkts.append(seg(True, "PA", cs, ss) / Raw(d))
        cs += len(d)
    for d in s2c:
        pkts.append(seg(False, "PA", ss, cs) / Raw(d))
        ss += len(d)
    pkts += [seg(True, "FA", cs, ss), seg(False, "FA", ss, cs + 1), seg(True, "A", cs + 1, ss + 1)]
    for i, p in enumerate(pkts):
        p.time = t0 + i * 0.001
    return pkts


def check_fixtures():
    """check_problems.pcap: one connection per problem class `framedump check -r` knows, each
    problem once (the classes are named in the comments; `nesting` and `limit` are not crafted)."""
    import base64, hashlib
    im = lambda cid, body, version=1, head=12: struct.pack(">HHHIH", head, version, cid, 1, len(body)) + body
    svc = lambda service, body: struct.pack(">II", service, len(body)) + body
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    ws_request = ("GET /service HTTP/1.1\r\nHost: 10.0.0.1:12345\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % key).encode()
    ws_response = ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode()
    good = C2S[0]
    conversations = [
        (8000, [game(999, b"\x01\x02")]),                                   # unknown-message
        (8000, [game(20001, b"\x07")]),                                      # body-short
        (8000, [game(10002, struct.pack(">Q", 1) + b"xyz")]),                 # body-long
        (9000, [im(7, b"", head=13), im(7, b"")]),                            # constant
        (8000, [struct.pack(">IH", 3, 20001), good]),                         # malformed (length 3 < 6)
        (8000, [good, good[:9], good[9:], good], 1),                          # gap (and the frame it cut)
        (5555, [b"hello, nobody decodes this\n"]),                           # unclaimed
        (9000, [im(1, b"\xff\xff\xff")]),                                   # protobuf
        (7000, [svc(1, b"not json")]),                                       # json
        (9000, [im(1, b"\x0a\x02\xff\xfe")]),                              # utf8 (a protobuf string)
        (9000, [im(7, b"12345", version=2)]),                                 # cipher
        (12345, [ws_request, b"\x81\x07" + b'{"a":1}'], None, [ws_response]),  # websocket (unmasked client frame)
    ]
    pkts = []
    for n, c in enumerate(conversations):
        sport, chunks = c[0], c[1]
        lose = c[2] if len(c) > 2 else None
        s2c = c[3] if len(c) > 3 else ()
        pkts += tcp_conversation(41000 + n, sport, chunks, s2c, lose=lose, t0=T0 + n)
    write("check_problems.pcap", pkts)


def output_fixtures():
    # HTTP sent to the game port: the client's bytes are no game frames (a bad header, then
    # bytes skipped while the deframer hunts), and the server's game messages come in between.
    k = Talk(cport=40100)
    k.handshake()
    k.send(True, b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n")
    k.send(False, S2C[0])
    k.send(True, b"User-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
    k.send(False, S2C[1])
    k.close()
    write("http_on_game_port.pcap", k.pkts)


def ip_header_fixtures():
    """Corpus findings in the IP layer (suricata-verify, nDPI), each beside a conversation."""
    # IPv4 options: a segment whose Security option says length 2 (RFC 1108 fixes 11) is
    # malformed and dropped, as tshark leaves it; the same bytes come again with well-formed
    # options (NOPs, a record route, a router alert) and are taken. The dropped copy carries
    # other bytes, so taking it would show in the stream.
    opts_ok = [IPOption_NOP(), IPOption_RR(routers=["10.9.9.9"]), IPOption_Router_Alert()]
    k = Talk(cport=40200)
    k.handshake()
    k.send(True, C2S[0])
    nops = lambda c2s: Ether() / IP(src="10.0.0.2", dst="10.0.0.1", options=[IPOption_NOP()] * 4)
    p = k.pkt(True, "PA", k.cs, k.ss, b"X" * len(C2S[1]), l3=nops)
    raw = bytearray(bytes(p))
    raw[14 + 20:14 + 24] = b"\x82\x02\x00\x00"  # security, length 2
    raw[14 + 10:14 + 12] = b"\x00\x00"
    bad = Ether(bytes(raw))
    del bad[IP].chksum
    bad.time = p.time
    k.pkts[-1] = Ether(bytes(bad))
    k.pkts[-1].time = p.time
    good = lambda c2s: Ether() / (IP(src="10.0.0.2", dst="10.0.0.1", options=opts_ok) if c2s
                                  else IP(src="10.0.0.1", dst="10.0.0.2", options=opts_ok))
    k.pkt(True, "PA", k.cs, k.ss, C2S[1], l3=good, dt=0.2)
    k.cs += len(C2S[1])
    k.pkt(False, "A", k.ss, k.cs, l3=good)
    k.send(False, S2C[0] + S2C[1])
    k.close()
    write("ip_options.pcap", k.pkts)

    # More than 256 fragments in one datagram (16 bytes each, as nDPI's
    # ip_fragmented_garbage.pcap), and two datagrams in a row with the same IP id.
    pkts = []
    k = Talk(cport=40201)
    k.handshake()
    k.send(True, C2S[0])
    k.send(True, b"".join(C2S * 150))
    k.send(True, b"".join(C2S * 160))
    k.send(False, b"".join(S2C * 30))
    k.close()
    for p in k.pkts:
        if Raw in p and len(p[Raw].load) > 1000:
            q = p[IP].copy()
            q.id = 0xa0
            for j, f in enumerate(fragment(q, fragsize=16)):
                e = Ether() / f
                e.time = p.time + j * 0.000001
                pkts.append(e)
        else:
            pkts.append(p)
    write("many_fragments.pcap", pkts)

    # Fragments after the packet clock jumps (issue 44, as PcapPlusPlus' ip-frag.pcap and
    # ip6_fragments.pcap): one stale IPv4 fragment that never completes, then 45 s later a
    # connection whose data segments come in 16-byte fragments a microsecond apart, then 13
    # hours later an IPv6 connection whose 991-byte segment comes in 80-byte fragments. Every
    # datagram is complete; none may be timed out.
    stale = Ether() / IP(src="10.0.0.2", dst="10.0.0.1", id=0x99, flags="MF", frag=0, proto=6) / Raw(b"s" * 24)
    stale.time = T0
    pkts = [stale]
    k = Talk(cport=40210, t0=T0 + 45)
    k.handshake()
    k.send(True, b"".join(C2S * 6))
    k.send(False, b"".join(S2C * 4))
    k.close()
    for p in k.pkts:
        if Raw in p:
            q = p[IP].copy()
            q.id = 0x100 + len(pkts)
            for j, f in enumerate(fragment(q, fragsize=16)):
                e = Ether() / f
                e.time = p.time + j * 0.000001
                pkts.append(e)
        else:
            pkts.append(p)
    v6 = lambda c2s: Ether() / (IPv6(src="2001:db8::2", dst="2001:db8::1") if c2s else IPv6(src="2001:db8::1", dst="2001:db8::2"))
    k = Talk(l3=v6, cport=40211, t0=T0 + 45 + 13 * 3600)
    k.handshake()
    k.send(True, (b"".join(C2S * 40))[:991])
    k.send(False, b"".join(S2C))
    k.close()
    for p in k.pkts:
        if Raw in p and len(p[Raw].load) > 500:
            q = p[IPv6].copy()
            q.remove_payload()
            whole = q / IPv6ExtHdrFragment(id=0x5678) / p[TCP]
            for j, f in enumerate(fragment6(whole, 80)):
                e = Ether() / f
                e.time = p.time + j * 0.000001
                pkts.append(e)
        else:
            pkts.append(p)
    write("fragments_clock_jump.pcap", pkts)

    # A sequence number that jumps forward by more than 2^31 (the middle of a transfer of
    # gigabytes left out of the capture, as zeek's ftp/bigtransfer.pcap): serial arithmetic
    # reads it as 1.3 GB behind, further than any window lets a retransmission be.
    k = Talk(cport=40212)
    k.handshake()
    k.game()
    k.cs += 3_000_000_000
    k.send(True, C2S[0])
    k.send(True, C2S[1])
    k.send(False, S2C[0])
    k.close()
    write("seq_jump.pcap", k.pkts)

    # AH in transport mode (RFC 4302; IPv4 and IPv6): authenticated, not encrypted, so the TCP
    # segment follows the AH header (as in libpcap's AH-IPcomp test captures).
    from scapy.layers.ipsec import AH
    pkts = []
    for n, (l3, cport) in enumerate([(lambda c: Ether() / v4(c), 40202),
                                     (lambda c: Ether() / v6ext(c), 40203)]):
        k = Talk(l3=lambda c, l3=l3: l3(c) / AH(spi=0x1000 + n, seq=1, payloadlen=4, icv=b"\x11" * 12), cport=cport, t0=T0 + n)
        k.handshake()
        k.game()
        k.close()
        for p in k.pkts:  # AH names the protocol after it
            p[AH].nh = 6
        pkts += k.pkts
    write("ah.pcap", pkts)


if __name__ == "__main__" and sys.argv[1:] == ["ip"]:
    ip_header_fixtures()
    sys.exit(0)

if __name__ == "__main__" and sys.argv[1:] == ["check"]:
    check_fixtures()
    sys.exit(0)

if __name__ == "__main__":
    check_fixtures()
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
