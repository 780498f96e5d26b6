#!/usr/bin/env python3
"""Write the pcapng fixtures libpcap refuses or cuts short (Tests/FramedumpCoreTests/Fixtures),
read by framedump's own pcapng reader (Sources/FramedumpCore/Capture/PcapngReader.swift):

- multi_link.pcapng: game-protocol connections (port 8000) on four interfaces of different
  link types and snapshot lengths: Ethernet (the first three packets, before the other
  interfaces are described), then Linux SLL2 (nanosecond timestamps), raw IP (2^-20 s units
  and an if_tsoffset) and BSD NULL, in Enhanced, Obsolete and Simple Packet Blocks, with a
  Name Resolution, an Interface Statistics and a custom block to skip;
- sections.pcapng: two sections: a little-endian one with an Ethernet interface, then a
  big-endian one with Apple PKTAP (DLT 258, Ethernet inside) and Linux SLL interfaces;
- snaplens.pcapng: two Ethernet interfaces whose snapshot lengths differ;
- pcapng2.pcapng: a section header of version 2.0;
- over_snaplen.pcapng: an Ethernet interface with a snapshot length of 64 whose Enhanced
  Packet Blocks carry whole packets (captured length above the snapshot length);
- pcapng_cut.pcapng: multi_link.pcapng cut inside a block; pcapng_garbage.pcapng: a 2.0
  header followed by a block whose length field announces 4 GB.

And the classic pcap files whose records libpcap cuts to the header's snapshot length (read
on by framedump's own pcap reader, Sources/FramedumpCore/Capture/PcapReader.swift):

- over_snaplen.pcap (little-endian, microseconds), over_snaplen_be.pcap (big-endian,
  microseconds), over_snaplen_ns.pcap (big-endian, nanosecond magic): a snapshot length of
  64 in the file header, two game connections on Ethernet whose records are whole (up to 254
  bytes, with 200-byte game frames);
- over_snaplen_cut.pcap: over_snaplen.pcap cut inside its last long record.

Packets are built here byte by byte (IPv4 and TCP with their checksums): no scapy needed.

Usage: python3 scripts/make_pcapng_fixtures.py   (from the repository root)
"""
import os, struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "FramedumpCoreTests", "Fixtures")
os.makedirs(OUT, exist_ok=True)
T0 = 1700000000


def game(mid, body):
    return struct.pack(">IH", len(body) + 6, mid) + body


def gs(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


C2S = [game(20001, struct.pack(">BI", 7, 2) + gs("hello")), game(10002, struct.pack(">Q", 12345))]
S2C = [game(20001, struct.pack(">BIBBBI", 1, 7, 3, 10, 7, 4200) + gs("ok")),
       game(30005, struct.pack(">iH", 900, 12) + gs("hero"))]


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(">%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload):
    s, d = bytes(map(int, src.split("."))), bytes(map(int, dst.split(".")))
    h = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, s, d)
    return h[:10] + struct.pack(">H", checksum(h)) + h[12:] + payload


def tcp_ip(src, dst, sport, dport, flags, seq, ack, data=b""):
    fl = sum({"F": 1, "S": 2, "R": 4, "P": 8, "A": 16}[c] for c in flags)
    t = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, fl, 512, 0, 0) + data
    s, d = bytes(map(int, src.split("."))), bytes(map(int, dst.split(".")))
    c = checksum(s + d + struct.pack(">BBH", 0, 6, len(t)) + t)
    return ipv4(src, dst, 6, t[:16] + struct.pack(">H", c) + t[18:])


def udp_ip(src, dst, sport, dport, data):
    return ipv4(src, dst, 17, struct.pack(">HHHH", sport, dport, 8 + len(data), 0) + data)


def conversation(client, cport, server="10.0.0.1", sport=8000, isn_c=1000, isn_s=5000, big=b""):
    """IPv4 packets: a SYN handshake, game frames both ways (the first c2s frame split in
    two), `big` (a frame sent by the server, when given), FIN/ACK close."""
    def seg(c2s, flags, seq, ack, data=b""):
        if c2s:
            return tcp_ip(client, server, cport, sport, flags, seq, ack, data)
        return tcp_ip(server, client, sport, cport, flags, seq, ack, data)
    cs, ss = isn_c, isn_s
    pkts = [seg(True, "S", cs, 0), seg(False, "SA", ss, cs + 1), seg(True, "A", cs + 1, ss + 1)]
    cs += 1; ss += 1
    a, b = C2S[0][:4], C2S[0][4:] + C2S[1]
    for d in (a, b):
        pkts.append(seg(True, "PA", cs, ss, d)); cs += len(d)
    for d in [S2C[0] + S2C[1]] + ([big] if big else []):
        pkts.append(seg(False, "PA", ss, cs, d)); ss += len(d)
    pkts += [seg(True, "FA", cs, ss), seg(False, "FA", ss, cs + 1), seg(True, "A", cs + 1, ss + 1)]
    return pkts


