#!/usr/bin/env python3
"""Write the TLS fixtures the tests read (Tests/FramedumpCoreTests/Fixtures), from the real
TLS 1.3 capture samples/tls13.pcap (recorded by samples/make_tls_samples.py): its
TLS_AES_128_GCM_SHA256 connection (the one with a KeyUpdate each way), found by its client
port in samples/tls13.messages.json. Needs scapy. Run from the repository root:

    python3 scripts/make_tls_fixtures.py

tls_split.pcap: the same TLS bytes in each direction, cut into TCP segments anew (seeded):
- the bytes are taken in runs, a run being what one side sent before the other spoke again
  in the recording (the server's first flight, a request, an answer, ...);
- runs take modes in turn (split, coalesce, split, straddle, split; coalesce needs two
  records or more, else split);
- "split" cuts every record of the run at least once: every other record (and every record
  of 6 bytes or less) inside its 5-byte header, after 1 to 4 bytes; the others in the body
  (or right after the header); half the records of over 40 bytes once more; records over
  6000 bytes (the 16 KiB ones) every 1000 to 6000 bytes besides. Record boundaries are cut
  points only by a 30% draw, so most segments hold the end of one record and the start of
  the next;
- "coalesce" puts several whole records in one segment (2 to 4 records, at most 60,000
  bytes), cut only at record boundaries;
- "straddle" cuts every 200 to 3000 bytes wherever that falls;
- in three runs (odd-numbered, three or more segments) the second and third segments are
  written in the wrong order; in one other run the first segment is written again after
  the second, 200 ms later (a retransmission: same sequence number, same bytes).
The script prints what the segmentation does to the records (how many span several
segments, how many are cut inside the header, segments by the number of whole records they
hold).
The other side acknowledges each run with a pure ACK; the connection opens with SYN,
SYN-ACK, ACK and ends with a FIN each way, as recorded. Ports, addresses and initial
sequence numbers are the recording's; timestamps advance 100 us a packet (200 ms before
the retransmission).

tls_split.keys: the key log lines of this connection (from samples/tls13.keys).

tls_nokeys.keys: a valid NSS key log (a comment line, then one CLIENT_RANDOM line for a
client random that is in no capture here) that lacks this connection's secrets, so
tls_split.pcap read with it stays undecrypted.

tls_badtag.pcap: the connection as recorded (the recording's segments and timestamps, the
other connections left out), except that one byte of ciphertext in the client's first
application-data record (the Login request: the client's fourth record, after its
ClientHello, ChangeCipherSpec and encrypted Finished) is flipped (XOR 0x01), so that record fails
AEAD authentication. tls_split.keys holds its secrets too.

After writing, the script checks with tshark that tls_split.pcap decrypts to exactly the bytes
the recording decrypts to, each direction:
    tshark -r tls_split.pcap -o tls.keylog_file:tls_split.keys -o tcp.reassemble_out_of_order:TRUE \
        -d tcp.port==7000,tls -q -z follow,tls,raw,0
(without tcp.reassemble_out_of_order, tshark 4.0 gives back the client's bytes only), that with
tls_nokeys.keys nothing is decrypted, and that in tls_badtag.pcap the Login record is not
given back. What tshark 4.0.17 does after the bad record is printed: it gives back none of
the client's bytes from there on (it does not move past a record that fails) and all of the
server's.
"""
import json, os, random, re, subprocess, sys

from scapy.all import Ether, IP, TCP, Raw, rdpcap, wrpcap
from scapy.config import conf

conf.verb = 0
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SAMPLES = os.path.join(ROOT, "samples")
sys.path.insert(0, SAMPLES)
from make_tls_samples import tshark_follow as follow_tls  # noqa: E402
OUT = os.path.join(ROOT, "Tests", "FramedumpCoreTests", "Fixtures")
PORT = 7000
SUITE = "TLS_AES_128_GCM_SHA256"
T0 = 1700000000.0


def connection():
    log = json.load(open(os.path.join(SAMPLES, "tls13.messages.json")))
    conn = next(c for c in log["connections"] if c["tls"]["suite"] == SUITE)
    cport = conn["client_port"]
    pkts = [p for p in rdpcap(os.path.join(SAMPLES, "tls13.pcap"))
            if TCP in p and cport in (p[TCP].sport, p[TCP].dport)]
    return conn, cport, pkts


