"""What the TLS fixture scripts (make_tls10_fixtures.py, make_tls12_fixtures.py,
make_starttls_fixtures.py) share: TLS peers and sockets on loopback, the certificate, the
tcpdump capture, reading the capture back, and tshark.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import time

HOST = "127.0.0.1"


# ---------------------------------------------------------------- TLS peers and sockets

class BioPeer:
    """An SSLObject driven through memory BIOs over a TCP socket. With CHUNK, what OpenSSL
    wants sent is written in pieces of at most CHUNK bytes, PAUSE seconds apart; without,
    all at once."""

    def __init__(self, ctx, sock, server_side, chunk=None, pause=0):
        self.sock = sock
        self.chunk, self.pause = chunk, pause
        self.inc = ssl.MemoryBIO()
        self.out = ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_side=server_side)

    def flush(self):
        data = self.out.read()
        step = self.chunk or len(data)
        for i in range(0, len(data), step or 1):
            if i:
                time.sleep(self.pause)
            self.sock.sendall(data[i:i + step])

    def pull(self):
        data = self.sock.recv(65536)
        if not data:
            self.inc.write_eof()
            raise ConnectionError("peer closed the TCP connection")
        self.inc.write(data)

    def run(self, call, *args):
        while True:
            try:
                result = call(*args)
                self.flush()
                return result
            except ssl.SSLWantReadError:
                self.flush()
                self.pull()

    def handshake(self):
        self.run(self.obj.do_handshake)

    def write(self, data):
        self.run(self.obj.write, data)

    def read_exactly(self, n):
        got = b""
        while len(got) < n:
            part = self.run(self.obj.read, n - len(got))
            if not part:
                raise ConnectionError("close_notify before the whole message")
            got += part
        return got

    def read_close_notify(self):
        if self.run(self.obj.read, 1) != b"":
            raise ConnectionError("data where close_notify was expected")

    def unwrap(self):
        self.run(self.obj.unwrap)


def ssl_context(server_side, version, cipher=None, certdir=None, keylog=None, dh=False):
    """One protocol version (an ssl.TLSVersion name) and, with CIPHER, one OpenSSL cipher
    string. A server loads CERTDIR's cert.pem and key.pem (and dh.pem with DH); a client
    verifies nothing and writes its key log to KEYLOG."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server_side else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = getattr(ssl.TLSVersion, version)
    ctx.maximum_version = getattr(ssl.TLSVersion, version)
    if cipher:
        ctx.set_ciphers(cipher)
    if server_side:
        ctx.load_cert_chain(os.path.join(certdir, "cert.pem"), os.path.join(certdir, "key.pem"))
        if dh:
            ctx.load_dh_params(os.path.join(certdir, "dh.pem"))
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.keylog_filename = keylog
    return ctx


def listen(port, timeout=20):
    """A socket listening on HOST:PORT for one connection, accept() bounded by TIMEOUT s."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((HOST, port))
    lsock.listen(1)
    lsock.settimeout(timeout)
    return lsock


def accept(lsock):
    """The one connection of LSOCK (which is closed): TCP_NODELAY, 10 s per read."""
    sock, _ = lsock.accept()
    lsock.close()
    sock.settimeout(10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def recv_exactly(sock, n):
    """N bytes from SOCK (a socket or an SSLSocket); stops if it closes before."""
    got = b""
    while len(got) < n:
        part = sock.recv(n - len(got))
        if not part:
            raise RuntimeError("closed before %d bytes" % n)
        got += part
    return got


def tcp_connect(port):
    """A TCP_NODELAY connection to HOST:PORT, 10 s per read."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(10)
    sock.connect((HOST, port))
    return sock


# ---------------------------------------------------------------- certificate and capture

