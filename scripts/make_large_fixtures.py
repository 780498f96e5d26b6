#!/usr/bin/env python3
"""Write captures of a protocol whose messages are large: the fixtures that make every output
line longer than any buffer the printers or the shards start with (issue: a line of more than
a shard's block once overran it).

Protocol `bigz` (Tests/FramedumpCoreTests/Fixtures/large/bigz.dissector), server port 7400:
[u32be bodyLength][u16be id][u8 flags][body]; flags 0x01 zlib, 0x04 LZ4 frame (lz4 command).
Bodies: 1 Text (String(u32) text), 2 Blob (Bytes(u32) data), 3 Many (uint32 count, then count
uint8), 4 Pairs (uint32 count, then count {uint16 a; String(u8) name}), 5 Words (uint32
count, then count String(u8)).

Text is made to expand when escaped: quotes, backslashes, control characters (six bytes each
in NDJSON), multi-byte UTF-8, and in some messages invalid UTF-8 (U+FFFD, three bytes each).

Usage: make_large_fixtures.py OUTDIR [BODY_BYTES ...]
       make_large_fixtures.py --zgame OUT.pcap
Without sizes, writes the committed set: large.pcap (bodies of 64 KiB and 1 MiB, arrays of
100,000 elements, three connections, zlib, LZ4 and plain) and at_limit.pcap (bodies of
exactly 2 MiB inflated, one of 2 MiB + 1: the tests run it with --max-inflate 2097152).
With sizes, writes sized.pcap: three connections, each sending every message kind at each size,
zlib and LZ4 (scripts/large_bodies.sh uses it for the 16 MiB --max-inflate default).
With --zgame, writes one connection of the shipped zgame protocol (Dissectors/zgame.dissector)
whose RoomState and ChatPush bodies inflate to 64 KiB and more: a fuzz seed (scripts/fuzz.sh).
"""
import os, shutil, struct, subprocess, sys, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from pcapgen import Connection, PcapWriter  # noqa: E402

PORT = 7400
CLIENT, SERVER = bytes([127, 0, 0, 1]), bytes([127, 0, 0, 2])

DISSECTOR = """// bigz (scripts/make_large_fixtures.py): [u32be bodyLength][u16be id][u8 flags][body].
// Messages large enough that no output line fits the buffers the printers start with.
protocol bigz {
    port 7400;
    header {
        uint32 bodyLength;
        uint16 id;
        uint8 flags [hex];
    }
    body_length = bodyLength;
    message_id = id;
    max_frame 33554432;
    transform zlib when flags & 0x01;
    transform lz4 when flags & 0x04;
}

Message Pair { Uint16 a; String(u8) name; }

Message Text = 1 { String(u32) text; }
Message Blob = 2 { Bytes(u32) data; }
Message Many = 3 { Uint32 count; Uint8[count] items; }
Message Pairs = 4 { Uint32 count; Pair[count] pairs; }
Message Words = 5 { Uint32 count; String(u8)[count] words; }
"""

# A kilobyte of text that escapes to several times its size, and a variant with invalid UTF-8.
PIECE = ('say "hi" \\ back\x01\x02\x1f\t\n\r 欢迎 👍 ' * 40).encode()[:1024]
BAD_PIECE = PIECE[:500] + b"\xff\xfe\xc3" + PIECE[503:]