def streams(pkts, cport):
    """Each direction's bytes (0: client to server, 1: server to client), its initial sequence
    number, and the runs: (direction, start, end) in capture order, consecutive segments of one
    direction merged."""
    isn, data, runs = [None, None], [bytearray(), bytearray()], []
    for p in pkts:
        t = p[TCP]
        d = 0 if t.sport == cport else 1
        if t.flags & 0x02:
            isn[d] = t.seq
            continue
        payload = bytes(t.payload)
        if not payload:
            continue
        off = (t.seq - isn[d] - 1) & 0xffffffff
        if off != len(data[d]):
            raise SystemExit("the recording is not one clean stream (offset %d, have %d)" % (off, len(data[d])))
        data[d] += payload
        if runs and runs[-1][0] == d:
            runs[-1][2] = len(data[d])
        else:
            runs.append([d, off, len(data[d])])
    return isn, [bytes(x) for x in data], runs


def records(data):
    """Start offsets and lengths of the TLS records of one direction."""
    out, i = [], 0
    while i < len(data):
        n = int.from_bytes(data[i + 3:i + 5], "big")
        out.append((i, 5 + n))
        i += 5 + n
    if i != len(data):
        raise SystemExit("the stream does not end on a record boundary")
    return out


def cuts_for(mode, start, end, recs, rng):
    """Segment boundaries (absolute offsets) for the bytes [start, end) of one run."""
    inside = [(s, n) for s, n in recs if s >= start and s + n <= end]
    cuts = set()
    if mode == "split":
        # Every record cut at least once; record boundaries are not cut points unless drawn,
        # so most segments hold the end of one record and the start of the next.
        for k, (s, n) in enumerate(inside):
            if k % 2 == 0 or n <= 6:
                cuts.add(s + rng.randint(1, 4))                 # inside the 5-byte header
            else:
                cuts.add(s + 5 + rng.randrange(n - 5))          # in the body (or right after the header)
            if n > 40 and rng.random() < 0.5:
                cuts.add(s + rng.randint(6, n - 1))
            c = s
            while n > 6000 and c + 6000 < s + n:                 # long records: many pieces
                c += rng.randint(1000, 6000)
                cuts.add(c)
            if rng.random() < 0.3:
                cuts.add(s)
    elif mode == "coalesce":
        k = 0
        while k < len(inside):
            take, size = 0, 0
            while k + take < len(inside) and take < rng.randint(2, 4) and size + inside[k + take][1] <= 60000:
                size += inside[k + take][1]
                take += 1
            take = max(take, 1)
            cuts.add(inside[k][0])
            k += take
        big = [(s, n) for s, n in inside if n > 60000]
        for s, n in big:
            for c in range(s + 30000, s + n, 30000):
                cuts.add(c)
    else:                                                       # straddle
        c = start
        while c < end:
            cuts.add(c)
            c += rng.randint(200, 3000)
    cuts = sorted(x for x in cuts if start < x < end)
    bounds = [start] + cuts + [end]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


class Writer:
    def __init__(self, cport, isn):
        self.cport, self.isn, self.pkts, self.t = cport, isn, [], T0

    def pkt(self, d, seq, ack, flags, payload=b"", after=0.0001):
        src, dst = ("127.0.0.1", "127.0.0.1")
        sport, dport = (self.cport, PORT) if d == 0 else (PORT, self.cport)
        p = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IP(src=src, dst=dst, flags="DF") / \
            TCP(sport=sport, dport=dport, seq=seq & 0xffffffff, ack=ack & 0xffffffff, flags=flags, window=65535)
        if payload:
            p = p / Raw(payload)
        self.t += after
        p.time = self.t
        self.pkts.append(p)

    def seq(self, d, off):
        return self.isn[d] + 1 + off


