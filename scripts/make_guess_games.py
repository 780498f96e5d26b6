#!/usr/bin/env python3
"""Protocols in the style of mobile-game and IM servers, to test `framedump guess` on headers it
was not designed on: from a seed, draw a header out of a magic (2 or 4 bytes), a version, a
flags byte (compressed / encrypted / response bits), a sequence number, a command (u8, u16, u32
or a main-command byte and a sub-command byte), a user id, a timestamp, a checksum (in the
header or as a trailer after the body), reserved zero bytes and a length (u16, u24 or u32) that
counts the whole frame, the body, the body and its trailer, the bytes after it or the frame
without its magic; each field with its own byte order (a little-endian length beside a
big-endian command is common). Bodies are protobuf messages (nested, repeated), JSON or packed
little-endian structs; big ones are compressed when the flags say so, and some connections
encrypt after login. 5-40 commands: a heartbeat pair, login, request/response pairs (the
response is the request + 1 or | 0x8000), server pushes and client notifies, with a skewed mix.

    make_guess_games.py OUTDIR FIRST_SEED COUNT [--dominant] [--nosyn]

writes OUTDIR/proto-SEED.pcap and OUTDIR/proto-SEED.json (the ground truth, as
scripts/guess_accuracy.py reads it). --dominant: the heartbeat pair is 95% of the messages.
--nosyn: no connection has its handshake and each direction starts some bytes into its first
messages. Every frame stream is re-cut with the truth before the capture is written.
"""
import json, os, random, struct, sys, zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guess_gen_util import (run, pack, varint, pb_varint, pb_bytes, pb_fixed32, pb_fixed64, zigzag,  # noqa: E402
                            crc16_ccitt, crc32, save)

NAMES = ["Shadow", "小龙女", "xXSniperXx", "luna", "KingArthur", "葉問", "noob_123", "Zed", "凯", "mochi",
         "DragonSlayer", "pudding", "Ace", "무사", "ghost"]
WORDS = ["guild", "arena", "raid", "quest", "gold", "gem", "hero", "skin", "rank", "mail", "chat", "shop",
         "battle", "match", "room", "team", "friend", "bag", "item", "task"]

MAGICS2 = [0x4753, 0xABCD, 0x5A5A, 0x1234, 0xFEEF, 0x55AA, 0x7777, 0x4D47, 0x0B0E, 0xC0DE]
MAGICS4 = [0xCAFEBABE, 0xDEADBEEF, 0x12345678, 0x474D5350, 0xFACEB00C, 0x0D15EA5E, 0x4E455445, 0x20240101]

TEMPLATES = [
    ["length", "magic", "version", "cmd", "seq", "uid", "flags", "ts", "csum", "reserved"],
    ["magic", "length", "cmd", "seq", "version", "flags", "uid", "ts", "csum", "reserved"],
    ["magic", "version", "flags", "cmd", "seq", "length", "uid", "ts", "csum", "reserved"],
    ["magic", "version", "length", "cmd", "seq", "uid", "ts", "flags", "reserved", "csum"],
    ["length", "cmd", "seq", "flags", "uid", "ts", "reserved", "csum", "magic", "version"],
    ["magic", "flags", "version", "reserved", "seq", "cmd", "uid", "ts", "length", "csum"],
    ["length", "flags", "cmd", "seq", "reserved", "uid", "ts", "csum", "magic", "version"],
    ["magic", "length", "version", "flags", "reserved", "cmd", "seq", "uid", "ts", "csum"],
]


def flip(order):
    return "little" if order == "big" else "big"


