#!/usr/bin/env python3
"""Write the TLS 1.2 / SSL 3.0 fixtures the tests read (Tests/FramedumpCoreTests/Fixtures): a real
capture of TLS 1.2 DHE-RSA CBC connections, a crafted TLS 1.2 connection with DEFLATE
compression, a crafted SSL 3.0 connection, and the real capture again as pcapng with its key
log inside. Needs Python's `cryptography`, and tcpdump (run as root: it captures on `lo`),
`openssl`, tshark and editcap. Run from the repository root:

    python3 scripts/make_tls12_fixtures.py [OUTPUT_FOLDER]

(OUTPUT_FOLDER defaults to Tests/FramedumpCoreTests/Fixtures.) tls12_deflate.* and ssl3.* are
crafted and the same, byte for byte, on every run; tls12_dhe_cbc.* and tls_dsb.pcapng are
recorded anew on every run (new randoms, keys, ports, timestamps).

tls12_dhe_cbc.pcap, tls12_dhe_cbc.keys: real TLS 1.2 connections over loopback, recorded by
`tcpdump -i lo -U -w ... 'tcp and portrange 7601-7604'` (LINKTYPE_ETHERNET, as Linux's lo
gives it). Both peers are Python's `ssl` module (OpenSSL 3) in this process, the server in a
thread; one connection per cipher suite, one after the other, each on its own server port:
    7601  TLS_DHE_RSA_WITH_AES_128_CBC_SHA     (0x0033, OpenSSL DHE-RSA-AES128-SHA)
    7602  TLS_DHE_RSA_WITH_AES_256_CBC_SHA     (0x0039, DHE-RSA-AES256-SHA)
    7603  TLS_DHE_RSA_WITH_AES_128_CBC_SHA256  (0x0067, DHE-RSA-AES128-SHA256)
    7604  TLS_DHE_RSA_WITH_AES_256_CBC_SHA256  (0x006B, DHE-RSA-AES256-SHA256)
Both peers set minimum and maximum version TLS 1.2 and `set_ciphers("<suite>:@SECLEVEL=0")`;
everything else is OpenSSL's default, so the client offers encrypt_then_mac (RFC 7366),
extended_master_secret and session_ticket and the server takes all three: with OpenSSL 3.0 all
four connections are encrypt-then-MAC (the script reads extensions 22 and 23 in each
ServerHello with tshark and prints them), and the server sends a NewSessionTicket before its
ChangeCipherSpec. The server's DH group is ffdhe2048 (`openssl genpkey -genparam -algorithm DH
-pkeyopt group:ffdhe2048`); its certificate is a self-signed RSA-2048 one for `dhe.example`,
made at run time in a temporary folder and not kept (the client does not verify it).
Per connection the client writes three messages, each one TLS record, and reads the server's
answer to each before writing the next (N = port - 7600):
    client: "hello <port>\n", "GET /item/<N>\n", "bye\n"           (27 bytes in all)
    server: "welcome on <port>\n", "item <N>: OK\n", "bye bye\n"   (35 bytes in all)
then the client sends close_notify, the server answers with its close_notify, and the client
closes first (the server closes when it has read the client's FIN). TLS records per connection: client 8 (ClientHello;
ClientKeyExchange, ChangeCipherSpec, Finished; 3 application data; close_notify), server 11
(ServerHello, Certificate, ServerKeyExchange, ServerHelloDone, NewSessionTicket,
ChangeCipherSpec, Finished; 3 application data; close_notify).
tls12_dhe_cbc.keys is the NSS key log the client wrote (`SSLContext.keylog_filename`): a
comment line, then one CLIENT_RANDOM line per connection.
Checked, per connection (tcp.stream S is found by the SYN's destination port):
    tshark -r tls12_dhe_cbc.pcap -o tls.keylog_file:tls12_dhe_cbc.keys -d tcp.port==7601,tls \
        -d tcp.port==7602,tls -d tcp.port==7603,tls -d tcp.port==7604,tls -q -z follow,tls,raw,S
gives back exactly the bytes each side wrote.

tls12_deflate.pcap, tls12_deflate.keys: a CRAFTED TLS 1.2 connection that negotiated DEFLATE
compression (RFC 3749, method 1). It is crafted because Debian's OpenSSL 3 is built without
zlib (`openssl list -disabled` lists ZLIB; `openssl s_client -tls1_2 -comp` against
`openssl s_server -tls1_2 -comp` reports "Compression: NONE"), so no real peer here can
negotiate it. Ethernet (zero addresses) / IPv4
/ TCP, 127.0.0.1 port 50605 -> 127.0.0.1 port 7605, initial sequence numbers 0x10000000
(client) and 0x20000000 (server): SYN, SYN-ACK, ACK; each flight one TCP segment,
acknowledged by a pure ACK from the other side; FIN from the client, FIN from the server, last
ACK (30 packets). Timestamps start at 1700000000 s (2023-11-14 22:13:20 UTC), each data
segment 1 ms after the packet before it, each ACK 100 us after. The flights:
    client  ClientHello
    server  ServerHello, Certificate, ServerHelloDone (three records)
    client  ClientKeyExchange, ChangeCipherSpec, Finished (three records)
    server  ChangeCipherSpec, Finished (two records)
    then three application-data records each way, alternating client, server, and a
    close_notify alert (warning, 0) from the client, then from the server, each in its own
    segment: 8 client records, 9 server records.
Every record has version 0x0303. ClientHello: version 0x0303, an empty session id, cipher
suites [TLS_RSA_WITH_AES_128_CBC_SHA (0x002F)], compression methods [1, 0], extensions
renegotiation_info (empty) and signature_algorithms (rsa_pkcs1_sha256, _sha384, _sha1).
ServerHello: 0x0303, a 32-byte session id, 0x002F, compression method 1, renegotiation_info.
No encrypt_then_mac, no extended_master_secret. Certificate: a self-signed RSA-2048
certificate for `crafted.example` (serial 0x5eed, valid 2023-11-01 to 2033-11-01,
sha256WithRSAEncryption), its key built from two primes drawn by random.Random(2048) (the key
is not written; the same certificate is in ssl3.pcap). The randoms, session id, pre-master
secret (0x0303 + 46 bytes), RSA padding and record IVs come from random.Random(3749). The
ClientKeyExchange is the pre-master secret really encrypted to that key (RSAES-PKCS1-v1_5, with
its 2-byte length), the master secret is PRF(pre_master, "master secret", client_random +
server_random) and the keys come from PRF(master, "key expansion", server_random +
client_random), PRF being TLS 1.2's P_SHA256 (RFC 5246 5, 6.3, 8.1); the Finished messages
carry PRF(master, "client finished" / "server finished", SHA-256(handshake messages))[:12].
Records after ChangeCipherSpec, each direction on its own (RFC 5246 6.2.2, 6.2.3.2): the
plaintext is compressed with one zlib stream per direction (RFC 1950: `zlib.compressobj()`,
each record `compress(x) + flush(Z_SYNC_FLUSH)`, so the first compressed record, the Finished,
starts with the zlib header 78 9c, and every record ends with 00 00 ff ff); compression
covers every record after ChangeCipherSpec (Finished, application data, alerts). Then
HMAC-SHA1(mac_key, seq_num + type + 0x0303 + length + compressed) is appended (sequence
numbers from 0 at ChangeCipherSpec), padding (pad_length + 1 bytes of value pad_length, to a
16-byte multiple), and AES-128-CBC with a fresh explicit 16-byte IV in front. Application data:
    client: "HELLO deflate\n" (14 bytes); 80 lines "line NNN: the quick brown fox jumps over the
            lazy dog\n" (4320 bytes, 257 compressed); "BYE after " + the last of those lines
            (64 bytes, 17 compressed: a back-reference into the record before)
    server: "WELCOME deflate\n" (16); 48 lines "row NNN | status=ok | value=NNNNN |
            padding....\n" (3264 bytes, 324 compressed); "BYE after " + the first of those
            lines (78 bytes, 19 compressed)
(4398 bytes from the client, 3358 from the server). tls12_deflate.keys is one line,
"CLIENT_RANDOM <client random> <master secret>".
Checked:
    tshark -r tls12_deflate.pcap -o tls.keylog_file:tls12_deflate.keys -d tcp.port==7605,tls \
        -q -z follow,tls,raw,0
gives back exactly the uncompressed application bytes each way (tshark inflates RFC 3749 when
built with zlib); with the key log tshark shows both Finished messages (tls.handshake.type ==
20) and a close_notify each way (tls.alert_message.desc == 0); the capture draws no tshark
expert item of severity warning or above; without a key log nothing is given back; and with
the RSA key instead of the key log (-o 'uat:rsa_keys:"KEY.pem",""', the key in a temporary
file) the same bytes come back, which shows the ClientKeyExchange, the master secret and the
records agree.

ssl3.pcap, ssl3.keys: a CRAFTED SSL 3.0 connection (OpenSSL 3 cannot speak SSL 3.0). The same
TCP shape as tls12_deflate.pcap (127.0.0.1 port 50606 -> port 7606, initial sequence numbers
0x30000000 and 0x40000000, same timing, 30 packets), the same flights and the same
certificate; no compression. Every record and both hellos have version 0x0300; the ClientHello
offers [0x002F TLS_RSA_WITH_AES_128_CBC_SHA, 0x000A TLS_RSA_WITH_3DES_EDE_CBC_SHA], compression
[0], no extensions; the ServerHello picks 0x002F and compression 0, with a 32-byte session id
and no extensions. The randoms, session id, pre-master secret (0x0300 + 46 bytes) and RSA
padding come from random.Random(6101). SSL 3.0 computations (RFC 6101): the
ClientKeyExchange is the RSA-encrypted pre-master secret without a length prefix; master
secret = MD5(pre + SHA1("A" + pre + client_random + server_random)) + MD5(pre + SHA1("BB" ...))
+ MD5(pre + SHA1("CCC" ...)) (6.1); key block the same construction over master, server_random
+ client_random ("A" to "GGGGGGG", 104 bytes: client and server MAC secrets, keys, IVs; 6.2.2);
Finished = MD5(master + pad_2 + MD5(handshake messages + sender + master + pad_1)) +
SHA1(master + pad_2 + SHA1(handshake messages + sender + master + pad_1)) with sender "CLNT" /
"SRVR" (5.6.9); MAC = SHA1(MAC secret + pad_2 + SHA1(MAC secret + pad_1 + seq_num + type +
length + fragment)), pad_1 = 0x36 and pad_2 = 0x5c repeated 40 times (48 for MD5), sequence
numbers from 0 at ChangeCipherSpec (5.2.3.1); padding as in TLS (shorter than one block);
AES-128-CBC with no explicit IV, the first record's IV from the key block and each next
record's IV the last ciphertext block of the record before (5.2.3.2). Application data:
    client: "ssl3 request 1\n", "ssl3 request 2: " + "abcdefghij" * 5 + "\n", "ssl3 done\n"  (92 bytes)
    server: "ssl3 answer 1\n", "ssl3 answer 2: " + "0123456789" * 7 + "\n", "ssl3 bye\n"     (109 bytes)
then an encrypted close_notify each way (8 client records, 9 server records). ssl3.keys is one
line, "CLIENT_RANDOM <client random> <master secret>".
Checked as tls12_deflate.pcap (port 7606):
    tshark -r ssl3.pcap -o tls.keylog_file:ssl3.keys -d tcp.port==7606,tls -q -z follow,tls,raw,0
gives back exactly those bytes (tshark shows the records as SSLv3); Finished both ways and
close_notify both ways decrypted; no expert warning; nothing without a key log; the same bytes
with the RSA key.

tls_dsb.pcapng: tls12_dhe_cbc.pcap with tls12_dhe_cbc.keys inside, as a pcapng Decryption
Secrets Block (secrets type TLS key log) before the packets:
    editcap --inject-secrets tls,tls12_dhe_cbc.keys tls12_dhe_cbc.pcap tls_dsb.pcapng
Checked as tls12_dhe_cbc.pcap, but with no key log option: tshark decrypts every connection to
the same bytes from the block alone.

What tshark 4.0.17 does with these is printed: the compressed sizes, each connection's suite,
encrypt_then_mac and extended_master_secret, its record content types, and the byte counts
tshark gives back.
"""
import datetime, hashlib, hmac, os, random, shutil, socket, struct, subprocess, sys, tempfile, threading, time, zlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.x509.oid import NameOID

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_fixture_support import (listen, recv_exactly, ssl_context, tcpdump, tshark, tshark_fields,  # noqa: E402
                                 tshark_follow)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join("Tests", "FramedumpCoreTests", "Fixtures")
