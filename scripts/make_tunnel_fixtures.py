#!/usr/bin/env python3
"""Write the tunnel fixtures the tests read (Tests/FramedumpCoreTests/Fixtures/tunnel-*.pcap).

Each file carries game-protocol conversations (port 8000, the frames and the handshake of
`make_fixtures.conversation`) inside one kind of tunnel, each conversation with its own
client port; the tests compare framedump's streams with tshark's TCP follow:

- tunnel-gre.pcap     GRE (RFC 2784/2890) with checksum, key and sequence number, carrying
                      IPv4, IPv6 and (transparent Ethernet bridging, 0x6558) an Ethernet frame
                      with an 802.1Q tag; over IPv4 and over IPv6;
- tunnel-erspan.pcap  ERSPAN in GRE: type I (no GRE flag, no header), type II (0x88BE, 8 bytes),
                      type III (0x22EB, 12 bytes, and with the 8-byte platform subheader);
- tunnel-ipip.pcap    IPv4 in IPv4 (protocol 4, with the inner datagram fragmented), IPv6 in
                      IPv4 (6in4, protocol 41, with the outer datagram fragmented), IPv4 in IPv6
                      and IPv6 in IPv6;
- tunnel-vxlan.pcap   VXLAN (UDP 4789) over IPv4 and over IPv6 (an 802.1Q-tagged inner frame);
- tunnel-geneve.pcap  Geneve (UDP 6081) with options: an Ethernet frame, and IPv4 directly;
- tunnel-nested.pcap  four tunnels deep (framedump's limit): GRE, VXLAN, IPv4 in IPv6, IPv6 in IPv4;
- tunnel-malformed.pcap  one good GRE conversation among tunnel headers cut by the snaplen,
                      contradicting their IP length, of an unknown version, and nesting bombs
                      (IP in IP and GRE in GRE beyond four levels); not compared with tshark
                      (it follows the bombs as deep as they go).

- tunnel-teredo.pcap  Teredo (UDP 3544): IPv6 directly, behind an origin indication, and
                      behind an authentication indicator (issue 44);
- tunnel-ayiya.pcap   AYIYA (UDP 5072): IPv6 and IPv4 forwarded with a 16-byte identity and a
                      SHA-1 signature;
- tunnel-pptp.pcap    PPTP's enhanced GRE (version 1, protocol 0x880B): PPP with and without
                      address/control, with sequence and acknowledgement numbers and without;
- tunnel-udp.pcap     UDP inside tunnels: the real datagrams of samples/udp.pcap (udpgame,
                      port 8200) inside VXLAN, Geneve, GTP-U, GRE, IP in IP, Teredo, AYIYA and
                      PPTP, each tunnel with its own inner client port (40101 to 40108).

- tunnel-capwap.pcap  CAPWAP data (UDP 5247, RFC 5415): an 802.3 frame (T clear), and an IEEE
                      802.11 QoS data frame with LLC/SNAP (T set, binding 1) whose frame
                      control bytes are swapped, as Cisco access points send them (and tshark
                      reads by default); tunnel-capwap-rfc.pcap: the 802.11 frame in RFC order;
- tunnel-ipcomp.pcap  AH then IPComp with DEFLATE (RFC 3173/2394: CPI 2, raw DEFLATE, each
                      datagram on its own) over IPv4 and IPv6, as libpcap's AH-IPComp captures;
- link-arcnet.pcap    Linux ARCNET (link type 129): RFC 1201 IP;
- link-arcnet-bsd.pcap  BSD ARCNET (link type 7): RFC 1051 IP;
- link-ppp-chdlc.pcap  Cisco HDLC frames in a file that says PPP (link type 9), which tshark
                      finds by a heuristic.

Usage: python3 scripts/make_tunnel_fixtures.py   (from the repository root)
"""
import os, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import OUT, T0, C2S, conversation, write  # noqa: E402

from scapy.all import Ether, Dot1Q, IP, IPv6, TCP, UDP, Raw, fragment  # noqa: E402
from scapy.layers.l2 import GRE  # noqa: E402
from scapy.layers.vxlan import VXLAN  # noqa: E402
from scapy.contrib.geneve import GENEVE, GeneveOptions  # noqa: E402
from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III, ERSPAN_PlatformSpecific  # noqa: E402


def v4(c2s):
    return IP(src="10.0.0.2", dst="10.0.0.1") if c2s else IP(src="10.0.0.1", dst="10.0.0.2")