class Schema:
    """The body of one command: protobuf, JSON or a packed struct, drawn once."""

    def __init__(self, rng, style, big=False, depth=0):
        self.style, self.big = style, big
        if style == "protobuf":
            self.fields = []
            for num in sorted(rng.sample(range(1, 16), rng.randint(1, 6))):
                kind = rng.choice(["uint", "uint", "sint", "string", "string", "float", "double", "bytes",
                                   "packed", "msg", "rmsg", "bool"])
                if kind in ("msg", "rmsg"):
                    if depth >= 2:
                        kind = "uint"
                    else:
                        sub = Schema(rng, "protobuf", depth=depth + 1)
                        self.fields.append((num, kind, sub))
                        continue
                self.fields.append((num, kind, None))
            if big:
                self.fields.append((16 + rng.randint(0, 3), "rmsg", Schema(rng, "protobuf", depth=depth + 1)))
        elif style == "json":
            self.keys = rng.sample(["uid", "name", "level", "gold", "items", "room", "pos", "hp", "msg", "ts",
                                    "code", "guild", "rank", "vip", "scene", "x", "y"], rng.randint(2, 7))
        else:
            self.order = "little" if rng.random() < 0.85 else "big"
            self.fields = [rng.choice(["B", "H", "I", "Q", "f", "d", "name16", "name32", "i"])
                           for _ in range(rng.randint(1, 8))]
            if big or rng.random() < 0.2:
                self.fields.append("array")
                self.elem = [rng.choice(["I", "H", "f", "name16"]) for _ in range(rng.randint(1, 4))]

    def encode(self, rng):
        if self.style == "protobuf":
            return self.pb(rng)
        if self.style == "json":
            return self.js(rng)
        return self.st(rng)

    def pb(self, rng):
        out = b""
        for num, kind, sub in self.fields:
            if rng.random() < 0.12:
                continue  # an unset optional field
            if kind == "uint":
                out += pb_varint(num, rng.choice([rng.randint(0, 100), rng.randint(0, 100000), rng.randint(10 ** 8, 10 ** 10)]))
            elif kind == "sint":
                out += pb_varint(num, zigzag(rng.randint(-5000, 5000)))
            elif kind == "bool":
                out += pb_varint(num, rng.randint(0, 1))
            elif kind == "string":
                out += pb_bytes(num, rng.choice(NAMES + WORDS).encode())
            elif kind == "float":
                out += pb_fixed32(num, struct.pack("<f", rng.uniform(-1000, 1000)))
            elif kind == "double":
                out += pb_fixed64(num, struct.pack("<d", rng.uniform(-1e6, 1e6)))
            elif kind == "bytes":
                out += pb_bytes(num, bytes(rng.randrange(256) for _ in range(rng.randint(4, 32))))
            elif kind == "packed":
                out += pb_bytes(num, b"".join(varint(rng.randint(0, 3000)) for _ in range(rng.randint(1, 12))))
            elif kind == "msg":
                out += pb_bytes(num, sub.pb(rng))
            else:
                n = rng.randint(10, 80) if self.big and num > 15 else rng.randint(0, 5)
                for _ in range(n):
                    out += pb_bytes(num, sub.pb(rng))
        return out

    def js(self, rng):
        d = {}
        for k in self.keys:
            if k in ("name", "guild", "msg"):
                d[k] = rng.choice(NAMES + WORDS)
            elif k == "items":
                d[k] = [{"id": rng.randint(1000, 9999), "n": rng.randint(1, 99)} for _ in range(rng.randint(0, 6))]
            elif k == "pos":
                d[k] = [round(rng.uniform(-500, 500), 2), round(rng.uniform(-500, 500), 2)]
            else:
                d[k] = rng.randint(0, 10 ** rng.randint(1, 9))
        return json.dumps(d, ensure_ascii=False, separators=(",", ":") if rng.random() < 0.7 else None).encode()

    def st(self, rng):
        o = "<" if self.order == "little" else ">"
        out = b""
        for f in self.fields:
            if f == "array":
                n = rng.randint(10, 120) if self.big else rng.randint(0, 8)
                out += struct.pack(o + "H", n)
                for _ in range(n):
                    for e in self.elem:
                        out += self.scalar(rng, o, e)
            else:
                out += self.scalar(rng, o, f)
        return out

    @staticmethod
    def scalar(rng, o, f):
        if f.startswith("name"):
            n = int(f[4:])
            return rng.choice(NAMES).encode()[:n].ljust(n, b"\0")
        if f in "fd":
            return struct.pack(o + f, rng.uniform(-1000, 1000))
        bits = {"B": 8, "H": 16, "I": 32, "Q": 64, "i": 31}[f]
        v = rng.randrange(1 << rng.randint(1, bits))
        return struct.pack(o + f, v)


