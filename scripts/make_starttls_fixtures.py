#!/usr/bin/env python3
"""Record real STARTTLS connections over loopback: starttls.pcap, starttls.keys and
starttls.expected.json.

Usage (as root, from the repository root; needs the `openssl`, `tcpdump` and `tshark`
commands):

    python3 scripts/make_starttls_fixtures.py [OUTPUT_FOLDER]

OUTPUT_FOLDER defaults to Tests/FramedumpCoreTests/Fixtures (relative to the current folder).

What it records. Four TCP connections on 127.0.0.1, one after the other (so tcp.stream 0..3
in tshark), each to its own server port. Every one starts in plaintext and then switches to
TLS on the same TCP connection:

    port  stream  what                                   TLS      cipher suite
    7620  0       SMTP, STARTTLS                          1.2      TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    7621  1       IMAP, STARTTLS                          1.3      TLS_AES_256_GCM_SHA384 (OpenSSL's pick)
    7622  2       PostgreSQL-shaped SSLRequest, 'S'       1.2      TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
    7623  3       SSLRequest + ClientHello in ONE segment 1.2      TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384

7620. The client is Python's standard smtplib.SMTP (local_hostname "client.example"):
ehlo(), starttls(context=ctx), ehlo(), sendmail() of a 3000+ byte message, quit(). The
server is a small SMTP server in this script (a thread, plain sockets): a 220 greeting, an
EHLO answer listing STARTTLS, "220 Ready to start TLS" to STARTTLS, after which it runs
SSLContext.wrap_socket(server_side=True) on the same socket; then EHLO (without STARTTLS),
MAIL, RCPT, DATA up to the "." line, and QUIT ("221", then the server closes). smtplib
closes the TLS socket without close_notify, and so does the server: this connection ends
with FINs only, no close_notify either way.

7621. The client is Python's standard imaplib.IMAP4: (greeting, CAPABILITY), starttls(
ssl_context=ctx), (CAPABILITY again, inside TLS), login, select, logout. The server is a
small IMAP server in this script (a thread): capabilities include STARTTLS, it answers
"OK Begin TLS negotiation now" and then wraps the socket. imaplib's command tags start
with a random prefix; the script seeds Python's `random` so they are the same on every
run. TLS 1.3 is pinned on both sides; the suite is OpenSSL's choice (Python cannot set
TLS 1.3 suites). The server sends OpenSSL's two NewSessionTickets. As with smtplib,
imaplib closes without close_notify; the server closes after the LOGOUT answer; FINs only.

7622. A "binary SSLRequest" exchange shaped like PostgreSQL's: the client sends the 8-byte
SSLRequest (Int32 length 8, Int32 code 80877103: 00000008 04d2162f), the server reads
exactly 8 bytes and answers the single byte "S", then both run TLS with
SSLContext.wrap_socket on the socket. Inside TLS the client sends three length-prefixed
messages (4-byte big-endian length that counts itself, then ASCII text; the second is
3000+ bytes) and the server answers each with one such message. Then the client sends
close_notify (unwrap), the server answers with its close_notify, and both close (FIN).

7623. Like 7622, but as a MySQL client may coalesce its SSL request packet and the
ClientHello: the client drives OpenSSL through memory BIOs (ssl.MemoryBIO + SSLObject),
takes the ClientHello from the first do_handshake() attempt and sends SSLRequest +
ClientHello with ONE sendall() on a TCP_NODELAY socket, so both are in one TCP segment
(the script checks that in the capture). The server reads until it has the 8 bytes,
feeds what it read beyond them into its own memory BIO and continues the handshake from
there. The server sends no "S". Messages and close_notify as on 7622.

Both peers of 7620, 7622 and 7623 pin one version and one suite (minimum_version =
maximum_version, set_ciphers). The certificate is a self-signed RSA-2048 one
(CN=starttls.example, SHA-256) made by `openssl req` in a temporary folder at run time; the
folder, and so the private key, is deleted afterwards. The clients do not verify it. The
servers are threads of this script, each serving exactly one connection: every socket has
a timeout (20 s to accept, 10 s per read), so each thread stops by itself; the script
waits at most 30 s for each and fails if one is still running. tcpdump
(`tcpdump -i lo -s 0 -U -Z root -w starttls.pcap 'tcp portrange 7620-7629'`) is the only
process started; it is stopped by SIGINT to its PID (SIGKILL to that PID if it lingers).

starttls.keys is the NSS key log as the clients wrote it (SSLContext.keylog_filename, one
file for all four client contexts; the servers write none): a comment line, then
CLIENT_RANDOM lines for the three TLS 1.2 connections and the five TLS 1.3 secret lines
(CLIENT/SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT/SERVER_TRAFFIC_SECRET_0, EXPORTER_SECRET)
for 7621.

The bytes in starttls.expected.json are what the servers read and wrote, recorded by the
servers themselves (a TCP peer receives exactly what the other sent):
{"connections": [...]}, each with "server_port", "tcp_stream", "protocol", "tls_version"
("TLS 1.2"/"TLS 1.3"), "suite" (IANA name), "suite_code", "plaintext_c2s_hex" /
"plaintext_s2c_hex" (the bytes each side sent before TLS), "tls_c2s_hex" / "tls_s2c_hex"
(the application bytes inside TLS each way, concatenated), "clienthello_offset" (the c2s
TCP stream offset where the ClientHello record starts: the plaintext length, 8 on 7622 and
7623) and "serverhello_offset" (the s2c stream offset of the server's first TLS record: the
plaintext length, 1 on 7622 for the "S", 0 on 7623), and "close_notify" (whether both
sides sent one).

How it was checked (the script runs all of it and stops on any difference):
  * its own pcap reader reassembles each TCP stream (no gaps, no retransmissions, no RST)
    and checks: the plaintext prefixes; that a TLS handshake record (0x16 0x03) starts at
    each offset; the ServerHello's version (supported_versions for 1.3) and suite against
    the table and against what Python reported; on 7623 that the first c2s data segment
    holds exactly SSLRequest + the whole ClientHello record.
  * `tshark -r starttls.pcap -q -z follow,tcp,raw,N`: each way, the first
    clienthello_offset / serverhello_offset bytes equal the plaintext, and the rest starts
    with a TLS record header.
  * `tshark -r starttls.pcap -o tls.keylog_file:starttls.keys -d tcp.port==P,DISSECTOR
    -q -z follow,tls,raw,N`, compared with tls_c2s_hex / tls_s2c_hex. What tshark 4.0
    does with each connection (as this script prints it):
      7620 `-d tcp.port==7620,smtp`: the SMTP dissector sees STARTTLS/220 and hands the
        rest to TLS; everything is decrypted (4455 c2s / 193 s2c bytes match).
      7621 `-d tcp.port==7621,imap`: the same for IMAP; everything is decrypted (83 / 372
        bytes match). In follow,tls tshark prints the SERVER as "Node 0" here (the first
        packet its tls tap reports is the server's, not the client's), so the script maps the
        two directions by the port on the "Node 0:" line, not by their order.
      7622 `-d tcp.port==7622,pgsql`: tshark's PostgreSQL dissector recognises the
        SSLRequest and the "S" and hands the rest to TLS; everything is decrypted (3571 /
        105 bytes match). With `-d tcp.port==7622,tls` instead nothing is decrypted: the
        SSLRequest is "Continuation Data", the "S" is held for reassembly and the server's
        records are then misaligned by that byte, so tshark never sees the ServerHello
        (it does see the ClientHello, ClientKeyExchange and NewSessionTicket).
      7623 no dissector fits, and tshark decrypts NOTHING of it (reported, not an error):
        with `-d tcp.port==7623,tls` the first segment (SSLRequest + ClientHello) is
        "Continuation Data", so the ClientHello, and with it the client random that keys
        the key log, is missed; the server's records are parsed (ServerHello, Certificate,
        ...) but stay encrypted. With `pgsql` the dissector sees the SSLRequest but no "S",
        so it never switches to TLS; with `mysql` the first segment is a malformed MySQL
        request. follow,tls gives no bytes in all three cases.
"""

