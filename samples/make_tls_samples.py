#!/usr/bin/env python3
"""Record the TLS samples: real TLS peers (Python's `ssl` module, OpenSSL 3) talking over
loopback while tcpdump writes what crosses `lo`, each peer writing its own NSS key log
(`SSLContext.keylog_filename`). Run as root from the repository root (needs the `openssl`
command to make a throwaway certificate, tshark to check the result, and the `websockets`
package for wss):

    python3 samples/make_tls_samples.py              # all three samples
    python3 samples/make_tls_samples.py tls13        # one of: tls13 tls12 wss

Each sample is three files: NAME.pcap, NAME.keys (the key log: the lines both peers wrote,
which must be the same set, once each) and NAME.messages.json (what the peers wrote, and the
TLS facts of each connection). The certificate is a self-signed RSA-2048 one for
`svc.example` (and `bridge.example`), made by `openssl req` in a temporary folder at record
time; the client verifies it (it is its only trust anchor) and checks the host name. No
private key is kept.

tls13 (port 7000): the svc protocol of make_samples.py ([u32 BE service id][u32 BE body
length][UTF-8 JSON]) over TLS 1.3, one connection per cipher suite, one after the other:
TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256. Python's
`ssl` has no call for TLS 1.3 suites (`set_ciphers` is TLS 1.2 only), so the script calls
OpenSSL's SSL_CTX_set_ciphersuites through ctypes on the context's SSL_CTX (the pointer
right after the PyObject header of the `_ssl._SSLContext`; it is checked by comparing
SSL_CTX_get_options with the context's `options` before use), on both peers: each offers
and accepts one suite only. SNI `svc.example`, ALPN `svc/1`. Per connection: a login and
its answer; two requests in one write (one TLS record holding two svc frames); one request
written in two writes cut after 5 bytes, inside the 8-byte svc header (two TLS records); an
upload of about 40 KB from the client and a list of about 40 KB from the server (each one
SSL_write that OpenSSL cuts into 16 KiB records); an unknown service id answered with an
error; pings. On the AES-128-GCM and ChaCha20 connections the server sends a TLS 1.3
KeyUpdate (update_requested) before one of its answers: Python has no call for it, so the
script calls SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) through ctypes on the SSL* of
the server's socket (the pointer after the PyObject header and the socket weakref of the
`_ssl._SSLSocket`; checked with SSL_get_SSL_CTX against the context's SSL_CTX). OpenSSL
sends the KeyUpdate before the next application data; the client answers with its own
KeyUpdate before its next write. This OpenSSL (3.0.x) also logs the updated secrets as
SERVER_TRAFFIC_SECRET_N / CLIENT_TRAFFIC_SECRET_N lines (the literal N): they are kept in
the key log as the peers wrote them and checked to equal HKDF-Expand-Label(secret_0,
"traffic upd", "", Hash.length). The server sends two NewSessionTickets after the handshake
(OpenSSL's default). Each connection ends with close_notify both ways (client first).

tls12 (port 7000): the same svc scenario (no KeyUpdate: TLS 1.2 has none) over TLS 1.2
(maximum_version TLSv1_2), one connection per suite: ECDHE-RSA-AES128-GCM-SHA256,
ECDHE-RSA-AES256-GCM-SHA384, ECDHE-RSA-CHACHA20-POLY1305, ECDHE-RSA-AES128-SHA256 (CBC,
HMAC-SHA256), ECDHE-RSA-AES256-SHA (CBC, HMAC-SHA1), and a sixth connection with
ECDHE-RSA-AES128-SHA256 again but with encrypt-then-MAC left on. `ssl` does not name
SSL_OP_NO_ENCRYPT_THEN_MAC, but the `options` setter passes any bit to OpenSSL, so the first
five set 0x80000 on both peers: their CBC records are MAC-then-encrypt. Extended master
secret is left as OpenSSL does it (negotiated); session tickets too (a NewSessionTicket
before the server's ChangeCipherSpec). The key log has one CLIENT_RANDOM line a connection.
What was negotiated is read from the capture (the ServerHello's cipher suite and extensions
22 encrypt_then_mac and 23 extended_master_secret, by tshark) and, for EMS, also from
OpenSSL (SSL_get_extms_support); the two must agree.

wss (port 12347): make_ws_samples.py's websocket-deflate scenario (its `scenario`, `client`
and `handler`, imported) over wss:// with permessage-deflate: the module's `connect` and
`serve` are replaced by wrappers that turn ws:// into wss:// and pass TLS contexts (TLS 1.3,
SNI `bridge.example`, no ALPN: websockets offers none; the key log from both peers).

NAME.messages.json: {"protocol", "port", "connections": [{"client": N, "client_port": P,
"server_port": S, "tls": {"version", "suite", "suite_code" (IANA, e.g. "0x1301"), "sni",
"alpn", "client_random" (hex), "ems" and "encrypt_then_mac" (TLS 1.2: true/false, from the
ServerHello), "key_update" (TLS 1.3: null, or {"by": "server", "before_s2c_write": K})},
"c2s": [...], "s2c": [...]}]}, one message a line. svc messages, in the order written:
{"serviceId", "name", "bodyLength" (bytes of UTF-8), "body" (the JSON text: the frame is
[serviceId][bodyLength][body as UTF-8]), "write" (the index, from 0 per direction, of the SSL write that carried it: frames with the same
index went in one write)}; a frame written in pieces also has "cuts" (each piece one more
write). wss messages are those of bridge.messages.json ({"opcode", "payload" hex}).

Before anything is written into samples/, the capture is checked: for every TCP stream,
`tshark -r X -o tls.keylog_file:KEYS -d tcp.port==PORT,tls -q -z follow,tls,raw,N` must give
back, in each direction, exactly the bytes that peer wrote (svc: the concatenated frames;
wss: the HTTP upgrade request and response, then WebSocket frames which the script parses,
unmasks and inflates and compares with the log, and the count of data frames tshark itself
dissects must match). Any difference fails loudly (the recording stays in its temporary folder, and is kept there
with KEEP_TLS_TMP=1 in the environment, to look at). Everything runs on 127.0.0.1, every socket
has a timeout, every thread is joined with a bound, tcpdump is stopped by its own PID.
"""
import asyncio, ctypes, functools, hashlib, hmac, json, os, re, shutil, socket, ssl, struct, subprocess
import sys, tempfile, threading, time, zlib

