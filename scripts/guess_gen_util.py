"""What scripts/make_guess_games.py and scripts/make_guess_tlv.py share: integer packing,
protobuf wire encoding, CRCs, the check that re-cuts every byte stream with the ground truth,
and the capture writer (TCP connections on bench/pcapgen.py whose writes coalesce like Nagle,
split at the MSS, and sometimes go out as a tiny header write followed by the body)."""
import json, os, struct, sys, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from pcapgen import Connection, PcapWriter  # noqa: E402


def pack(v, width, order):
    return (v & ((1 << (8 * width)) - 1)).to_bytes(width, "little" if order == "little" else "big")


def unpack(b, order):
    return int.from_bytes(b, "little" if order == "little" else "big")


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf, pos):
    v, shift, n = 0, 0, 0
    while True:
        b = buf[pos + n]
        v |= (b & 0x7F) << shift
        n += 1
        shift += 7
        if not b & 0x80:
            return v, n


# --- protobuf wire format -------------------------------------------------------------------

def pb_varint(num, v):
    return varint(num << 3) + varint(v & 0xFFFFFFFFFFFFFFFF)


def pb_bytes(num, data):
    return varint((num << 3) | 2) + varint(len(data)) + data


def pb_fixed32(num, data4):
    return varint((num << 3) | 5) + data4


def pb_fixed64(num, data8):
    return varint((num << 3) | 1) + data8


def zigzag(v):
    return (v << 1) ^ (v >> 63)


# --- checksums ------------------------------------------------------------------------------

def crc16_modbus(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def crc16_ccitt(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def crc32(data):
    return zlib.crc32(data) & 0xFFFFFFFF


def sum8(data):
    return sum(data) & 0xFF


def xor8(data):
    x = 0
    for b in data:
        x ^= b
    return x


# --- the check against the truth ------------------------------------------------------------

def check_truth(truth, streams):
    """streams: for each connection and direction, a list of (frame bytes, message id value).
    Re-cuts the concatenated bytes with the truth's length field and checks every cut lands on
    the next frame's boundary and the id field reads the message's id."""
    L, I = truth["length"], truth["id"]
    for frames in streams:
        data = b"".join(f for f, _ in frames)
        pos = 0
        for f, mid in frames:
            if L["width"] == 0:
                v, n = read_varint(data, pos + L["offset"])
                size = L["offset"] + n + v + L["adjustment"]
            else:
                o = pos + L["offset"]
                size = unpack(data[o:o + L["width"]], L["order"]) + L["adjustment"]
            assert size == len(f), "truth cuts %d bytes, the frame has %d (seed %s)" % (size, len(f), truth["seed"])
            o = pos + I["offset"]
            got = unpack(data[o:o + I["width"]], I["order"])
            assert got == mid, "id field reads %#x, the message's id is %#x (seed %s)" % (got, mid, truth["seed"])
            pos += size
        assert pos == len(data)


# --- the capture ----------------------------------------------------------------------------

def write_capture(path, rng, port, conns, nosyn, mss=1460):
    """conns: for each connection, a list of events (direction, frame, header length) in the
    order the two ends wrote them. Nagle-like: a write goes out at once when the direction has
    nothing unacknowledged, else it waits for the next and they go together; a reply from the
    other end flushes what waits (its ACK); big writes split at the MSS; now and then an
    application writes the header and the body with two calls on a TCP_NODELAY socket. Without
    SYN (nosyn) each direction starts some bytes into its first messages."""
    pcap = PcapWriter(path, step_us=rng.choice([40, 200, 1000]))
    base_port = rng.randint(61000, 64000)
    tiny_rate = rng.choice([0.0, 0.05, 0.15])
    for c, events in enumerate(conns):
        client = bytes([10, rng.randint(0, 200), rng.randint(0, 255), rng.randint(2, 250)])
        server = bytes([172, 16, 0, rng.randint(1, 20)])
        isn = (rng.randrange(1 << 32), rng.randrange(1 << 32))
        if nosyn:
            conn = Connection(lambda pkt: None, client, base_port + c, server, port, isn, mss=mss)
            conn.write = pcap.write
            skip = [rng.randint(3, 60), rng.randint(3, 60)]
        else:
            conn = Connection(pcap.write, client, base_port + c, server, port, isn, mss=mss)
            skip = [0, 0]

        def out(d, data):
            if skip[d] >= len(data):
                skip[d] -= len(data)
                conn.seq[d] += len(data)
                return
            if skip[d]:
                conn.seq[d] += skip[d]
                data = data[skip[d]:]
                skip[d] = 0
            conn.send(d, data)

        waiting = [b"", b""]
        last = None
        for d, frame, hlen in events:
            if last is not None and last != d and waiting[1 - d]:
                out(1 - d, waiting[1 - d])  # the other end's ACK releases what Nagle held
                waiting[1 - d] = b""
            last = d
            if rng.random() < tiny_rate and hlen < len(frame):
                if waiting[d]:
                    out(d, waiting[d])
                    waiting[d] = b""
                out(d, frame[:hlen])
                out(d, frame[hlen:])
                continue
            waiting[d] += frame
            if len(waiting[d]) >= mss or rng.random() < 0.55:
                out(d, waiting[d])
                waiting[d] = b""
        for d in (0, 1):
            if waiting[d]:
                out(d, waiting[d])
        conn.close()
    pcap.close()


def save(outdir, seed, truth, conns, nosyn, rng, port, mss=1460):
    streams = []
    for events in conns:
        for d in (0, 1):
            streams.append([(f, mid) for dd, f, _h, mid in events if dd == d])
    check_truth(truth, streams)
    base = os.path.join(outdir, "proto-%d" % seed)
    write_capture(base + ".pcap", rng, port, [[(d, f, h) for d, f, h, _ in ev] for ev in conns], nosyn, mss)
    with open(base + ".json", "w") as f:
        json.dump(truth, f, indent=1)


def run(doc, make, flags):
    """The generators' command line: OUTDIR FIRST_SEED COUNT [--flag...]; calls
    make(outdir, seed, *[flag given for each of flags])."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 3:
        sys.exit(doc)
    outdir, first, count = args[0], int(args[1]), int(args[2])
    os.makedirs(outdir, exist_ok=True)
    for seed in range(first, first + count):
        make(outdir, seed, *["--" + f in sys.argv for f in flags])
    print("wrote %d protocols to %s" % (count, outdir))
