#!/usr/bin/env python3
"""Copy a classic pcap of Ethernet/IPv4/TCP packets, leaving out COUNT of the segments that
carry data, evenly spaced after the first tenth of the capture: a capture that lost packets,
for the page's loss rows (each lost segment is a gap, and the frames it cut are reported).

Usage: lose_segments.py IN.pcap OUT.pcap COUNT
"""
import struct, sys


def packets(f):
    while True:
        head = f.read(16)
        if len(head) < 16:
            return
        caplen = struct.unpack("<IIII", head)[2]
        yield head, f.read(caplen)


def carries_data(frame):
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
        return False
    ihl = (frame[14] & 15) * 4
    total = struct.unpack(">H", frame[16:18])[0]
    tcp = 14 + ihl
    return len(frame) >= tcp + 13 and total - ihl - (frame[tcp + 12] >> 4) * 4 > 0


def main():
    src, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(src, "rb") as f:
        header = f.read(24)
        if struct.unpack("<I", header[:4])[0] != 0xa1b2c3d4 or struct.unpack("<I", header[20:24])[0] != 1:
            raise SystemExit(f"{src}: not a little-endian microsecond pcap of Ethernet frames")
        data = [i for i, (_, frame) in enumerate(packets(f)) if carries_data(frame)]
    first = len(data) // 10
    step = max(1, (len(data) - first) // max(count, 1))
    lose = set(data[first + k * step] for k in range(count) if first + k * step < len(data))
    with open(src, "rb") as f, open(dst, "wb") as out:
        out.write(f.read(24))
        for i, (head, frame) in enumerate(packets(f)):
            if i not in lose:
                out.write(head + frame)
    print(f"{dst}: {len(lose)} of {len(data)} data segments left out")


if __name__ == "__main__":
    main()