from capture import Capture
from make_samples import recv_exact, svc_frame

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 10
SVC_PORT = 7000
WSS_PORT = 12347
SVC_NAMES = {1: "Login", 2: "ListItems", 9: "Ping"}

TLS13_SUITES = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]
KEY_UPDATE_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"}
# (suite, encrypt-then-MAC allowed)
TLS12_SUITES = [("ECDHE-RSA-AES128-GCM-SHA256", False), ("ECDHE-RSA-AES256-GCM-SHA384", False),
                ("ECDHE-RSA-CHACHA20-POLY1305", False), ("ECDHE-RSA-AES128-SHA256", False),
                ("ECDHE-RSA-AES256-SHA", False), ("ECDHE-RSA-AES128-SHA256", True)]
IANA = {"TLS_AES_128_GCM_SHA256": 0x1301, "TLS_AES_256_GCM_SHA384": 0x1302, "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
        "ECDHE-RSA-AES128-GCM-SHA256": 0xC02F, "ECDHE-RSA-AES256-GCM-SHA384": 0xC030,
        "ECDHE-RSA-CHACHA20-POLY1305": 0xCCA8, "ECDHE-RSA-AES128-SHA256": 0xC027, "ECDHE-RSA-AES256-SHA": 0xC014}
OP_NO_ENCRYPT_THEN_MAC = 0x00080000     # SSL_OP_NO_ENCRYPT_THEN_MAC (openssl/ssl.h)
SSL_KEY_UPDATE_REQUESTED = 1
SSL_CTRL_GET_EXTMS_SUPPORT = 122

# ---------------------------------------------------------------- OpenSSL through ctypes

LIBSSL = None


def libssl():
    """The libssl the `_ssl` module is linked to (found with ldd), with the calls used here."""
    global LIBSSL
    if LIBSSL is None:
        import _ssl
        out = subprocess.run(["ldd", _ssl.__file__], capture_output=True, text=True).stdout
        m = re.search(r"(libssl\.so\S*) => (\S+)", out)
        lib = ctypes.CDLL(m.group(2) if m else "libssl.so.3")
        P = ctypes.c_void_p
        lib.SSL_CTX_set_ciphersuites.argtypes = [P, ctypes.c_char_p]
        lib.SSL_CTX_get_options.argtypes = [P]
        lib.SSL_CTX_get_options.restype = ctypes.c_uint64
        lib.SSL_get_SSL_CTX.argtypes = [P]
        lib.SSL_get_SSL_CTX.restype = P
        lib.SSL_key_update.argtypes = [P, ctypes.c_int]
        lib.SSL_get_client_random.argtypes = [P, ctypes.c_char_p, ctypes.c_size_t]
        lib.SSL_get_client_random.restype = ctypes.c_size_t
        lib.SSL_ctrl.argtypes = [P, ctypes.c_int, ctypes.c_long, P]
        lib.SSL_ctrl.restype = ctypes.c_long
        LIBSSL = lib
    return LIBSSL


def ssl_ctx_ptr(ctx):
    """SSL_CTX* of an ssl.SSLContext: struct PySSLContext { PyObject_HEAD; SSL_CTX *ctx; ... }."""
    p = ctypes.c_void_p.from_address(id(ctx) + 2 * ctypes.sizeof(ctypes.c_void_p)).value
    if not p or libssl().SSL_CTX_get_options(p) != ctx.options:
        raise SystemExit("the SSL_CTX pointer found is not this context's")
    return p


