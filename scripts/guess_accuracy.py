#!/usr/bin/env python3
"""The accuracy of `framedump guess` over random protocols (docs/guess.md):

    scripts/guess_accuracy.py [COUNT] [FIRST_SEED] [FRAMEDUMP] [--midstream|--long|--nosyn]

draws COUNT protocols with scripts/make_guess_protocols.py (seeds FIRST_SEED...; the flags go
to it: --midstream, the first connection starts inside a message and the second loses a
segment; --long, connections past the sample; --nosyn, no connection has its handshake), runs
`framedump guess` on each capture and compares its report with the ground truth: the framing
(length field offset, width, byte order, adjustment) and the message id field (offset, width).
Prints a markdown table and the seeds it got wrong. FRAMEDUMP defaults to the release build.
"""
import json, os, re, shutil, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
flags = [a for a in sys.argv[1:] if a.startswith("--")]
args = [a for a in sys.argv[1:] if not a.startswith("--")]
count = int(args[0]) if len(args) > 0 else 200
first = int(args[1]) if len(args) > 1 else 1
binary = args[2] if len(args) > 2 else os.path.join(here, "..", ".build", "release", "framedump")

FRAMING = re.compile(r"framing: (?:(varint) at offset (\d+), counts the bytes after it(?: ([+-]) (\d+))?"
                     r"|(u8|u\d+ (big|little)-endian) at offset (\d+), (counts the whole frame|frame = value ([+-]) (\d+)))")
ID = re.compile(r"message id: offset (\d+), (\d+) bytes")


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
    subprocess.run([sys.executable, os.path.join(here, "make_guess_protocols.py"), work, str(first), str(count)] + flags,
                   check=True, stdout=subprocess.DEVNULL)
    rows = {"framing": 0, "id": 0}
    by_width = {}
    wrong = []
    for seed in range(first, first + count):
        truth = json.load(open(os.path.join(work, "proto-%d.json" % seed)))
        r = subprocess.run([binary, "guess", os.path.join(work, "proto-%d.pcap" % seed), "-o", os.devnull],
                           capture_output=True, text=True)
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
            wrong.append("seed %d: framing %s (want %s), id %s (want %s)" % (seed, framing, want, idf,
                                                                              (truth["id"]["offset"], truth["id"]["width"])))
    print("| length field | protocols | framing right | id field right |")
    print("|---|---|---|---|")
    for w in sorted(by_width):
        n, f, i = by_width[w]
        print("| %s | %d | %d | %d |" % (w, n, f, i))
    print("| **all** | %d | %d (%.1f%%) | %d (%.1f%%) |" % (count, rows["framing"], 100.0 * rows["framing"] / count,
                                                           rows["id"], 100.0 * rows["id"] / count))
    for line in wrong:
        print(line, file=sys.stderr)
    shutil.rmtree(work)


main()
