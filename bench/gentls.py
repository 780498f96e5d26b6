#!/usr/bin/env python3
"""Write a seeded synthetic TLS 1.3 capture (TLS_AES_128_GCM_SHA256) carrying the game
protocol of gengame.py (seed 000: [u32 BE total length, header included][u16 BE id][body],
server port 8000), and the NSS key log that decrypts it. Needs python3-cryptography.

Usage: gentls.py OUT.pcap N KEYS [CONNECTIONS]     (N game messages, 16 connections by default)

Each connection opens with TCP's handshake, then a TLS 1.3 handshake: a ClientHello (SNI
game.example, ALPN game/1, x25519 key share, supported_versions 1.3, one suite 0x1301), a
ServerHello, the server's ChangeCipherSpec and one encrypted record holding
EncryptedExtensions (ALPN game/1), Certificate (a self-signed Ed25519 certificate for
game.example, made from a seeded key), CertificateVerify (an Ed25519 signature over the
transcript hash) and Finished; the client's ChangeCipherSpec and encrypted Finished; then a
NewSessionTicket from the server. The secrets are not the outcome of a key exchange (the key
shares are random bytes): each connection draws its four traffic secrets from the seeded
random stream and writes them to KEYS as CLIENT_HANDSHAKE_TRAFFIC_SECRET,
SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0 and SERVER_TRAFFIC_SECRET_0 lines
under its client random. Record protection is RFC 8446's: key = HKDF-Expand-Label(secret,
"key", "", 16), iv = HKDF-Expand-Label(secret, "iv", "", 12) (section 7.3), nonce = iv XOR the
64-bit record sequence number left-padded to 12 bytes (5.3), AAD = the record header
23 03 03 len (5.2), plaintext = content + its content type byte + no padding. Finished
values are HMACs with the finished keys over the transcript hash (4.4.4), as a peer would
compute them from these secrets.

The game messages are drawn as gengame.py draws them (the same message kinds and fields;
a random connection and direction each). Plaintext is gathered per connection and direction
and sent when it reaches a threshold drawn from (1, 40, 200, 1448, 4000) bytes: then it is
cut into TLS records, one record for all of it (several game frames in one record) or, a
third of the time, two or three records cut at random points (a game frame split across
records); records are at most 16,384 bytes of plaintext. The records go out in TCP segments
of at most 1448 bytes (so records are split across segments and segments hold several
records). Each connection ends with a close_notify alert each way (encrypted), then FINs.

The benchmark's tshark command:

    tshark -r OUT.pcap -o tls.keylog_file:KEYS -d tcp.port==8000,tls \
        -X lua_script:bench/game.lua -X lua_script:bench/tls_game.lua -V

bench/game.lua (unchanged) registers its dissector on tcp.port 8000, and tshark 4.0 does not
hand TLS's decrypted data to it by itself: `-d tcp.port==8000,tls` makes port 8000 TLS, and
the decrypted data then goes to the dissector the tls.port table names for the port (the
ALPN game/1 is in no table). `-d tls.port==8000,game` is refused ("Protocol "game" isn't
valid for layer type "tls.port"": -d only accepts dissectors registered for decode-as in that
table), so bench/tls_game.lua, loaded after game.lua, adds game.lua's dissector to the
tls.port table for 8000. Its dissect_tcp_pdus reassembles frames split across TLS records
(TLS desegments for it) and the direction test (pinfo.dst_port == 8000) still holds.

With `--check` as the last argument the script runs that command with `-T fields -e game.id`
instead of -V, and fails unless tshark decodes exactly N game messages with the same count
of each id as written (about a minute for N = 200,000).
"""
import datetime, hashlib, hmac, os, random, struct, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pcapgen import Connection, PcapWriter

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.x509.oid import NameOID

args = [a for a in sys.argv[1:] if a != "--check"]
check = "--check" in sys.argv[1:]
if len(args) < 3:
    raise SystemExit("usage: gentls.py OUT.pcap N KEYS [CONNECTIONS] [--check]")
out, total, keys_path = args[0], int(args[1]), args[2]
nconn = int(args[3]) if len(args) > 3 else 16
rng = random.Random(1301)
MSS = 1448
PORT = 8000
SERVER = bytes([10, 0, 0, 1])
SNI = b"game.example"
ALPN = b"game/1"
TEXT = ["enter", "boss room", "line 2", "欢迎 welcome", "captain", "retry", "ok", "scene 7"]
MAX_RECORD = 16384


# ---------------------------------------------------------------- game messages (as gengame.py)

