#!/usr/bin/env python3
"""Record a real TLS 1.3 connection over loopback that carries gRPC (HTTP/2 with ALPN h2):
grpc_tls.pcap and grpc_tls.keys.

Usage (as root, from the repository root; needs the `openssl`, `tcpdump` and `tshark`
commands, and samples/grpc.pcap):

    python3 scripts/make_grpc_tls_fixture.py [OUTPUT_FOLDER]

OUTPUT_FOLDER defaults to Tests/FramedumpCoreTests/Fixtures (relative to the current
folder). The capture is recorded anew on every run (new randoms, keys, client port,
timestamps); the plaintext it carries is the same every time.

The plaintext. It is the first connection (tcp.stream 0) of samples/grpc.pcap: a real grpcio
client and server speaking h2c on port 50051 (the gRPC calls of samples/make_grpc_sample.py:
11 gRPC messages client -> server, 10 server -> client). The script takes it from there at
run time with

    tshark -r samples/grpc.pcap -q -z follow,tcp,raw,0

whose output lists the TCP payloads of both sides in capture order (lines without indent the
client's, lines indented by a tab the server's); those bytes are not kept anywhere else.
The consecutive chunks of one side make a turn; the conversation is replayed turn by turn:
the side whose turn it is writes each of its chunks with its own SSL write (so one TLS
application-data record per TCP payload of the original capture), and the other side reads
exactly that many bytes before its own next turn. So the HTTP/2 frames go each way in the
order the original connection had (client preface and SETTINGS, the server's SETTINGS,
the ACKs, the calls with their PINGs and WINDOW_UPDATEs, the trailers).

How it is made. Both peers are Python's `ssl` module (OpenSSL 3) in this process, the server
in a thread that serves exactly one connection and ends by itself (accept() bounded by 20 s,
every read by 10 s; the script waits at most 30 s for it). Server 127.0.0.1 port 50443, the
client on an ephemeral port; TLS 1.3 only (minimum_version = maximum_version), everything
else OpenSSL's default (so the server sends its NewSessionTicket messages after the
handshake). The client offers ALPN ["h2"] and the server selects h2
(set_alpn_protocols(["h2"]) on both; the script stops unless both report h2). The
certificate is a self-signed RSA-2048 one (CN=grpc.example, SHA-256 signature) made by
`openssl req` in a temporary folder at run time and deleted afterwards with its private key;
the client does not verify it. After the last turn (the server's trailers) the client sends
close_notify, the server answers with its close_notify, the client closes the TCP connection
first and the server closes when it has read the client's FIN. tcpdump
(`tcpdump -i lo -s 0 -U -Z root -w grpc_tls.pcap 'tcp port 50443'`) captures meanwhile; it is
stopped by SIGINT to its PID. The script checks that no segment was retransmitted and
none is missing.

Since the bytes are the h2c connection's, the requests still say `:scheme http` and
`:authority 127.0.0.1:50051`; the last call (stream 13, Send) is answered trailers-only with
grpc-status 5, and PINGs follow it. The whole conversation takes a few milliseconds (the
original's timing is not replayed).

grpc_tls.keys is the NSS key log exactly as the client wrote it (SSLContext.keylog_filename):
a comment line, then the five TLS 1.3 secrets of the connection in the order OpenSSL writes
them (SERVER_HANDSHAKE_TRAFFIC_SECRET, EXPORTER_SECRET, SERVER_TRAFFIC_SECRET_0,
CLIENT_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0 with OpenSSL 3.0).

Checks (the script runs them, and stops if one fails):

    tshark -r grpc_tls.pcap -o tls.keylog_file:grpc_tls.keys -d tcp.port==50443,tls \\
        -q -z follow,tls,raw,0

gives back exactly the two streams of samples/grpc.pcap's first connection;

    tshark -r grpc_tls.pcap -o tls.keylog_file:grpc_tls.keys -d tcp.port==50443,tls \\
        -Y grpc -T fields -e grpc.message_length

shows 21 gRPC messages (11 from the client, 10 from the server), with the same lengths in
the same order each way as samples/grpc.pcap's first connection; and
`-Y tls.handshake.extensions_alpn_str` shows h2 in the ClientHello and in the server's
(encrypted) EncryptedExtensions.
"""