import json
import os
import random
import smtplib
import imaplib
import ssl
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_fixture_support import (HOST, BioPeer, accept, client_ports, listen,  # noqa: E402
                                 record_in_tempdir, recv_exactly, server_hello, ssl_context,
                                 stream_segments, tcp_connect, tcp_packets, tcpdump, tshark_fields,
                                 tshark_follow)

SSL_REQUEST = struct.pack(">II", 8, 80877103)      # 00000008 04d2162f

SUITES = {
    0xC02F: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    0xC030: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    0x1301: "TLS_AES_128_GCM_SHA256",
    0x1302: "TLS_AES_256_GCM_SHA384",
    0x1303: "TLS_CHACHA20_POLY1305_SHA256",
}
OPENSSL_NAMES = {
    "ECDHE-RSA-AES128-GCM-SHA256": 0xC02F,
    "ECDHE-RSA-AES256-GCM-SHA384": 0xC030,
    "TLS_AES_128_GCM_SHA256": 0x1301,
    "TLS_AES_256_GCM_SHA384": 0x1302,
    "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
}

# port, protocol, version, OpenSSL cipher string (None: TLS 1.3, not settable),
# tshark -d dissectors tried: (name, must follow,tls give the application bytes)
CONNECTIONS = [
    (7620, "smtp", "TLSv1_2", "ECDHE-RSA-AES128-GCM-SHA256", [("smtp", True)]),
    (7621, "imap", "TLSv1_3", None, [("imap", True)]),
    (7622, "sslrequest", "TLSv1_2", "ECDHE-RSA-AES256-GCM-SHA384",
     [("pgsql", True), ("tls", False)]),
    (7623, "sslrequest-coalesced", "TLSv1_2", "ECDHE-RSA-AES256-GCM-SHA384",
     [("tls", False), ("pgsql", False), ("mysql", False)]),
]
VERSION_NAMES = {"TLSv1_2": "TLS 1.2", "TLSv1_3": "TLS 1.3"}
VERSION_CODES = {"TLS 1.2": 0x0303, "TLS 1.3": 0x0304}