def make_certificate(certdir, cn, dh=False):
    """CERTDIR/cert.pem and key.pem: a self-signed RSA-2048 certificate for CN (SHA-256) by
    `openssl req`; with DH also CERTDIR/dh.pem, the ffdhe2048 group."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "30",
         "-subj", "/CN=" + cn, "-keyout", os.path.join(certdir, "key.pem"),
         "-out", os.path.join(certdir, "cert.pem")],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if dh:
        subprocess.run(
            ["openssl", "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt",
             "dh_param:ffdhe2048", "-out", os.path.join(certdir, "dh.pem")],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextlib.contextmanager
def tcpdump(pcap, filt, command=("tcpdump", "-i", "lo", "-s", "0", "-U", "-Z", "root"),
            wait=10, report=True):
    """Capture into PCAP (`COMMAND -w PCAP FILT`) while the with-block runs: it starts once
    tcpdump says it is listening, and 0.5 s later; 1 s after the block, tcpdump is stopped by
    SIGINT to its PID (SIGKILL if it is still there WAIT s later). With REPORT, what tcpdump
    said is printed."""
    dump = subprocess.Popen(list(command) + ["-w", pcap, filt],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = dump.stderr.readline()          # "tcpdump: listening on lo, ..."
        if "listening" not in line:
            raise SystemExit("tcpdump did not start: " + line)
        time.sleep(0.5)
        yield dump
        time.sleep(1.0)
    finally:
        if dump.poll() is None:
            os.kill(dump.pid, signal.SIGINT)
            try:
                dump.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                os.kill(dump.pid, signal.SIGKILL)
                dump.wait()
    if report:
        print("tcpdump:", dump.stderr.read().strip().replace("\n", "; "))


def record_in_tempdir(outdir, name, cn, capture, dh=False):
    """Make the certificate for CN (make_certificate) in a temporary folder, run
    capture(pcap, certdir, keylog) with the pcap and the key log in that folder, and copy
    them to OUTDIR/NAME.pcap and OUTDIR/NAME.keys; the folder, and so the private key, is
    deleted. Returns (pcap, keys, what capture returned)."""
    pcap = os.path.join(outdir, name + ".pcap")
    keys = os.path.join(outdir, name + ".keys")
    workdir = tempfile.mkdtemp(prefix=name + "-")
    try:
        make_certificate(workdir, cn, dh=dh)
        keylog = os.path.join(workdir, "keys.txt")
        tmp_pcap = os.path.join(workdir, name + ".pcap")
        result = capture(tmp_pcap, workdir, keylog)
        shutil.copyfile(tmp_pcap, pcap)
        shutil.copyfile(keylog, keys)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return pcap, keys, result


# ---------------------------------------------------------------- reading the capture back

def tcp_packets(pcap):
    """(src port, dst port, seq, flags, payload) of every IPv4 TCP packet of a pcap."""
    with open(pcap, "rb") as f:
        data = f.read()
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
              b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}[data[:4]]
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype not in (1, 113):                # Ethernet, Linux cooked
        raise SystemExit("unexpected link type %d" % linktype)
    pos, out = 24, []
    while pos + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[pos + 8:pos + 12])[0]
        frame = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        head = 14 if linktype == 1 else 16
        if frame[head - 2:head] != b"\x08\x00":
            continue
        ip = frame[head:]
        if ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        tcp = ip[ihl:struct.unpack(">H", ip[2:4])[0]]
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        out.append((sport, dport, seq, tcp[13], tcp[(tcp[12] >> 4) * 4:]))
    return out


def client_ports(packets, server_ports):
    """Server port -> client port; stops unless the SYNs went to SERVER_PORTS, in that order."""
    order, ports = [], {}
    for s, d, _, flags, _ in packets:
        if flags & 0x12 == 0x02 and d not in ports:
            ports[d] = s
            order.append(d)
    if order != list(server_ports):
        raise SystemExit("unexpected connections in the capture: %r" % order)
    return ports


def stream_segments(packets, sport, dport, most=None):
    """[(stream offset, payload)] of one direction, in capture order, and the bytes they
    carry; stops at a hole, a retransmission, an RST or (with MOST) a segment over MOST
    bytes."""
    isn, segs, seen = None, [], set()
    for s, d, seq, flags, payload in packets:
        if (s, d) != (sport, dport):
            continue
        if flags & 0x04:
            raise SystemExit("RST from port %d" % sport)
        if flags & 0x02:
            isn = seq + 1
        elif payload:
            off = (seq - isn) % 2**32
            if off in seen:
                raise SystemExit("retransmission from port %d" % sport)
            if most is not None and len(payload) > most:
                raise SystemExit("a segment over %d bytes from port %d" % (most, sport))
            seen.add(off)
            segs.append((off, payload))
    data = b""
    for off, payload in sorted(segs):
        if off != len(data):
            raise SystemExit("gap or overlap from port %d" % sport)
        data += payload
    return segs, data


def server_hello(stream, pos=0):
    """(version, cipher suite, extension types) of the ServerHello in the handshake record(s)
    from stream[pos]; the version is supported_versions' where there is one (TLS 1.3)."""
    hs = b""
    while len(hs) < 4 or len(hs) < 4 + int.from_bytes(hs[1:4], "big"):
        if pos + 5 > len(stream) or stream[pos] != 22:
            raise SystemExit("no ServerHello at offset %d" % pos)
        length = struct.unpack(">H", stream[pos + 3:pos + 5])[0]
        hs += stream[pos + 5:pos + 5 + length]
        pos += 5 + length
    if hs[0] != 2:
        raise SystemExit("no ServerHello")
    body = hs[4:4 + int.from_bytes(hs[1:4], "big")]
    version = struct.unpack(">H", body[0:2])[0]
    p = 34
    p += 1 + body[p]                            # session id
    suite = struct.unpack(">H", body[p:p + 2])[0]
    p += 3                                      # suite, compression method
    exts = []
    if p + 2 <= len(body):
        end = p + 2 + struct.unpack(">H", body[p:p + 2])[0]
        p += 2
        while p + 4 <= end:
            etype, elen = struct.unpack(">HH", body[p:p + 4])
            exts.append(etype)
            if etype == 43:                     # supported_versions
                version = struct.unpack(">H", body[p + 4:p + 6])[0]
            p += 4 + elen
    return version, suite, exts