class Game:
    def __init__(self, rng, dominant):
        self.rng = rng
        house = "big" if rng.random() < 0.55 else "little"
        odd = rng.random() < 0.35  # a header whose fields do not all share the byte order

        def order():
            return flip(house) if odd and rng.random() < 0.5 else house

        f = {}  # name -> (width, order)
        if rng.random() < 0.55:
            w = rng.choice([2, 2, 4])
            f["magic"] = (w, "big" if rng.random() < 0.7 else order())
            self.magic = rng.choice(MAGICS2 if w == 2 else MAGICS4)
        if rng.random() < 0.45:
            f["version"] = (1, "big")
        if rng.random() < 0.45:
            f["flags"] = (1, "big")
        if rng.random() < 0.55:
            f["seq"] = (rng.choice([2, 2, 4]), order())
        kind = rng.choices(["u16", "u32", "u8", "pair"], [50, 20, 12, 18])[0]
        self.cmd_kind = kind
        f["cmd"] = ({"u16": 2, "u32": 4, "u8": 1, "pair": 2}[kind], order() if kind in ("u16", "u32") else "big")
        if rng.random() < 0.35:
            f["uid"] = (rng.choice([4, 8]), order())
        if rng.random() < 0.25:
            f["ts"] = (rng.choice([4, 8]), order())
        self.trailer = 0
        if rng.random() < 0.3:
            w = rng.choice([2, 4])
            if rng.random() < 0.5:
                f["csum"] = (w, order())
            else:
                self.trailer, self.trailer_order = w, order()
        if rng.random() < 0.25:
            f["reserved"] = (rng.randint(1, 4), "big")
        lw = rng.choices([2, 3, 4], [45, 15, 40])[0]
        f["length"] = (lw, order() if lw > 1 else "big")

        tpl = rng.choice(TEMPLATES + [None])
        if tpl is None:
            names = list(f)
            rng.shuffle(names)
            if "magic" in names:
                names.remove("magic")
                names.insert(0, "magic")
        else:
            names = [n for n in tpl if n in f]
        self.layout, off = [], 0
        self.off = {}
        for n in names:
            self.layout.append((n, off, f[n][0], f[n][1]))
            self.off[n] = off
            off += f[n][0]
        self.hsize = off
        self.f = f

        lo, lw_, lord = self.off["length"], f["length"][0], f["length"][1]
        modes = ["frame", "body", "body", "after"]
        if "magic" in f and self.off["magic"] == 0:
            modes.append("nomagic")
        self.lmode = rng.choice(modes)
        self.trailer_counted = rng.random() < 0.6
        if self.lmode == "frame":
            adj = 0
        elif self.lmode == "body":
            adj = self.hsize + (0 if self.trailer_counted else self.trailer)
        elif self.lmode == "after":
            adj = lo + lw_
        else:
            adj = f["magic"][0]
        self.adj = adj

        # Commands.
        self.resp_style = rng.choice(["plus1", "high"]) if kind != "u8" else "plus1"
        self.body_style = rng.choices(["protobuf", "json", "struct"], [60, 15, 25])[0]
        ntypes = rng.randint(5, 40)
        used = set()

        def new_cmd():
            while True:
                if kind == "u8":
                    c = rng.randrange(3, 250, 2)
                elif kind == "pair":
                    c = (rng.randint(1, 30) << 8) | rng.randrange(1, 250, 2)
                elif kind == "u16":
                    c = rng.choice([rng.randint(1, 60) * 1000 + rng.randrange(1, 200, 2),
                                    (rng.randint(1, 40) << 8) | rng.randrange(1, 100, 2),
                                    rng.randrange(100, 0x7FFF, 2) + 1])
                else:
                    c = rng.choice([(rng.randint(1, 60) << 16) | rng.randrange(1, 200, 2),
                                    rng.randint(10, 99) * 10000 + rng.randrange(1, 999, 2)])
                r = c + 1 if self.resp_style == "plus1" else c | (0x8000 if kind != "u32" else 0x80000000)
                if r != c and c not in used and r not in used:
                    used.update((c, r))
                    return c, r

        hb_style = rng.choice(["low", "random", "high"])
        if hb_style == "low":
            ping = {"u8": 1, "pair": 0x0001, "u16": 1, "u32": 1}[kind]
        elif hb_style == "high":
            ping = {"u8": 0xFE, "pair": 0xFF01, "u16": 9998 if self.resp_style == "plus1" else 0x7FFE, "u32": 99998}[kind]
            if kind == "u8":
                ping = 0xFD
        else:
            ping = None
        if ping is None:
            ping, pong = new_cmd()
        else:
            pong = ping + 1 if self.resp_style == "plus1" else ping | (0x8000 if kind != "u32" else 0x80000000)
            used.update((ping, pong))
        self.hb = (ping, pong)
        hb_body = rng.choice(["empty", "empty", "ts"])
        self.schemas = {}
        for c in self.hb:
            self.schemas[c] = None if hb_body == "empty" else "ts"
        self.login = new_cmd()
        self.schemas[self.login[0]] = Schema(rng, self.body_style)
        self.schemas[self.login[1]] = Schema(rng, self.body_style)
        self.activities = []  # (kind, cmds)
        n = 4
        while n < ntypes:
            k = rng.choices(["rr", "push", "notify"], [60, 25, 15])[0]
            c, r = new_cmd()
            big = rng.random() < 0.12
            if k == "rr":
                self.schemas[c] = Schema(rng, self.body_style)
                self.schemas[r] = Schema(rng, self.body_style, big=big)
                self.activities.append(("rr", (c, r)))
                n += 2
            else:
                self.schemas[c] = Schema(rng, self.body_style, big=big and k == "push")
                self.activities.append((k, (c,)))
                used.discard(r)
                n += 1
        self.weights = [1.0 / (i + 1) ** rng.uniform(0.7, 1.5) for i in range(len(self.activities))]
        self.hb_share = 0.95 if dominant else rng.uniform(0.08, 0.4)

        # Flags: a compressed bit, maybe an encrypted bit, maybe a response bit.
        bits = rng.sample([0x01, 0x02, 0x04, 0x08, 0x10, 0x40, 0x80], 3)
        self.fl_comp = bits[0]
        self.fl_enc = bits[1] if rng.random() < 0.5 else 0
        self.fl_resp = bits[2] if rng.random() < 0.4 else 0
        self.fl_base = rng.choice([0, 0, 0, 0x20])
        self.compress_over = rng.choice([128, 256, 512, 1 << 30])
        self.version = rng.randint(1, 5)

    def truth(self):
        L = self.f["length"]
        c = self.f["cmd"]
        return {
            "length": {"offset": self.off["length"], "width": L[0], "order": L[1], "adjustment": self.adj,
                       "counts": self.lmode},
            "id": {"offset": self.off["cmd"], "width": c[0], "order": c[1]},
            "header": [{"name": n, "offset": o, "width": w, "order": od} for n, o, w, od in self.layout],
            "header_size": self.hsize,
            "trailer": self.trailer,
            "cmd_kind": self.cmd_kind,
            "body": self.body_style,
        }

    def frame(self, cs, cmd, d, response):
        rng = self.rng
        sch = self.schemas[cmd]
        if sch is None:
            body = b""
        elif sch == "ts":
            ms = cs["ms"]
            body = rng.choice([pb_varint(1, ms), struct.pack("<Q", ms), struct.pack("<I", ms // 1000)]) \
                if self.body_style != "json" else json.dumps({"t": ms}).encode()
        else:
            body = sch.encode(rng)
            while len(body) > 30000:  # a u16 length must hold it
                body = sch.encode(rng)
        flags = self.fl_base
        if len(body) > self.compress_over:
            body = zlib.compress(body)
            flags |= self.fl_comp
        if self.fl_enc and cs["enc"] and body:
            body = bytes(b ^ cs["key"][i % len(cs["key"])] for i, b in enumerate(body))
            flags |= self.fl_enc
        if response:
            flags |= self.fl_resp
        total = self.hsize + len(body) + self.trailer
        if self.lmode == "frame":
            lv = total
        elif self.lmode == "body":
            lv = len(body) + (self.trailer if self.trailer_counted else 0)
        elif self.lmode == "after":
            lv = total - self.off["length"] - self.f["length"][0]
        else:
            lv = total - self.f["magic"][0]
        assert lv < 1 << (8 * self.f["length"][0])
        vals = {"magic": getattr(self, "magic", 0), "version": cs["version"], "flags": flags, "cmd": cmd,
                "seq": cs["seq"][d], "uid": cs["uid"] if cs["logged"] else 0,
                "ts": cs["ms"] if self.f.get("ts", (0,))[0] == 8 else cs["ms"] // 1000,
                "csum": (crc32(body) if self.f.get("csum", (0,))[0] == 4 else crc16_ccitt(body)),
                "reserved": 0, "length": lv}
        cs["seq"][d] += 1
        head = b"".join(pack(vals[n], w, od) for n, _o, w, od in self.layout)
        tail = b""
        if self.trailer:
            tail = pack(crc32(head + body) if self.trailer == 4 else crc16_ccitt(head + body), self.trailer,
                        self.trailer_order)
        return head + body + tail

    def connection(self, c, version):
        rng = self.rng
        cs = {"version": version, "seq": [rng.randrange(0, 1 << 16), rng.randrange(0, 1 << 16)]
              if rng.random() < 0.5 else [rng.choice([0, 1]), rng.choice([0, 1])],
              "uid": rng.randrange(10 ** 6, 10 ** 9), "logged": False, "ms": 1700000000000 + rng.randrange(10 ** 9),
              "enc": False, "key": bytes(rng.randrange(256) for _ in range(rng.choice([4, 8, 16])))}
        events = []

        def msg(d, cmd, response=False):
            cs["ms"] += rng.randint(1, 3000)
            fr = self.frame(cs, cmd, d, response)
            events.append((d, fr, self.hsize, cmd))

        msg(0, self.login[0])
        cs["logged"] = True
        msg(1, self.login[1], True)
        cs["enc"] = rng.random() < 0.6
        target = rng.randint(40, 300)
        while len(events) < target:
            if rng.random() < self.hb_share:
                if rng.random() < 0.85:
                    msg(0, self.hb[0])
                    msg(1, self.hb[1], True)
                else:
                    msg(1, self.hb[0])
                    msg(0, self.hb[1], True)
                continue
            k, cmds = rng.choices(self.activities, self.weights)[0]
            if k == "rr":
                msg(0, cmds[0])
                if rng.random() < 0.2:
                    pk = [a for a in self.activities if a[0] == "push"]
                    if pk:
                        msg(1, rng.choice(pk)[1][0])
                msg(1, cmds[1], True)
            elif k == "push":
                for _ in range(rng.choice([1, 1, 1, 2, 5])):
                    msg(1, cmds[0])
            else:
                msg(0, cmds[0])
        return events


def make(outdir, seed, dominant, nosyn):
    rng = random.Random(seed * 7919 + 17)
    port = rng.randrange(2000, 60000)
    g = Game(rng, dominant)
    nconn = rng.randint(2, 5)
    bump = rng.randrange(nconn) if rng.random() < 0.3 else -1
    conns = [g.connection(c, g.version + (1 if c == bump else 0)) for c in range(nconn)]
    truth = g.truth()
    truth.update({"seed": seed, "port": port, "dominant": dominant, "nosyn": nosyn, "generator": "games"})
    save(outdir, seed, truth, conns, nosyn, rng, port, mss=1460)


if __name__ == "__main__":
    run(__doc__, make, ["dominant", "nosyn"])