T0_US = 1700000000 * 1000000        # the crafted captures' first timestamp, in microseconds

# Fixture 1: one connection per suite, each on its own server port.
DHE_SUITES = [(7601, "DHE-RSA-AES128-SHA", 0x0033), (7602, "DHE-RSA-AES256-SHA", 0x0039),
              (7603, "DHE-RSA-AES128-SHA256", 0x0067), (7604, "DHE-RSA-AES256-SHA256", 0x006B)]
DEFLATE_PORT, DEFLATE_CPORT = 7605, 50605
SSL3_PORT, SSL3_CPORT = 7606, 50606


def dhe_messages(port):
    """What the client and the server of the fixture 1 connection on `port` write, in order."""
    c = [b"hello %d\n" % port, b"GET /item/%d\n" % (port - 7600), b"bye\n"]
    s = [b"welcome on %d\n" % port, b"item %d: OK\n" % (port - 7600), b"bye bye\n"]
    return c, s


# ---------------------------------------------------------------------------------------------
# Capture files
# ---------------------------------------------------------------------------------------------

def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def tcp_frame(sport, dport, seq, ack, flags, payload, ip_id):
    """Ethernet (zero addresses, as on Linux's lo) / IPv4 127.0.0.1 -> 127.0.0.1 / TCP."""
    src = dst = socket.inet_aton("127.0.0.1")
    fl = {"S": 0x02, "SA": 0x12, "A": 0x10, "PA": 0x18, "FA": 0x11}[flags]
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xffffffff, ack & 0xffffffff, 5 << 4, fl, 65535, 0, 0)
    csum = checksum(src + dst + struct.pack("!BBH", 0, 6, len(tcp) + len(payload)) + tcp + payload)
    tcp = tcp[:16] + struct.pack("!H", csum) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), ip_id, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return b"\0" * 12 + b"\x08\x00" + ip + tcp + payload


