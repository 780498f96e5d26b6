#!/usr/bin/env python3
"""Random length-prefixed protocols for `framedump guess` (docs/guess.md): from a seed, draw a
protocol (a header with a length field and a message id at random offsets, maybe a magic, a
version and a sequence number; widths 1/2/4/8 or a varint; either byte order; a length that
counts the whole frame, the body, or the body plus a constant; JSON, protobuf-wire, text or
binary bodies per message id), write a capture of a few connections with real TCP handshakes
whose writes coalesce several messages into one segment and split others anywhere (inside the
header too), and write the ground truth beside it as JSON.

    make_guess_protocols.py OUTDIR FIRST_SEED COUNT [--midstream] [--lines] [--long] [--nosyn]

writes OUTDIR/proto-SEED.pcap and OUTDIR/proto-SEED.json for each seed. --midstream starts
the first connection without its handshake in the middle of a message and loses one segment
of the second (a gap); --lines writes a protocol with no length field (text lines ended by
\\r\\n) instead; --long writes connections of 80 KiB or more each way (past the 64 KiB
`framedump guess` samples of each direction: every sampled piece ends cut); --nosyn starts every
connection without its handshake, 5-40 bytes into its first message each way.
"""
import json, os, random, struct, sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from pcapgen import Connection, PcapWriter, eth_ip_tcp  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guess_gen_util import run, varint  # noqa: E402

WORDS = ["alpha", "bravo", "room", "guild", "hero", "quest", "ok", "retry", "欢迎", "level", "gold", "map"]


def pack_uint(v, width, order):
    return v.to_bytes(width, "big" if order == "big" else "little")


def pb_field(num, wire, payload):
    return varint(num << 3 | wire) + payload


