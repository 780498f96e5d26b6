#!/usr/bin/env python3
"""The accuracy of `framedump guess` over random protocols (docs/guess.md):

    scripts/guess_accuracy.py [COUNT] [FIRST_SEED] [FRAMEDUMP] [--gen random|games|tlv] [--midstream|--long|--nosyn|--dominant]

draws COUNT protocols with a generator (seeds FIRST_SEED...): --gen random (the default),
scripts/make_guess_protocols.py; --gen games, scripts/make_guess_games.py (mobile-game and IM
headers); --gen tlv, scripts/make_guess_tlv.py (TLV and IoT frames). The other flags go to the
generator: --midstream, the first connection starts inside a message and the second loses a
segment; --long, connections past the sample; --nosyn, no connection has its handshake;
--dominant (games), the heartbeat pair is 95% of the messages. Then runs
`framedump guess` on each capture and compares its report with the ground truth: the framing
(length field offset, width, byte order, adjustment) and the message id field (offset, width).
Prints a markdown table, how many wrong framings the report gave above 90% confidence (its
"confidence: NN.N%", the share of the bytes it explains lowered when a rival is as good or the
frames look cut at random), and the seeds it got wrong with that confidence and whether the wrong framing
still cuts every stream of the capture where the truth does (an equivalent field, e.g. a u32
over a zero u16 and the length). FRAMEDUMP defaults to the release build.
"""
import json, os, re, shutil, struct, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
GENERATORS = {"random": "make_guess_protocols.py", "games": "make_guess_games.py", "tlv": "make_guess_tlv.py"}
gen, flags, args = "random", [], []
argv = sys.argv[1:]
while argv:
    a = argv.pop(0)
    if a == "--gen":
        gen = argv.pop(0)
    elif a.startswith("--gen="):
        gen = a[6:]
    elif a.startswith("--"):
        flags.append(a)
    else:
        args.append(a)
if gen not in GENERATORS:
    sys.exit("--gen: one of " + ", ".join(GENERATORS))
count = int(args[0]) if len(args) > 0 else 200
first = int(args[1]) if len(args) > 1 else 1
binary = args[2] if len(args) > 2 else os.path.join(here, "..", ".build", "release", "framedump")

FRAMING = re.compile(r"framing: (?:(varint) at offset (\d+), counts the bytes after it(?: ([+-]) (\d+))?"
                     r"|(u8|u\d+ (big|little)-endian) at offset (\d+), (counts the whole frame|frame = value ([+-]) (\d+)))")
ID = re.compile(r"message id: offset (\d+), (\d+) bytes")
CONFIDENCE = re.compile(r"confidence: (\d+(?:\.\d+)?)%")


def confidence(report):
    """The reported framing's confidence, in percent (None if none)."""
    m = FRAMING.search(report)
    e = CONFIDENCE.search(report, m.end()) if m else None
    return float(e.group(1)) if e else None


def streams(pcap):
    """The TCP payload of each direction of each connection, in sequence order (bytes before
    the first captured one and gaps are not filled: a gap ends the stream)."""
    data = open(pcap, "rb").read()
    order = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    pos, segs = 24, {}
    while pos + 16 <= len(data):
        incl = struct.unpack(order + "I", data[pos + 8:pos + 12])[0]
        pkt = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        if len(pkt) < 54 or pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
            continue
        ihl = (pkt[14] & 15) * 4
        tcp = pkt[14 + ihl:]
        off = (tcp[12] >> 4) * 4
        payload = pkt[14 + ihl + off:14 + struct.unpack(">H", pkt[16:18])[0]]
        key = (pkt[26:30], pkt[30:34], tcp[:2], tcp[2:4])
        if payload:
            segs.setdefault(key, []).append((struct.unpack(">I", tcp[4:8])[0], payload))
    out = []
    for key, ss in segs.items():
        base = ss[0][0]
        buf = b""
        for seq, p in sorted(ss, key=lambda x: (x[0] - base) & 0xFFFFFFFF):
            rel = (seq - base) & 0xFFFFFFFF
            if rel > len(buf):
                break
            buf += p[len(buf) - rel:]
        out.append(buf)
    return out


def size_at(buf, pos, framing):
    """The size of the frame at pos by a framing (offset, width, order, adjustment), None past the end."""
    off, width, order, adj = framing
    o = pos + off
    if width == 0:
        v, n = 0, 0
        while o + n < len(buf):
            b = buf[o + n]
            v |= (b & 0x7F) << (7 * n)
            n += 1
            if not b & 0x80:
                return off + n + v + adj
        return None
    if o + width > len(buf):
        return None
    return int.from_bytes(buf[o:o + width], order) + adj