def write_pcap(path, frames):
    """frames: [(timestamp in microseconds, bytes)]; classic pcap, LINKTYPE_ETHERNET."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        for us, fr in frames:
            f.write(struct.pack("<IIII", us // 1000000, us % 1000000, len(fr), len(fr)) + fr)


class TcpConn:
    """A crafted TCP connection on 127.0.0.1: three-way handshake, one segment a flight, each
    flight acknowledged by a pure ACK, FIN each way (client first)."""

    def __init__(self, cport, sport, isn_c, isn_s):
        self.ports = (cport, sport)
        self.seq = [isn_c, isn_s]
        self.ip_id = [0x1000, 0x2000]
        self.frames, self.us = [], T0_US
        self.pkt(0, "S")
        self.seq[0] += 1
        self.pkt(1, "SA")
        self.seq[1] += 1
        self.pkt(0, "A")

    def pkt(self, d, flags, payload=b"", after=100):
        self.us += after
        ack = 0 if flags == "S" else self.seq[1 - d]
        sp, dp = (self.ports if d == 0 else self.ports[::-1])
        self.frames.append((self.us, tcp_frame(sp, dp, self.seq[d], ack, flags, payload, self.ip_id[d])))
        self.ip_id[d] += 1

    def send(self, d, payload, after=1000):
        self.pkt(d, "PA", payload, after)
        self.seq[d] += len(payload)
        self.pkt(1 - d, "A")

    def close(self):
        self.pkt(0, "FA", after=1000)
        self.seq[0] += 1
        self.pkt(1, "FA")
        self.seq[1] += 1
        self.pkt(0, "A")


# ---------------------------------------------------------------------------------------------
# A deterministic RSA-2048 key and self-signed certificate (for the crafted fixtures)
# ---------------------------------------------------------------------------------------------

def is_probable_prime(n, rng):
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for _ in range(40):
        x = pow(rng.randrange(2, n - 1), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def make_rsa_key(rng, bits=2048, e=65537):
    def prime():
        while True:
            p = rng.getrandbits(bits // 2) | (3 << (bits // 2 - 2)) | 1
            if (p - 1) % e and is_probable_prime(p, rng):
                return p
    p, q = prime(), prime()
    while q == p:
        q = prime()
    n, phi = p * q, (p - 1) * (q - 1)
    d = pow(e, -1, phi)
    pub = rsa.RSAPublicNumbers(e, n)
    return rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p), pub).private_key()


def make_cert(key, cn):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(0x5eed).not_valid_before(datetime.datetime(2023, 11, 1))
            .not_valid_after(datetime.datetime(2033, 11, 1)).sign(key, hashes.SHA256()))


def rsa_encrypt_pkcs1(pub, msg, rng):
    """RSAES-PKCS1-v1_5 with padding bytes drawn from `rng` (deterministic, unlike OpenSSL's)."""
    n, e = pub.public_numbers().n, pub.public_numbers().e
    k = (n.bit_length() + 7) // 8
    ps = bytes(rng.randrange(1, 256) for _ in range(k - 3 - len(msg)))
    m = int.from_bytes(b"\x00\x02" + ps + b"\x00" + msg, "big")
    return pow(m, e, n).to_bytes(k, "big")


# ---------------------------------------------------------------------------------------------
# TLS 1.2 (RFC 5246) and SSL 3.0 (RFC 6101) record and key computations
# ---------------------------------------------------------------------------------------------

def tls12_prf(secret, label, seed, n):
    """PRF(secret, label, seed) = P_SHA256(secret, label + seed), RFC 5246 section 5."""
    seed = label + seed
    a, out = seed, b""
    while len(out) < n:
        a = hmac.new(secret, a, hashlib.sha256).digest()
        out += hmac.new(secret, a + seed, hashlib.sha256).digest()
    return out[:n]


def ssl3_hash_block(secret, s1, s2, n):
    """The SSL 3.0 construction MD5(secret + SHA1("A" + secret + s1 + s2)) +
    MD5(secret + SHA1("BB" + ...)) + ..., cut to n bytes (RFC 6101 sections 6.1 and 6.2.2)."""
    out, i = b"", 1
    while len(out) < n:
        salt = bytes([0x40 + i]) * i
        out += hashlib.md5(secret + hashlib.sha1(salt + secret + s1 + s2).digest()).digest()
        i += 1
    return out[:n]


def handshake(htype, body):
    return bytes([htype]) + len(body).to_bytes(3, "big") + body


def record(ctype, version, fragment):
    return bytes([ctype]) + version.to_bytes(2, "big") + len(fragment).to_bytes(2, "big") + fragment


def vec(data, lenbytes):
    return len(data).to_bytes(lenbytes, "big") + data


def aes_cbc(key, iv, data):
    e = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return e.update(data) + e.finalize()


class Tls12CbcWriter:
    """One direction's protected records, TLS 1.2 TLS_RSA_WITH_AES_128_CBC_SHA, MAC-then-encrypt
    (RFC 5246 6.2.3.2, explicit IV), optionally DEFLATE-compressed first (RFC 3749)."""

    def __init__(self, mac_key, key, rng, deflate):
        self.mac_key, self.key, self.rng, self.seq = mac_key, key, rng, 0
        self.z = zlib.compressobj() if deflate else None
        self.sizes = []                      # (plaintext, compressed) per record

    def protect(self, ctype, plaintext):
        frag = plaintext
        if self.z:
            frag = self.z.compress(plaintext) + self.z.flush(zlib.Z_SYNC_FLUSH)
        self.sizes.append((len(plaintext), len(frag)))
        mac = hmac.new(self.mac_key, self.seq.to_bytes(8, "big") + bytes([ctype]) + b"\x03\x03" +
                       len(frag).to_bytes(2, "big") + frag, hashlib.sha1).digest()
        self.seq += 1
        data = frag + mac
        pad = 15 - len(data) % 16
        data += bytes([pad]) * (pad + 1)
        iv = self.rng.randbytes(16)
        return record(ctype, 0x0303, iv + aes_cbc(self.key, iv, data))


class Ssl3CbcWriter:
    """One direction's protected records, SSL 3.0 with AES-128-CBC and the SSL 3.0 SHA-1 MAC
    (RFC 6101 5.2.3.1): no explicit IV, the CBC chain carried over from record to record."""

    def __init__(self, mac_key, key, iv):
        self.mac_key, self.key, self.iv, self.seq = mac_key, key, iv, 0
        self.sizes = []

    def protect(self, ctype, frag):
        inner = hashlib.sha1(self.mac_key + b"\x36" * 40 + self.seq.to_bytes(8, "big") + bytes([ctype]) +
                             len(frag).to_bytes(2, "big") + frag).digest()
        mac = hashlib.sha1(self.mac_key + b"\x5c" * 40 + inner).digest()
        self.seq += 1
        data = frag + mac
        pad = 15 - len(data) % 16
        data += bytes([pad]) * (pad + 1)
        ct = aes_cbc(self.key, self.iv, data)
        self.iv = ct[-16:]
        self.sizes.append((len(frag), len(ct)))
        return record(ctype, 0x0300, ct)


def crafted_flights(conn, version, hello, cw, sw, cfin, sfin, messages):
    """The crafted connection's TLS flights on CONN, each one segment: the client's and server's
    handshake messages HELLO = (ClientHello, ServerHello, Certificate, ServerHelloDone,
    ClientKeyExchange), ChangeCipherSpec and Finished each way (CFIN, SFIN protected by the
    writers CW and SW), the MESSAGES (client's, server's) alternating, a close_notify each way;
    then the FINs. Returns the number of records each way."""
    ch, sh, cert, shd, cke = hello
    counts = [0, 0]

    def send(d, *recs):
        counts[d] += len(recs)
        conn.send(d, b"".join(recs))
    ccs = record(20, version, b"\x01")
    send(0, record(22, version, ch))
    send(1, record(22, version, sh), record(22, version, cert), record(22, version, shd))
    send(0, record(22, version, cke), ccs, cw.protect(22, cfin))
    send(1, ccs, sw.protect(22, sfin))
    for a, b in zip(*messages):
        send(0, cw.protect(23, a))
        send(1, sw.protect(23, b))
    send(0, cw.protect(21, b"\x01\x00"))                             # close_notify (warning, 0)
    send(1, sw.protect(21, b"\x01\x00"))
    conn.close()
    return counts


# ---------------------------------------------------------------------------------------------
# Fixture 2: TLS 1.2 with DEFLATE compression (crafted)
# ---------------------------------------------------------------------------------------------

def deflate_messages():
    big_c = b"".join(b"line %03d: the quick brown fox jumps over the lazy dog\n" % i for i in range(80))
    big_s = b"".join(b"row %03d | status=ok | value=%05d | padding........................\n" % (i, i * 37)
                     for i in range(48))
    # The last records repeat a line of the big ones: compressed, they are mostly a back-reference
    # into an earlier record (the compression history runs on from record to record).
    c = [b"HELLO deflate\n", big_c, b"BYE after " + big_c.splitlines(True)[-1]]
    s = [b"WELCOME deflate\n", big_s, b"BYE after " + big_s.splitlines(True)[0]]
    return c, s


def make_deflate(cert_der, key):
    rng = random.Random(3749)
    V = 0x0303
    client_random, server_random = rng.randbytes(32), rng.randbytes(32)
    session_id = rng.randbytes(32)
    reneg = b"\xff\x01" + vec(b"\x00", 2)                            # renegotiation_info, empty
    sigalgs = b"\x00\x0d" + vec(vec(b"\x04\x01\x05\x01\x02\x01", 2), 2)   # rsa_pkcs1_sha256/384, sha1
    ch = handshake(1, V.to_bytes(2, "big") + client_random + vec(b"", 1) + vec(b"\x00\x2f", 2) +
                   vec(b"\x01\x00", 1) + vec(reneg + sigalgs, 2))
    sh = handshake(2, V.to_bytes(2, "big") + server_random + vec(session_id, 1) + b"\x00\x2f" + b"\x01" +
                   vec(reneg, 2))
    cert = handshake(11, vec(vec(cert_der, 3), 3))
    shd = handshake(14, b"")
    premaster = b"\x03\x03" + rng.randbytes(46)
    cke = handshake(16, vec(rsa_encrypt_pkcs1(key.public_key(), premaster, rng), 2))
    master = tls12_prf(premaster, b"master secret", client_random + server_random, 48)
    kb = tls12_prf(master, b"key expansion", server_random + client_random, 2 * 20 + 2 * 16 + 2 * 16)
    cmac, smac, ckey, skey = kb[0:20], kb[20:40], kb[40:56], kb[56:72]
    cw = Tls12CbcWriter(cmac, ckey, rng, deflate=True)
    sw = Tls12CbcWriter(smac, skey, rng, deflate=True)
    transcript = ch + sh + cert + shd + cke
    cfin = handshake(20, tls12_prf(master, b"client finished", hashlib.sha256(transcript).digest(), 12))
    sfin = handshake(20, tls12_prf(master, b"server finished", hashlib.sha256(transcript + cfin).digest(), 12))

    conn = TcpConn(DEFLATE_CPORT, DEFLATE_PORT, 0x10000000, 0x20000000)
    counts = crafted_flights(conn, V, (ch, sh, cert, shd, cke), cw, sw, cfin, sfin, deflate_messages())
    keys = "CLIENT_RANDOM %s %s\n" % (client_random.hex(), master.hex())
    return conn.frames, keys, {"client": cw.sizes, "server": sw.sizes, "records": counts,
                               "client_random": client_random.hex(), "master": master.hex()}


# ---------------------------------------------------------------------------------------------
# Fixture 3: SSL 3.0 (crafted)
# ---------------------------------------------------------------------------------------------

def ssl3_messages():
    c = [b"ssl3 request 1\n", b"ssl3 request 2: " + b"abcdefghij" * 5 + b"\n", b"ssl3 done\n"]
    s = [b"ssl3 answer 1\n", b"ssl3 answer 2: " + b"0123456789" * 7 + b"\n", b"ssl3 bye\n"]
    return c, s


def ssl3_finished(master, transcript, sender):
    md5 = hashlib.md5(master + b"\x5c" * 48 + hashlib.md5(transcript + sender + master + b"\x36" * 48).digest()).digest()
    sha = hashlib.sha1(master + b"\x5c" * 40 + hashlib.sha1(transcript + sender + master + b"\x36" * 40).digest()).digest()
    return md5 + sha


def make_ssl3(cert_der, key):
    rng = random.Random(6101)
    V = 0x0300
    client_random, server_random = rng.randbytes(32), rng.randbytes(32)
    session_id = rng.randbytes(32)
    ch = handshake(1, V.to_bytes(2, "big") + client_random + vec(b"", 1) + vec(b"\x00\x2f\x00\x0a", 2) + vec(b"\x00", 1))
    sh = handshake(2, V.to_bytes(2, "big") + server_random + vec(session_id, 1) + b"\x00\x2f" + b"\x00")
    cert = handshake(11, vec(vec(cert_der, 3), 3))
    shd = handshake(14, b"")
    premaster = b"\x03\x00" + rng.randbytes(46)
    cke = handshake(16, rsa_encrypt_pkcs1(key.public_key(), premaster, rng))   # SSL 3.0: no length prefix
    master = ssl3_hash_block(premaster, client_random, server_random, 48)
    kb = ssl3_hash_block(master, server_random, client_random, 2 * 20 + 2 * 16 + 2 * 16)
    cmac, smac, ckey, skey, civ, siv = kb[0:20], kb[20:40], kb[40:56], kb[56:72], kb[72:88], kb[88:104]
    cw, sw = Ssl3CbcWriter(cmac, ckey, civ), Ssl3CbcWriter(smac, skey, siv)
    transcript = ch + sh + cert + shd + cke
    cfin = handshake(20, ssl3_finished(master, transcript, b"CLNT"))
    sfin = handshake(20, ssl3_finished(master, transcript + cfin, b"SRVR"))

    conn = TcpConn(SSL3_CPORT, SSL3_PORT, 0x30000000, 0x40000000)
    counts = crafted_flights(conn, V, (ch, sh, cert, shd, cke), cw, sw, cfin, sfin, ssl3_messages())
    keys = "CLIENT_RANDOM %s %s\n" % (client_random.hex(), master.hex())
    return conn.frames, keys, {"records": counts, "client_random": client_random.hex(), "master": master.hex()}


# ---------------------------------------------------------------------------------------------
# Fixture 1: real TLS 1.2 DHE-RSA CBC connections on loopback
# ---------------------------------------------------------------------------------------------

def record_dhe(pcap_path, keys_path):
    tmp = tempfile.mkdtemp(prefix="tls12fix")
    try:
        key = rsa.generate_private_key(65537, 2048)
        cert = make_cert(key, "dhe.example")
        with open(os.path.join(tmp, "cert.pem"), "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(os.path.join(tmp, "key.pem"), "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        subprocess.run(["openssl", "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:ffdhe2048",
                        "-out", os.path.join(tmp, "dh.pem")], check=True, timeout=60)
        keylog = os.path.join(tmp, "client.keys")
        raw = os.path.join(tmp, "raw.pcap")
        ports = [p for p, _, _ in DHE_SUITES]
        with tcpdump(raw, "tcp and portrange %d-%d" % (min(ports), max(ports)),
                     command=("timeout", "120", "tcpdump", "-i", "lo", "-U", "-n"), wait=20, report=False):
            for port, name, _ in DHE_SUITES:
                one_dhe_connection(port, name, tmp, keylog)
                time.sleep(0.2)
        shutil.copyfile(raw, pcap_path)
        shutil.copyfile(keylog, keys_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def one_dhe_connection(port, suite, certdir, keylog):
    """One connection on `port`: the client writes each of its messages and reads the server's
    answer; then close_notify from the client, close_notify from the server, FIN from the client."""
    cmsgs, smsgs = dhe_messages(port)
    sctx = ssl_context(True, "TLSv1_2", suite + ":@SECLEVEL=0", certdir=certdir, dh=True)
    cctx = ssl_context(False, "TLSv1_2", suite + ":@SECLEVEL=0", keylog=keylog)
    lsock = listen(port, timeout=10)
    errors = []

    def serve():
        try:
            a, _ = lsock.accept()
            a.settimeout(10)
            s = sctx.wrap_socket(a, server_side=True)
            for want, answer in zip(cmsgs, smsgs):
                got = recv_exactly(s, len(want))
                if got != want:
                    raise RuntimeError("server read %r" % got)
                s.sendall(answer)
            if s.recv(4096) != b"":                                  # the client's close_notify
                raise RuntimeError("data after the last message")
            raw = s.unwrap()                                         # sends the server's close_notify
            if raw.recv(1) != b"":                                   # wait for the client's FIN
                raise RuntimeError("bytes after close_notify")
            raw.close()
        except Exception as e:                                       # noqa: BLE001
            errors.append("server: %s" % e)
        finally:
            lsock.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    c = cctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
    if c.version() != "TLSv1.2" or c.cipher()[0] != suite:
        raise SystemExit("port %d negotiated %s %s" % (port, c.version(), c.cipher()))
    for msg, answer in zip(cmsgs, smsgs):
        c.sendall(msg)
        got = recv_exactly(c, len(answer))
        if got != answer:
            raise SystemExit("client read %r" % got)
    c.unwrap().close()
    th.join(15)
    if th.is_alive() or errors:
        raise SystemExit("port %d: %s" % (port, errors or "server did not finish"))


# ---------------------------------------------------------------------------------------------
# Checks with tshark
# ---------------------------------------------------------------------------------------------

def decode_as(ports):
    out = []
    for p in ports:
        out += ["-d", "tcp.port==%d,tls" % p]
    return out


def follow(pcap, keys, ports, stream, server_port):
    """The decrypted bytes of TCP stream `stream` as tshark's follow,tls,raw gives them:
    (client's, server's)."""
    opts = ["-o", "tls.keylog_file:" + keys] if keys else []
    return tshark_follow(["-r", pcap] + opts + decode_as(ports), "tls", stream, server_port)[:2]


def tls_fields(pcap, keys, ports, filt, fields):
    opts = ["-o", "tls.keylog_file:" + keys] if keys else []
    args = ["-r", pcap] + opts + decode_as(ports) + ["-Y", filt, "-E", "occurrence=a", "-E", "aggregator=,"]
    return [l.split("\t") for l in tshark_fields(args, fields).splitlines() if l.strip()]


def expert_problems(pcap, keys, ports):
    """tshark's expert items of severity warning or error (none expected in the crafted fixtures)."""
    opts = ["-o", "tls.keylog_file:" + keys] if keys else []
    rows = tshark(["-r", pcap] + opts + decode_as(ports) + ["-Y", "_ws.expert.severity >= 6291456", "-T", "fields",
                                                           "-e", "frame.number", "-e", "_ws.expert.message"])
    return [l for l in rows.splitlines() if l.strip()]


def streams_by_server_port(pcap):
    rows = tshark(["-r", pcap, "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields", "-e", "tcp.stream", "-e", "tcp.dstport"])
    return {int(l.split()[1]): int(l.split()[0]) for l in rows.splitlines() if l.strip()}


def follow_with_rsa_key(pcap, key, port):
    """tshark's follow,tls,raw,0 given the server's RSA private key instead of a key log."""
    tmp = tempfile.mkdtemp(prefix="tls12fix")
    try:
        pem = os.path.join(tmp, "server.key")
        with open(pem, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        return tshark_follow(["-r", pcap, "-o", 'uat:rsa_keys:"%s",""' % pem] + decode_as([port]),
                             "tls", 0, port)[:2]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_crafted(name, pcap, keys, port, want_c, want_s, stats, key):
    got = follow(pcap, keys, [port], 0, port)
    if got != (want_c, want_s):
        raise SystemExit("%s: tshark decrypts %d + %d bytes, not the %d + %d written" % (
            name, len(got[0]), len(got[1]), len(want_c), len(want_s)))
    print("%s: tshark follow,tls,raw,0 gives back %d + %d bytes, exactly what was written" % (name, len(got[0]), len(got[1])))
    fins = tls_fields(pcap, keys, [port], "tls.handshake.type == 20", ["frame.number", "tcp.srcport"])
    alerts = tls_fields(pcap, keys, [port], "tls.alert_message.desc == 0", ["frame.number", "tcp.srcport", "tls.alert_message.level"])
    if len(fins) != 2 or sorted(int(r[1]) == port for r in alerts) != [False, True]:
        raise SystemExit("%s: decrypted Finished %s, close_notify %s" % (name, fins, alerts))
    print("%s: tshark shows both Finished messages (frames %s) and close_notify each way (frames %s, level %s)" % (
        name, ", ".join(r[0] for r in fins), ", ".join(r[0] for r in alerts), "/".join(r[2] for r in alerts)))
    none = follow(pcap, None, [port], 0, port)
    if any(none):
        raise SystemExit("%s: decrypts without a key log" % name)
    problems = expert_problems(pcap, keys, [port])
    if problems:
        raise SystemExit("%s: tshark warns: %s" % (name, problems))
    print("%s: no expert warnings or errors; %d + %d TLS records" % (name, *stats["records"]))
    if follow_with_rsa_key(pcap, key, port) != (want_c, want_s):
        raise SystemExit("%s: the RSA key does not decrypt it to the same bytes" % name)
    print("%s: with the server's RSA key instead of the key log (ClientKeyExchange -> pre-master -> "
          "master secret), tshark gives back the same bytes" % name)


def main():
    os.makedirs(OUT, exist_ok=True)
    path = lambda n: os.path.join(OUT, n)                            # noqa: E731

    # Fixtures 2 and 3 (crafted, deterministic).
    key = make_rsa_key(random.Random(2048))
    cert_der = make_cert(key, "crafted.example").public_bytes(serialization.Encoding.DER)
    frames, keys, dstats = make_deflate(cert_der, key)
    write_pcap(path("tls12_deflate.pcap"), frames)
    open(path("tls12_deflate.keys"), "w").write(keys)
    print("tls12_deflate.pcap: %d packets; records (plaintext -> compressed bytes) client %s, server %s" % (
        len(frames), dstats["client"], dstats["server"]))
    frames, keys, sstats = make_ssl3(cert_der, key)
    write_pcap(path("ssl3.pcap"), frames)
    open(path("ssl3.keys"), "w").write(keys)
    print("ssl3.pcap: %d packets" % len(frames))

    # Fixture 1 (recorded) and 4.
    record_dhe(path("tls12_dhe_cbc.pcap"), path("tls12_dhe_cbc.keys"))
    if os.path.exists(path("tls_dsb.pcapng")):
        os.remove(path("tls_dsb.pcapng"))
    subprocess.run(["editcap", "--inject-secrets", "tls," + path("tls12_dhe_cbc.keys"), path("tls12_dhe_cbc.pcap"),
                    path("tls_dsb.pcapng")], check=True, timeout=60)

    # Checks.
    c, s = deflate_messages()
    check_crafted("tls12_deflate.pcap", path("tls12_deflate.pcap"), path("tls12_deflate.keys"), DEFLATE_PORT,
                  b"".join(c), b"".join(s), dstats, key)
    comp = tls_fields(path("tls12_deflate.pcap"), None, [DEFLATE_PORT], "tls.handshake.type == 2", ["tls.handshake.comp_method"])
    print("tls12_deflate.pcap: ServerHello compression method %s" % comp[0][0])
    c, s = ssl3_messages()
    check_crafted("ssl3.pcap", path("ssl3.pcap"), path("ssl3.keys"), SSL3_PORT, b"".join(c), b"".join(s), sstats, key)

    ports = [p for p, _, _ in DHE_SUITES]
    streams = streams_by_server_port(path("tls12_dhe_cbc.pcap"))
    hellos = {int(r[0]): r for r in tls_fields(path("tls12_dhe_cbc.pcap"), None, ports, "tls.handshake.type == 2",
                                                ["tcp.srcport", "tls.handshake.version", "tls.handshake.ciphersuite",
                                                 "tls.handshake.extension.type"])}
    recs = {}
    for srcport, dstport, types in tls_fields(path("tls12_dhe_cbc.pcap"), path("tls12_dhe_cbc.keys"), ports, "tls",
                                              ["tcp.srcport", "tcp.dstport", "tls.record.content_type"]):
        server = int(srcport) if int(srcport) in ports else int(dstport)
        recs.setdefault(server, [[], []])[int(srcport) == server] += [int(t) for t in types.split(",")]
    for name, keys in (("tls12_dhe_cbc.pcap", path("tls12_dhe_cbc.keys")), ("tls_dsb.pcapng", None)):
        for port, suite, code in DHE_SUITES:
            want = tuple(b"".join(m) for m in dhe_messages(port))
            got = follow(path(name), keys, ports, streams[port], port)
            if got != want:
                raise SystemExit("%s port %d: tshark decrypts %r, not %r" % (name, port, got, want))
            if name == "tls12_dhe_cbc.pcap":
                _, version, cs, exts = hellos[port]
                if int(cs, 0) != code or int(version, 0) != 0x0303:
                    raise SystemExit("port %d: ServerHello %s %s" % (port, version, cs))
                exts = [int(x) for x in exts.split(",")] if exts else []
                print("%s port %d (stream %d): %s (0x%04X), encrypt_then_mac %s, extended_master_secret %s; "
                      "TLS records (content types) client %s, server %s; "
                      "tshark gives back %d + %d bytes, exactly what was written" % (
                          name, port, streams[port], suite, code, "yes" if 22 in exts else "no",
                          "yes" if 23 in exts else "no", recs[port][0], recs[port][1], len(got[0]), len(got[1])))
        if name == "tls_dsb.pcapng":
            print("tls_dsb.pcapng: tshark (no key log option) gives back every connection's bytes")


if __name__ == "__main__":
    main()
