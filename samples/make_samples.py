#!/usr/bin/env python3
"""Record the sample captures: real client and server programs talking over loopback while
tcpdump writes what crosses `lo`. Run as root from the repository root:

    python3 samples/make_samples.py            # all samples
    python3 samples/make_samples.py game       # one of: game svc im

Each protocol gets a small server and several concurrent clients, both directions, with
sticky sends (several frames in one write), split sends (one frame over several writes, a
header itself split) and TCP_NODELAY so the writes become separate segments. Everything runs
on 127.0.0.1, every socket has a timeout, and tcpdump is stopped by its own PID.
"""
import json, os, socket, struct, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 10


def nodelay(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(TIMEOUT)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("peer closed")
        buf += chunk
    return buf


def send_split(s, data, cuts):
    """Write `data` in pieces at the given offsets, pausing so each is its own segment."""
    last = 0
    for c in list(cuts) + [len(data)]:
        s.sendall(data[last:c])
        last = c
        time.sleep(0.02)


class Server(threading.Thread):
    """Accepts connections until told to stop; one handler thread each."""

    def __init__(self, port, handler):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.handler = handler
        self.stopping = False

    def run(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            nodelay(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        try:
            self.handler(conn)
        except (EOFError, OSError):
            pass
        finally:
            conn.close()


# ---------------------------------------------------------------- game (seed 000)
# [u32 BE total length, header included][u16 BE message id][body]; strings [u16 len][utf8]

def gs(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


def game_frame(mid, body):
    return struct.pack(">IH", len(body) + 6, mid) + body


def game_read(s):
    head = recv_exact(s, 6)
    length, mid = struct.unpack(">IH", head)
    return mid, recv_exact(s, length - 6)


def game_server(conn):
    while True:
        mid, body = game_read(conn)
        if mid == 20001:
            scene = body[0]
            res = 1 if scene < 100 else 2
            reply = game_frame(20001, struct.pack(">BIBBBI", res, scene, 3, 10 if scene % 2 else 0, 7, 4200)
                               + gs("欢迎 welcome" if res == 1 else "cannot enter"))
            status = game_frame(30005, struct.pack(">iH", 950 - scene, 12) + gs("hero-%d" % scene))
            conn.sendall(reply + status)          # sticky: two frames in one write
        elif mid == 10002:
            conn.sendall(game_frame(30005, struct.pack(">iH", -5, 1) + gs("tick")))


def game_client(port, n):
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    nodelay(s)
    enter = lambda scene, line, msg: game_frame(20001, struct.pack(">BI", scene, line) + gs(msg))
    beat = lambda t: game_frame(10002, struct.pack(">Q", t))
    s.sendall(enter(n, 0, "hello from %d" % n))
    game_read(s); game_read(s)
    # Sticky: three frames in one write.
    s.sendall(beat(1700000000000 + n) + enter(n + 1, 2, "line 2") + beat(1700000000500 + n))
    for _ in range(4):
        game_read(s)
    # Split: one frame over three writes, the 6-byte header itself cut after 3 bytes.
    send_split(s, enter(150 + n, 7, "boss room, a longer message"), [3, 10])
    game_read(s); game_read(s)
    s.close()


# ---------------------------------------------------------------- svc (seed 001)
# [u32 BE service id][u32 BE body length][UTF-8 JSON body]

def svc_frame(service, obj):
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    return struct.pack(">II", service, len(body)) + body


def svc_read(s):
    service, length = struct.unpack(">II", recv_exact(s, 8))
    return service, json.loads(recv_exact(s, length))


def svc_server(conn):
    while True:
        service, req = svc_read(conn)
        if service == 1:
            conn.sendall(svc_frame(1, {"code": 0, "user": req.get("user"), "token": "t-%s" % req.get("user")}))
        elif service == 2:
            conn.sendall(svc_frame(2, {"code": 0, "items": [{"id": i, "name": "item %d" % i, "price": 9.5 * i}
                                                             for i in range(req.get("count", 1))]}))
        else:
            conn.sendall(svc_frame(service, {"code": 404, "error": "unknown service"}))


def svc_client(port, n):
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    nodelay(s)
    s.sendall(svc_frame(1, {"user": "user%d" % n, "password": "p\u00e4ss\"word", "device": {"os": "ios", "ver": 17}}))
    svc_read(s)
    # Sticky: two requests in one write.
    s.sendall(svc_frame(2, {"count": 2}) + svc_frame(9, {"ping": True, "note": None}))
    svc_read(s); svc_read(s)
    # Split: the 8-byte header cut after 5 bytes, then the body in two.
    send_split(s, svc_frame(2, {"count": 3, "filter": "新品"}), [5, 20])
    svc_read(s)
    s.close()


# ---------------------------------------------------------------- im (seed 002)
# [u16 headLength=12][u16 version][u16 cid][u32 bid][u16 bodyLength][protobuf body]
# Bodies are encoded by Python's protobuf package from Dissectors/im.proto (the module is
# generated by protoc into a temporary folder when recording). Version 2 connections
# encrypt every body with AES-128-CBC and PKCS#7 padding (the seed's writeAESBytes), with
# the key and IV that Dissectors/im.dissector declares.

IM_KEY = bytes.fromhex("8d2d0c7a5b1e4f3a9c6b2e1d0f4a7c3b")
IM_IV = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
im_pb2 = None


def im_load_proto():
    """protoc --python_out into a temporary folder, then import the generated module."""
    global im_pb2
    if im_pb2 is not None:
        return
    import importlib, tempfile
    out = tempfile.mkdtemp(prefix="im_pb2_")
    root = os.path.dirname(HERE)
    subprocess.run(["protoc", "--python_out=" + out, "-I", os.path.join(root, "Dissectors"),
                    os.path.join(root, "Dissectors", "im.proto")], check=True)
    sys.path.insert(0, out)
    im_pb2 = importlib.import_module("im_pb2")


def aes_cbc(data, decrypt=False):
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    c = Cipher(algorithms.AES(IM_KEY), modes.CBC(IM_IV))
    if decrypt:
        d = c.decryptor()
        u = padding.PKCS7(128).unpadder()
        return u.update(d.update(data) + d.finalize()) + u.finalize()
    p = padding.PKCS7(128).padder()
    e = c.encryptor()
    return e.update(p.update(data) + p.finalize()) + e.finalize()


def im_frame(cid, bid, msg, version=1):
    body = msg if isinstance(msg, bytes) else msg.SerializeToString()
    if version == 2:
        body = aes_cbc(body)
    return struct.pack(">HHHIH", 12, version, cid, bid, len(body)) + body


def im_read(s):
    head_len, ver, cid, bid, body_len = struct.unpack(">HHHIH", recv_exact(s, 12))
    body = recv_exact(s, body_len)
    return ver, cid, bid, (aes_cbc(body, decrypt=True) if ver == 2 and body else body)


def im_server(conn):
    pb = im_pb2
    while True:
        ver, cid, bid, body = im_read(conn)
        if cid == 1:     # login → login ack with the user's profile and the server's clock
            req = pb.LoginRequest.FromString(body)
            ack = pb.LoginAck(code=0, message="welcome " + req.username)
            ack.profile.age = 30 + bid
            ack.profile.username = req.username
            ack.profile.phone = "10086"
            ack.server_time.seconds = 1795291176
            ack.server_time.nanos = 135000000
            conn.sendall(im_frame(2, bid, ack, ver))
        elif cid == 3:   # message send → ack (a uint64 id above 2^63), then a pushed message
            req = pb.SendRequest.FromString(body)
            ack = pb.SendAck(sender_seq=req.sender_seq, code=1, msg_id=(1 << 63) + bid)
            push = pb.MsgPush(**{"from": "bob"}, msg_id=9007199254740993 + bid,
                              mentions=["alice", "carol"], read_by=[1, 2, 300], clock_skew_ms=-1500)
            push.msg.to = req.msg.to
            push.msg.type = pb.IMAGE
            push.msg.m_type = pb.GROUP
            push.msg.content = "hi back"
            conn.sendall(im_frame(4, bid, ack, ver) + im_frame(5, bid + 1000, push, ver))
        elif cid == 7:   # heartbeat
            conn.sendall(im_frame(7, bid, pb.Heartbeat(), ver))


def im_client(port, n, version=1):
    pb = im_pb2
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    nodelay(s)
    login = pb.LoginRequest(username="alice%d" % n, token="token-%d" % n, platform=pb.LoginRequest.ANDROID)
    login.device["os"] = "android 14"
    login.device["model"] = "Pixel %d" % n
    s.sendall(im_frame(1, n, login, version))
    im_read(s)
    # Sticky: a message and a heartbeat in one write.
    msg = pb.SendRequest(sender_seq="seq-%d" % n)
    msg.msg.to = "bob"
    msg.msg.type = pb.TEXT
    msg.msg.content = "你好 bob"
    msg.msg.extra = '{"font":12}'
    s.sendall(im_frame(3, 100 + n, msg, version) + im_frame(7, 200 + n, pb.Heartbeat(), version))
    im_read(s); im_read(s); im_read(s)
    # Split: the 12-byte header cut after 7 bytes; the body carries a field this .proto
    # does not know (a newer client's field 15 = 42), appended to what protobuf encoded.
    send_split(s, im_frame(3, 300 + n, msg.SerializeToString() + bytes([15 << 3, 42]), version), [7])
    im_read(s); im_read(s)
    if n == 1 and version == 1:
        # An id no dissector line binds (8): its body is decoded without a schema.
        s.sendall(im_frame(8, 400 + n, pb.Person(age=7, username="typing", phone="555")))
    s.close()


def im_clients(port, n):
    im_load_proto()
    if n == 3:
        im_client(port, n, version=2)   # the encrypted connection
    else:
        im_client(port, n)


SAMPLES = {
    "game": (8000, game_server, game_client),
    "svc": (7000, svc_server, svc_client),
    "im": (9000, im_server, im_clients),
}


def record(name):
    port, server_fn, client_fn = SAMPLES[name]
    out = os.path.join(HERE, name + ".pcap")
    dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-s", "0", "-w", out, "tcp port %d" % port],
                            stderr=subprocess.PIPE, text=True)
    try:
        # tcpdump says "listening on lo" once the capture is really running.
        line = dump.stderr.readline()
        if "listening" not in line:
            raise SystemExit("tcpdump did not start: " + line)
        time.sleep(1.0)
        if name == "im":
            im_load_proto()
        server = Server(port, server_fn)
        server.start()
        # Three concurrent clients, started a little apart.
        clients = []
        for n in range(1, 4):
            t = threading.Thread(target=client_fn, args=(port, n))
            t.start()
            clients.append(t)
            time.sleep(0.05)
        for t in clients:
            t.join(TIMEOUT)
        time.sleep(0.3)
        server.stopping = True
        server.join(2)
        time.sleep(0.5)
    finally:
        dump.terminate()
        dump.wait(5)
    print("wrote", out)


if __name__ == "__main__":
    for name in sys.argv[1:] or list(SAMPLES):
        record(name)