def ssl_ptr(sslobj, ctx):
    """SSL* of an SSLSocket or SSLObject: struct PySSLSocket { PyObject_HEAD; PyObject *Socket; SSL *ssl; ...}."""
    inner = sslobj._sslobj
    p = ctypes.c_void_p.from_address(id(inner) + 3 * ctypes.sizeof(ctypes.c_void_p)).value
    if not p or libssl().SSL_get_SSL_CTX(p) != ssl_ctx_ptr(ctx):
        raise SystemExit("the SSL pointer found does not belong to this context")
    return p


def set_tls13_suite(ctx, suite):
    if libssl().SSL_CTX_set_ciphersuites(ssl_ctx_ptr(ctx), suite.encode()) != 1:
        raise SystemExit("SSL_CTX_set_ciphersuites refused " + suite)


def client_random(sock, ctx):
    buf = ctypes.create_string_buffer(32)
    if libssl().SSL_get_client_random(ssl_ptr(sock, ctx), buf, 32) != 32:
        raise SystemExit("no client random")
    return buf.raw.hex()


# ---------------------------------------------------------------- certificate and contexts

class Certs:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tls_samples_")
        self.cert, self.key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key,
                        "-out", self.cert, "-days", "2", "-subj", "/CN=svc.example",
                        "-addext", "subjectAltName=DNS:svc.example,DNS:bridge.example"],
                       check=True, capture_output=True, timeout=60)

    def path(self, name):
        return os.path.join(self.dir, name)

    def server(self, keylog, version, suite=None, etm=True, alpn=None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, self.key)
        self._common(ctx, keylog, version, suite, etm, alpn)
        return ctx

    def client(self, keylog, version, suite=None, etm=True, alpn=None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(self.cert)
        self._common(ctx, keylog, version, suite, etm, alpn)
        return ctx

    @staticmethod
    def _common(ctx, keylog, version, suite, etm, alpn):
        ctx.minimum_version = ctx.maximum_version = version
        ctx.keylog_filename = keylog
        if alpn:
            ctx.set_alpn_protocols([alpn])
        if suite and version == ssl.TLSVersion.TLSv1_3:
            set_tls13_suite(ctx, suite)
        elif suite:
            ctx.set_ciphers(suite)
        if not etm:
            ctx.options |= OP_NO_ENCRYPT_THEN_MAC
            if not ctx.options & OP_NO_ENCRYPT_THEN_MAC:
                raise SystemExit("SSL_OP_NO_ENCRYPT_THEN_MAC did not stick")

    def close(self):
        if os.environ.get("KEEP_TLS_TMP"):
            print("kept", self.dir)
            return
        shutil.rmtree(self.dir, ignore_errors=True)


def merge_keylogs(paths, out):
    """Both peers' key logs: the same set of lines (order aside), written once each, in the
    order the first peer (the client) wrote them."""
    sets, first = [], None
    for p in paths:
        lines = [l.rstrip("\n") for l in open(p) if l.strip() and not l.startswith("#")]
        sets.append(set(lines))
        if first is None:
            first = lines
    if any(s != sets[0] for s in sets):
        raise SystemExit("the peers' key logs differ: %s" % [sorted(s ^ sets[0])[:4] for s in sets])
    seen, ordered = set(), []
    for l in first:
        if l not in seen:
            seen.add(l)
            ordered.append(l)
    with open(out, "w") as f:
        f.write("\n".join(ordered) + "\n")
    return ordered


def hkdf_expand_label(secret, label, context, length, hashname):
    full = b"tls13 " + label
    info = struct.pack(">H", length) + bytes([len(full)]) + full + bytes([len(context)]) + context
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(secret, t + info + bytes([i]), hashname).digest()
        out += t
        i += 1
    return out[:length]


def check_updated_secrets(lines, suites):
    """Every *_TRAFFIC_SECRET_N line is HKDF-Expand-Label(*_TRAFFIC_SECRET_0, "traffic upd")."""
    by = {}
    for l in lines:
        label, cr, secret = l.split()
        by.setdefault(cr, {})[label] = bytes.fromhex(secret)
    for cr, secrets in by.items():
        for side in ("CLIENT", "SERVER"):
            n = secrets.get(side + "_TRAFFIC_SECRET_N")
            if n is None:
                continue
            s0 = secrets[side + "_TRAFFIC_SECRET_0"]
            hashname = "sha384" if len(s0) == 48 else "sha256"
            if hkdf_expand_label(s0, b"traffic upd", b"", len(s0), hashname) != n:
                raise SystemExit("%s_TRAFFIC_SECRET_N of %s is not the updated secret" % (side, cr))


# ---------------------------------------------------------------- svc over TLS

class Peer:
    """One side of one connection: writes logged per SSL write."""

    def __init__(self, sock, log):
        self.sock, self.log, self.writes = sock, log, 0

    def _entry(self, frame, write, cuts=None):
        service, length = struct.unpack(">II", frame[:8])
        e = {"serviceId": service, "name": SVC_NAMES.get(service), "bodyLength": length, "body": frame[8:].decode(),
             "write": write}
        if cuts:
            e["cuts"] = cuts
        self.log.append(e)

    def send(self, *frames):
        for f in frames:
            self._entry(f, self.writes)
        self.sock.sendall(b"".join(frames))
        self.writes += 1

    def send_split(self, frame, cuts):
        self._entry(frame, self.writes, cuts)
        last = 0
        for c in list(cuts) + [len(frame)]:
            self.sock.sendall(frame[last:c])
            self.writes += 1
            last = c
            time.sleep(0.02)


def svc_read(s):
    head = s.recv(1)
    if not head:
        return None, None          # close_notify
    service, length = struct.unpack(">II", head + recv_exact(s, 7))
    return service, json.loads(recv_exact(s, length))


def catalog(count, tag):
    return {"code": 0, "items": [{"id": i, "name": "%s item %d" % (tag, i), "price": round(9.5 * i, 2),
                                  "tags": ["新品", "sale"] if i % 7 == 0 else []} for i in range(count)]}


def svc_server_conn(tls, conn_log, state):
    """The svc service: answers each request in its own write; before its answer to the
    large upload, on the connections that do it, a KeyUpdate (update_requested)."""
    p = Peer(tls, conn_log["s2c"])
    while True:
        service, req = svc_read(tls)
        if service is None:
            break
        if service == 1:
            p.send(svc_frame(1, {"code": 0, "user": req.get("user"), "token": "t-%s" % req.get("user")}))
        elif service == 2:
            p.send(svc_frame(2, catalog(req.get("count", 1), req.get("filter", "all"))))
        elif service == 4:
            if state.get("key_update"):
                if libssl().SSL_key_update(ssl_ptr(tls, state["ctx"]), SSL_KEY_UPDATE_REQUESTED) != 1:
                    raise SystemExit("SSL_key_update failed")
                conn_log["tls"]["key_update"] = {"by": "server", "before_s2c_write": p.writes}
            p.send(svc_frame(4, {"code": 0, "received": len(req.get("blob", "")), "sha1": hashlib.sha1(
                req.get("blob", "").encode()).hexdigest()}))
        elif service == 9:
            p.send(svc_frame(9, {"pong": True, "seq": req.get("seq")}))
        else:
            p.send(svc_frame(service, {"code": 404, "error": "unknown service"}))
    tls.unwrap()                   # our close_notify, after the client's


def svc_client_conn(tls, conn_log, n):
    p = Peer(tls, conn_log["c2s"])
    p.send(svc_frame(1, {"user": "user%d" % n, "password": "p\u00e4ss\"word", "device": {"os": "ios", "ver": 17}}))
    svc_read(tls)
    p.send(svc_frame(9, {"ping": True, "seq": 1, "note": None}))
    svc_read(tls)
    # Two requests in one write: one TLS record holds both frames.
    p.send(svc_frame(2, {"count": 2}), svc_frame(9, {"ping": True, "seq": 2, "note": "sticky"}))
    svc_read(tls)
    svc_read(tls)
    # One request in two writes (two TLS records), cut inside the 8-byte header.
    p.send_split(svc_frame(2, {"count": 3, "filter": "新品"}), [5])
    svc_read(tls)
    # About 40 KB each way: one SSL_write each, cut by OpenSSL into 16 KiB records.
    blob = "".join(chr(0x61 + (i * 7 + n) % 26) for i in range(40000))
    p.send(svc_frame(4, {"upload": "avatar.bin", "blob": blob}))
    svc_read(tls)                  # after the server's KeyUpdate on some connections
    p.send(svc_frame(2, {"count": 520, "filter": "all"}))
    svc_read(tls)
    p.send(svc_frame(42, {"what": "unknown"}))
    svc_read(tls)
    for seq in (3, 4):
        p.send(svc_frame(9, {"ping": True, "seq": seq, "note": "after key update"}))
        svc_read(tls)
    tls.unwrap()                   # close_notify, then wait for the server's


def run_connection(certs, n, version, suite, etm, alpn, sni, keylogs):
    """One client connection to a one-shot server thread, both with their own key logs."""
    sctx = certs.server(keylogs[1], version, suite, etm, alpn)
    cctx = certs.client(keylogs[0], version, suite, etm, alpn)
    seen_sni = []
    sctx.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
    conn_log = {"client": n, "client_port": None, "server_port": SVC_PORT, "tls": {}, "c2s": [], "s2c": []}
    state = {"ctx": sctx, "key_update": version == ssl.TLSVersion.TLSv1_3 and suite in KEY_UPDATE_SUITES}
    errors = []
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", SVC_PORT))
    lsock.listen(1)
    lsock.settimeout(TIMEOUT)

    def serve():
        try:
            conn, _ = lsock.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(TIMEOUT)
            with sctx.wrap_socket(conn, server_side=True) as tls:
                state["server_facts"] = (tls.version(), tls.cipher()[0], tls.selected_alpn_protocol())
                svc_server_conn(tls, conn_log, state)
        except Exception as e:
            errors.append("server %d: %r" % (n, e))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        raw = socket.create_connection(("127.0.0.1", SVC_PORT), timeout=TIMEOUT)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with cctx.wrap_socket(raw, server_hostname=sni) as tls:
            conn_log["client_port"] = tls.getsockname()[1]
            facts = {"version": tls.version(), "suite": tls.cipher()[0], "suite_code": "0x%04X" % IANA[tls.cipher()[0]],
                     "sni": sni, "alpn": tls.selected_alpn_protocol(), "client_random": client_random(tls, cctx)}
            if version == ssl.TLSVersion.TLSv1_2:
                facts["ems_openssl"] = bool(libssl().SSL_ctrl(ssl_ptr(tls, cctx), SSL_CTRL_GET_EXTMS_SUPPORT, 0, None))
                facts["etm_offered_by_client"] = etm
            else:
                facts["key_update"] = None
            conn_log["tls"].update(facts)
            svc_client_conn(tls, conn_log, n)
    except Exception as e:
        errors.append("client %d: %r" % (n, e))
    t.join(2 * TIMEOUT)
    lsock.close()
    if t.is_alive():
        errors.append("server %d still running" % n)
    if errors:
        raise SystemExit("recording failed: " + "; ".join(errors))
    if seen_sni != [sni]:
        raise SystemExit("the server saw SNI %r" % seen_sni)
    if state["server_facts"] != (facts["version"], facts["suite"], facts["alpn"]):
        raise SystemExit("the peers disagree: %r %r" % (state["server_facts"], facts))
    if suite and facts["suite"] != suite:
        raise SystemExit("negotiated %s, not %s" % (facts["suite"], suite))
    return conn_log


# ---------------------------------------------------------------- checking with tshark

def tshark_follow(pcap, keys, port, stream, out_of_order=False):
    """The decrypted bytes of one TCP stream, per direction, as tshark's follow,tls,raw gives them:
    {"c2s": bytes, "s2c": bytes}. `out_of_order`: have tshark reassemble segments that came out
    of order (scripts/make_tls_fixtures.py's reordered captures need it)."""
    extra = ["-o", "tcp.reassemble_out_of_order:TRUE"] if out_of_order else []
    out = subprocess.run(["tshark", "-r", pcap, "-o", "tls.keylog_file:" + keys] + extra + ["-d", "tcp.port==%d,tls" % port,
                          "-q", "-z", "follow,tls,raw,%d" % stream], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit("tshark failed: " + out.stderr)
    nodes, chunks = {}, []
    for line in out.stdout.splitlines():
        m = re.match(r"Node (\d): (.*)$", line)
        if m:
            p = m.group(2).rsplit(":", 1)[-1]
            nodes[int(m.group(1))] = int(p) if p.isdigit() and p != "0" else None
            continue
        if len(nodes) < 2 or line.startswith("=") or not line.strip():
            continue
        chunks.append((line.startswith("\t"), bytes.fromhex(line.strip())))
    # Lines not indented come from node 0, indented ones from node 1. tshark 4.0 leaves a node of
    # a TLS stream unnamed (":0") at times, so the other node's port decides.
    if nodes.get(0) is not None:
        server_indented = nodes[0] != port
    elif nodes.get(1) is not None:
        server_indented = nodes[1] == port
    elif not chunks:
        server_indented = True
    else:
        raise SystemExit("tshark names neither node of the stream")
    data = {"c2s": bytearray(), "s2c": bytearray()}
    for indented, chunk in chunks:
        data["s2c" if indented == server_indented else "c2s"] += chunk
    return data


def tcp_streams(pcap):
    out = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport",
                          "-e", "tcp.dstport", "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    return {int(l.split()[1]): int(l.split()[0]) for l in out.splitlines() if l.strip()}   # client port -> stream


def server_hello_facts(pcap, port):
    """Per client port: the ServerHello's version, suite and extension types, the ClientHello's random."""
    fields = ["tcp.dstport", "tls.handshake.type", "tls.handshake.ciphersuite", "tls.handshake.extension.type",
              "tls.handshake.random", "tls.handshake.extensions_server_name", "tls.handshake.extensions_alpn_str"]
    out = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,tls" % port, "-T", "fields", "-E", "separator=|"]
                         + sum((["-e", f] for f in fields), []) + ["-Y", "tls.handshake.type == 1 || tls.handshake.type == 2"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    facts = {}
    for line in out.splitlines():
        dport, types, suites, exts, rnd, sni, alpn = line.split("|")
        types = types.split(",")
        if "1" in types:           # ClientHello, client -> server
            facts.setdefault("c", []).append({"random": rnd.split(",")[0], "sni": sni, "alpn": alpn})
        if "2" in types:           # ServerHello, to the client port
            facts[int(dport)] = {"suite": int(suites.split(",")[0], 16) if "," in suites else int(suites, 16),
                                 "exts": {int(x) for x in exts.split(",") if x}}
    return facts


def tls_events(pcap, keys, port):
    """Per TCP stream, in order: ("s2c" or "c2s", what) for NewSessionTicket, KeyUpdate (with its
    request_update) and alerts, as tshark decrypts them."""
    out = subprocess.run(["tshark", "-r", pcap, "-o", "tls.keylog_file:" + keys, "-d", "tcp.port==%d,tls" % port,
                          "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tls.handshake.type",
                          "-e", "tls.handshake.key_update.request_update", "-e", "tls.alert_message.desc",
                          "-Y", "tls.handshake.type == 4 || tls.handshake.type == 24 || tls.alert_message"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    events = {}
    for line in out.splitlines():
        stream, sport, types, upd, alert = line.split("\t")
        d = "s2c" if int(sport) == port else "c2s"
        ev = events.setdefault(int(stream), [])
        for t in types.split(","):
            if t == "4":
                ev.append((d, "NewSessionTicket"))
            elif t == "24":
                ev.append((d, "KeyUpdate(request_update=%s)" % upd))
        if alert:
            ev.append((d, "alert %s" % alert))
    return events


def frame_of(m):
    body = m["body"].encode()
    if len(body) != m["bodyLength"]:
        raise SystemExit("logged body length differs")
    return struct.pack(">II", m["serviceId"], len(body)) + body


def check_svc(pcap, keys, log):
    streams = tcp_streams(pcap)
    hello = server_hello_facts(pcap, SVC_PORT)
    events = tls_events(pcap, keys, SVC_PORT)
    randoms = {h["random"] for h in hello.get("c", [])}
    for c in log["connections"]:
        cp = c["client_port"]
        stream = streams[cp]
        data = tshark_follow(pcap, keys, SVC_PORT, stream)
        for d in ("c2s", "s2c"):
            want = b"".join(frame_of(m) for m in c[d])
            if bytes(data[d]) != want:
                raise SystemExit("%s stream %d %s: tshark decrypted %d bytes, the peer wrote %d (%s)" % (
                    pcap, stream, d, len(data[d]), len(want), "prefix ok" if want.startswith(bytes(data[d])) else "differ"))
        t = c["tls"]
        ev = events.get(stream, [])
        if ev[-2:] != [("c2s", "alert 0"), ("s2c", "alert 0")]:
            raise SystemExit("stream %d does not end with close_notify both ways: %r" % (stream, ev))
        if not any(e == ("s2c", "NewSessionTicket") for e in ev):
            raise SystemExit("stream %d has no NewSessionTicket" % stream)
        updates = [e for e in ev if e[1].startswith("KeyUpdate")]
        want = [("s2c", "KeyUpdate(request_update=1)"), ("c2s", "KeyUpdate(request_update=0)")]
        if updates != (want if t.get("key_update") else []):
            raise SystemExit("stream %d: KeyUpdates %r" % (stream, updates))
        sh = hello[cp]
        if sh["suite"] != int(t["suite_code"], 16):
            raise SystemExit("ServerHello suite 0x%04X, peers said %s" % (sh["suite"], t["suite_code"]))
        if t["client_random"] not in randoms:
            raise SystemExit("client random %s not in any ClientHello" % t["client_random"])
        if t["version"] == "TLSv1.2":
            t["ems"] = 23 in sh["exts"]
            t["encrypt_then_mac"] = 22 in sh["exts"]
            if t.pop("ems_openssl") != t["ems"]:
                raise SystemExit("OpenSSL and the ServerHello disagree on extended master secret")
            t.pop("etm_offered_by_client")
        print("  stream %d (client port %d) %s %s: %d + %d bytes decrypted as written; %s%s" % (
            stream, cp, t["version"], t["suite"], sum(len(frame_of(m)) for m in c["c2s"]),
            sum(len(frame_of(m)) for m in c["s2c"]), ", ".join("%s %s" % e for e in ev),
            "".join(", %s=%s" % (k, t[k]) for k in ("ems", "encrypt_then_mac") if k in t)))


# ---------------------------------------------------------------- the svc samples

def dump(log):
    """The log as JSON with one message a line."""
    line = lambda o: json.dumps(o, ensure_ascii=False, separators=(",", ":"))
    out = ['{"protocol":%s,"port":%d,"connections":[' % (line(log["protocol"]), log["port"])]
    for ci, c in enumerate(log["connections"]):
        out.append(' {"client":%d,"client_port":%d,"server_port":%d,' % (c["client"], c["client_port"], c["server_port"]))
        out.append('  "tls":%s,' % line(c["tls"]))
        for d in ("c2s", "s2c"):
            out.append('  "%s":[' % d)
            out.append(",\n".join("   " + line(m) for m in c[d]))
            out.append("  ]" + ("," if d == "c2s" else ""))
        out.append(" }" + ("," if ci < len(log["connections"]) - 1 else ""))
    out.append("]}")
    return "\n".join(out) + "\n"


def record_svc(name):
    certs = Certs()
    try:
        pcap, keylogs = certs.path(name + ".pcap"), (certs.path("client.keys"), certs.path("server.keys"))
        keys = certs.path(name + ".keys")
        if name == "tls13":
            plan = [(s, True) for s in TLS13_SUITES]
            version = ssl.TLSVersion.TLSv1_3
        else:
            plan = TLS12_SUITES
            version = ssl.TLSVersion.TLSv1_2
        conns = []
        with Capture(pcap, SVC_PORT):
            for n, (suite, etm) in enumerate(plan, 1):
                conns.append(run_connection(certs, n, version, suite, etm, "svc/1", "svc.example", keylogs))
                time.sleep(0.2)
        lines = merge_keylogs(keylogs, keys)
        check_updated_secrets(lines, plan)
        log = {"protocol": "svc over " + ("TLS 1.3" if name == "tls13" else "TLS 1.2"), "port": SVC_PORT,
               "connections": conns}
        print("checking %s with tshark" % name)
        check_svc(pcap, keys, log)
        install(certs, name, dump(log))
    finally:
        certs.close()


def install(certs, name, messages_json):
    size = os.path.getsize(certs.path(name + ".pcap"))
    if size > 1_000_000:
        raise SystemExit("%s.pcap is %d bytes" % (name, size))
    for ext in ("pcap", "keys"):
        shutil.copyfile(certs.path(name + "." + ext), os.path.join(HERE, name + "." + ext))
    with open(os.path.join(HERE, name + ".messages.json"), "w") as f:
        f.write(messages_json)
    print("wrote samples/%s.pcap (%d bytes), .keys, .messages.json" % (name, size))


# ---------------------------------------------------------------- wss

def record_wss():
    import make_ws_samples as ws
    certs = Certs()
    try:
        pcap, keylogs = certs.path("wss.pcap"), (certs.path("client.keys"), certs.path("server.keys"))
        keys = certs.path("wss.keys")
        v13 = ssl.TLSVersion.TLSv1_3
        sctx = certs.server(keylogs[1], v13)
        cctx = certs.client(keylogs[0], v13)
        seen_sni = []
        sctx.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
        facts = {}
        plain_connect, plain_serve = ws.connect, ws.serve

        def tls_connect(uri, **kw):
            return plain_connect(uri.replace("ws://", "wss://", 1), ssl=cctx, server_hostname="bridge.example", **kw)

        async def logged_handler(conn):
            obj = conn.transport.get_extra_info("ssl_object")
            facts.update(version=obj.version(), suite=obj.cipher()[0], alpn=obj.selected_alpn_protocol(),
                         client_port=conn.remote_address[1])
            await ws.handler(conn)

        def tls_serve(handler, *a, **kw):
            return plain_serve(logged_handler, *a, ssl=sctx, **kw)

        ws.connect, ws.serve = tls_connect, tls_serve
        ws.LOG["c2s"].clear()
        ws.LOG["s2c"].clear()
        try:
            with Capture(pcap, WSS_PORT):
                asyncio.run(ws.scenario(WSS_PORT, "deflate"))
        finally:
            ws.connect, ws.serve = plain_connect, plain_serve
        lines = merge_keylogs(keylogs, keys)
        if seen_sni != ["bridge.example"]:
            raise SystemExit("the server saw SNI %r" % seen_sni)
        hello = server_hello_facts(pcap, WSS_PORT)
        ch = hello["c"]
        if len(ch) != 1:
            raise SystemExit("expected one ClientHello")
        cp = facts["client_port"]
        conn = {"client": 1, "client_port": cp, "server_port": WSS_PORT,
                "tls": {"version": facts["version"], "suite": facts["suite"], "suite_code": "0x%04X" % IANA[facts["suite"]],
                        "sni": "bridge.example", "alpn": facts["alpn"], "client_random": ch[0]["random"], "key_update": None},
                "c2s": list(ws.LOG["c2s"]), "s2c": list(ws.LOG["s2c"])}
        if hello[cp]["suite"] != IANA[facts["suite"]]:
            raise SystemExit("ServerHello suite differs from the peers'")
        if not any(ch[0]["random"] in l for l in lines):
            raise SystemExit("the ClientHello's random is not in the key log")
        print("checking wss with tshark")
        check_wss(pcap, keys, conn)
        log = {"protocol": "bridge over wss (permessage-deflate)", "port": WSS_PORT, "connections": [conn]}
        install(certs, "wss", dump_ws(log))
    finally:
        certs.close()


def ws_messages(stream, masked):
    """WebSocket frames of one direction's bytes: data messages (fragments joined, permessage-deflate
    undone with context takeover) as {"opcode", "payload"}, and the count of data frames."""
    inflater = zlib.decompressobj(-15)
    msgs, frames, i, cur = [], 0, 0, None
    while i < len(stream):
        b0, b1 = stream[i], stream[i + 1]
        i += 2
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", stream[i:i + 2])[0]
            i += 2
        elif n == 127:
            n = struct.unpack(">Q", stream[i:i + 8])[0]
            i += 8
        if b1 & 0x80:
            key = stream[i:i + 4]
            i += 4
        elif masked:
            raise SystemExit("an unmasked client frame")
        payload = bytes(stream[i:i + n])
        i += n
        if b1 & 0x80:
            payload = bytes(x ^ key[j % 4] for j, x in enumerate(payload))
        op, fin = b0 & 0x0F, b0 & 0x80
        if op in (0, 1, 2):
            frames += 1
            if op:
                cur = {"opcode": "text" if op == 1 else "binary", "rsv1": bool(b0 & 0x40), "data": b""}
            cur["data"] += payload
            if fin:
                data = cur["data"]
                if cur["rsv1"]:
                    data = inflater.decompress(data + b"\x00\x00\xff\xff")
                msgs.append({"opcode": cur["opcode"], "payload": data.hex()})
                cur = None
    if i != len(stream):
        raise SystemExit("a WebSocket frame runs past the end of the stream")
    return msgs, frames


def check_wss(pcap, keys, conn):
    streams = tcp_streams(pcap)
    stream = streams[conn["client_port"]]
    data = tshark_follow(pcap, keys, WSS_PORT, stream)
    tallies = {}
    for d in ("c2s", "s2c"):
        raw = bytes(data[d])
        end = raw.find(b"\r\n\r\n")
        head = raw[:end].decode()
        if d == "c2s" and not head.startswith("GET /service HTTP/1.1"):
            raise SystemExit("the decrypted stream does not start with the upgrade request: %r" % head[:40])
        if d == "s2c" and not head.startswith("HTTP/1.1 101"):
            raise SystemExit("the decrypted stream does not start with 101: %r" % head[:40])
        if "permessage-deflate" not in head:
            raise SystemExit("permessage-deflate not in the %s handshake" % d)
        msgs, frames = ws_messages(raw[end + 4:], d == "c2s")
        if msgs != conn[d]:
            raise SystemExit("wss %s: the decrypted WebSocket messages differ from what the peer sent" % d)
        tallies[d] = frames
    # tshark's own dissection: the upgrade request, and as many data frames each way.
    out = subprocess.run(["tshark", "-r", pcap, "-o", "tls.keylog_file:" + keys, "-d", "tcp.port==%d,tls" % WSS_PORT,
                          "-d", "tls.port==%d,http" % WSS_PORT, "-T", "fields", "-e", "tcp.srcport", "-e",
                          "http.request.uri", "-e", "websocket.opcode"], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    uris, counts = [], {"c2s": 0, "s2c": 0}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[1]:
            uris.append(parts[1])
        d = "c2s" if int(parts[0]) != WSS_PORT else "s2c"
        counts[d] += sum(1 for op in parts[2].split(",") if op in ("0", "1", "2"))
    if uris != ["/service"] or counts != tallies:
        raise SystemExit("tshark: upgrade %r, data frames %r; the stream holds %r" % (uris, counts, tallies))
    print("  stream %d: upgrade GET /service decrypted; %d/%d messages, %r data frames, as sent" % (
        stream, len(conn["c2s"]), len(conn["s2c"]), tallies))


def dump_ws(log):
    line = lambda o: json.dumps(o, ensure_ascii=False, separators=(",", ":"))
    c = log["connections"][0]
    out = ['{"protocol":%s,"port":%d,"connections":[' % (line(log["protocol"]), log["port"]),
           ' {"client":1,"client_port":%d,"server_port":%d,' % (c["client_port"], c["server_port"]),
           '  "tls":%s,' % line(c["tls"])]
    for d in ("c2s", "s2c"):
        out.append('  "%s":[' % d)
        out.append(",\n".join("   " + line(m) for m in c[d]))
        out.append("  ]" + ("," if d == "c2s" else ""))
    out.append(" }]}")
    return "\n".join(out) + "\n"


SAMPLES = {"tls13": lambda: record_svc("tls13"), "tls12": lambda: record_svc("tls12"), "wss": record_wss}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(SAMPLES):
        SAMPLES[name]()