def s(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


def message(d):
    if d == 0:
        if rng.random() < 0.5:
            return 10002, struct.pack(">Q", rng.randrange(1 << 62))
        return 20001, struct.pack(">BI", rng.randrange(256), rng.randrange(1 << 32)) + s(rng.choice(TEXT))
    if rng.random() < 0.5:
        return 30005, struct.pack(">iH", rng.randrange(-500, 90000), rng.randrange(1000)) + s(rng.choice(TEXT))
    return 20001, struct.pack(">BIBBBI", rng.choice([0, 1, 2, 3]), rng.randrange(1 << 32), rng.randrange(256),
                              rng.choice([0, 10]), rng.randrange(256), rng.randrange(1 << 20)) + s(rng.choice(TEXT))


# ---------------------------------------------------------------- TLS 1.3 pieces

def hkdf_expand_label(secret, label, context, length):
    full = b"tls13 " + label
    info = struct.pack(">H", length) + bytes([len(full)]) + full + bytes([len(context)]) + context
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(secret, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:length]


def u8v(b):
    return bytes([len(b)]) + b


def u16v(b):
    return struct.pack(">H", len(b)) + b


def u24v(b):
    return struct.pack(">I", len(b))[1:] + b


def ext(kind, body):
    return struct.pack(">H", kind) + u16v(body)


def handshake(kind, body):
    return bytes([kind]) + u24v(body)


def record(ctype, body, version=0x0303):
    return struct.pack(">BHH", ctype, version, len(body)) + body


class Protect:
    """One direction's record protection under one traffic secret."""

    def __init__(self, secret):
        self.aead = AESGCM(hkdf_expand_label(secret, b"key", b"", 16))
        self.iv = int.from_bytes(hkdf_expand_label(secret, b"iv", b"", 12), "big")
        self.seq = 0

    def seal(self, content, ctype):
        inner = content + bytes([ctype])
        header = struct.pack(">BHH", 23, 0x0303, len(inner) + 16)
        nonce = (self.iv ^ self.seq).to_bytes(12, "big")
        self.seq += 1
        return header + self.aead.encrypt(nonce, inner, header)


def make_certificate():
    key = Ed25519PrivateKey.from_private_bytes(random.Random(8000).randbytes(32))
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "game.example")])
    start = datetime.datetime(2023, 11, 14, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(8000).not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("game.example")]), critical=False)
            .sign(key, None))
    return key, cert.public_bytes(serialization.Encoding.DER)


CERT_KEY, CERT_DER = make_certificate()
STATS = {"records": 0, "records with several frames": 0, "frames split across records": 0}