def make_split(cport, isn, data, runs, rng):
    w = Writer(cport, isn)
    recs = [records(data[0]), records(data[1])]
    w.pkt(0, isn[0], 0, "S")
    w.pkt(1, isn[1], isn[0] + 1, "SA")
    w.pkt(0, isn[0] + 1, isn[1] + 1, "A")
    modes = ["split", "coalesce", "split", "straddle", "split"]
    done = [0, 0]
    all_segs = [[], []]
    swapped, retransmitted, stats = 0, False, {"segments": 0, "records": len(recs[0]) + len(recs[1])}
    for k, (d, start, end) in enumerate(runs):
        inside = [r for r in recs[d] if r[0] >= start and r[0] + r[1] <= end]
        mode = modes[k % len(modes)]
        if mode == "coalesce" and len(inside) < 2:
            mode = "split"
        segs = cuts_for(mode, start, end, recs[d], rng)
        order = list(range(len(segs)))
        swap = len(segs) >= 3 and swapped < 3 and k % 2 == 1
        if swap:
            order[1], order[2] = order[2], order[1]
            swapped += 1
        other_end = done[1 - d]
        for j, i in enumerate(order):
            a, b = segs[i]
            w.pkt(d, w.seq(d, a), w.seq(1 - d, other_end), "PA", data[d][a:b])
            all_segs[d].append((a, b))
            if not swap and not retransmitted and len(segs) >= 4 and j == 1:
                a0, b0 = segs[order[0]]        # the first segment again, after the second
                w.pkt(d, w.seq(d, a0), w.seq(1 - d, other_end), "PA", data[d][a0:b0], after=0.2)
                retransmitted = True
        stats["segments"] += len(segs)
        stats.setdefault(mode, 0)
        stats[mode] += 1
        done[d] = end
        w.pkt(1 - d, w.seq(1 - d, done[1 - d]), w.seq(d, end), "A")
    if swapped < 3 or not retransmitted:
        raise SystemExit("the runs did not allow the reorderings (%d swapped, retransmitted %s)" % (swapped, retransmitted))
    n0, n1 = len(data[0]), len(data[1])
    w.pkt(0, w.seq(0, n0), w.seq(1, n1), "FA")
    w.pkt(1, w.seq(1, n1), w.seq(0, n0) + 1, "FA")
    w.pkt(0, w.seq(0, n0) + 1, w.seq(1, n1) + 1, "A")
    stats["swapped runs"], stats["retransmissions"] = swapped, 1
    # What the segmentation does to the records, counted from the segments written.
    spanning = header_cut = 0
    holding = {}
    for d in (0, 1):
        bounds = {a for a, _ in all_segs[d]}
        for rs, n in recs[d]:
            inner = [c for c in bounds if rs < c < rs + n]
            spanning += bool(inner)
            header_cut += any(c < rs + 5 for c in inner)
        for a, b in all_segs[d]:
            whole = sum(1 for rs, n in recs[d] if a <= rs and rs + n <= b)
            holding[whole] = holding.get(whole, 0) + 1
    stats["records over several segments"] = spanning
    stats["records cut inside the header"] = header_cut
    stats["segments by whole records held"] = dict(sorted(holding.items()))
    return w.pkts, stats


def make_badtag(pkts, cport, isn, data):
    """The recorded packets, the client's first application-data record with one ciphertext byte flipped."""
    recs = records(data[0])
    # 0 ClientHello, 1 ChangeCipherSpec, 2 the encrypted Finished, 3 the first application data
    if [data[0][s] for s, _ in recs[:4]] != [0x16, 0x14, 0x17, 0x17]:
        raise SystemExit("the client's records are not ClientHello, ChangeCipherSpec, Finished, data")
    s, n = recs[3]
    target = s + 5 + (n - 5) // 2            # a byte in the middle of the ciphertext
    out = []
    for p in pkts:
        p = p.copy()
        t = p[TCP]
        if t.sport == cport and bytes(t.payload):
            off = (t.seq - isn[0] - 1) & 0xffffffff
            payload = bytes(t.payload)
            if off <= target < off + len(payload):
                b = bytearray(payload)
                b[target - off] ^= 0x01
                t.remove_payload()
                t.add_payload(Raw(bytes(b)))
                del t.chksum
                del p[IP].chksum
        out.append(p)
    return out, (s, n, target)


def make_gap(pkts, cport):
    """The recorded packets without the client's sixth and the server's eighth data segments
    (whole records lost): the records after each gap must be found again."""
    out, seen = [], {True: 0, False: 0}
    drop = {True: 6, False: 8}
    for p in pkts:
        t = p[TCP]
        if bytes(t.payload):
            c = t.sport == cport
            seen[c] += 1
            if seen[c] == drop[c]:
                continue
        out.append(p)
    return out