# ---------------------------------------------------------------- what the peers say

def smtp_message():
    lines = ["From: alice@client.example", "To: bob@mail.example",
             "Subject: framedump STARTTLS fixture", "Message-ID: <starttls-7620@client.example>",
             ""]
    lines += ["line %03d of the mail body sent over STARTTLS on port 7620, "
              "the quick brown fox jumps over the lazy dog" % i for i in range(1, 41)]
    lines += [".a line starting with a dot, to be dot-stuffed", "bye"]
    msg = ("\r\n".join(lines) + "\r\n").encode("ascii")
    assert len(msg) > 3000
    return msg


def frame(text):
    data = text.encode("ascii")
    return struct.pack(">I", len(data) + 4) + data


def sslrequest_messages(port):
    long_text = "".join("row %03d of the long client message on port %d: the quick brown fox\n"
                        % (i, port) for i in range(1, 51))
    client = [frame("client %d: hello over TLS after the SSLRequest\n" % port),
              frame("client %d long message:\n%s" % (port, long_text)),
              frame("client %d: that is all, goodbye\n" % port)]
    server = [frame("server %d: hello client\n" % port),
              frame("server %d: got the long message, %d bytes\n" % (port, len(client[1]))),
              frame("server %d: goodbye\n" % port)]
    assert len(client[1]) > 3000
    return client, server


# ---------------------------------------------------------------- server helpers

class Recorder:
    """What one server read and wrote, before and inside TLS; the server's outcome."""

    def __init__(self):
        self.plain_c2s = b""
        self.plain_s2c = b""
        self.tls_c2s = b""
        self.tls_s2c = b""
        self.tls = False
        self.info = None
        self.error = None
        self.close_notify = False