def cuts(buf, start, framing):
    """The frame boundaries a framing walks from start, and whether it ends on the stream's end."""
    pos, out = start, [start]
    while pos < len(buf):
        size = size_at(buf, pos, framing)
        if not size or size <= 0:
            return out, False
        pos += size
        out.append(pos)
    return out, pos == len(buf)


def equivalent(pcap, got, want):
    """Whether the framing got cuts every stream where want does: each stream is walked with want
    from the first start that reaches its end exactly (a stream captured without its start may
    sync late: its first three frames are not compared), and got must give every later frame's
    size."""
    for buf in streams(pcap):
        for start in range(min(len(buf), 4096)):
            w, ok = cuts(buf, start, want)
            if ok:
                break
        else:
            return None  # the truth finds no way through this stream
        for i in range(min(3, len(w) - 1), len(w) - 1):
            if size_at(buf, w[i], got) != w[i + 1] - w[i]:
                return False
    return True


def parse(report):
    m = FRAMING.search(report)
    if not m:
        return None, None
    if m.group(1):
        adj = int(m.group(4) or 0) * (-1 if m.group(3) == "-" else 1)
        framing = (int(m.group(2)), 0, "big", adj)
    else:
        width = 1 if m.group(5) == "u8" else int(m.group(5)[1:].split()[0]) // 8
        adj = 0 if m.group(8) == "counts the whole frame" else int(m.group(10)) * (-1 if m.group(9) == "-" else 1)
        framing = (int(m.group(7)), width, m.group(6) or "big", adj)
    i = ID.search(report)
    return framing, (int(i.group(1)), int(i.group(2))) if i else None


def main():
    work = tempfile.mkdtemp(prefix="guess-accuracy-")
    subprocess.run([sys.executable, os.path.join(here, GENERATORS[gen]), work, str(first), str(count)] + flags,
                   check=True, stdout=subprocess.DEVNULL)
    rows = {"framing": 0, "id": 0}
    by_width = {}
    wrong = []
    sure_wrong = sure_equiv = equiv = 0
    crashes = []
    for seed in range(first, first + count):
        truth = json.load(open(os.path.join(work, "proto-%d.json" % seed)))
        r = subprocess.run([binary, "guess", os.path.join(work, "proto-%d.pcap" % seed), "-o", os.devnull],
                           capture_output=True, text=True)
        if r.returncode not in (0, 1):
            crashes.append("seed %d: exit %d: %s" % (seed, r.returncode, r.stderr.strip().splitlines()[:1]))
        framing, idf = parse(r.stdout)
        t = truth["length"]
        want = (t["offset"], t["width"], t["order"], t["adjustment"])
        ok_f = framing == want
        ok_i = idf == (truth["id"]["offset"], truth["id"]["width"])
        rows["framing"] += ok_f
        rows["id"] += ok_i
        w = "varint" if t["width"] == 0 else "u%d" % (8 * t["width"])
        b = by_width.setdefault(w, [0, 0, 0])
        b[0] += 1
        b[1] += ok_f
        b[2] += ok_i
        if not (ok_f and ok_i):
            conf = confidence(r.stdout)
            note = ""
            if not ok_f and framing is not None:
                same = equivalent(os.path.join(work, "proto-%d.pcap" % seed), framing, want)
                equiv += bool(same)
                note = ", cuts the same frames" if same else ""
                if conf is not None and conf > 90:
                    sure_wrong += 1
                    sure_equiv += bool(same)
            wrong.append("seed %d: framing %s (want %s)%s, confidence %s%%, id %s (want %s)" % (
                seed, framing, want, note, conf, idf, (truth["id"]["offset"], truth["id"]["width"])))
    print("| length field | protocols | framing right | id field right |")
    print("|---|---|---|---|")
    for w in sorted(by_width):
        n, f, i = by_width[w]
        print("| %s | %d | %d | %d |" % (w, n, f, i))
    print("| **all** | %d | %d (%.1f%%) | %d (%.1f%%) |" % (count, rows["framing"], 100.0 * rows["framing"] / count,
                                                           rows["id"], 100.0 * rows["id"] / count))
    print()
    print("wrong framing that still cuts the same frames: %d" % equiv)
    print("wrong framing reported above 90%% confidence: %d (%d of them cut the same frames)" % (sure_wrong, sure_equiv))
    print("runs that failed (a crash or a usage error): %d" % len(crashes))
    sys.stdout.flush()
    for line in crashes + wrong:
        print(line, file=sys.stderr)
    shutil.rmtree(work)


main()
