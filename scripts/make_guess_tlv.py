#!/usr/bin/env python3
"""TLV and IoT-style protocols, to test `framedump guess` on framings it was not designed on:
from a seed, draw one of
  - a delimited frame: a start byte or two (0x7E, 0x68, 0xAA55, '##'...), an address, a type,
    a 1- or 2-byte length (either order), maybe a device id (6-byte MAC or 8-byte BCD IMEI) and
    a sequence number, the value, a CRC-16 / sum / xor trailer and maybe an end byte; the length
    counts the value, the value and the checksum, everything after the start, after itself or
    the whole frame;
  - a length-first frame: [length u16/u32][type u8/u16][device id][seq?][value];
  - a type and a LEB128 varint length (or the varint first) over a value of nested TLVs, maybe
    inside a start byte and a CRC-16;
  - Modbus/TCP (MBAP header, the function code as the id);
  - a GB/T 32960-like telematics frame ('##', command, reply flag, 17-char VIN, cipher byte,
    u16 length, data, BCC);
with 3-12 message types: periodic telemetry dominates (little-endian floats, u16 readings,
timestamps), heartbeats, acks, registration with an ASCII device name, commands and their
replies, now and then a bigger config or firmware block.

    make_guess_tlv.py OUTDIR FIRST_SEED COUNT [--nosyn]

writes OUTDIR/proto-SEED.pcap and OUTDIR/proto-SEED.json (the ground truth, as
scripts/guess_accuracy.py reads it; a varint length has width 0 and frame = its offset + its
bytes + its value + adjustment). --nosyn: no connection has its handshake and each direction
starts some bytes into its first messages. Every frame stream is re-cut with the truth before
the capture is written.
"""
import os, random, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guess_gen_util import run, pack, varint, crc16_modbus, crc16_ccitt, sum8, xor8, save  # noqa: E402

DEVNAMES = ["TH-Sensor-01", "esp32-kitchen", "GW_HALL_A", "meter-0042", "PLC-3", "node17", "LoRaBridge",
            "boiler-ctl", "DTU-4G-778", "smoke#2"]


def flip(o):
    return "little" if o == "big" else "big"


class Readings:
    """A telemetry record layout: (kind) per sensor, in the protocol's value byte order."""

    def __init__(self, rng, order, maxlen):
        self.o = "<" if order == "little" else ">"
        self.items = [rng.choice(["f", "H", "h", "I", "B", "tagf", "ts"]) for _ in range(rng.randint(1, 8))]
        while len(self.encode(rng)) > maxlen:
            self.items.pop()

    def encode(self, rng):
        out = b""
        for i, k in enumerate(self.items):
            if k == "f":
                out += struct.pack(self.o + "f", rng.uniform(-20, 60))
            elif k == "H":
                out += struct.pack(self.o + "H", rng.randint(0, 4095))
            elif k == "h":
                out += struct.pack(self.o + "h", rng.randint(-300, 300))
            elif k == "I":
                out += struct.pack(self.o + "I", rng.randint(0, 10 ** 6))
            elif k == "B":
                out += bytes([rng.randint(0, 100)])
            elif k == "tagf":
                out += bytes([i + 1]) + struct.pack(self.o + "f", rng.uniform(0, 100))
            else:
                out += struct.pack(self.o + "I", 1700000000 + rng.randint(0, 10 ** 6))
        return out


def nested_tlv(rng, depth=0):
    """Inner TLVs: [tag u8][varint length][value], some of them holding more TLVs."""
    out = b""
    for _ in range(rng.randint(1, 5)):
        tag = rng.randint(1, 40)
        k = rng.random()
        if k < 0.15 and depth < 2:
            v = nested_tlv(rng, depth + 1)
            tag |= 0x80
        elif k < 0.45:
            v = struct.pack("<f", rng.uniform(-40, 90))
        elif k < 0.65:
            v = struct.pack("<H", rng.randint(0, 65535))
        elif k < 0.8:
            v = rng.choice(DEVNAMES).encode()
        else:
            v = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))
        out += bytes([tag]) + varint(len(v)) + v
    return out