class Protocol:
    def __init__(self, rng):
        self.rng = rng
        self.order = rng.choice(["big", "little"])
        lw = rng.choice([1, 2, 2, 4, 4, 4, 8, 0])  # 0: varint
        self.length_width = lw
        fields = [("id", rng.choice([1, 2, 2, 4]))]
        if rng.random() < 0.5:
            fields.append(("magic", rng.choice([1, 2, 4])))
        if rng.random() < 0.3:
            fields.append(("version", rng.choice([1, 2])))
        if rng.random() < 0.5:
            fields.append(("seq", rng.choice([2, 4])))
        if rng.random() < 0.2:
            fields.append(("stamp", 4))  # a timestamp: high cardinality, not an id
        rng.shuffle(fields)
        if lw == 0:
            fields.append(("length", 0))  # a varint closes the header
        else:
            fields.insert(rng.randrange(len(fields) + 1), ("length", lw))
        self.fields = []
        off = 0
        for name, w in fields:
            self.fields.append((name, off, w))
            off += w if w else 0
        self.fixed_size = off  # the header without a varint's own bytes
        # Magic bytes are all non-zero, so they never read as a wider field's zero high bytes.
        self.magic = {1: 0, 2: 0, 4: 0}
        mw = next((w for n, _, w in self.fields if n == "magic"), 0)
        self.magic_value = int.from_bytes(bytes(rng.randrange(1, 256) for _ in range(mw)), "big") if mw else 0
        self.counts = rng.choice(["frame", "body", "body+c"]) if lw else rng.choice(["body", "body+c"])
        self.constant = rng.choice([1, 2, 3, 4, 8]) if self.counts == "body+c" else 0
        if lw == 1:  # a u8 length must hold the frames: small bodies
            self.max_body = 120
        else:
            self.max_body = rng.choice([600, 3000])
        idw = next(w for n, _, w in self.fields if n == "id")
        lo = 1 if idw == 1 else 256 if idw == 2 else 1 << 16
        hi = (1 << (8 * idw)) - 1
        self.ids = rng.sample(range(lo, hi + 1), rng.randint(3, 10)) if hi - lo > 20 else list(range(lo, lo + 5))
        kinds = ["json", "protobuf", "text", "binary"]
        mixed = rng.random() < 0.3
        one = rng.choice(kinds)
        self.kinds = {i: (rng.choice(kinds) if mixed else one) for i in self.ids}
        # Each id's body has its own shape (its size range, its fields).
        # Sizes spread over the length field's range (a u16 length whose values all stay below
        # 256 reads the same as a u8: nothing could tell them apart).
        self.shape = {i: (rng.randint(0, max(0, min(self.max_body - 40, rng.choice([24, 160, 400])))), rng.randint(0, 3))
                      for i in self.ids}
        # One id's bodies are long enough to need a u16 length's high byte (a varint's second byte).
        if lw != 1:
            self.shape[self.ids[0]] = (min(self.max_body - 40, 400), self.shape[self.ids[0]][1])

    def body(self, mid):
        rng, kind = self.rng, self.kinds[mid]
        base, extra = self.shape[mid]
        if kind == "json":
            obj = {"type": mid % 1000, "name": rng.choice(WORDS), "note": "x" * rng.randint(base // 2, base)}
            for k in range(extra):
                obj["f%d" % k] = rng.choice([rng.randrange(10**6), rng.choice(WORDS), True, None, [1, 2]])
            b = json.dumps(obj, ensure_ascii=False).encode()
        elif kind == "protobuf":
            note = b"y" * rng.randint(base // 2, base)
            b = pb_field(1, 0, varint(mid)) + pb_field(2, 2, varint(len(note)) + note)
            for k in range(extra + 1):
                b += pb_field(3 + k, rng.choice([0, 5]), varint(rng.randrange(1 << 20)) if k % 2 == 0 else struct.pack("<I", rng.randrange(1 << 32)))
        elif kind == "text":
            b = " ".join(rng.choice(WORDS) for _ in range(1 + base // 4 + extra)).encode()
        else:
            b = bytes(rng.randrange(256) for _ in range(rng.randint(base // 2, base)))
            if extra:
                s = rng.choice(WORDS).encode()
                b += pack_uint(len(s), 2, self.order) + s
        return b[: self.max_body]

    def frame(self, mid, seq, version):
        body = self.body(mid)
        out = bytearray()
        for name, _, w in self.fields:
            if name == "length":
                if w == 0:
                    out += varint(len(body) + self.constant)
                else:
                    if self.counts == "frame":
                        v = self.fixed_size + len(body)
                    elif self.counts == "body":
                        v = len(body)
                    else:
                        v = len(body) + self.constant
                    out += pack_uint(v, w, self.order)
            elif name == "id":
                out += pack_uint(mid, w, self.order)
            elif name == "magic":
                out += pack_uint(self.magic_value, w, "big")
            elif name == "version":
                out += pack_uint(version, w, self.order)
            elif name == "seq":
                out += pack_uint(seq & ((1 << (8 * w)) - 1), w, self.order)
            elif name == "stamp":
                out += pack_uint(self.rng.randrange(1 << 32), w, self.order)
        return bytes(out + body)

    def truth(self):
        off = next(o for n, o, _ in self.fields if n == "length")
        h = self.fixed_size
        if self.length_width == 0:
            adj = -self.constant if self.counts == "body+c" else 0
        else:
            adj = {"frame": 0, "body": h, "body+c": h - self.constant}[self.counts]
        idf = next((o, w) for n, o, w in self.fields if n == "id")
        return {
            "length": {"offset": off, "width": self.length_width, "order": self.order if self.length_width > 1 else "big",
                       "adjustment": adj, "counts": self.counts},
            "id": {"offset": idf[0], "width": idf[1], "order": self.order if idf[1] > 1 else "big"},
            "header": [{"name": n, "offset": o, "width": w} for n, o, w in self.fields],
            "header_size": h,
            "kinds": {str(i): k for i, k in self.kinds.items()},
        }


def write_capture(path, rng, port, make_frames, midstream, nosyn=False):
    pcap = PcapWriter(path, step_us=50)
    nconn = rng.randint(3, 4)
    for c in range(nconn):
        client = bytes([10, 0, c + 1, 2])
        isn = (rng.randrange(1 << 32), rng.randrange(1 << 32))
        if (midstream and c == 0) or nosyn:
            # No handshake: the capture starts 5-40 bytes into the first message.
            conn = Connection(lambda pkt: None, client, 61000 + c, bytes([10, 0, 0, 1]), port, isn)
            conn.write = pcap.write
            skip = [rng.randint(5, 40), rng.randint(5, 40)]
        else:
            conn = Connection(pcap.write, client, 61000 + c, bytes([10, 0, 0, 1]), port, isn)
            skip = [0, 0]
        lose = midstream and c == 1
        lost, pieces = False, 0
        for d, data in make_frames(c):
            pend = data
            while pend:
                cut = rng.choice([len(pend), len(pend), rng.randint(1, max(1, len(pend))), 3])
                piece, pend = pend[:cut], pend[cut:]
                if skip[d] >= len(piece):
                    skip[d] -= len(piece)
                    conn.seq[d] += len(piece)
                    continue
                if skip[d]:
                    conn.seq[d] += skip[d]
                    piece = piece[skip[d]:]
                    skip[d] = 0
                pieces += 1
                if lose and not lost and pieces >= 8 and d == 1:
                    conn.seq[d] += len(piece)  # a lost segment: a gap
                    lost = True
                    continue
                conn.send(d, piece)
        conn.close()
    pcap.close()


def make(outdir, seed, midstream, lines, long=False, nosyn=False):
    rng = random.Random(seed)
    port = rng.randrange(2000, 60000)  # below the clients' ports (61000 on): roles without a SYN come from them
    if lines:
        def frames(c):
            for k in range(rng.randint(20, 40)):
                d = k % 2
                yield d, (" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) + "\r\n").encode()
        truth = {"length": None, "delimiter": "\\r\\n"}
    else:
        p = Protocol(rng)

        def frames(c):
            seq = [rng.randrange(1, 1000), rng.randrange(1, 1000)]
            version = rng.randint(1, 3)
            batch = [b"", b""]
            sent = [0, 0]
            n = rng.randint(30, 70)
            k = 0
            while (min(sent) < 80 << 10) if long else k < n:
                k += 1
                d = rng.randrange(2)
                f = p.frame(rng.choice(p.ids), seq[d], version)
                sent[d] += len(f)
                batch[d] += f
                seq[d] += 1
                # Several messages in one write, or one alone.
                if rng.random() < 0.6:
                    yield d, batch[d]
                    batch[d] = b""
            for d in (0, 1):
                if batch[d]:
                    yield d, batch[d]
        truth = p.truth()
    truth.update({"seed": seed, "port": port, "midstream": midstream})
    base = os.path.join(outdir, "proto-%d" % seed)
    write_capture(base + ".pcap", rng, port, frames, midstream, nosyn)
    with open(base + ".json", "w") as f:
        json.dump(truth, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    run(__doc__, make, ["midstream", "lines", "long", "nosyn"])