def v6(c2s, nh=None):
    src, dst = ("2001:db8::2", "2001:db8::1") if c2s else ("2001:db8::1", "2001:db8::2")
    return IPv6(src=src, dst=dst) if nh is None else IPv6(src=src, dst=dst, nh=nh)


# The tunnel's endpoints, whose direction follows the inner packet's.
def o4(c2s, **kw):
    return IP(src="192.0.2.1", dst="192.0.2.2", **kw) if c2s else IP(src="192.0.2.2", dst="192.0.2.1", **kw)


def o6(c2s, nh=None):
    src, dst = ("2001:db8:ffff::1", "2001:db8:ffff::2") if c2s else ("2001:db8:ffff::2", "2001:db8:ffff::1")
    return IPv6(src=src, dst=dst) if nh is None else IPv6(src=src, dst=dst, nh=nh)


def eth():
    return Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01")


def retime(pkts):
    for i, p in enumerate(pkts):
        p.time = T0 + i * 0.001
    return pkts


def gre_fixture():
    seq = iter(range(1, 1000))
    g = conversation(lambda c: eth() / o4(c) / GRE(proto=0x0800, chksum_present=1, key_present=1, key=0x1234,
                                                 seqnum_present=1, seqence_number=next(seq)) / v4(c), cport=40020)
    g += conversation(lambda c: eth() / o4(c) / GRE(proto=0x86DD, key_present=1, key=9) / v6(c), cport=40021)
    g += conversation(lambda c: eth() / o6(c, nh=47) / GRE(proto=0x6558, seqnum_present=1, seqence_number=next(seq))
                      / eth() / v4(c), cport=40022)
    g += conversation(lambda c: eth() / o4(c) / GRE(proto=0x6558) / eth() / Dot1Q(vlan=7) / v6(c), cport=40023)
    write("tunnel-gre.pcap", retime(g))


def erspan_fixture():
    seq = iter(range(1, 1000))
    e = conversation(lambda c: eth() / o4(c) / GRE(proto=0x88BE) / eth() / v4(c), cport=40030)
    e += conversation(lambda c: eth() / o4(c) / GRE(proto=0x88BE, seqnum_present=1, seqence_number=next(seq))
                      / ERSPAN_II(vlan=5, session_id=3, index=17) / eth() / v4(c), cport=40031)
    e += conversation(lambda c: eth() / o4(c) / GRE(proto=0x22EB, seqnum_present=1, seqence_number=next(seq))
                      / ERSPAN_III(session_id=4, timestamp=0x01020304, o=0) / eth() / v4(c), cport=40032)
    e += conversation(lambda c: eth() / o4(c) / GRE(proto=0x22EB, seqnum_present=1, seqence_number=next(seq))
                      / ERSPAN_III(session_id=5, timestamp=0x01020304, o=1)
                      / ERSPAN_PlatformSpecific(platf_id=3, info1=0x1234, info2=0x55667788) / eth() / v6(c),
                      cport=40033)
    write("tunnel-erspan.pcap", retime(e))


def ipip_fixture():
    # IPv4 in IPv4, the inner datagram of each data segment cut into 16-byte fragments.
    inner = conversation(v4, cport=40040)
    t = []
    for p in inner:
        c2s = p[IP].src == "10.0.0.2"
        pieces = fragment(p, fragsize=16) if p.haslayer(Raw) else [p]
        for f in pieces:
            q = eth() / o4(c2s) / f
            q.time = p.time
            t.append(q)
    # IPv6 in IPv4 (6in4), the outer datagram of each data segment fragmented.
    for p in conversation(lambda c: o4(c) / v6(c), cport=40041):
        pieces = fragment(p, fragsize=32) if p.haslayer(Raw) else [p]
        for f in pieces:
            q = eth() / f
            q.time = p.time
            t.append(q)
    t += conversation(lambda c: eth() / o6(c, nh=4) / v4(c), cport=40042)
    t += conversation(lambda c: eth() / o6(c, nh=41) / v6(c), cport=40043)
    write("tunnel-ipip.pcap", retime(t))


def vxlan_fixture():
    x = conversation(lambda c: eth() / o4(c) / UDP(sport=50000 if c else 50001, dport=4789) / VXLAN(vni=42)
                     / eth() / v4(c), cport=40050)
    x += conversation(lambda c: eth() / o6(c) / UDP(sport=4789, dport=4789) / VXLAN(vni=0xABCDE)
                      / eth() / Dot1Q(vlan=12) / v6(c), cport=40051)
    write("tunnel-vxlan.pcap", retime(x))