class Tlv:
    def __init__(self, rng):
        self.rng = rng
        self.style = rng.choices(["delim", "lenfirst", "varint", "mbap", "gb32960"], [35, 25, 20, 10, 10])[0]
        self.vorder = "little" if rng.random() < 0.7 else "big"
        getattr(self, "setup_" + self.style)()

    # -- layouts ------------------------------------------------------------------------------

    def finish(self, fields, trailer, uncounted_head, uncounted_tail):
        """fields: (name, width, order); the length counts the frame minus its first
        uncounted_head bytes and last uncounted_tail bytes."""
        self.layout, off = [], 0
        for n, w, o in fields:
            self.layout.append((n, off, w, o))
            off += w or 1  # a varint (width 0): the offsets after it are those of its 1-byte form
        self.hsize = off
        self.off = {n: o for n, o, _w, _o in self.layout}
        self.width = {n: w for n, _o, w, _x in self.layout}
        self.order = {n: o for n, _x, _w, o in self.layout}
        self.trailer = trailer  # [(name, width, order)]
        self.tsize = sum(w for _n, w, _o in trailer)
        self.uh, self.ut = uncounted_head, uncounted_tail
        self.adj = uncounted_head + uncounted_tail

    def setup_delim(self):
        rng = self.rng
        start = rng.choice([(0x7E, 1), (0x68, 1), (0x24, 1), (0xAA55, 2), (0x55AA, 2), (0x5AA5, 2), (0x2323, 2),
                            (0xEB90, 2)])
        self.start = start[0]
        lw = rng.choice([1, 1, 2, 2, 2])
        lo = "big" if lw == 1 else ("little" if rng.random() < 0.5 else "big")
        tw = 1 if rng.random() < 0.8 else 2
        fields = [("start", start[1], "big")]
        if rng.random() < 0.3:
            fields.append(("addr", 1, "big"))
        pair = [("type", tw, "big" if tw == 1 else rng.choice(["big", "little"])), ("length", lw, lo)]
        if rng.random() < 0.35:
            pair.reverse()
        fields += pair
        if rng.random() < 0.35:
            fields.append(("devid", rng.choice([6, 8]), "big"))
        if rng.random() < 0.35:
            fields.append(("seq", rng.choice([1, 2]), rng.choice(["big", "little"])))
        trailer = []
        ck = rng.choice(["crc16", "crc16", "ccitt", "sum8", "xor8", None])
        if ck:
            trailer.append(("check", 2 if ck in ("crc16", "ccitt") else 1, "little" if ck == "crc16" else "big"))
        self.check = ck
        if rng.random() < 0.4:
            self.end = rng.choice([0x7E, 0x0D, 0x16, 0x23, 0xFF])
            trailer.append(("end", 1, "big"))
        hs = sum(w for _n, w, _o in fields)
        ts = sum(w for _n, w, _o in trailer)
        endw = 1 if trailer and trailer[-1][0] == "end" else 0
        names = [n for n, _w, _o in fields]
        loff = sum(w for n, w, _o in fields[:names.index("length")])
        mode = rng.choice(["value", "value", "value+check", "after_start", "after_length", "whole"])
        uh, ut = {"value": (hs, ts), "value+check": (hs, endw), "after_start": (start[1], ts),
                  "after_length": (loff + lw, ts if rng.random() < 0.5 else 0), "whole": (0, 0)}[mode]
        self.mode = mode
        self.maxlen = (255 if lw == 1 else 60000) - hs - ts
        self.finish(fields, trailer, uh, ut)

    def setup_lenfirst(self):
        rng = self.rng
        lw = rng.choice([2, 2, 4])
        lo = "big" if rng.random() < 0.5 else "little"
        tw = 1 if rng.random() < 0.7 else 2
        fields = [("length", lw, lo), ("type", tw, lo if rng.random() < 0.8 else flip(lo))]
        if rng.random() < 0.75:
            fields.append(("devid", rng.choice([6, 8]), "big"))
        if rng.random() < 0.3:
            fields.append(("seq", rng.choice([2, 4]), lo))
        if rng.random() < 0.2:
            fields.append(("ver", 1, "big"))
        hs = sum(w for _n, w, _o in fields)
        mode = rng.choice(["whole", "value", "after_length"])
        self.mode = mode
        self.check = None
        self.maxlen = 20000
        self.finish(fields, [], {"whole": 0, "value": hs, "after_length": lw}[mode], 0)

    def setup_varint(self):
        rng = self.rng
        fields = []
        if rng.random() < 0.3:
            self.start = rng.choice([0xC0, 0x7E, 0xA5])
            fields.append(("start", 1, "big"))
        # the type before the varint: after it, the type would have no fixed offset
        fields += [("type", 1, "big"), ("length", 0, "big")]
        if rng.random() < 0.3:
            fields.append(("flags", 1, "big"))  # a byte after the varint (its offset moves with it)
        trailer = []
        self.check = None
        if rng.random() < 0.35:
            self.check = "crc16"
            trailer.append(("check", 2, rng.choice(["little", "big"])))
        names = [n for n, _w, _o in fields]
        after = sum(w for _n, w, _o in fields[names.index("length") + 1:])  # header bytes after the varint
        self.count_after = after and rng.random() < 0.5
        self.count_check = bool(trailer) and rng.random() < 0.5
        self.after = after
        self.mode = "value" + ("+flags" if self.count_after else "") + ("+check" if self.count_check else "")
        self.finish(fields, trailer, 0, 0)
        self.adj = (0 if self.count_after else after) + (0 if self.count_check else self.tsize)
        self.maxlen = 4000

    def setup_mbap(self):
        fields = [("txn", 2, "big"), ("proto", 2, "big"), ("length", 2, "big"), ("unit", 1, "big"),
                  ("type", 1, "big")]
        self.mode = "after_length"
        self.check = None
        self.maxlen = 250
        self.finish(fields, [], 6, 0)

    def setup_gb32960(self):
        fields = [("start", 2, "big"), ("type", 1, "big"), ("reply", 1, "big"), ("vin", 17, "big"),
                  ("cipher", 1, "big"), ("length", 2, "big")]
        self.start = 0x2323
        self.check = "xor8"
        self.mode = "value"
        self.maxlen = 2000
        self.finish(fields, [("check", 1, "big")], 24, 1)

    # -- message types --------------------------------------------------------------------------

    def types(self):
        """(type value, direction, kind, weight); the first is the telemetry."""
        rng = self.rng
        if self.style == "mbap":
            fcs = rng.sample([0x01, 0x02, 0x04, 0x05, 0x06, 0x0F, 0x10, 0x17], rng.randint(1, 4))
            return [0x03] + fcs
        if self.style == "gb32960":
            return [0x02, 0x07, 0x01, 0x04, 0x03, 0x08][:rng.randint(3, 6)]
        tw = self.width["type"]
        n = rng.randint(3, 12)
        if tw == 1:
            pool = list(range(1, 0x20)) + list(range(0x80, 0xA0)) if rng.random() < 0.5 else list(range(1, 256))
        else:
            pool = [0x0100 | i for i in range(1, 0x20)] + [0x8000 | i for i in range(1, 0x20)] + \
                   list(range(0x0200, 0x0220))
        return rng.sample(pool, n)

    def build(self, nconn):
        rng = self.rng
        tv = self.types()
        self.tvals = tv
        self.telemetry = tv[0]
        self.period_share = rng.uniform(0.5, 0.9)
        maxv = self.maxlen
        self.readings = Readings(rng, self.vorder, min(maxv, 120))
        self.kinds = {}
        for t in tv[1:]:
            self.kinds[t] = rng.choice(["heartbeat", "ack", "register", "command", "alarm", "config", "timesync"])
        # every frame carries its device's id when the header has one
        self.devids = [bytes(rng.randrange(256) for _ in range(8)) for _ in range(nconn)]

    def value(self, t, d, c):
        rng = self.rng
        if self.style == "varint":
            if t == self.telemetry or rng.random() < 0.6:
                return nested_tlv(rng)
            return b""
        if self.style == "mbap":
            if d == 0:  # the request: start address, count (or a value)
                if t in (0x0F, 0x10):
                    n = rng.randint(1, 10)
                    return struct.pack(">HHB", rng.randint(0, 999), n, 2 * n) + \
                        b"".join(struct.pack(">H", rng.randint(0, 65535)) for _ in range(n))
                return struct.pack(">HH", rng.randint(0, 9999), rng.randint(1, 40))
            if t in (0x05, 0x06, 0x0F, 0x10):
                return struct.pack(">HH", rng.randint(0, 9999), rng.randint(0, 65535))
            n = rng.randint(1, 40)
            return bytes([2 * n]) + b"".join(struct.pack(">H", rng.randint(0, 4000)) for _ in range(n))
        if self.style == "gb32960":
            now = bytes([24, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59),
                         rng.randint(0, 59)])
            if t in (0x07,) or d == 1:
                return b"" if t == 0x07 else now
            if t == 0x01:
                return now + struct.pack(">H", rng.randint(1, 100)) + b"89860" + bytes(15) + b"\x01\x00"
            if t in (0x02, 0x03):
                out = now
                for _ in range(rng.randint(1, 5)):
                    out += bytes([rng.randint(1, 9)]) + bytes(rng.randrange(256) for _ in range(rng.randint(6, 60)))
                return out
            return now
        if t == self.telemetry:
            return self.readings.encode(rng)
        k = self.kinds[t]
        o = "<" if self.vorder == "little" else ">"
        if k == "heartbeat":
            return b"" if rng.random() < 0.7 else struct.pack(o + "I", 1700000000 + rng.randint(0, 10 ** 6))
        if k == "ack":
            return bytes([rng.choice([0, 0, 0, 1])])
        if k == "register":
            name = rng.choice(DEVNAMES).encode()
            return (name + bytes(16))[:16] + struct.pack(o + "HH", rng.randint(1, 9), rng.randint(100, 400))
        if k == "command":
            return bytes([rng.randint(1, 20)]) + struct.pack(o + "h", rng.randint(-100, 100))
        if k == "alarm":
            return struct.pack(o + "HIf", rng.randint(1, 50), 1700000000 + rng.randint(0, 10 ** 6), rng.uniform(0, 99))
        if k == "timesync":
            return struct.pack(o + "I", 1700000000 + rng.randint(0, 10 ** 6))
        n = rng.randint(20, min(self.maxlen, 1400))  # config / firmware block
        return bytes(rng.randrange(256) for _ in range(n))

    def frame(self, t, val, c, seq, d):
        rng = self.rng
        total = self.hsize + len(val) + self.tsize
        vals = {"start": getattr(self, "start", 0), "addr": c + 1, "type": t, "devid": self.devids[c],
                "seq": seq, "ver": 1, "txn": seq, "proto": 0, "unit": 1, "reply": 0xFE if d == 0 else 0x01,
                "flags": rng.choice([0, 0, 1, 2]), "vin": ("LSVAU2180N%07d" % (c * 1111 + 1234567)).encode(), "cipher": 1}
        if self.style == "varint":
            head = b""
            for n, _o, w, o in self.layout:
                if n == "length":
                    head += varint(len(val) + (self.after if self.count_after else 0) +
                                   (self.tsize if self.count_check else 0))
                else:
                    head += pack(vals[n], w, o)
        else:
            lv = total - self.uh - self.ut
            vals["length"] = lv
            assert 0 <= lv < 1 << (8 * self.width["length"]), (lv, self.mode)
            head = b""
            for n, _o, w, o in self.layout:
                v = vals[n]
                head += v[:w] if isinstance(v, bytes) else pack(v, w, o)
        body = head + val
        tail = b""
        for n, w, o in self.trailer:
            if n == "end":
                tail += bytes([self.end])
            else:
                cov = body[self.width["start"]:] if "start" in self.width else body  # after the start bytes
                ck = {"crc16": crc16_modbus, "ccitt": crc16_ccitt, "sum8": sum8, "xor8": xor8}[self.check](cov)
                tail += pack(ck, w, o)
        return body + tail

    def connection(self, c):
        rng = self.rng
        events = []
        seq = [rng.randrange(0, 200), rng.randrange(0, 200)]
        target = rng.randint(40, 300)
        others = self.tvals[1:]

        def send(d, t, val):
            f = self.frame(t, val, c, seq[d], d)
            seq[d] += 1
            hl = len(f) - len(val) - self.tsize
            events.append((d, f, hl, t))

        if self.style == "mbap":
            # the master (client) polls; the device answers each request
            while len(events) < target:
                t = self.telemetry if rng.random() < self.period_share else rng.choice(others)
                seq[1] = seq[0]  # the answer echoes the transaction id
                send(0, t, self.value(t, 0, c))
                send(1, t, self.value(t, 1, c))
            return events
        reg = [t for t in others if self.kinds.get(t) == "register"] if self.style != "gb32960" else [0x01]
        if reg:
            send(0, reg[0], self.value(reg[0], 0, c))
            if self.style == "gb32960":
                send(1, reg[0], self.value(reg[0], 1, c))
        acks = [t for t in others if self.kinds.get(t) == "ack"]
        while len(events) < target:
            if rng.random() < self.period_share:
                send(0, self.telemetry, self.value(self.telemetry, 0, c))
                if self.style == "gb32960" and rng.random() < 0.3:
                    send(1, self.telemetry, self.value(self.telemetry, 1, c))
                elif acks and rng.random() < 0.5:
                    send(1, acks[0], self.value(acks[0], 1, c))
                continue
            t = rng.choice(others)
            k = self.kinds.get(t, "")
            if k in ("command", "config", "timesync"):
                send(1, t, self.value(t, 1, c))  # down from the server, the device answers
                send(0, acks[0] if acks else t, self.value(acks[0] if acks else t, 0, c))
            elif k == "ack":
                send(1, t, self.value(t, 1, c))
            else:
                send(0, t, self.value(t, 0, c))
                if self.style == "gb32960" or rng.random() < 0.4:
                    send(1, t, self.value(t, 1, c))
        return events

    def truth(self):
        lo = self.off["length"]
        L = {"offset": lo, "width": self.width["length"], "order": self.order["length"], "adjustment": self.adj,
             "counts": self.mode}
        return {
            "length": L,
            "id": {"offset": self.off["type"], "width": self.width["type"], "order": self.order["type"]},
            "header": [{"name": n, "offset": o, "width": w, "order": od} for n, o, w, od in self.layout],
            "header_size": self.hsize,  # with a varint length: in its 1-byte form
            "trailer": [{"name": n, "width": w, "order": o} for n, w, o in self.trailer],
            "style": self.style,
        }


def make(outdir, seed, nosyn):
    rng = random.Random(seed * 104729 + 3)
    port = rng.randrange(2000, 60000)
    p = Tlv(rng)
    nconn = rng.randint(2, 5)
    p.build(nconn)
    conns = [p.connection(c) for c in range(nconn)]
    truth = p.truth()
    truth.update({"seed": seed, "port": port, "nosyn": nosyn, "generator": "tlv"})
    save(outdir, seed, truth, conns, nosyn, rng, port, mss=rng.choice([536, 1460, 1460]))


if __name__ == "__main__":
    run(__doc__, make, ["nosyn"])