# Link layers around an IPv4 packet.
def eth(ip):
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip


def sll(ip):  # Linux cooked v1: packet type, ARPHRD, address length, 8 address bytes, protocol
    return struct.pack(">HHH8sH", 0, 772, 6, b"\0" * 8, 0x0800) + ip


def sll2(ip):  # Linux cooked v2: protocol, reserved, ifindex, ARPHRD, type, address length, 8 bytes
    return struct.pack(">HHIHBB8s", 0x0800, 0, 1, 772, 0, 6, b"\0" * 8) + ip


def null(ip):  # BSD loopback: the address family in the capturing host's (little-endian) order
    return struct.pack("<I", 2) + ip


def pktap(inner_dlt, ifname):
    # struct pktap_header (108 bytes, little-endian as on a Mac), as in make_fixtures.py.
    h = struct.pack("<III24sIIIIi20sIHHi20s", 108, 1, inner_dlt, ifname, 0, 2, 0, 0, 4242, b"MyGame", 0, 6, 0, 4242, b"MyGame")
    assert len(h) == 108
    return h


class Section:
    """One pcapng section's blocks, in the byte order `e` ('<' or '>')."""
    def __init__(self, e="<", major=1, minor=0):
        self.e = e
        self.data = self.block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, major, minor, -1) + self.options([(4, b"make_pcapng_fixtures.py")]))

    def block(self, btype, body):
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack(self.e + "II", btype, n) + body + struct.pack(self.e + "I", n)

    def options(self, opts):
        out = b""
        for code, value in opts:
            out += struct.pack(self.e + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)
        return out + (struct.pack(self.e + "HH", 0, 0) if opts else b"")

    def interface(self, linktype, snaplen, name, tsresol=None, tsoffset=None):
        opts = [(2, name.encode())]
        if tsresol is not None:
            opts.append((9, bytes([tsresol])))
        if tsoffset is not None:
            opts.append((14, struct.pack(self.e + "q", tsoffset)))
        self.data += self.block(1, struct.pack(self.e + "HHI", linktype, 0, snaplen) + self.options(opts))

    def epb(self, iface, units, pkt, caplen=None):
        cap = pkt[:caplen] if caplen is not None else pkt
        self.data += self.block(6, struct.pack(self.e + "IIIII", iface, units >> 32, units & 0xFFFFFFFF, len(cap), len(pkt)) + cap
                                + b"\0" * (-len(cap) % 4) + self.options([(1, b"an EPB comment")]))

    def opb(self, iface, units, pkt):  # the Obsolete Packet Block (type 2): a 16-bit interface id and drop count
        self.data += self.block(2, struct.pack(self.e + "HHIIII", iface, 0, units >> 32, units & 0xFFFFFFFF, len(pkt), len(pkt)) + pkt)

    def spb(self, pkt):  # the Simple Packet Block: interface 0, no timestamp
        self.data += self.block(3, struct.pack(self.e + "I", len(pkt)) + pkt)

    def skip_me(self):
        # A Name Resolution Block (an IPv4 record), an Interface Statistics Block, a custom block.
        nrb = struct.pack(self.e + "HH", 1, 12) + bytes([10, 0, 0, 1]) + b"server\0\0" + struct.pack(self.e + "HH", 0, 0)
        self.data += self.block(4, nrb)
        self.data += self.block(5, struct.pack(self.e + "III", 0, 0, 0))
        self.data += self.block(0x40000BAD, struct.pack(self.e + "I", 32473) + b"not for framedump")


def write(name, data):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(data)
    print("wrote", path)


