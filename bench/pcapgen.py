"""What the bench capture generators share: Ethernet/IPv4/TCP packets, a classic pcap file
with microsecond timestamps advancing a fixed step per packet, and TCP connections that open,
send in segments and close. (A synthetic capture for timing; the samples in samples/ are real
captures.)"""
import struct


def eth_ip_tcp(src, dst, sport, dport, seq, ack, flags, payload):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xffffffff, ack & 0xffffffff, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + tcp + payload


def ws_frame(opcode, payload, mask, rng, rsv1=False):
    """An RFC 6455 frame with FIN set; a client's (mask) masked with a key drawn from rng."""
    b0 = 0x80 | (0x40 if rsv1 else 0) | opcode
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        head = struct.pack(">BB", b0, m | n)
    elif n <= 0xFFFF:
        head = struct.pack(">BBH", b0, m | 126, n)
    else:
        head = struct.pack(">BBQ", b0, m | 127, n)
    if not mask:
        return head + payload
    key = bytes(rng.randrange(256) for _ in range(4))
    return head + key + bytes(c ^ key[i & 3] for i, c in enumerate(payload))


class PcapWriter:
    def __init__(self, path, step_us=5, start=1700000000):
        self.f = open(path, "wb")
        self.f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        self.sec, self.usec, self.step = start, 0, step_us

    def write(self, pkt):
        self.usec += self.step
        if self.usec >= 1_000_000:
            self.sec += 1
            self.usec -= 1_000_000
        self.f.write(struct.pack("<IIII", self.sec, self.usec, len(pkt), len(pkt)) + pkt)

    def close(self):
        self.f.close()


class Connection:
    """One TCP connection: a handshake when made, bytes sent as segments of at most `mss`
    (pending bytes per direction, `pend`, for the callers that gather several messages into
    one segment), and `close` sends what is pending, then a FIN each way."""

    def __init__(self, write, client, cport, server, sport, isn, mss=1448):
        self.write, self.mss = write, mss
        self.ends = ((client, server, cport, sport), (server, client, sport, cport))
        self.seq = list(isn)
        self.pend = [b"", b""]
        write(eth_ip_tcp(client, server, cport, sport, self.seq[0], 0, 0x02, b""))
        write(eth_ip_tcp(server, client, sport, cport, self.seq[1], self.seq[0] + 1, 0x12, b""))
        self.seq[0] += 1
        self.seq[1] += 1

    def send(self, d, data):
        for i in range(0, len(data), self.mss):
            chunk = data[i:i + self.mss]
            self.write(eth_ip_tcp(*self.ends[d], self.seq[d], self.seq[1 - d], 0x18, chunk))
            self.seq[d] += len(chunk)

    def flush(self, d):
        self.send(d, self.pend[d])
        self.pend[d] = b""

    def close(self):
        for d in (0, 1):
            if self.pend[d]:
                self.flush(d)
        self.write(eth_ip_tcp(*self.ends[0], self.seq[0], self.seq[1], 0x11, b""))
        self.write(eth_ip_tcp(*self.ends[1], self.seq[1], self.seq[0] + 1, 0x11, b""))