class TlsConnection:
    """A TCP connection (pcapgen.Connection) with a TLS 1.3 session over it."""

    def __init__(self, write, client, cport, keylog):
        self.tcp = Connection(write, client, cport, SERVER, PORT, (rng.randrange(1 << 32), rng.randrange(1 << 32)), MSS)
        self.plain = [bytearray(), bytearray()]
        self.ends = [[], []]               # where the gathered frames end, per direction
        cr = rng.randbytes(32)
        secrets = {k: rng.randbytes(32) for k in ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                                                  "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")}
        for k, v in secrets.items():
            keylog.append("%s %s %s" % (k, cr.hex(), v.hex()))
        sid = rng.randbytes(32)
        ch = handshake(1, struct.pack(">H", 0x0303) + cr + u8v(sid) + u16v(struct.pack(">H", 0x1301)) + u8v(b"\x00") + u16v(
            ext(0, u16v(b"\x00" + u16v(SNI))) +
            ext(10, u16v(struct.pack(">H", 0x001d))) +
            ext(13, u16v(struct.pack(">HHH", 0x0807, 0x0403, 0x0804))) +
            ext(16, u16v(u8v(ALPN))) +
            ext(43, u8v(struct.pack(">H", 0x0304))) +
            ext(45, u8v(b"\x01")) +
            ext(51, u16v(struct.pack(">H", 0x001d) + u16v(rng.randbytes(32))))))
        sh = handshake(2, struct.pack(">H", 0x0303) + rng.randbytes(32) + u8v(sid) + struct.pack(">HB", 0x1301, 0) + u16v(
            ext(43, struct.pack(">H", 0x0304)) +
            ext(51, struct.pack(">H", 0x001d) + u16v(rng.randbytes(32)))))
        ee = handshake(8, u16v(ext(16, u16v(u8v(ALPN)))))
        cert = handshake(11, u8v(b"") + u24v(u24v(CERT_DER) + u16v(b"")))
        transcript = ch + sh + ee + cert
        signed = b" " * 64 + b"TLS 1.3, server CertificateVerify\x00" + hashlib.sha256(transcript).digest()
        cv = handshake(15, struct.pack(">H", 0x0807) + u16v(CERT_KEY.sign(signed)))
        transcript += cv
        fin_key = hkdf_expand_label(secrets["SERVER_HANDSHAKE_TRAFFIC_SECRET"], b"finished", b"", 32)
        sfin = handshake(20, hmac.new(fin_key, hashlib.sha256(transcript).digest(), hashlib.sha256).digest())
        transcript += sfin
        fin_key = hkdf_expand_label(secrets["CLIENT_HANDSHAKE_TRAFFIC_SECRET"], b"finished", b"", 32)
        cfin = handshake(20, hmac.new(fin_key, hashlib.sha256(transcript).digest(), hashlib.sha256).digest())
        ccs = record(20, b"\x01")
        shs = Protect(secrets["SERVER_HANDSHAKE_TRAFFIC_SECRET"])
        chs = Protect(secrets["CLIENT_HANDSHAKE_TRAFFIC_SECRET"])
        self.keys = [Protect(secrets["CLIENT_TRAFFIC_SECRET_0"]), Protect(secrets["SERVER_TRAFFIC_SECRET_0"])]
        self.tcp.send(0, record(22, ch, 0x0301))
        self.tcp.send(1, record(22, sh) + ccs + shs.seal(ee + cert + cv + sfin, 22))
        self.tcp.send(0, ccs + chs.seal(cfin, 22))
        ticket = handshake(4, struct.pack(">II", 7200, rng.randrange(1 << 32)) + u8v(rng.randbytes(8)) +
                           u16v(rng.randbytes(64)) + u16v(b""))
        self.tcp.send(1, self.keys[1].seal(ticket, 22))

    def flush(self, d):
        """The gathered plaintext as one record, or cut into two or three at random points."""
        data = bytes(self.plain[d])
        ends = self.ends[d]
        self.plain[d].clear()
        self.ends[d] = []
        cuts = []
        if len(data) > 1 and rng.random() < 1 / 3:
            cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.choice([1, 2]))))
        bounds = [0] + cuts + [len(data)]
        wire = bytearray()
        for a, b in zip(bounds, bounds[1:]):
            for i in range(a, b, MAX_RECORD):
                wire += self.keys[d].seal(data[i:min(b, i + MAX_RECORD)], 23)
                STATS["records"] += 1
        STATS["records with several frames"] += sum(
            1 for a, b in zip(bounds, bounds[1:]) if sum(1 for e in ends if a < e <= b) >= 2)
        ends_set = set(ends)
        STATS["frames split across records"] += sum(1 for c in cuts if c not in ends_set)
        self.tcp.send(d, bytes(wire))

    def close(self):
        for d in (0, 1):
            if self.plain[d]:
                self.flush(d)
        self.tcp.send(0, self.keys[0].seal(b"\x01\x00", 21))
        self.tcp.send(1, self.keys[1].seal(b"\x01\x00", 21))
        self.tcp.close()


def main():
    pcap = PcapWriter(out, step_us=5)
    keylog = []
    conns = [TlsConnection(pcap.write, bytes([10, 0, 1 + i // 200, 2 + i % 200]), 41000 + i, keylog)
             for i in range(nconn)]
    written = {}
    for _ in range(total):
        c = rng.choice(conns)
        d = rng.randrange(2)
        mid, body = message(d)
        written[mid] = written.get(mid, 0) + 1
        c.plain[d] += struct.pack(">IH", len(body) + 6, mid) + body
        c.ends[d].append(len(c.plain[d]))
        if len(c.plain[d]) >= rng.choice([1, 40, 200, 1448, 4000]):
            c.flush(d)
    for c in conns:
        c.close()
    pcap.close()
    with open(keys_path, "w") as f:
        f.write("\n".join(keylog) + "\n")
    print("wrote %s: %d game messages on %d TLS 1.3 connections; keys in %s" % (out, total, nconn, keys_path))
    print("application data records: %(records)d, %(records with several frames)d with several frames, "
          "%(frames split across records)d frame cuts between records" % STATS)
    if check:
        here = os.path.dirname(os.path.abspath(__file__))
        res = subprocess.run(["tshark", "-r", out, "-o", "tls.keylog_file:" + keys_path, "-d", "tcp.port==8000,tls",
                              "-X", "lua_script:" + os.path.join(here, "game.lua"),
                              "-X", "lua_script:" + os.path.join(here, "tls_game.lua"), "-T", "fields", "-e", "game.id"],
                             capture_output=True, text=True, timeout=900)
        if res.returncode != 0:
            raise SystemExit("tshark failed: " + res.stderr)
        ids = [int(x) for line in res.stdout.splitlines() for x in line.split(",") if x]
        decoded = {}
        for mid in ids:
            decoded[mid] = decoded.get(mid, 0) + 1
        if len(ids) != total or decoded != written:
            raise SystemExit("tshark decoded %d game messages %r, not %d %r" % (len(ids), decoded, total, written))
        print("tshark + game.lua decoded %d game messages through TLS, as written %r" % (len(ids), written))


if __name__ == "__main__":
    main()