def usec(i):
    return (T0 + i // 1000) * 1_000_000 + (i % 1000) * 1000  # packet i at T0 + i ms, in microseconds


def multi_link():
    s = Section("<")
    s.interface(1, 65535, "eth0")
    a = conversation("10.0.0.2", 40001)
    # The Ethernet connection's first three packets come before the other interfaces exist.
    for i in range(3):
        s.epb(0, usec(i), eth(a[i]))
    s.skip_me()
    s.interface(276, 262144, "any", tsresol=9)                                # nanoseconds
    s.interface(101, 0, "tun0", tsresol=0x80 | 20, tsoffset=-100)             # 2^-20 s, 100 s earlier
    s.interface(0, 2048, "lo0")
    b = conversation("10.0.0.3", 40002)
    c = conversation("10.0.0.4", 40003)
    d = conversation("10.0.0.5", 40004)
    for i in range(max(len(b), len(a))):
        t = 3 + 4 * i
        if i + 3 < len(a):
            pkt = eth(a[i + 3])
            if i == 1:
                s.opb(0, usec(t), pkt)
            else:
                s.epb(0, usec(t), pkt)
        if i < len(b):
            s.epb(1, usec(t + 1) * 1000 + 7, sll2(b[i]))
        if i < len(c):
            units = ((T0 + 100 + (t + 2) // 1000) << 20) + ((t + 2) % 1000) * (1 << 20) // 1000
            s.epb(2, units, c[i])
        if i < len(d):
            s.epb(3, usec(t + 3), null(d[i]))
    # A UDP packet in a Simple Packet Block (interface 0): counted and skipped.
    s.spb(eth(udp_ip("10.0.0.9", "10.0.0.1", 5353, 5353, b"x" * 20)))
    return s.data


def sections():
    s = Section("<")
    s.interface(1, 65535, "en0")
    for i, p in enumerate(conversation("10.0.0.2", 40011)):
        s.epb(0, usec(i), eth(p))
    t = Section(">")
    t.interface(258, 65535, "pktap")
    t.interface(113, 65535, "any")
    e, f = conversation("10.0.0.3", 40012), conversation("10.0.0.4", 40013)
    for i in range(len(e)):
        t.epb(0, usec(100 + 2 * i), pktap(1, b"en0") + eth(e[i]))
        t.epb(1, usec(101 + 2 * i), sll(f[i]))
    return s.data + t.data


def snaplens():
    s = Section("<")
    s.interface(1, 65535, "en0")
    s.interface(1, 262144, "en1")
    a, b = conversation("10.0.0.2", 40021), conversation("10.0.0.3", 40022)
    for i in range(len(a)):
        s.epb(0, usec(2 * i), eth(a[i]))
        s.epb(1, usec(2 * i + 1), eth(b[i]))
    return s.data


def version2():
    s = Section("<", major=2, minor=0)
    s.interface(1, 65535, "en0")
    for i, p in enumerate(conversation("10.0.0.2", 40031)):
        s.epb(0, usec(i), eth(p))
    return s.data


def over_snaplen():
    s = Section("<")
    s.interface(1, 64, "en0")
    big = game(30005, struct.pack(">iH", 901, 13) + gs("h" * 400))
    for i, p in enumerate(conversation("10.0.0.2", 40041, big=big)):
        s.epb(0, usec(i), eth(p))
    return s.data


def classic_pcap(e, nano, snaplen=64):
    """A classic pcap file in byte order `e` whose records are whole, above `snaplen`."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, 1)
    frames = [game(30005, struct.pack(">iH", 900 + k, 186) + gs(chr(97 + k) * 186)) for k in range(2)]
    assert all(len(f) == 200 for f in frames)
    pkts = conversation("10.0.0.2", 40051, big=frames[0] + frames[1]) + conversation("10.0.0.3", 40052, isn_c=7000, big=frames[1])
    for i, p in enumerate(pkts):
        p = eth(p)
        frac = (i * 1000 + 123) * 1000 + 456 if nano else i * 1000 + 123  # packet i at T0 + i ms (+123.456 µs)
        out += struct.pack(e + "IIII", T0 + i // 1000, frac, len(p), len(p)) + p
    return out


def garbage():
    s = Section("<", major=2, minor=0)
    s.interface(1, 65535, "en0")
    return s.data + struct.pack("<II", 6, 0xFFFFFFF0) + b"\0" * 40


if __name__ == "__main__":
    ml = multi_link()
    write("multi_link.pcapng", ml)
    write("sections.pcapng", sections())
    write("snaplens.pcapng", snaplens())
    write("pcapng2.pcapng", version2())
    write("over_snaplen.pcapng", over_snaplen())
    write("pcapng_cut.pcapng", ml[:len(ml) - 150])
    write("pcapng_garbage.pcapng", garbage())
    le = classic_pcap("<", False)
    write("over_snaplen.pcap", le)
    write("over_snaplen_be.pcap", classic_pcap(">", False))
    write("over_snaplen_ns.pcap", classic_pcap(">", True))
    write("over_snaplen_cut.pcap", le[:len(le) - 3 * 70 - 100])  # after it: three records of 16 + 54 bytes
