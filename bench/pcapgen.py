"""What the bench capture generators share: Ethernet/IPv4/TCP packets and a classic pcap file
with microsecond timestamps advancing a fixed step per packet. (A synthetic capture for timing;
the samples in samples/ are real captures.)"""
import struct


def eth_ip_tcp(src, dst, sport, dport, seq, ack, flags, payload):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xffffffff, ack & 0xffffffff, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + tcp + payload


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
