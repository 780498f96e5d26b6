#!/usr/bin/env python3
"""Write a pcap of N short TCP connections of the game protocol (Dissectors/game.dissector,
port 8000), one after another: each a handshake (SYN, SYN-ACK, ACK), one request (Cs_20001)
and its response (SC_20001, paired by id), then a FIN each way and the last ACK. Every
connection has its own client address and port, so there are N connections and 2N messages.
Timestamps advance 5 us a packet. For `framedump ui`'s paged connection list and its memory
on many connections (docs/performance.md); the tests make a small one, a measurement 1M.

Usage: gen_many_connections.py OUT.pcap [N]        (N defaults to 1,000,000)
"""
import struct, sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
SERVER = bytes([10, 0, 0, 1])
PORT = 8000
ETH = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
ipv4_tcp = struct.Struct(">BBHHHBBH4s4sHHIIBBHHH")
record = struct.Struct("<IIII")


def frame(mid, body):
    return struct.pack(">IH", len(body) + 6, mid) + body


def text(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def main():
    sec, usec = 1700000000, 0
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        w = f.write

        def packet(src, dst, sport, dport, seq, ack, flags, payload=b""):
            nonlocal sec, usec
            usec += 5
            if usec >= 1_000_000:
                sec, usec = sec + 1, usec - 1_000_000
            p = ETH + ipv4_tcp.pack(0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst,
                                    sport, dport, seq & 0xffffffff, ack & 0xffffffff, 5 << 4, flags, 65535, 0, 0) + payload
            w(record.pack(sec, usec, len(p), len(p)) + p)

        for i in range(n):
            host, port = divmod(i, 50_000)
            client = bytes([10, 1 + host // 250, 1 + host % 250, 2])
            cport = 10_000 + port
            c, s = (i * 7919) & 0xffffff, (i * 104729) & 0xffffff
            req = frame(20001, struct.pack(">BI", i & 0xff, i) + text("line %d" % i))
            res = frame(20001, struct.pack(">BIBBBI", 1, i, 3, 0, 1, 100) + text("ok"))
            packet(client, SERVER, cport, PORT, c, 0, 0x02)
            packet(SERVER, client, PORT, cport, s, c + 1, 0x12)
            packet(client, SERVER, cport, PORT, c + 1, s + 1, 0x10)
            packet(client, SERVER, cport, PORT, c + 1, s + 1, 0x18, req)
            packet(SERVER, client, PORT, cport, s + 1, c + 1 + len(req), 0x18, res)
            packet(client, SERVER, cport, PORT, c + 1 + len(req), s + 1 + len(res), 0x11)
            packet(SERVER, client, PORT, cport, s + 1 + len(res), c + 2 + len(req), 0x11)
            packet(client, SERVER, cport, PORT, c + 2 + len(req), s + 2 + len(res), 0x10)
    print("wrote %s: %d connections, %d messages" % (out, n, 2 * n))


main()