def make_midstream(pkts, cport):
    """The recorded packets from the client's fourth data segment on (no SYN, no handshake):
    TLS picked up mid-stream, which no key log can decrypt."""
    n = 0
    for i, p in enumerate(pkts):
        t = p[TCP]
        if bytes(t.payload) and t.sport == cport:
            n += 1
            if n == 4:
                return pkts[i:]
    raise SystemExit("the client sent fewer than four data segments")


def tshark_follow(pcap, keys):
    """The first stream's decrypted bytes, [client's, server's], by the samples' own reader of
    tshark's follow (segments out of order reassembled)."""
    d = follow_tls(pcap, keys, PORT, 0, out_of_order=True)
    return [bytes(d["c2s"]), bytes(d["s2c"])]


def main():
    conn, cport, pkts = connection()
    isn, data, runs = streams(pkts, cport)
    rng = random.Random(1301)
    split, stats = make_split(cport, isn, data, runs, rng)
    os.makedirs(OUT, exist_ok=True)
    paths = {k: os.path.join(OUT, k) for k in ("tls_split.pcap", "tls_split.keys", "tls_nokeys.keys", "tls_badtag.pcap", "tls_gap.pcap", "tls_midstream.pcap")}
    wrpcap(paths["tls_gap.pcap"], make_gap(pkts, cport))
    wrpcap(paths["tls_midstream.pcap"], make_midstream(pkts, cport))
    wrpcap(paths["tls_split.pcap"], split)
    cr = conn["tls"]["client_random"]
    lines = [l for l in open(os.path.join(SAMPLES, "tls13.keys")) if l.split()[1:2] == [cr]]
    open(paths["tls_split.keys"], "w").write("".join(lines))
    other = random.Random(7).randbytes(32).hex()
    open(paths["tls_nokeys.keys"], "w").write(
        "# TLS secrets log file: one unrelated connection, none of tls_split.pcap's\n"
        "CLIENT_RANDOM %s %s\n" % (other, random.Random(8).randbytes(48).hex()))
    bad, (s, n, target) = make_badtag(pkts, cport, isn, data)
    wrpcap(paths["tls_badtag.pcap"], bad)
    print("tls_split.pcap: %d packets, %s" % (len(split), stats))
    print("tls_badtag.pcap: client record at stream offset %d (%d bytes), byte %d flipped" % (s, n, target))

    # Checks.
    ref = reference(conn)
    orig = tshark_follow(os.path.join(SAMPLES, "tls13.pcap"), os.path.join(SAMPLES, "tls13.keys"))
    if orig != ref:
        raise SystemExit("samples/tls13.pcap's first stream does not decrypt to what its log says")
    want = tshark_follow(paths["tls_badtag.pcap"], paths["tls_split.keys"])
    got = tshark_follow(paths["tls_split.pcap"], paths["tls_split.keys"])
    if got != ref:
        raise SystemExit("tls_split.pcap decrypts to %d + %d bytes, not the %d + %d written" % (
            len(got[0]), len(got[1]), len(ref[0]), len(ref[1])))
    print("tls_split.pcap: tshark decrypts %d + %d bytes, exactly what the peers wrote" % (len(got[0]), len(got[1])))
    none = tshark_follow(paths["tls_split.pcap"], paths["tls_nokeys.keys"])
    if any(none):
        raise SystemExit("tls_split.pcap decrypts with tls_nokeys.keys")
    print("tls_split.pcap with tls_nokeys.keys: nothing decrypted")
    login = frame_of(conn["c2s"][0])
    if want[0].startswith(login) or login in want[0]:
        raise SystemExit("tls_badtag.pcap: the damaged Login record was decrypted")
    print("tls_badtag.pcap: tshark gives back %d of %d client bytes and %d of %d server bytes; the Login (%d bytes) is not among them" % (
        len(want[0]), len(ref[0]), len(want[1]), len(ref[1]), len(login)))


def frame_of(m):
    body = m["body"].encode()
    return m["serviceId"].to_bytes(4, "big") + len(body).to_bytes(4, "big") + body


def reference(conn):
    return [b"".join(frame_of(m) for m in conn[d]) for d in ("c2s", "s2c")]


if __name__ == "__main__":
    main()