def geneve_fixture():
    opts = [GeneveOptions(classid=0x0102, type=0x80, data=b"\x00\x00\x00\x01"),
            GeneveOptions(classid=0xFFFF, type=0x01, data=b"abcdefgh")]
    n = conversation(lambda c: eth() / o4(c) / UDP(sport=50002, dport=6081) / GENEVE(vni=43, proto=0x6558, options=opts)
                     / eth() / v4(c), cport=40060)
    n += conversation(lambda c: eth() / o6(c) / UDP(sport=50003, dport=6081) / GENEVE(vni=44, proto=0x0800, options=opts[:1])
                      / v4(c), cport=40061)
    write("tunnel-geneve.pcap", retime(n))


def nested_fixture():
    # 1 GRE (Ethernet inside), 2 VXLAN, 3 IPv4 in IPv6, 4 IPv6 in IPv4.
    mid4 = lambda c: IP(src="172.16.0.1", dst="172.16.0.2") if c else IP(src="172.16.0.2", dst="172.16.0.1")
    n = conversation(lambda c: eth() / o4(c) / GRE(proto=0x6558, key_present=1, key=1) / eth() / mid4(c)
                     / UDP(sport=50004, dport=4789) / VXLAN(vni=7) / eth() / o6(c, nh=4) / o4(c) / v6(c), cport=40070)
    write("tunnel-nested.pcap", retime(n))