class LineConn:
    """A line reader over a TCP socket that can switch to TLS; records every byte."""

    def __init__(self, sock, rec):
        self.sock = sock
        self.rec = rec
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)
        if self.rec.tls:
            self.rec.tls_s2c += data
        else:
            self.rec.plain_s2c += data

    def readline(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                return None
            if self.rec.tls:
                self.rec.tls_c2s += data
            else:
                self.rec.plain_c2s += data
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def start_tls(self, ctx):
        if self.buf:
            raise RuntimeError("client sent bytes after the STARTTLS command")
        self.sock = ctx.wrap_socket(self.sock, server_side=True)
        self.rec.tls = True
        self.rec.info = (self.sock.version(), self.sock.cipher()[0])

    def wait_eof(self):
        """The client closes after the last answer; read its FIN (or close_notify)."""
        if self.sock.recv(1) != b"":
            raise RuntimeError("data after the last command")


def smtp_server(lsock, ctx, rec):
    sock = accept(lsock)
    conn = LineConn(sock, rec)
    conn.send(b"220 mail.example ESMTP framedump STARTTLS test\r\n")
    in_data = False
    while True:
        line = conn.readline()
        if line is None:
            raise RuntimeError("SMTP client closed early")
        if in_data:
            if line == b".":
                in_data = False
                conn.send(b"250 2.0.0 Ok: queued as 7620A\r\n")
            continue
        verb = line.split(b" ", 1)[0].upper()
        if verb == b"EHLO":
            caps = [b"mail.example Hello " + line[5:], b"SIZE 10240000", b"8BITMIME"]
            if not rec.tls:
                caps.append(b"STARTTLS")
            caps.append(b"HELP")
            conn.send(b"".join(b"250-" + c + b"\r\n" for c in caps[:-1])
                      + b"250 " + caps[-1] + b"\r\n")
        elif verb == b"STARTTLS" and not rec.tls:
            conn.send(b"220 2.0.0 Ready to start TLS\r\n")
            conn.start_tls(ctx)
        elif verb == b"MAIL" or verb == b"RCPT":
            conn.send(b"250 2.1.0 Ok\r\n" if verb == b"MAIL" else b"250 2.1.5 Ok\r\n")
        elif verb == b"DATA":
            conn.send(b"354 End data with <CR><LF>.<CR><LF>\r\n")
            in_data = True
        elif verb == b"QUIT":
            conn.send(b"221 2.0.0 Bye\r\n")
            break
        else:
            conn.send(b"502 5.5.2 Command not recognized\r\n")
    conn.sock.close()                # the server closes after 221, like real ones


def imap_server(lsock, ctx, rec):
    sock = accept(lsock)
    conn = LineConn(sock, rec)
    conn.send(b"* OK framedump STARTTLS test IMAP server ready\r\n")
    while True:
        line = conn.readline()
        if line is None:
            raise RuntimeError("IMAP client closed early")
        tag, rest = line.split(b" ", 1)
        cmd = rest.split(b" ", 1)[0].upper()
        if cmd == b"CAPABILITY":
            caps = b"IMAP4rev1 STARTTLS LOGINDISABLED" if not rec.tls else b"IMAP4rev1 AUTH=PLAIN"
            conn.send(b"* CAPABILITY " + caps + b"\r\n" + tag + b" OK CAPABILITY completed\r\n")
        elif cmd == b"STARTTLS" and not rec.tls:
            conn.send(tag + b" OK Begin TLS negotiation now\r\n")
            conn.start_tls(ctx)
        elif cmd == b"LOGIN" and rec.tls:
            conn.send(tag + b" OK [CAPABILITY IMAP4rev1] LOGIN completed\r\n")
        elif cmd == b"SELECT":
            conn.send(b"* 3 EXISTS\r\n* 0 RECENT\r\n"
                      b"* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)\r\n"
                      b"* OK [UIDVALIDITY 7621] UIDs valid\r\n* OK [UIDNEXT 4] Predicted next UID\r\n"
                      + tag + b" OK [READ-WRITE] SELECT completed\r\n")
        elif cmd == b"LOGOUT":
            conn.send(b"* BYE framedump IMAP server logging out\r\n"
                      + tag + b" OK LOGOUT completed\r\n")
            break
        else:
            conn.send(tag + b" BAD command unknown or not allowed now\r\n")
    conn.sock.close()


def sslrequest_server(lsock, ctx, rec):
    """7622: 8-byte SSLRequest, 'S', then TLS with wrap_socket."""
    port = lsock.getsockname()[1]
    sock = accept(lsock)
    rec.plain_c2s = recv_exactly(sock, 8)
    if rec.plain_c2s != SSL_REQUEST:
        raise RuntimeError("not an SSLRequest: %r" % rec.plain_c2s)
    sock.sendall(b"S")
    rec.plain_s2c = b"S"
    tls = ctx.wrap_socket(sock, server_side=True)
    rec.tls = True
    rec.info = (tls.version(), tls.cipher()[0])
    client_msgs, server_msgs = sslrequest_messages(port)
    for want, answer in zip(client_msgs, server_msgs):
        head = recv_exactly(tls, 4)
        body = recv_exactly(tls, struct.unpack(">I", head)[0] - 4)
        rec.tls_c2s += head + body
        if head + body != want:
            raise RuntimeError("unexpected message %r" % (head + body)[:40])
        tls.sendall(answer)
        rec.tls_s2c += answer
    if tls.recv(1) != b"":                  # the client's close_notify
        raise RuntimeError("data where close_notify was expected")
    tls.unwrap()                             # our close_notify
    sock.close()
    rec.close_notify = True


class MessagePeer(BioPeer):
    """A BioPeer that also reads one length-prefixed message."""

    def read_message(self):
        head = self.read_exactly(4)
        return head + self.read_exactly(struct.unpack(">I", head)[0] - 4)


def coalesced_server(lsock, ctx, rec):
    """7623: SSLRequest and ClientHello arrive together; no 'S'; memory BIO server."""
    port = lsock.getsockname()[1]
    sock = accept(lsock)
    got = b""
    while len(got) < 8:
        part = sock.recv(65536)
        if not part:
            raise RuntimeError("closed before the SSLRequest")
        got += part
    rec.plain_c2s, rest = got[:8], got[8:]
    if rec.plain_c2s != SSL_REQUEST:
        raise RuntimeError("not an SSLRequest: %r" % rec.plain_c2s)
    peer = MessagePeer(ctx, sock, server_side=True)
    peer.inc.write(rest)                     # what came with the SSLRequest
    rec.first_read_len = len(got)
    peer.run(peer.obj.do_handshake)
    rec.tls = True
    rec.info = (peer.obj.version(), peer.obj.cipher()[0])
    client_msgs, server_msgs = sslrequest_messages(port)
    for want, answer in zip(client_msgs, server_msgs):
        msg = peer.read_message()
        rec.tls_c2s += msg
        if msg != want:
            raise RuntimeError("unexpected message %r" % msg[:40])
        peer.run(peer.obj.write, answer)
        rec.tls_s2c += answer
    if peer.run(peer.obj.read, 1) != b"":
        raise RuntimeError("data where close_notify was expected")
    peer.run(peer.obj.unwrap)
    sock.close()
    rec.close_notify = True


SERVERS = {"smtp": smtp_server, "imap": imap_server, "sslrequest": sslrequest_server,
           "sslrequest-coalesced": coalesced_server}


# ---------------------------------------------------------------- clients

def smtp_client(port, ctx):
    smtp = smtplib.SMTP(HOST, port, local_hostname="client.example", timeout=10)
    smtp.ehlo()
    if not smtp.has_extn("starttls"):
        raise RuntimeError("no STARTTLS in EHLO")
    smtp.starttls(context=ctx)
    info = (smtp.sock.version(), smtp.sock.cipher()[0])
    smtp.ehlo()
    refused = smtp.sendmail("alice@client.example", ["bob@mail.example"], smtp_message())
    if refused:
        raise RuntimeError("refused: %r" % refused)
    smtp.quit()
    return info


def imap_client(port, ctx):
    random.seed(7621)                        # imaplib's tag prefix
    imap = imaplib.IMAP4(HOST, port, timeout=10)
    imap.starttls(ssl_context=ctx)
    info = (imap.sock.version(), imap.sock.cipher()[0])
    typ, _ = imap.login("bob", "secret-7621")
    if typ != "OK":
        raise RuntimeError("login failed")
    typ, dat = imap.select("INBOX")
    if typ != "OK" or dat != [b"3"]:
        raise RuntimeError("select: %r %r" % (typ, dat))
    imap.logout()
    return info


def sslrequest_client(port, ctx):
    sock = tcp_connect(port)
    sock.sendall(SSL_REQUEST)
    if recv_exactly(sock, 1) != b"S":
        raise RuntimeError("server refused TLS")
    tls = ctx.wrap_socket(sock)
    info = (tls.version(), tls.cipher()[0])
    client_msgs, server_msgs = sslrequest_messages(port)
    for msg, want in zip(client_msgs, server_msgs):
        tls.sendall(msg)
        if recv_exactly(tls, len(want)) != want:
            raise RuntimeError("unexpected answer")
    tls.unwrap()                             # close_notify, then the server's
    sock.close()
    return info


def coalesced_client(port, ctx):
    sock = tcp_connect(port)
    peer = MessagePeer(ctx, sock, server_side=False)
    try:
        peer.obj.do_handshake()
        raise RuntimeError("handshake finished without the server")
    except ssl.SSLWantReadError:
        pass
    hello = peer.out.read()
    sock.sendall(SSL_REQUEST + hello)        # one call, one TCP segment
    peer.run(peer.obj.do_handshake)
    info = (peer.obj.version(), peer.obj.cipher()[0])
    client_msgs, server_msgs = sslrequest_messages(port)
    for msg, want in zip(client_msgs, server_msgs):
        peer.run(peer.obj.write, msg)
        if peer.read_message() != want:
            raise RuntimeError("unexpected answer")
    peer.run(peer.obj.unwrap)
    sock.close()
    return info


CLIENTS = {"smtp": smtp_client, "imap": imap_client, "sslrequest": sslrequest_client,
           "sslrequest-coalesced": coalesced_client}


def run_connection(conf, certdir, keylog):
    port, proto, version, cipher, _ = conf
    rec = Recorder()
    server_ctx = ssl_context(True, version, cipher, certdir=certdir)
    lsock = listen(port)

    def serve():
        try:
            SERVERS[proto](lsock, server_ctx, rec)
        except Exception as exc:             # reported by the main thread
            rec.error = repr(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        info = CLIENTS[proto](port, ssl_context(False, version, cipher, keylog=keylog))
    finally:
        thread.join(30)
    if thread.is_alive():
        raise SystemExit("server %d still running after 30 s" % port)
    if rec.error:
        raise SystemExit("server %d failed: %s" % (port, rec.error))
    if info != rec.info:
        raise SystemExit("port %d: client %r, server %r" % (port, info, rec.info))
    print("port %d (%s): %s %s; before TLS c2s %d / s2c %d bytes, inside TLS c2s %d / s2c %d"
          % (port, proto, info[0], info[1], len(rec.plain_c2s), len(rec.plain_s2c),
             len(rec.tls_c2s), len(rec.tls_s2c)))
    return rec


def capture(pcap, certdir, keylog):
    recs = []
    with tcpdump(pcap, "tcp portrange 7620-7629"):
        for conf in CONNECTIONS:
            recs.append(run_connection(conf, certdir, keylog))
            time.sleep(0.3)
    return recs


def main():
    outdir = sys.argv[1] if len(sys.argv) >= 2 else "Tests/FramedumpCoreTests/Fixtures"
    os.makedirs(outdir, exist_ok=True)
    expected = os.path.join(outdir, "starttls.expected.json")
    pcap, keys, recs = record_in_tempdir(outdir, "starttls", "starttls.example", capture)

    packets = tcp_packets(pcap)
    ports = client_ports(packets, [c[0] for c in CONNECTIONS])

    result, failures = [], []
    for stream, (conf, rec) in enumerate(zip(CONNECTIONS, recs)):
        port, proto, version, _, dissectors = conf
        vname = VERSION_NAMES[version]
        cport = ports[port]
        c_segs, c2s = stream_segments(packets, cport, port)
        s_segs, s2c = stream_segments(packets, port, cport)
        ch_off, sh_off = len(rec.plain_c2s), len(rec.plain_s2c)
        # own reader: plaintext, record headers, ServerHello
        if c2s[:ch_off] != rec.plain_c2s or s2c[:sh_off] != rec.plain_s2c:
            raise SystemExit("port %d: plaintext differs from the capture" % port)
        if c2s[ch_off:ch_off + 2] != b"\x16\x03" or s2c[sh_off:sh_off + 2] != b"\x16\x03":
            raise SystemExit("port %d: no TLS handshake record at the offsets" % port)
        if c2s[ch_off + 5] != 1:
            raise SystemExit("port %d: not a ClientHello" % port)
        code, suite, _ = server_hello(s2c, sh_off)
        if code != VERSION_CODES[vname] or OPENSSL_NAMES[rec.info[1]] != suite:
            raise SystemExit("port %d: ServerHello %04x %04x, Python %r" % (port, code, suite, rec.info))
        ch_len = 5 + struct.unpack(">H", c2s[ch_off + 3:ch_off + 5])[0]
        note = ""
        if proto == "sslrequest-coalesced":
            first = c_segs[0]
            if first[0] != 0 or first[1] != SSL_REQUEST + c2s[8:8 + ch_len]:
                raise SystemExit("port 7623: first segment is not SSLRequest + ClientHello")
            note = ("; first c2s segment = SSLRequest + ClientHello (%d bytes), server's first "
                    "read %d bytes" % (len(first[1]), rec.first_read_len))
        print("capture port %d stream %d: ClientHello at c2s offset %d (%d bytes), first server "
              "record at s2c offset %d, ServerHello %s %s (0x%04X); c2s %d / s2c %d bytes on "
              "TCP%s" % (port, stream, ch_off, ch_len, sh_off, vname, SUITES[suite], suite,
                         len(c2s), len(s2c), note))

        # tshark follow,tcp: the plaintext prefixes
        t_c2s, t_s2c, _ = tshark_follow(["-r", pcap], "tcp", stream, port, cport)
        ok_tcp = (t_c2s == c2s and t_s2c == s2c
                  and t_c2s[:ch_off] == rec.plain_c2s and t_s2c[:sh_off] == rec.plain_s2c)
        print("  tshark follow,tcp,raw,%d: c2s %d bytes, s2c %d bytes; plaintext prefixes "
              "%d/%d bytes and TLS after them: %s" % (stream, len(t_c2s), len(t_s2c), ch_off,
                                                      sh_off, "OK" if ok_tcp else "MISMATCH"))
        if not ok_tcp:
            failures.append("follow,tcp %d" % port)

        # tshark follow,tls with the key log
        decrypted_with = None
        for dis, must in dissectors:
            args = ["-r", pcap, "-o", "tls.keylog_file:" + keys, "-d",
                    "tcp.port==%d,%s" % (port, dis)]
            t_c2s, t_s2c, node0 = tshark_follow(args, "tls", stream, port, cport)
            good = t_c2s == rec.tls_c2s and t_s2c == rec.tls_s2c
            if good and decrypted_with is None:
                decrypted_with = dis
            hs = tshark_fields(args + ["-Y", "tcp.stream==%d && tls.handshake.type" % stream],
                               ["tls.handshake.type"]).split()
            print("  tshark -d tcp.port==%d,%s follow,tls,raw,%d (%s): c2s %d/%d bytes, s2c "
                  "%d/%d bytes: %s; TLS handshake types tshark saw: %s"
                  % (port, dis, stream, node0 or "no nodes", len(t_c2s), len(rec.tls_c2s),
                     len(t_s2c), len(rec.tls_s2c), "OK, decrypted" if good else
                     ("NOT DECRYPTED" if not t_c2s and not t_s2c else "MISMATCH"),
                     ",".join(hs) or "none"))
            if not good:
                rows = tshark_fields(args + ["-Y", "tcp.stream==%d && tcp.len>0" % stream],
                                     ["frame.number", "tcp.srcport", "tcp.len",
                                      "_ws.col.Protocol", "_ws.col.Info"]).splitlines()
                for row in rows[:3]:
                    f = row.split("\t")
                    print("      frame %s %s, %s bytes: %s %s" % (
                        f[0], "c2s" if f[1] == str(cport) else "s2c", f[2], f[3],
                        f[4] if "TCP segment" not in f[4] else "(TCP segment of a reassembled PDU)"))
            if must and not good:
                failures.append("follow,tls %d" % port)

        result.append({
            "server_port": port,
            "tcp_stream": stream,
            "protocol": proto,
            "tls_version": vname,
            "suite": SUITES[suite],
            "suite_code": suite,
            "plaintext_c2s_hex": rec.plain_c2s.hex(),
            "plaintext_s2c_hex": rec.plain_s2c.hex(),
            "tls_c2s_hex": rec.tls_c2s.hex(),
            "tls_s2c_hex": rec.tls_s2c.hex(),
            "clienthello_offset": ch_off,
            "serverhello_offset": sh_off,
            "close_notify": rec.close_notify,
            "tshark_decrypts_with": decrypted_with,
        })

    with open(expected, "w") as f:
        json.dump({"connections": result}, f, indent=2)
        f.write("\n")
    print("wrote %s (%d bytes), %s, %s" % (pcap, os.path.getsize(pcap), keys, expected))
    if os.path.getsize(pcap) > 150 * 1024:
        failures.append("pcap over 150 KB")
    if failures:
        raise SystemExit("checks failed: " + ", ".join(failures))


if __name__ == "__main__":
    main()
