#!/usr/bin/env python3
"""Write Tests/FramedumpCoreTests/Fixtures/hpack/sessions.json: header blocks encoded by PyPI's
hpack package (an HPACK encoder framedump does not share code with), with the header lists each
block stands for, so HPACKTests checks framedump's decoder against an independent encoder.
Run from the repository root (`pip install hpack`):

    python3 scripts/make_hpack_fixtures.py

Twenty-four sessions of 30 blocks each, drawn from a fixed seed: gRPC- and browser-like headers
(pseudo-headers, repeated names, values that repeat and values that do not, UTF-8 values as raw
bytes, empty values, long values), Huffman coding on or off per block, sensitive headers sent
never-indexed, and table sizes of 0, 64, 256, 4,096 and 65,536 bytes changed between blocks
(the encoder then emits a size update), so entries are added, found by index and evicted.
"""
import json, os, random

from hpack import Encoder, Decoder
from hpack.struct import NeverIndexedHeaderTuple

OUT = "Tests/FramedumpCoreTests/Fixtures/hpack/sessions.json"
NAMES = [":method", ":path", ":scheme", ":authority", ":status", "content-type", "te", "grpc-encoding",
         "grpc-accept-encoding", "user-agent", "grpc-timeout", "grpc-status", "grpc-message", "x-trace-id",
         "cookie", "authorization", "x-custom-" + "k" * 40, "accept", "date"]


def value(r, name):
    kind = r.random()
    if kind < 0.3:
        return r.choice(["POST", "GET", "http", "200", "application/grpc", "trailers", "gzip", "0", "/chat.Chat/Send"])
    if kind < 0.5:
        return "v%d" % r.randrange(20)
    if kind < 0.6:
        return ""
    if kind < 0.7:
        return "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789-_/.") for _ in range(r.randrange(60, 300)))
    if kind < 0.8:
        return "héllo wörld 你好 %d" % r.randrange(1000)
    return "%x" % r.getrandbits(r.choice([16, 64, 128]))


def main():
    r = random.Random(7541)
    sessions = []
    for s in range(24):
        enc = Encoder()
        check = Decoder()
        blocks = []
        for b in range(30):
            if r.random() < 0.15:
                size = r.choice([0, 64, 256, 4096, 65536])
                enc.header_table_size = size
                check.max_allowed_table_size = 65536
            headers = []
            for _ in range(r.randrange(0, 12)):
                name = r.choice(NAMES)
                v = value(r, name)
                if name in ("authorization", "cookie") and r.random() < 0.5:
                    headers.append(NeverIndexedHeaderTuple(name, v))
                else:
                    headers.append((name, v))
            data = enc.encode(headers, huffman=r.random() < 0.6)
            decoded = check.decode(data, raw=True)
            assert [(n, v) for n, v in decoded] == [(n.encode(), v.encode()) for n, v in headers]
            blocks.append({"hex": data.hex(), "headers": [[n, v] for n, v in headers]})
        sessions.append(blocks)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"allowed_table_size": 65536, "sessions": sessions}, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