def malformed_fixture():
    """A good conversation, then bad tunnel headers one packet each, as raw records: caplen
    below the wire length where the snaplen cut the header."""
    good = conversation(lambda c: eth() / o4(c) / GRE(proto=0x0800, key_present=1, key=5) / v4(c), cport=40080)
    tcp = lambda: TCP(sport=40081, dport=8000, flags="PA", seq=1, ack=1) / Raw(C2S[1])
    out = lambda proto=None: eth() / (IP(src="192.0.2.1", dst="192.0.2.2") if proto is None
                                      else IP(src="192.0.2.1", dst="192.0.2.2", proto=proto))
    bad = []  # (bytes, wire length)

    def cut(p, keep):
        b = bytes(p)
        bad.append((b[:keep], len(b)))

    def whole(p):
        b = bytes(p)
        bad.append((b, len(b)))

    gre_v4 = out() / GRE(proto=0x0800, key_present=1, seqnum_present=1) / v4(True) / tcp()
    cut(gre_v4, 14 + 20 + 2)                                    # GRE: 2 of its 4 bytes captured (snaplen)
    cut(gre_v4, 14 + 20 + 8)                                    # GRE: its key, not its sequence number (snaplen)
    ip = IP(src="192.0.2.1", dst="192.0.2.2", proto=47, len=20 + 6)  # GRE: the IP length leaves it 6 of 12 bytes
    whole(eth() / ip / Raw(bytes(GRE(proto=0x0800, key_present=1, seqnum_present=1))[:6] + b"\0" * 20))
    udp = lambda port: out() / UDP(sport=50000, dport=port)
    cut(udp(4789) / VXLAN(vni=1) / eth() / v4(True) / tcp(), 14 + 20 + 8 + 4)  # VXLAN: 4 of 8 bytes (snaplen)
    whole(udp(4789) / Raw(b"\x00\x00\x00\x00\x00\x00\x01\x00") / eth() / v4(True) / tcp())  # VXLAN: I flag clear
    whole(udp(6081) / Raw(bytes(GENEVE(proto=0x6558))[:1].replace(b"\x00", b"\x3f") + bytes(GENEVE(proto=0x6558))[1:])
          / eth() / v4(True) / tcp())                           # Geneve: 252 bytes of options announced, 0 there
    whole(udp(6081) / Raw(b"\x80" + bytes(GENEVE(proto=0x6558))[1:]) / eth() / v4(True) / tcp())  # Geneve version 2
    cut(out() / GRE(proto=0x88BE, seqnum_present=1) / ERSPAN_II() / eth() / v4(True) / tcp(), 14 + 20 + 8 + 5)
    whole(out() / GRE(proto=0x22EB, seqnum_present=1) / Raw(b"\x30" + b"\0" * 11) / eth() / v4(True) / tcp())  # ERSPAN version 3
    # Nesting bombs: IP in IP 6 deep, and GRE in GRE 6 deep, around a TCP segment.
    bomb = v4(True) / tcp()
    for _ in range(6):
        bomb = IP(src="192.0.2.1", dst="192.0.2.2") / bomb
    whole(eth() / bomb)
    bomb = v4(True) / tcp()
    for _ in range(6):
        bomb = IP(src="192.0.2.1", dst="192.0.2.2") / GRE(proto=0x0800) / bomb
    whole(eth() / bomb)

    path = os.path.join(OUT, "tunnel-malformed.pcap")
    recs = [(bytes(p), len(bytes(p))) for p in good[:5]] + bad + [(bytes(p), len(bytes(p))) for p in good[5:]]
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, (b, wire) in enumerate(recs):
            t = int(T0 * 1000) + i
            f.write(struct.pack("<IIII", t // 1000, (t % 1000) * 1000, len(b), wire) + b)
    print("wrote", path)


def teredo(c2s, origin=False, auth=False):
    h = b""
    if auth:
        h += struct.pack(">HBB", 1, 4, 0) + b"clnt" + bytes(range(8)) + b"\x00"
    if origin:
        h += struct.pack(">HH", 0, 0xffff ^ 3544) + bytes([0xff ^ 192, 0xff ^ 0, 0xff ^ 2, 0xff ^ 9])
    port = (40200, 3544) if c2s else (3544, 40200)
    return o4(c2s) / UDP(sport=port[0], dport=port[1]) / Raw(h)


def teredo_fixture():
    t = conversation(lambda c: eth() / teredo(c) / v6(c), cport=40080)
    t += conversation(lambda c: eth() / teredo(c, origin=not c) / v6(c), cport=40081)
    t += conversation(lambda c: eth() / teredo(c, auth=c, origin=not c) / v6(c), cport=40082)
    write("tunnel-teredo.pcap", retime(t))


def ayiya(c2s, nh):
    # identity length 2^4 (type 1, integer), signature 5 words (SHA-1, hash 2), auth 2 with
    # opcode 1 (forward), next header, epoch; identity; signature.
    h = bytes([0x41, 0x52, 0x21, nh]) + struct.pack(">I", 1700000000) + bytes(16) + bytes(range(20))
    return o4(c2s) / UDP(sport=5072, dport=5072) / Raw(h)


def ayiya_fixture():
    a = conversation(lambda c: eth() / ayiya(c, 41) / v6(c), cport=40090)
    a += conversation(lambda c: eth() / ayiya(c, 4) / v4(c), cport=40091)
    write("tunnel-ayiya.pcap", retime(a))


def pptp(c2s, payload_len, seq=None, ack=None, acfc=False):
    flags = 0x2001 | (0x1000 if seq is not None else 0) | (0x0080 if ack is not None else 0)
    h = struct.pack(">HHHH", flags, 0x880B, payload_len, 7 if c2s else 9)
    if seq is not None:
        h += struct.pack(">I", seq)
    if ack is not None:
        h += struct.pack(">I", ack)
    return h


def pptp_fixture():
    out = []
    for n, (acfc, with_seq) in enumerate([(True, True), (False, False)]):
        seq = iter(range(1, 1000))
        for p in conversation(lambda c: v4(c), cport=40100 + n * 10):
            inner = bytes(p)
            ppp = (b"\xff\x03" if acfc else b"") + b"\x00\x21" + inner
            c2s = p[IP].src == "10.0.0.2"
            g = pptp(c2s, len(ppp), seq=next(seq) if with_seq else None, ack=5 if with_seq else None)
            out.append(eth() / o4(c2s, proto=47) / Raw(g + ppp))
    write("tunnel-pptp.pcap", retime(out))


def capwap(c2s, native):
    # Preamble 0; HLEN 2 words (8 bytes), RID 1, WBID 1, T; fragment id and offset 0.
    word = (2 << 19) | (1 << 14) | (1 << 9) | ((1 if native else 0) << 8)
    port = (40300, 5247) if c2s else (5247, 40300)
    return o4(c2s) / UDP(sport=port[0], dport=port[1]) / Raw(struct.pack(">II", word, 0))


def dot11(c2s, swapped=False):
    # QoS data (type 2, subtype 8): frame control 0x88, to DS from the client, from DS back;
    # duration, three addresses, sequence control, QoS control; LLC/SNAP for IPv4. Cisco
    # access points send the frame control's two bytes swapped.
    fc = bytes([0x88, 0x01 if c2s else 0x02])
    if swapped:
        fc = fc[::-1]
    return Raw(fc + b"\0\0" + bytes(range(1, 19)) + b"\x10\x00" + b"\x00\x00" + b"\xaa\xaa\x03\x00\x00\x00\x08\x00")


def capwap_fixture():
    c = conversation(lambda c: eth() / capwap(c, False) / eth() / v4(c), cport=40310)
    c += conversation(lambda c: eth() / capwap(c, True) / dot11(c, swapped=True) / v4(c), cport=40311)
    write("tunnel-capwap.pcap", retime(c))
    write("tunnel-capwap-rfc.pcap", retime(conversation(lambda c: eth() / capwap(c, True) / dot11(c) / v4(c), cport=40312)))


def ipcomp_fixture():
    import zlib
    from scapy.layers.ipsec import AH
    out = []
    for n, (outer, inner_ip) in enumerate([(lambda c: o4(c, proto=51), v4), (lambda c: o6(c, nh=51), v6)]):
        for p in conversation(lambda c, ip=inner_ip: ip(c), cport=40320 + n):
            c2s = p[TCP].dport == 8000
            seg = bytes(p[TCP])
            d = zlib.compressobj(9, zlib.DEFLATED, -15)
            body = d.compress(seg) + d.flush()
            ipcomp = struct.pack(">BBH", 6, 0, 2) + body
            ah = AH(nh=108, payloadlen=4, spi=0x2000 + n, seq=1, icv=b"\x22" * 12)
            src = p[IP].src if IP in p else p[IPv6].src
            pkt = eth() / outer(c2s) / ah / Raw(ipcomp)
            out.append(pkt)
    write("tunnel-ipcomp.pcap", retime(out))


def raw_pcap(name, linktype, records):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
        for i, b in enumerate(records):
            t = int(T0 * 1000) + i
            f.write(struct.pack("<IIII", t // 1000, (t % 1000) * 1000, len(b), len(b)) + b)
    print("wrote", path)


def arcnet_fixtures():
    conv = conversation(lambda c: v4(c), cport=40330)
    recs = []
    for i, p in enumerate(conv):
        src, dst = (2, 1) if p[TCP].dport == 8000 else (1, 2)
        recs.append(bytes([src, dst, 0, 0, 0xD4, 0]) + struct.pack(">H", i) + bytes(p))
    raw_pcap("link-arcnet.pcap", 129, recs)
    conv = conversation(lambda c: v4(c), cport=40331)
    raw_pcap("link-arcnet-bsd.pcap", 7, [bytes([2, 1, 0xF0]) + bytes(p) for p in conv])


def ppp_chdlc_fixture():
    conv = conversation(lambda c: v4(c), cport=40340)
    raw_pcap("link-ppp-chdlc.pcap", 9, [b"\x0f\x00\x08\x00" + bytes(p) for p in conv])


def udp_fixture():
    from scapy.all import rdpcap
    from scapy.contrib.gtp import GTP_U_Header
    here = os.path.dirname(os.path.abspath(__file__))
    datagrams = [p[IP] for p in rdpcap(os.path.join(here, "..", "samples", "udp.pcap")) if IP in p][:12]
    wraps = [
        lambda c, i: eth() / o4(c) / UDP(sport=40000, dport=4789) / VXLAN(vni=5) / eth() / i,
        lambda c, i: eth() / o4(c) / UDP(sport=40000, dport=6081) / GENEVE(proto=0x0800) / i,
        lambda c, i: eth() / o4(c) / UDP(sport=2152, dport=2152) / GTP_U_Header(teid=7) / i,
        lambda c, i: eth() / o4(c) / GRE(proto=0x0800) / i,
        lambda c, i: eth() / o4(c) / i,
        lambda c, i: eth() / teredo(c) / i,
        lambda c, i: eth() / ayiya(c, 4) / i,
        lambda c, i: eth() / o4(c, proto=47) / Raw(pptp(c, len(bytes(i)) + 2) + b"\x00\x21" + bytes(i)),
    ]
    out = []
    for n, wrap in enumerate(wraps):
        for d in datagrams:
            c2s = d[UDP].dport == 8200
            i = d.copy()
            if c2s:
                i[UDP].sport = 40101 + n
            else:
                i[UDP].dport = 40101 + n
            if n == 5:  # Teredo carries IPv6
                i = (IPv6(src="2001:db8::2", dst="2001:db8::1") if c2s else IPv6(src="2001:db8::1", dst="2001:db8::2")) / i[UDP]
            i[UDP].chksum = None
            if IP in i:
                i[IP].chksum = None
                i[IP].len = None
            out.append(wrap(c2s, i))
    write("tunnel-udp.pcap", retime(out))


if __name__ == "__main__":
    teredo_fixture()
    ayiya_fixture()
    pptp_fixture()
    udp_fixture()
    gre_fixture()
    erspan_fixture()
    ipip_fixture()
    vxlan_fixture()
    geneve_fixture()
    nested_fixture()
    malformed_fixture()