# ---------------------------------------------------------------- tshark

def tshark(args, timeout=300):
    """tshark's output for ARGS; stops if tshark fails."""
    out = subprocess.run(["tshark"] + args, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit("tshark %s failed: %s" % (" ".join(args), out.stderr))
    return out.stdout


def tshark_fields(args, fields):
    """tshark's `-T fields` output for ARGS, one `-e` per name in FIELDS."""
    cmd = args + ["-T", "fields"]
    for f in fields:
        cmd += ["-e", f]
    return tshark(cmd)


def parse_follow(text, server_port, client_port=None):
    """(client's bytes, server's bytes, the "Node 0:" line or "") of tshark's
    `-z follow,KIND,raw,N` output. Lines without indent are node 0's bytes, lines indented
    by a tab node 1's. Node 0 is whichever peer sent the first packet the tap saw: the client
    for follow,tcp, but for follow,tls on a TLS 1.3 connection the server (its
    NewSessionTicket is the first application-data record), so the directions are told
    apart by the port on the "Node 0:" line; when tshark leaves node 0 unnamed (":0"), by
    node 1's. With CLIENT_PORT, a node 0 that is neither peer is an error."""
    nodes, node0, chunks = {}, "", []
    for line in text.splitlines():
        m = re.match(r"Node (\d): .*:(\d+)$", line)
        if m:
            nodes[int(m.group(1))] = int(m.group(2))
            if m.group(1) == "0":
                node0 = line
            continue
        if len(nodes) < 2 or line.startswith("=") or not line.strip():
            continue
        chunks.append((line.startswith("\t"), bytes.fromhex(line.strip())))
    if nodes.get(0):
        node0_server = nodes[0] == server_port
        if client_port is not None and chunks and nodes[0] not in (server_port, client_port):
            raise SystemExit("follow output is not the connection to port %d: %s"
                             % (server_port, node0))
    else:
        node0_server = nodes.get(1) != server_port
    data = [bytearray(), bytearray()]
    for indented, chunk in chunks:
        data[indented != node0_server] += chunk
    return bytes(data[0]), bytes(data[1]), node0


def tshark_follow(args, kind, stream, server_port, client_port=None):
    """parse_follow of `tshark ARGS -q -z follow,KIND,raw,STREAM`."""
    text = tshark(args + ["-q", "-z", "follow,%s,raw,%d" % (kind, stream)])
    return parse_follow(text, server_port, client_port)