def text(n, bad):
    piece = BAD_PIECE if bad else PIECE
    b = (piece * (n // len(piece) + 1))[:n]
    # Never end inside a multi-byte character (unless the text is meant to be invalid).
    if not bad:
        # Never end inside a multi-byte character: the cut one's bytes become dots.
        i = len(b)
        while i > 0 and (b[i - 1] & 0xC0) == 0x80:
            i -= 1
        if i > 0 and b[i - 1] >= 0xC0:
            b = b[:i - 1] + b"." * (len(b) - i + 1)
    return b


def body(kind, n, bad=False):
    """A body of exactly n bytes (before compression) of the given kind."""
    if kind == 1:
        return struct.pack(">I", n - 4) + text(n - 4, bad)
    if kind == 2:
        return struct.pack(">I", n - 4) + (bytes(range(256)) * ((n - 4) // 256 + 1))[: n - 4]
    if kind == 3:
        return struct.pack(">I", n - 4) + bytes(i & 0xFF for i in range(n - 4))
    if kind == 4:
        # 8-byte elements: uint16, u8 length, 5 bytes of name.
        count = (n - 4) // 8
        pad = (n - 4) - count * 8
        items = b"".join(struct.pack(">HB", i & 0xFFFF, 5) + b"n%04d" % (i % 10000) for i in range(count))
        return struct.pack(">I", count) + items + b"\0" * pad
    if kind == 5:
        count = (n - 4) // 4
        pad = (n - 4) - count * 4
        return struct.pack(">I", count) + b"\x03w\"x" * count + b"\0" * pad
    raise ValueError(kind)


def lz4(data):
    p = subprocess.run(["lz4", "-q", "-c", "-"], input=data, stdout=subprocess.PIPE, check=True)
    return p.stdout


def frame(kind, data, how):
    if how == "zlib":
        payload, flags = zlib.compress(data, 9), 0x01
    elif how == "lz4":
        payload, flags = lz4(data), 0x04
    else:
        payload, flags = data, 0x00
    return struct.pack(">IHB", len(payload), kind, flags) + payload


def capture(path, conversations, port=PORT):
    """conversations: per connection, a list of (direction, frame bytes)."""
    w = PcapWriter(path, step_us=50)
    for i, msgs in enumerate(conversations):
        c = Connection(w.write, CLIENT, 41000 + i, SERVER, port, (1000 + i * 7919, 900000 + i * 104729), mss=16000)
        for d, f in msgs:
            c.send(d, f)
        c.close()
    w.f.close()


def large(outdir):
    k64, m1 = 64 << 10, 1 << 20
    conns = [
        # zlib: text of 64 KiB and 1 MiB, valid and not; bytes; arrays of 100k elements.
        [(0, frame(1, body(1, k64), "zlib")), (1, frame(1, body(1, k64 + 4000, bad=True), "zlib")),
         (0, frame(2, body(2, k64), "zlib")), (1, frame(3, body(3, 100_004), "zlib")),
         (1, frame(1, body(1, m1), "zlib"))],
        # LZ4: pairs and words, 100k elements each; 1 MiB of bytes.
        [(0, frame(4, body(4, 4 + 8 * 100_000), "lz4")), (1, frame(5, body(5, 4 + 4 * 100_000), "lz4")),
         (1, frame(2, body(2, m1), "lz4")), (0, frame(1, body(1, 80_000), "lz4"))],
        # Plain: large frames split over many segments, beside small ones.
        [(0, frame(1, body(1, 300), "plain")), (1, frame(1, body(1, k64 + 17), "plain")),
         (0, frame(3, body(3, k64), "plain")), (1, frame(1, body(1, 200_000, bad=True), "plain")),
         (0, frame(1, body(1, 8), "plain"))],
    ]
    capture(os.path.join(outdir, "large.pcap"), conns)


def at_limit(outdir, limit=2 << 20):
    conns = [
        [(0, frame(1, body(1, limit), "zlib")), (1, frame(2, body(2, limit), "zlib"))],
        [(1, frame(3, body(3, limit), "lz4")), (0, frame(1, body(1, limit + 1), "zlib"))],
        [(0, frame(5, body(5, limit), "zlib")), (1, frame(1, body(1, 100), "zlib"))],
    ]
    capture(os.path.join(outdir, "at_limit.pcap"), conns)


def sized(outdir, sizes):
    conns = []
    for i in range(3):
        msgs = []
        for n in sizes:
            for kind in (1, 2, 3, 4, 5):
                msgs.append((i % 2 if kind % 2 else 1 - i % 2, frame(kind, body(kind, n, bad=kind == 1 and i == 1),
                                                                     "lz4" if (kind + i) % 3 == 0 else "zlib")))
        conns.append(msgs)
    capture(os.path.join(outdir, "sized.pcap"), conns)


def zgame(path):
    """zgame: [u8 0xA7][u8 flags][u16le id][u32le bodyLength][body], strings [u8 len][UTF-8]."""
    def msg(mid, body):
        z = zlib.compress(body, 9)
        return struct.pack("<BBHI", 0xA7, 0x01, mid, len(z)) + z
    def player(i):
        name = ("Frost\"狼%d" % i).encode()
        return struct.pack("<Q", i) + struct.pack("<B", len(name)) + name + struct.pack("<hhB", i % 300, -i % 300, i % 100)
    room = lambda n: struct.pack("<IH", 7, n) + b"".join(player(i % 16) for i in range(n))
    chat = struct.pack("<IQ", 1, 42) + struct.pack("<B", 200) + b"\x01\"" * 100 + struct.pack("<I", 9)
    capture(path, [[(0, msg(6, struct.pack("<Q", 1))), (1, msg(5, room(3500))), (1, msg(4, chat)),
                    (1, msg(5, room(60000)))]], port=7300)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--zgame":
        zgame(sys.argv[2])
        return
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    if not shutil.which("lz4"):
        sys.exit("make_large_fixtures.py: needs the lz4 command (apt-get install lz4)")
    with open(os.path.join(outdir, "bigz.dissector"), "w") as f:
        f.write(DISSECTOR)
    if len(sys.argv) > 2:
        sized(outdir, [int(a) for a in sys.argv[2:]])
    else:
        large(outdir)
        at_limit(outdir)


if __name__ == "__main__":
    main()
