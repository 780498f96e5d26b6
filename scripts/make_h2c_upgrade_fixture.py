#!/usr/bin/env python3
"""Record Tests/FramedumpCoreTests/Fixtures/grpc_upgrade.pcap: gRPC calls on HTTP/2 reached by
HTTP/1.1's `Upgrade: h2c` (RFC 7540 §3.2), between peers built on PyPI's `h2` (`pip install h2`,
its initiate_upgrade_connection on both sides), captured on loopback port 50061 (the
grpc_edges dissector's, service test.kinds.Calls of Fixtures/proto/kinds.proto). Run as root
from the repository root:

    python3 scripts/make_h2c_upgrade_fixture.py

Connection 1: the client's HTTP/1.1 POST /test.kinds.Calls/Unary asks for h2c and carries the
request message as its body (Content-Length); the server answers 101 Switching Protocols, then
HTTP/2: its response on stream 1 (a message, trailers grpc-status 0). The client sends its
preface and a second call on stream 3 (a message each way). Connection 2: the same request,
answered by a server that does not speak h2c: HTTP/1.1 200 with a body. Writes
grpc_upgrade.json beside it: connection 1's streams, their requests and responses as hex.
Every socket has a timeout; tcpdump is stopped by its own PID.
"""
import json, os, socket, struct, sys, threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples"))
from capture import Capture

import h2.config, h2.connection, h2.events

PORT = 50061
TIMEOUT = 10
OUT = "Tests/FramedumpCoreTests/Fixtures/grpc_upgrade"
PATH = "/test.kinds.Calls/Unary"


def msg(body):
    return b"\0" + struct.pack(">I", len(body)) + body


def kinds(i32, text):
    t = text.encode()
    return bytes([0x08, i32, 0x72, len(t)]) + t


LOG = {"1": {"requests": [msg(kinds(7, "upgraded request")).hex()], "responses": [msg(kinds(8, "ok 1")).hex()]},
       "3": {"requests": [msg(kinds(9, "second call")).hex()], "responses": [msg(kinds(10, "ok 3")).hex()]}}


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("peer closed inside an HTTP/1.1 head")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode(), rest


def server(listener, upgrade):
    sock, _ = listener.accept()
    sock.settimeout(TIMEOUT)
    head, rest = read_head(sock)
    length = int([l.split(":", 1)[1] for l in head.split("\r\n") if l.lower().startswith("content-length:")][0])
    while len(rest) < length:
        rest += sock.recv(4096)
    body, rest = rest[:length], rest[length:]
    assert body == bytes.fromhex(LOG["1"]["requests"][0]), body
    if not upgrade:
        text = b"no h2c here"
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text))
        sock.close()
        return
    settings = [l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("http2-settings:")][0]
    sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    conn.initiate_upgrade_connection(settings)
    answer = {1: LOG["1"]["responses"][0], 3: LOG["3"]["responses"][0]}

    def respond(stream):
        conn.send_headers(stream, [(":status", "200"), ("content-type", "application/grpc")])
        conn.send_data(stream, bytes.fromhex(answer[stream]))
        conn.send_headers(stream, [("grpc-status", "0"), ("grpc-message", "")], end_stream=True)

    respond(1)
    sock.sendall(conn.data_to_send())
    done = False
    while not done:
        data = rest or sock.recv(65536)
        rest = b""
        if not data:
            break
        for e in conn.receive_data(data):
            if isinstance(e, h2.events.DataReceived):
                conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            if isinstance(e, h2.events.StreamEnded) and e.stream_id == 3:
                respond(3)
            if isinstance(e, h2.events.ConnectionTerminated):
                done = True
        sock.sendall(conn.data_to_send())
    sock.close()


def client(upgrade):
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=TIMEOUT)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    settings = conn.initiate_upgrade_connection().decode()
    body = bytes.fromhex(LOG["1"]["requests"][0])
    sock.sendall(("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                  "HTTP2-Settings: %s\r\nContent-Type: application/grpc\r\nTE: trailers\r\nContent-Length: %d\r\n\r\n"
                  % (PATH, PORT, settings, len(body))).encode() + body)
    head, rest = read_head(sock)
    if not upgrade:
        assert head.startswith("HTTP/1.1 200"), head
        sock.close()
        return
    assert head.startswith("HTTP/1.1 101"), head
    sock.sendall(conn.data_to_send())
    ended = set()
    sent_second = False
    while len(ended) < 2:
        data = rest or sock.recv(65536)
        rest = b""
        if not data:
            break
        for e in conn.receive_data(data):
            if isinstance(e, h2.events.DataReceived):
                conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            if isinstance(e, h2.events.StreamEnded):
                ended.add(e.stream_id)
        if not sent_second and 1 in ended:
            sent_second = True
            conn.send_headers(3, [(":method", "POST"), (":scheme", "http"), (":path", PATH), (":authority", "127.0.0.1:%d" % PORT),
                                  ("content-type", "application/grpc"), ("te", "trailers")])
            conn.send_data(3, bytes.fromhex(LOG["3"]["requests"][0]), end_stream=True)
        sock.sendall(conn.data_to_send())
    conn.close_connection()
    sock.sendall(conn.data_to_send())
    sock.close()


def run(upgrade):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", PORT))
    listener.listen(1)
    listener.settimeout(TIMEOUT)
    t = threading.Thread(target=server, args=(listener, upgrade))
    t.start()
    client(upgrade)
    t.join(TIMEOUT)
    listener.close()


if __name__ == "__main__":
    with Capture(OUT + ".pcap", PORT):
        run(True)
        run(False)
    with open(OUT + ".json", "w") as f:
        json.dump(LOG, f, indent=1)
        f.write("\n")