import os
import re
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_fixture_support import (HOST, client_ports, listen, parse_follow,  # noqa: E402
                                 record_in_tempdir, recv_exactly, ssl_context, stream_segments,
                                 tcp_packets, tcpdump, tshark, tshark_fields, tshark_follow)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "grpc.pcap")
SAMPLE_PORT = 50051   # the h2c server port in samples/grpc.pcap
PORT = 50443          # the TLS server port of the fixture
NAME = "grpc_tls"
GRPC_MESSAGES = (11, 10)


# ---------------------------------------------------------------- the plaintext

def sample_turns():
    """[(from_client, [chunk, ...])] of samples/grpc.pcap's first connection, in the order
    tshark's follow,tcp,raw,0 lists them: consecutive chunks of one side are one turn.
    Checked against parse_follow's concatenation of the same output."""
    text = tshark(["-r", SAMPLE, "-q", "-z", "follow,tcp,raw,0"])
    c2s, s2c, _ = parse_follow(text, SAMPLE_PORT)
    nodes = dict(re.findall(r"^Node (\d): .*:(\d+)$", text, re.M))
    if str(SAMPLE_PORT) not in nodes.values():
        raise SystemExit("tcp.stream 0 of %s is not a connection to port %d" % (SAMPLE, SAMPLE_PORT))
    node0_server = nodes.get("0") == str(SAMPLE_PORT)
    started, turns = False, []
    for line in text.splitlines():
        if line.startswith("Node 1:"):
            started = True
            continue
        if not started or line.startswith("=") or not line.strip():
            continue
        from_client = line.startswith("\t") == node0_server
        chunk = bytes.fromhex(line.strip())
        if turns and turns[-1][0] == from_client:
            turns[-1][1].append(chunk)
        else:
            turns.append((from_client, [chunk]))
    got = [b"".join(b"".join(cs) for fc, cs in turns if fc == side) for side in (True, False)]
    if got != [c2s, s2c] or not c2s.startswith(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"):
        raise SystemExit("could not read the first connection of %s" % SAMPLE)
    return turns, c2s, s2c


def grpc_lengths(args, server_port, filt="grpc"):
    """[(from the server?, grpc.message_length)] of the gRPC messages tshark shows with ARGS
    and the display filter FILT, in frame order."""
    rows = tshark_fields(args + ["-Y", filt, "-E", "occurrence=a", "-E", "aggregator=,"],
                         ["tcp.srcport", "grpc.message_length"])
    out = []
    for line in rows.splitlines():
        if line.strip():
            src, lengths = line.split("\t")
            out += [(int(src) == server_port, int(n)) for n in lengths.split(",")]
    return out


# ---------------------------------------------------------------- the TLS peers

def conversation(turns, certdir, keylog):
    """One TLS 1.3 connection on HOST:PORT replaying TURNS; the server runs in a thread."""
    sctx = ssl_context(True, "TLSv1_3", certdir=certdir)
    cctx = ssl_context(False, "TLSv1_3", keylog=keylog)
    sctx.set_alpn_protocols(["h2"])
    cctx.set_alpn_protocols(["h2"])
    lsock = listen(PORT, timeout=20)
    errors, alpn = [], {}

    def play(sock, as_client):
        for from_client, chunks in turns:
            if from_client == as_client:
                for chunk in chunks:
                    sock.sendall(chunk)
            else:
                want = b"".join(chunks)
                got = recv_exactly(sock, len(want))
                if got != want:
                    raise RuntimeError("read other bytes than the peer wrote")

    def serve():
        try:
            a, _ = lsock.accept()
            a.settimeout(10)
            a.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s = sctx.wrap_socket(a, server_side=True)
            alpn["server"] = s.selected_alpn_protocol()
            play(s, as_client=False)
            if s.recv(4096) != b"":                                  # the client's close_notify
                raise RuntimeError("data after the last turn")
            raw = s.unwrap()                                         # the server's close_notify
            if raw.recv(1) != b"":                                   # wait for the client's FIN
                raise RuntimeError("bytes after close_notify")
            raw.close()
        except Exception as e:                                       # noqa: BLE001
            errors.append("server: %s" % e)
        finally:
            lsock.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    sock = socket.create_connection((HOST, PORT), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c = cctx.wrap_socket(sock)
    if c.version() != "TLSv1.3" or c.selected_alpn_protocol() != "h2":
        raise SystemExit("negotiated %s, ALPN %r" % (c.version(), c.selected_alpn_protocol()))
    info = (c.version(), c.cipher()[0])
    play(c, as_client=True)
    c.unwrap().close()                                               # close_notify both ways
    th.join(30)
    if th.is_alive():
        raise SystemExit("the server did not finish")
    if errors or alpn.get("server") != "h2":
        raise SystemExit("%s (server ALPN %r)" % ("; ".join(errors), alpn.get("server")))
    return info


# ---------------------------------------------------------------- main

def main():
    outdir = sys.argv[1] if len(sys.argv) >= 2 else os.path.join("Tests", "FramedumpCoreTests", "Fixtures")
    os.makedirs(outdir, exist_ok=True)
    turns, c2s, s2c = sample_turns()
    print("%s, first connection: %d + %d bytes in %d turns (%d client chunks, %d server chunks)"
          % (SAMPLE, len(c2s), len(s2c), len(turns), sum(len(cs) for fc, cs in turns if fc),
             sum(len(cs) for fc, cs in turns if not fc)))

    def capture(pcap, certdir, keylog):
        with tcpdump(pcap, "tcp port %d" % PORT):
            return conversation(turns, certdir, keylog)

    pcap, keys, info = record_in_tempdir(outdir, NAME, "grpc.example", capture)
    print("connection: %s %s, ALPN h2 both sides" % info)

    packets = tcp_packets(pcap)
    cport = client_ports(packets, [PORT])[PORT]
    for sport, dport in ((cport, PORT), (PORT, cport)):
        stream_segments(packets, sport, dport)                       # stops at a hole or a retransmission
    with open(keys) as f:
        labels = [l.split()[0] for l in f.read().splitlines() if l and not l.startswith("#")]
    print("key log: %s" % ", ".join(labels))

    tls = ["-r", pcap, "-o", "tls.keylog_file:" + keys, "-d", "tcp.port==%d,tls" % PORT]
    got_c2s, got_s2c, _ = tshark_follow(tls, "tls", 0, PORT, cport)
    if (got_c2s, got_s2c) != (c2s, s2c):
        raise SystemExit("tshark decrypts %d + %d bytes, not the %d + %d written"
                         % (len(got_c2s), len(got_s2c), len(c2s), len(s2c)))
    print("tshark follow,tls,raw,0: %d + %d bytes, exactly samples/grpc.pcap's first connection"
          % (len(got_c2s), len(got_s2c)))

    want = grpc_lengths(["-r", SAMPLE, "-d", "tcp.port==%d,http2" % SAMPLE_PORT], SAMPLE_PORT,
                        "grpc && tcp.stream == 0")
    got = grpc_lengths(tls, PORT)
    counts = (sum(not s for s, _ in got), sum(s for s, _ in got))
    same = [n for s, n in got if not s] == [n for s, n in want if not s] and \
        [n for s, n in got if s] == [n for s, n in want if s]
    if counts != GRPC_MESSAGES or not same:
        raise SystemExit("tshark shows gRPC messages %r (client, server), lengths %r; the sample %r"
                         % (counts, got, want))
    print("tshark -Y grpc: %d gRPC messages, %d client -> server, %d server -> client, the same "
          "lengths each way as in the sample" % (len(got), counts[0], counts[1]))

    alpn = tshark_fields(tls + ["-Y", "tls.handshake.extensions_alpn_str"],
                         ["tcp.srcport", "tls.handshake.type", "tls.handshake.extensions_alpn_str"])
    rows = [l.split("\t") for l in alpn.splitlines() if l.strip()]
    if not rows or any(r[2] != "h2" for r in rows):
        raise SystemExit("ALPN in the capture: %r" % rows)
    print("ALPN: %s" % "; ".join("port %s handshake type %s: %s" % tuple(r) for r in rows))
    print("wrote %s (%d bytes, %d packets), %s" % (pcap, os.path.getsize(pcap), len(packets), keys))


if __name__ == "__main__":
    main()
