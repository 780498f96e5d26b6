#!/usr/bin/env python3
"""Write Tests/FramedumpCoreTests/Fixtures/grpc_edges.pcap: one crafted h2c connection (port
50061) whose HTTP/2 takes the paths real gRPC peers rarely take, for the gRPC layer's tests.
Header blocks come from the `hpack` package's encoder (`pip install hpack`), the rest is
written here by RFC 9113. Run from the repository root:

    python3 scripts/make_grpc_fixtures.py

The calls, of service test.kinds.Calls (Tests/FramedumpCoreTests/Fixtures/proto/kinds.proto),
whose messages are Kinds (field 1 i32, field 14 text):
- stream 1, Unary: the request's header block split over HEADERS and two CONTINUATION frames;
  its message cut over two DATA frames, the first padded, the prefix itself cut; the response:
  two messages in one DATA frame (a unary call answered twice is a protocol error, but the
  layer reads what came), trailers grpc-status 0.
- stream 3, Unary, grpc-encoding gzip both ways: one compressed message each way.
- stream 5, Unary: trailers only (no response message), grpc-status 5 and a percent-encoded
  grpc-message "no such room: 房间".
- stream 7, Server: a request, two responses, then RST_STREAM CANCEL from the client.
- stream 9, /other.Service/Missing (no service declares it): one message each way, decoded
  without a schema; a PING and a WINDOW_UPDATE between.
- stream 11, Unary: a request whose prefix announces 1 GiB (past max_frame): reported, passed over.
Writes grpc_edges.json beside it: per stream, the requests and responses as hex.
"""
import gzip, json, os, struct, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from pcapgen import PcapWriter, Connection
from hpack import Encoder

OUT = "Tests/FramedumpCoreTests/Fixtures/grpc_edges"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(t, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", stream) + payload


def msg(body, compressed=False):
    return bytes([1 if compressed else 0]) + struct.pack(">I", len(body)) + body


def kinds(i32, text):
    t = text.encode()
    return bytes([0x08, i32]) + bytes([0x72, len(t)]) + t


enc = [Encoder(), Encoder()]


def block(d, headers):
    return enc[d].encode(headers, huffman=True)


def req_headers(path, extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1:50061"),
            ("content-type", "application/grpc"), ("te", "trailers")] + list(extra)


RESP = [(":status", "200"), ("content-type", "application/grpc")]
log = {}


def main():
    pw = PcapWriter(OUT + ".pcap")
    c = Connection(pw.write, bytes([127, 0, 0, 1]), 40100, bytes([127, 0, 0, 1]), 50061, (1000, 5000), mss=1200)
    c.send(0, PREFACE + frame(4, 0, 0, struct.pack(">HI", 1, 8192) + struct.pack(">HI", 4, 65535)))
    c.send(1, frame(4, 0, 0, struct.pack(">HI", 1, 4096)) + frame(4, 1, 0, b""))
    c.send(0, frame(4, 1, 0, b""))

    # Stream 1.
    b = block(0, req_headers("/test.kinds.Calls/Unary", [("user-agent", "fixture/1.0")]))
    third = len(b) // 3
    c.send(0, frame(1, 0, 1, b[:third]) + frame(9, 0, 1, b[third:2 * third]) + frame(9, 4, 1, b[2 * third:]))
    r1 = kinds(42, "hello")
    m = msg(r1)
    c.send(0, frame(0, 8, 1, bytes([3]) + m[:3] + b"\0\0\0"))
    c.send(0, frame(0, 1, 1, m[3:]))
    s1, s2 = kinds(1, "first"), kinds(2, "second")
    c.send(1, frame(1, 4, 1, block(1, RESP)) + frame(0, 0, 1, msg(s1) + msg(s2)))
    c.send(1, frame(1, 5, 1, block(1, [("grpc-status", "0")])))
    log[1] = {"requests": [r1.hex()], "responses": [s1.hex(), s2.hex()]}

    # Stream 3: gzip.
    r3, s3 = kinds(7, "squeezed " * 8), kinds(8, "pressed " * 8)
    c.send(0, frame(1, 4, 3, block(0, req_headers("/test.kinds.Calls/Unary", [("grpc-encoding", "gzip")])))
           + frame(0, 1, 3, msg(gzip.compress(r3, mtime=0), True)))
    c.send(1, frame(1, 4, 3, block(1, RESP + [("grpc-encoding", "gzip")])) + frame(0, 0, 3, msg(gzip.compress(s3, mtime=0), True))
           + frame(1, 5, 3, block(1, [("grpc-status", "0")])))
    log[3] = {"requests": [r3.hex()], "responses": [s3.hex()]}

    # Stream 5: trailers only.
    r5 = kinds(5, "where")
    c.send(0, frame(1, 4, 5, block(0, req_headers("/test.kinds.Calls/Unary"))) + frame(0, 1, 5, msg(r5)))
    c.send(1, frame(1, 5, 5, block(1, RESP + [("grpc-status", "5"), ("grpc-message", "no%20such%20room:%20%E6%88%BF%E9%97%B4")])))
    log[5] = {"requests": [r5.hex()], "responses": []}

    # Stream 7: cancelled.
    r7, a7, b7 = kinds(9, "stream please"), kinds(10, "one"), kinds(11, "two")
    c.send(0, frame(1, 4, 7, block(0, req_headers("/test.kinds.Calls/Server"))) + frame(0, 1, 7, msg(r7)))
    c.send(1, frame(1, 4, 7, block(1, RESP)) + frame(0, 0, 7, msg(a7)) + frame(0, 0, 7, msg(b7)))
    c.send(0, frame(3, 0, 7, struct.pack(">I", 8)))
    log[7] = {"requests": [r7.hex()], "responses": [a7.hex(), b7.hex()]}

    # Stream 9: a method no service declares.
    r9, s9 = kinds(12, "who"), kinds(13, "nobody")
    c.send(0, frame(1, 4, 9, block(0, req_headers("/other.Service/Missing"))) + frame(6, 0, 0, b"12345678")
           + frame(8, 0, 0, struct.pack(">I", 1000)) + frame(0, 1, 9, msg(r9)))
    c.send(1, frame(6, 1, 0, b"12345678") + frame(1, 4, 9, block(1, RESP)) + frame(0, 0, 9, msg(s9))
           + frame(1, 5, 9, block(1, [("grpc-status", "12"), ("grpc-message", "unknown method")])))
    log[9] = {"requests": [r9.hex()], "responses": [s9.hex()]}

    # Stream 11: a message past max_frame.
    c.send(0, frame(1, 4, 11, block(0, req_headers("/test.kinds.Calls/Unary"))) + frame(0, 1, 11, b"\0\x40\0\0\0" + b"x" * 64))
    c.send(1, frame(1, 5, 11, block(1, RESP + [("grpc-status", "8"), ("grpc-message", "too large")])))
    log[11] = {"requests": [], "responses": []}

    c.close()
    pw.close()
    json.dump({"server_port": 50061, "streams": log}, open(OUT + ".json", "w"), indent=1)
    print("wrote", OUT + ".pcap", OUT + ".json")


main()
