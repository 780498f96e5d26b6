#!/usr/bin/env bash
# Fuzz the parsers of untrusted input for N seconds each:
#
#     scripts/fuzz.sh TARGET [SECONDS]      # one target (default 60 s)
#     scripts/fuzz.sh all [SECONDS]         # every target in turn
#
# Targets:
#   proto-parser    .proto text
#   protobuf-wire   protobuf bodies, typed and schema-less
#   msgpack         MessagePack bodies, schema-less and objects written as arrays, through the
#                   tree and NDJSON printers and a -Y filter over keys, elements and timestamps
#   hpack           HPACK header blocks through one decoder (RFC 7541: its dynamic table kept from
#                   block to block), its invariants checked after each block
#   grpc            HTTP/2 connections carrying gRPC (frames, header blocks, calls, messages
#                   across DATA frames, compression), through the printers, pairing and a -Y filter
#   socketio        Socket.IO text messages and attachments of a `text socketio` protocol, both
#                   sides, through the tree and NDJSON printers, pairing and a -Y filter
#   text-header     WebSocket text messages read through text headers (decimal fields up to a
#                   delimiter or of N digits, with and without a binary header), both sides,
#                   through the tree and NDJSON printers, pairing and a -Y filter
#   websocket       a WebSocket connection (handshake, frames, with and without
#                   permessage-deflate, mid-stream), through the tree printer
#   http-head       WebSocket handshake heads
#   page-request    what a client sends `framedump ui`'s server: a request head (bounded), the
#                   Host and origin checks, then the live WebSocket's client frames
#   tls             a TCP connection to a TLS port (after a fixed ClientHello) with a key log that
#                   has its secrets: the record layer, the handshake parser, the key schedules,
#                   decryption, the svc deframer and the tree printer; and key log lines
#   tls-sealed      records the harness seals with the connection's keys (SSL 3.0 to TLS 1.2,
#                   AES-CBC, with and without encrypt-then-MAC and DEFLATE): what lies past the
#                   records' authentication, which `tls` cannot forge its way to
#   kcp             datagrams of UDP flows to KCP ports: the flow table, the KCP layer (message and
#                   stream mode), the game deframer and the tree printer
#   link            link/IP/TCP decoding, defragmenting, reassembly
#   reassembly      arbitrary TCP segment sequences into the reassembler, its invariants
#                   checked (bytes delivered in order, never more than sent, buffers bounded)
#   dissector       a dissector file and traffic decoded with it, through both printers
#   deframer        traffic for the shipped dissectors through the deframer, the decoder and
#                   every printer (tree, NDJSON checked line by line as strict JSON, -z tables)
#   guess           sampled streams (boundary and cut flags, up to 8 pieces) through `framedump guess`:
#                   framing search with resync, header fields, body kinds, report, dissector writer
#   pipeline        capture file bytes through libpcap and the whole pipeline with the
#                   shipped dissectors (tree, NDJSON, segments, follow, stream export, summary)
#   ui              capture file bytes indexed by `framedump ui`; every answer the page can ask
#                   for made (rows, each message's tree read back and its byte ranges checked,
#                   sequences, plots, a filter decoded again)
#   pcapng          pcapng file bytes through framedump's own pcapng reader (in memory), then
#                   through libpcap handing over to it, with a BPF filter per link type
#   pcap            classic pcap file bytes through framedump's own pcap reader (in memory),
#                   then through libpcap handing over to it at a record cut to the snaplen
#   display-filter  -Y filters parsed and evaluated
#   ndjson-line     one NDJSON line, as `framedump diff` reads it
#   transform-zlib, transform-gzip, transform-deflate, transform-lz4, transform-lz4-block,
#   transform-xor, transform-base64, transform-aes
#                   one body transform: [variant byte][body] (the variant picks the key, mode
#                   or size rule), the output bounded and behind the header
#   transform-chain up to three transforms with conditions: [chain byte][flags][body]
# Each builds the `framedump-fuzz` harness (an in-process mutation fuzzer), seeds it with
# the inputs below (taken from samples/ and the test fixtures), and runs it. A crash or hang
# leaves the input in fuzz-crash-TARGET (copy it to Tests/FramedumpCoreTests/Fixtures/fuzz/TARGET-what,
# where `swift test` runs it through its target again) and exits 1.
#
# FUZZ_ENGINE=libfuzzer builds the same harness optimised with `-sanitize=fuzzer,address` (coverage-
# guided libFuzzer and AddressSanitizer, in .build-fuzz; the first build takes minutes; the
# two must be one flag: a second -sanitize= replaces the first) and runs it with
# -max_total_time=SECONDS; libFuzzer writes crash-* / timeout-* / oom-* files itself.
# FUZZ_CORPUS=DIR keeps each target's corpus in DIR/TARGET between runs (else a temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:-all}"
seconds="${2:-60}"

engine="${FUZZ_ENGINE:-harness}"
if [ "$engine" = libfuzzer ]; then
  # Optimised as shipped (preconditions and overflow checks stay): many times the executions of a debug build.
  flags=(-c release --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DLIBFUZZER -Xswiftc -use-ld=lld)
else
  flags=()
fi
swift build "${flags[@]}" --product framedump-fuzz >/dev/null
bin="$(swift build "${flags[@]}" --show-bin-path)/framedump-fuzz"

# The framedump command (a debug build), for seeds taken from its --streams export.
framedump() {
  swift build --product framedump >/dev/null
  "$(swift build --show-bin-path)/framedump" "$@"
}

run() {
  local t="$1"; shift
  if [ "$engine" = libfuzzer ]; then
    # libFuzzer takes corpus folders: gather the seeds into one.
    local corpus
    if [ -n "${FUZZ_CORPUS:-}" ]; then corpus="$FUZZ_CORPUS/$t"; mkdir -p "$corpus"; else corpus="$(mktemp -d)"; fi
    for s in "$@"; do
      if [ -d "$s" ]; then find "$s" -type f -exec cp {} "$corpus/" \; ; else cp "$s" "$corpus/"; fi
    done
    # No leak check (per input or at exit): the schemas a target loads once stay for the
    # process's life and their .proto tables refer to each other; growth per input still ends
    # as an oom-* file.
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" FRAMEDUMP_FUZZ_TARGET="$t" "$bin" \
      -max_total_time="$seconds" -timeout=10 -detect_leaks=0 "$corpus"
    [ -n "${FUZZ_CORPUS:-}" ] || rm -rf "$corpus"
  else
    "$bin" "$t" "$seconds" "$@"
  fi
}

fuzz_one() {
  case "$1" in
    proto-parser)
      run proto-parser Tests/FramedumpCoreTests/Fixtures/proto Dissectors/im.proto ;;
    protobuf-wire)
      # Seeds: real bodies encoded by protoc from the test schema (when protoc is here).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      if command -v protoc >/dev/null; then
        printf 'i32: -7 text: "hi" inner { label: "x" deltas: -1 } packed_ints: [1, 150] scores { key: "a" value: 1 } child { child { i32: 1 } }' |
          protoc -I Tests/FramedumpCoreTests/Fixtures/proto --encode=test.kinds.Kinds kinds.proto > "$seeds/kinds.bin"
        # The first byte picks typed or schema-less decoding (see FuzzProtobuf.protobufWire).
        { printf '\001'; cat "$seeds/kinds.bin"; } > "$seeds/typed.bin"
      fi
      run protobuf-wire "$seeds" ;;
    msgpack)
      # Seeds: every body of samples/msgpack.pcap (u32 length, u16 cmd, body), behind the
      # choice byte (2: an object written as an array, cmd 3).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      framedump -r samples/msgpack.pcap -d Dissectors --streams "$seeds/s" -q >/dev/null 2>&1 || true
      python3 - "$seeds" <<'PY'
import glob, sys
out = sys.argv[1]
n = 0
for f in sorted(glob.glob(out + "/s/*")):
    b = open(f, "rb").read()
    while len(b) >= 6:
        size, cmd = int.from_bytes(b[0:4], "big"), int.from_bytes(b[4:6], "big")
        open("%s/body%d" % (out, n), "wb").write(bytes([2 if cmd == 3 else 0]) + b[6:6 + size])
        n += 1
        b = b[6 + size:]
PY
      rm -rf "$seeds"/s
      run msgpack "$seeds" ;;
    hpack)
      # Seeds: each session of the HPACK fixture (another encoder's blocks), as the target
      # reads them: the allowed-size byte, then [u16 length][block] per block.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" <<'PY'
import json, sys
f = json.load(open("Tests/FramedumpCoreTests/Fixtures/hpack/sessions.json"))
for n, session in enumerate(f["sessions"]):
    out = bytearray([4])
    for block in session:
        b = bytes.fromhex(block["hex"])
        out += len(b).to_bytes(2, "big") + b
    open("%s/session%d" % (sys.argv[1], n), "wb").write(out)
PY
      run hpack "$seeds" ;;
    grpc)
      # Seeds: samples/grpc.pcap's connections and the h2c upgrade fixture's, each the client's
      # stream then the server's as records of at most 32 KiB behind their 2-byte side-and-length
      # header (see FuzzGRPC).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      framedump -r samples/grpc.pcap --streams "$seeds/grpc" -q >/dev/null 2>&1 || true
      framedump -r Tests/FramedumpCoreTests/Fixtures/grpc_upgrade.pcap --streams "$seeds/grpc" -q >/dev/null 2>&1 || true
      python3 - "$seeds" <<'PY'
import glob, sys
out = sys.argv[1]
for i, c2s in enumerate(sorted(glob.glob(out + "/grpc/*.c2s"))):
    rec = bytearray()
    for side, path in ((0, c2s), (0x8000, c2s[:-4] + ".s2c")):
        b = open(path, "rb").read()
        for k in range(0, len(b), 32767):
            part = b[k:k + 32767]
            rec += (side | len(part)).to_bytes(2, "big") + part
    open("%s/conn%d.seed" % (out, i), "wb").write(rec)
PY
      rm -rf "$seeds"/grpc
      run grpc "$seeds" ;;
    socketio)
      # Seeds: samples/socketio.messages.json, each connection's messages as the peers wrote
      # them, NUL-separated behind their side and kind byte (see FuzzSocketIO).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" <<'PY'
import json, sys
log = json.load(open("samples/socketio.messages.json"))
for n, c in enumerate(log["connections"]):
    parts = []
    for side, d in ((0, "c2s"), (1, "s2c")):
        for m in c[d]:
            body = m["text"].encode() if "text" in m else bytes.fromhex(m["binary"])
            parts.append(bytes([side | (0 if "text" in m else 2)]) + body.replace(b"\0", b""))
    open("%s/conn%d" % (sys.argv[1], n), "wb").write(b"\0".join(parts))
PY
      run socketio "$seeds" ;;
    text-header)
      # Seeds: samples/wsgame.messages.json, each connection's messages as the peers wrote
      # them, NUL-separated behind their side and kind byte, for each of the four protocols.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" <<'PY'
import json, sys
log = json.load(open("samples/wsgame.messages.json"))
for n, c in enumerate(log["connections"]):
    parts = []
    for side, d in ((0, "c2s"), (1, "s2c")):
        for m in c[d]:
            parts.append(bytes([side | (0 if m["opcode"] == "text" else 2)]) + bytes.fromhex(m["payload"]).replace(b"\0", b""))
    for which in range(4):
        open("%s/conn%d-%d" % (sys.argv[1], n, which), "wb").write(bytes([which << 2 | n]) + b"\0".join(parts))
PY
      run text-header "$seeds" ;;
    websocket|http-head)
      # Seeds: the WebSocket samples' reassembled streams, behind the 3 choice bytes.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      for s in bridge websocket-deflate; do
        framedump -r "samples/$s.pcap" --streams "$seeds/$s" -q >/dev/null 2>&1 || true
        for f in "$seeds/$s"/*.c2s; do [ -f "$f" ] && { printf '\001\100\007'; cat "$f"; } > "$seeds/$s.seed"; done
      done
      rm -rf "$seeds"/bridge "$seeds"/websocket-deflate
      run "$1" "$seeds" ;;
    page-request)
      # Seeds: the heads a browser sends the page (a fetch, the live WebSocket with a ping and
      # a close after it), and a head cut short.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      printf 'GET /api/messages?from=0&count=200&filter=game.Res%%20%%3D%%3D%%201 HTTP/1.1\r\nHost: 127.0.0.1:8800\r\nSec-Fetch-Site: same-origin\r\n\r\n' > "$seeds/fetch"
      { printf 'GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:8800\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:8800\r\n\r\n'
        printf '\211\202\001\002\003\004\151\153\210\202\001\002\003\004\002\352'; } > "$seeds/live"
      printf 'GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' > "$seeds/cut"
      run "$1" "$seeds" ;;
    tls)
      # Seeds: the TLS samples' connections, the client's stream after its ClientHello record
      # and the server's, as [split byte][segment size byte][client bytes][server bytes].
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      for s in tls13 tls12; do
        framedump -r "samples/$s.pcap" --streams "$seeds/$s" -q >/dev/null 2>&1 || true
      done
      python3 - "$seeds" <<'PY'
import glob, os, sys
out = sys.argv[1]
for i, c2s in enumerate(sorted(glob.glob(out + "/*/*.c2s"))):
    a = open(c2s, "rb").read()
    b = open(c2s[:-4] + ".s2c", "rb").read()
    a = a[5 + (a[3] << 8 | a[4]):]  # without the ClientHello record
    total = len(a) + len(b)
    open("%s/conn%d.seed" % (out, i), "wb").write(bytes([min(255, len(a) * 255 // max(1, total)), 1]) + a + b)
PY
      rm -rf "$seeds"/tls13 "$seeds"/tls12
      run "$1" "$seeds" ;;
    tls-sealed)
      # Seeds: each version with and without encrypt-then-MAC and DEFLATE (zlib streams flushed
      # per record, as OpenSSL compressed): a Finished each way, then svc messages both ways.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" <<'PY'
import struct, sys, zlib
out = sys.argv[1]
finished = bytes([20, 0, 0, 12]) + bytes(12)
svc = lambda sid, body: struct.pack(">II", sid, len(body)) + body
for version in range(4):
    for etm in ([0] if version == 0 else [0, 8]):
        for deflate in (0, 4):
            z = [zlib.compressobj(), zlib.compressobj()]
            def rec(server, kind, body):
                if deflate:
                    c = z[server]
                    body = c.compress(body) + c.flush(zlib.Z_SYNC_FLUSH)
                return bytes([kind << 1 | server, len(body)]) + body
            data = bytes([version | etm | deflate | 0x20])
            data += rec(0, 2, finished) + rec(1, 2, finished)
            data += rec(0, 3, svc(7, b"login please")) + rec(1, 3, svc(8, b"ok " * 20)) + rec(0, 1, b"\x01\x00")
            open("%s/v%d-e%d-d%d.seed" % (out, version, etm, deflate), "wb").write(data)
PY
      run "$1" "$seeds" ;;
    kcp)
      # Seeds: the KCP sample's datagrams per server port, as [port and flows byte] then
      # [direction byte][u16le length][datagram] records (see FuzzKCP.run).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" samples/kcp.pcap <<'PY'
import struct, sys
out, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
order = "<" if data[:4] == bytes.fromhex("d4c3b2a1") else ">"
i, seeds = 24, {8100: b"\x00", 8101: b"\x01"}
while i + 16 <= len(data):
    _, _, caplen, _ = struct.unpack(order + "IIII", data[i:i + 16])
    pkt = data[i + 16:i + 16 + caplen]
    i += 16 + caplen
    ip = pkt[14:]
    if len(ip) < 28 or ip[9] != 17:
        continue
    ihl = (ip[0] & 15) * 4
    sport, dport = struct.unpack(">HH", ip[ihl:ihl + 4])
    payload = ip[ihl + 8:]
    port = dport if dport in seeds else sport
    if port in seeds:
        seeds[port] += bytes([0 if dport == port else 1]) + struct.pack("<H", len(payload)) + payload
for port, b in seeds.items():
    open("%s/%d" % (out, port), "wb").write(b)
PY
      run "$1" "$seeds" ;;
    link)
      # Seeds: the packets of each sample and fixture as [link type index][u16 length][bytes]...
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" samples/*.pcap Tests/FramedumpCoreTests/Fixtures/*.pcap <<'PY'
import struct, sys
out = sys.argv[1]
for n, path in enumerate(sys.argv[2:]):
    data = open(path, "rb").read()
    if len(data) < 24 or data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        continue
    seed, at = bytearray([0]), 24
    while at + 16 <= len(data) and len(seed) < 20000:
        incl = struct.unpack("<I", data[at + 8:at + 12])[0]
        seed += struct.pack(">H", min(incl, 65535)) + data[at + 16:at + 16 + incl]
        at += 16 + incl
    open("%s/%d.seed" % (out, n), "wb").write(bytes(seed))
PY
      run link "$seeds" ;;
    dissector)
      # Seeds: each shipped dissector file, a NUL, then a sample's client stream.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      for d in Dissectors/game.dissector Dissectors/svc.dissector Dissectors/bridge.dissector Dissectors/zgame.dissector \
               Dissectors/zookeeper.dissector Dissectors/postgresql.dissector Dissectors/mysql.dissector; do
        { cat "$d"; printf '\000\020'; head -c 600 samples/game.pcap | tail -c 300; } > "$seeds/$(basename "$d").seed"
      done
      # And dissectors with varints (header fields varint, svarint, varint(N), fields after one,
      # an id from a bit field; body fields Varint, Svarint, String(varint), Bytes(varint), arrays
      # with a varint count), each with frames of its protocol.
      python3 - "$seeds" <<'PY'
import sys
out = sys.argv[1]
def v(n):
    b = bytearray()
    while True:
        if n < 0x80: return bytes(b + bytes([n]))
        b.append(n & 0x7f | 0x80); n >>= 7
zz = lambda n: v(n << 1 if n >= 0 else (-n << 1) - 1)
body = v(300) + zz(-2) + v(5) + b"hello" + v(2) + b"\x01\x02" + v(2) + b"\x00\x05\x00\x06" + v(0xffffffff)
items = v(2) + b"\x00\x01\x07" + b"\x00\x02\x08"
seeds = {
    "mqtt": ("protocol mqtt { header { uint8 fixed { type = 0xf0; flags = 0x0f; } varint(4) remaining; }\n"
             "body_length = remaining; message_id = fixed.type; }\nMessage PINGREQ = 12 c2s { }\n"
             "Message PUBLISH = 3 { String(u16) topic; Bytes(rest) payload; }\n"
             "Message M = 5 { Varint a; Svarint b; String(varint) name; Bytes(varint) blob; Uint16[varint] ids; Varint32 c; }\n",
             [b"\x30" + v(7) + b"\x00\x01tabcd", b"\xc0\x00", b"\x50" + v(len(body)) + body, b"\x52" + v(200) + bytes(200)]),
    "zigzag": ("protocol z { header { uint8 magic == 0xa5; svarint delta; varint(4) length; uint16 id; }\n"
               "body_length = length; message_id = id; }\nMessage Ping = 7 { Uint8 x; Varint32 y; }\n"
               "Message Item { Uint16 a; Uint8 b; }\nMessage List = 8 { Item[varint] items; String(varint) s; }\n",
               [b"\xa5" + zz(-300) + v(2) + b"\x00\x07\x2a\x01", b"\xa5" + zz(9) + v(len(items) + 3) + b"\x00\x08" + items + v(2) + b"hi"]),
    "varint32": ("protocol c { header { varint32 length; uint8 kind; } body_length = length - 1; message_id = kind; max_frame 100000; }\n"
                 "Message A = 1 { Varint n; Svarint s; Bytes(varint) b; }\nMessage B = 2 { Uint16[varint] ids; }\n",
                 [v(len(body[:7]) + 1) + b"\x01" + body[:7], v(1 + 1 + 2 * 70) + b"\x02" + v(70) + bytes(140), v(1) + b"\x03"]),
}
# A text protocol whose lines announce counted payloads (`payload`), one holding CR LF.
seeds["counted"] = ("protocol t { frame_end \"\\r\\n\"; payload \"set\" word 5; payload \"MSG\" last; max_frame 4096; body text; }\n",
                    [b"set a 0 0 5\r\nhello\r\n", b"STORED\r\n", b"set b 0 0 4 noreply\r\n\r\nx\r\r\n",
                     b"MSG s 1 r 3\r\nabc\r\n", b"set c 0 0 99999\r\n", b"END\r\n"])
# Replies typed by their requests (`answers`): requests one way, replies (no id) the other.
import struct
fr = lambda cmd, seq, body: struct.pack(">IHI", 10 + len(body), cmd, seq) + body
answers = ("protocol rq { header { uint32 length; uint16 cmd; uint32 seq; } frame_length = length; message_id = cmd; }\n"
           "Message Q = 1 c2s { Uint8 a; }\nMessage R answers Q by seq { Uint8 r; Uint32 p; }\n"
           "Message G = 2 c2s { Uint32 item; Uint32 tag; }\nMessage I answers G by tag = seq { Uint16 n; }\nMessage N = 50 s2c { Uint8 x; }\n")
req = fr(1, 1, b"\x07") + fr(2, 2, struct.pack(">II", 42, 77)) + fr(1, 3, b"\x08")
rep = fr(50, 5, b"\x01") + fr(0, 77, b"\x00\x03") + fr(0, 1, b"\x00\x00\x00\x00\x09") + fr(0, 99, b"\x01\x02")
open("%s/answers.seed" % out, "wb").write(answers.encode() + b"\0" + bytes([len(req)]) + req + rep)
# Headers per direction and first frames of their own (ZooKeeper's shape): connect messages
# with a length only, requests [len][xid][type], replies [len][xid][zxid][err] typed by their
# xid, a negative id of the replies' own id field.
zk = ("protocol zk { port 8000; header c2s { int32 length; int32 xid; int32 type; } header s2c { int32 length; int32 xid; int64 zxid; int32 err; }\n"
      "frame_length = length + 4; message_id c2s = type; message_id s2c = xid;\n"
      "first c2s { header { int32 length; } message C; } first s2c { header { uint16 length; } frame_length = length; message R; } }\n"
      "Message C { Int32 v; Bytes(u32) p; }\nMessage R { Uint8 ok; }\nMessage G = 4 c2s { String(u32) path; Bool w; }\n"
      "Message GR answers G by xid { Bytes(u32) data when err == 0; }\nMessage W = -1 s2c { Int32 t; String(u32) path; }\n")
zf = lambda p: struct.pack(">i", len(p)) + p
zc = zf(struct.pack(">i", 0) + struct.pack(">i", 3) + b"abc") + zf(struct.pack(">ii", 7, 4) + struct.pack(">i", 2) + b"/a\x01")
zs = struct.pack(">H", 3) + b"\x01" + zf(struct.pack(">iqi", -1, -1, 0) + struct.pack(">ii", 3, 2) + b"/a") + zf(struct.pack(">iqi", 7, 9, 0) + struct.pack(">i", 1) + b"x")
open("%s/zk.seed" % out, "wb").write(zk.encode() + b"\0" + bytes([len(zc)]) + zc + zs)
# Frames that are what their message takes (`frame_length = message`), with Decimal(crlf)
# counts, delimited strings and a message nested in itself through a counted array (RESP).
resp = ("protocol resp { port 8000; header { uint8 type; } frame_length = message; message_id = type; max_frame 65536; }\n"
        "Message B { Decimal(crlf) length; String(length) data; String(crlf) end when length != -1; }\n"
        "Message V { Uint8 type; String(crlf) text when type == 0x2b; Decimal(crlf) i when type == 0x3a; B bulk when type == 0x24;\n"
        "  Decimal(crlf) count when type == 0x2a; V[count] elements when type == 0x2a; }\n"
        "Message Array = 0x2a { Decimal(crlf) count; V[count] elements; }\nMessage Simple = 0x2b { String(crlf) text; }\n"
        "Message Cards = 0x01 { Uint8 n; Uint16[n] cards; String(nul) who; String(\"||\") tag; }\n")
rc = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" + b"*3\r\n*1\r\n:5\r\n$-1\r\n+OK\r\n" + b"\x01\x02\x00\x07\x00\x09ann\x00x||"
rs = b"+OK\r\n" + b"*-1\r\n" + b"*1\r\n$2\r\nhi\r\n"
open("%s/resp.seed" % out, "wb").write(resp.encode() + b"\0" + bytes([len(rc)]) + rc + rs)
for name, (text, frames) in seeds.items():
    c2s = b"".join(frames)
    # [split byte][client bytes][server bytes]: the same frames both ways.
    traffic = bytes([len(c2s) % 256]) + c2s + c2s
    open("%s/%s.seed" % (out, name), "wb").write(text.encode() + b"\0" + traffic)
PY
      # And the new constructs with their traffic: Thrift's dissectors (arrays up to a stop
      # element, `when parent.F`, `[text]`; framed and `frame_length = message`), the included
      # messages inlined, with samples/thrift.messages.json's second connection of each port; a
      # small dissector of the same constructs; and PostgreSQL's first frames (`message X when
      # F == N;`, `again after X;`, `first s2c after X`), the shipped file and a small one, with a
      # client that asks for TLS first and is refused.
      python3 - "$seeds" <<'PY'
import json, struct, sys
out = sys.argv[1]
def write(name, text, c2s, s2c):
    assert len(c2s) < 256
    open("%s/%s.seed" % (out, name), "wb").write(text.encode() + b"\0" + bytes([len(c2s)]) + c2s + s2c)
included = open("Dissectors/thrift_messages.txt").read()
msgs = json.load(open("samples/thrift.messages.json"))
for name, port, conn in (("thrift", 9090, 2), ("thrift-buffered", 9091, 4)):
    text = open("Dissectors/%s.dissector" % name).read().replace('include "thrift_messages.txt";', included)
    c2s, s2c = b"", b""
    for m in msgs:
        if (m["port"], m["connection"]) != (port, conn): continue
        b = bytes.fromhex(m["hex"])
        if port == 9090: b = struct.pack(">I", len(b)) + b
        if m["direction"] == "c2s":
            if len(c2s) + len(b) < 256: c2s += b
        elif len(s2c) < 1500: s2c += b
    write(name, text, c2s, s2c)
small = ("protocol t { port 8000; strings u32; header { uint8 type; } frame_length = message; message_id = type; max_frame 4096; }\n"
         "Message Call = 1 { String name; F[until t == 0] fields; }\n"
         "Message F { Uint8 t; Int16 id when t; Int32 i when t == 8; Bytes(u32) s [text] when t == 11; F[until t == 0] sub when t == 12; M m when t == 13; }\n"
         "Message M { Uint8 kt; Uint8 vt; Int32 n; E[n] entries; }\n"
         "Message E { Int32 ki when parent.kt == 8; Bytes(u32) ks [text] when parent.kt == 11; Int32 vi when parent.vt == 8; F[until t == 0] vs when parent.vt == 12; }\n")
f = lambda t, i, v=b"": bytes([t]) + struct.pack(">h", i) + v
call = (b"\x01" + struct.pack(">I", 4) + b"ping" + f(8, 1, struct.pack(">i", 7)) + f(11, 2, struct.pack(">I", 3) + b"a\x00b")
        + f(12, 3, f(8, 1, struct.pack(">i", 1)) + b"\x00")
        + f(13, 4, bytes([11, 12]) + struct.pack(">i", 2) + struct.pack(">I", 1) + b"k" + f(8, 1, struct.pack(">i", 2)) + b"\x00"
            + struct.pack(">I", 0) + b"\x00") + b"\x00")
write("thrift-small", small, call + call, call)
pg = lambda kind, body: kind + struct.pack(">i", len(body) + 4) + body
startup = struct.pack(">i", 196608) + b"user\0postgres\0database\0postgres\0\0"
startup = struct.pack(">i", len(startup) + 4) + startup
c2s = struct.pack(">ii", 8, 80877103) + startup + pg(b"Q", b"SELECT 1\0") + pg(b"X", b"")
s2c = b"N" + pg(b"R", struct.pack(">i", 0)) + pg(b"K", struct.pack(">ii", 4242, 99)) + pg(b"Z", b"I") + pg(b"C", b"SELECT 1\0") + pg(b"Z", b"I")
write("postgresql-prefer", open("Dissectors/postgresql.dissector").read(), c2s, s2c)
pgsmall = ("protocol pg { port 5432; strings nul; header { uint8 type [hex]; int32 length; } frame_length = length + 1; message_id = type;\n"
           "  first c2s { header { int32 length; uint32 code; } frame_length = length;\n"
           "    message Req when code == 80877103; message Gss when code == 80877104; message Cancel when code == 80877102; message Startup; again after Req, Gss; }\n"
           "  first s2c after Req, Gss { header { uint8 answer [hex]; } frame_length = 1; message Answer; } }\n"
           "Message Startup { String[rest] parameters; }\nMessage Req { }\nMessage Gss { }\nMessage Cancel { Int32 pid; Int32 key; }\nMessage Answer { }\n"
           "Message Query = 0x51 c2s { String query; }\nMessage Auth = 0x52 s2c { Int32 code; Bytes(rest) data; }\nMessage Ready = 0x5a s2c { Uint8 status; }\n")
write("postgresql-small", pgsmall, c2s, s2c)
write("postgresql-small-gssenc", pgsmall, struct.pack(">ii", 8, 80877104) + c2s, b"N" + s2c)
write("postgresql-small-cancel", pgsmall, struct.pack(">iiii", 16, 80877102, 4242, 99), b"")
PY
      run dissector "$seeds" ;;
    reassembly)
      # Seeds: each sample's and fixture's TCP segments as the target's 8-byte records
      # (sequence numbers relative to each side's ISN, payloads cut into pieces of 255 bytes).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" samples/*.pcap Tests/FramedumpCoreTests/Fixtures/*.pcap <<'PY'
import struct, sys
out = sys.argv[1]
def packets(data):
    if len(data) < 24: return
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"): e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"): e = ">"
    else: return
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    link = struct.unpack(e + "I", data[20:24])[0]
    skip = {1: 14, 0: 4, 108: 4, 113: 16, 101: 0, 12: 0}.get(link)
    if skip is None: return
    at = 24
    while at + 16 <= len(data):
        sec, frac, incl = struct.unpack(e + "III", data[at:at + 12])
        yield sec * 1000 + frac // (1000000 if nano else 1000), data[at + 16 + skip:at + 16 + incl]
        at += 16 + incl
def tcp(ip):
    if len(ip) >= 20 and ip[0] >> 4 == 4 and ip[9] == 6:
        return ip[(ip[0] & 15) * 4:struct.unpack(">H", ip[2:4])[0]]
    if len(ip) >= 40 and ip[0] >> 4 == 6 and ip[6] == 6:
        return ip[40:40 + struct.unpack(">H", ip[4:6])[0]]
for n, path in enumerate(sys.argv[2:]):
    seed, isn, server, clients, last = bytearray([0x4C, 0x07]), {}, None, [], None
    for ms, ip in packets(open(path, "rb").read()):
        t = tcp(ip)
        if t is None or len(t) < 20: continue
        sport, dport, seq, ack = struct.unpack(">HHII", t[:12])
        flags, body = t[13], t[(t[12] >> 4) * 4:]
        if server is None: server = dport if flags & 0x12 == 0x02 or sport > dport else sport
        d = 1 if sport == server else 0
        client = dport if d else sport
        if client not in clients:
            if len(clients) == 4: continue
            clients.append(client)
        isn.setdefault((client, d), seq if flags & 2 else seq - 1)
        rel = (seq - isn[(client, d)] - (0 if flags & 2 else 1)) % (1 << 32)
        other = isn.get((client, 1 - d))
        arel = ((ack - other - 1) % (1 << 32)) if other is not None else 0
        dt = 0 if last is None else max(0, min(199, ms - last))
        last = ms
        pieces = [body[i:i + 255] for i in range(0, len(body), 255)] or [b""]
        for k, piece in enumerate(pieces):
            r = (rel + 255 * k) if not flags & 2 else rel
            if r >= 1 << 15 or arel >= 1 << 15: break
            ctl = d | (2 if flags & 2 and k == 0 else 0) | (4 if flags & 1 and k == len(pieces) - 1 else 0)
            ctl |= (8 if flags & 4 else 0) | (16 if flags & 0x10 else 0) | (clients.index(client) << 6)
            seed += struct.pack(">BhBhBB", ctl, r, len(piece), arel, dt if k == 0 else 0, 0)
        if len(seed) > 16000: break
    if len(seed) > 2: open("%s/%d.seed" % (out, n), "wb").write(bytes(seed))
PY
      run reassembly "$seeds" ;;
    deframer)
      # Seeds: each sample's first connection (both streams, from --streams), behind the
      # header that picks its protocol by port: [port index][piece][flags][u16 client length].
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      # (UDP ports too: the target picks among every port, as the protocols list them.)
      # (`port 7700, 7701;` lists several: each is one of the target's ports.)
      ports="$(sed -n 's/^ *\(udp \)\{0,1\}ports\{0,1\} \([0-9][0-9, ]*\);.*/\2/p' Dissectors/*.dissector | tr -s ', ' '\n\n' | grep . | sort -n | tr '\n' ' ')"
      for s in game svc im bridge websocket-deflate game-latency zgame varint memcached-text redis memcached zookeeper postgresql mysql; do
        framedump -r "samples/$s.pcap" --streams "$seeds/$s" -q >/dev/null 2>&1 || true
        c2s="$(ls "$seeds/$s"/*.c2s 2>/dev/null | head -1)"
        [ -n "$c2s" ] || continue
        python3 - "$c2s" "${c2s%.c2s}.s2c" "$ports" "$seeds/$s.seed" <<'PY'
import os, struct, sys
c2s, s2c, ports, out = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
port = c2s.rsplit(".", 2)[-2].rsplit(".", 1)[-1]
a = open(c2s, "rb").read()[:8000]
b = open(s2c, "rb").read()[:8000] if os.path.exists(s2c) else b""
pick = ports.index(port) if port in ports else 0
open(out, "wb").write(struct.pack(">BBBH", pick, 200, 0, len(a)) + a + b)
PY
        rm -rf "${seeds:?}/$s"
      done
      # And samples/thrift.pcap's four connections (framed, port 9090; buffered, `frame_length =
      # message`, port 9091) rebuilt from samples/thrift.messages.json, and a PostgreSQL client
      # with sslmode=prefer (SSLRequest, the server's 'N', the startup message, a query), in
      # segments of 200, 7 and 1 bytes, and one mid-stream.
      python3 - "$seeds" "$ports" <<'PY'
import json, struct, sys
out, ports = sys.argv[1], sys.argv[2].split()
def seed(name, port, a, b, piece=200, flags=0):
    open("%s/%s.seed" % (out, name), "wb").write(struct.pack(">BBBH", ports.index(str(port)), piece, flags, len(a)) + a + b)
streams = {}
for m in json.load(open("samples/thrift.messages.json")):
    b = bytes.fromhex(m["hex"])
    k = (m["port"], m["connection"])
    streams.setdefault(k, [b"", b""])[m["direction"] == "s2c"] += (struct.pack(">I", len(b)) + b) if m["port"] == 9090 else b
for (port, conn), (a, b) in sorted(streams.items()):
    seed("thrift-%d-%d" % (port, conn), port, a[:8000], b[:8000])
    if len(a) < 1000: seed("thrift-%d-%d-p7" % (port, conn), port, a, b, piece=7)
def pg(kind, body): return kind + struct.pack(">i", len(body) + 4) + body
startup = struct.pack(">ii", 0, 196608) + b"user\0postgres\0database\0postgres\0application_name\0psql\0\0"
startup = struct.pack(">i", len(startup)) + startup[4:]
c2s = struct.pack(">ii", 8, 80877103) + startup + pg(b"Q", b"SELECT 1\0") + pg(b"X", b"")
column = b"?column?\0" + struct.pack(">IhIhih", 0, 0, 23, 4, -1, 0)
s2c = (b"N" + pg(b"R", struct.pack(">i", 0)) + pg(b"S", b"server_version\0" + b"16.2\0") + pg(b"K", struct.pack(">ii", 4242, 99))
       + pg(b"Z", b"I") + pg(b"T", struct.pack(">h", 1) + column) + pg(b"D", struct.pack(">hi", 1, 1) + b"1")
       + pg(b"C", b"SELECT 1\0") + pg(b"Z", b"I"))
for piece in (200, 7, 1):
    seed("postgresql-prefer-p%d" % piece, 5432, c2s, s2c, piece=piece)
seed("postgresql-prefer-midstream", 5432, c2s, s2c, flags=1)
# GSSENCRequest refused, then the SSLRequest refused, then the startup message; and a CancelRequest alone.
gss = struct.pack(">ii", 8, 80877104)
seed("postgresql-gssenc-then-ssl", 5432, gss + c2s, b"N" + s2c)
seed("postgresql-cancel", 5432, struct.pack(">iiii", 16, 80877102, 4242, 99), b"")
PY
      run deframer "$seeds" ;;
    state)
      # Seeds: a login, a trade with a deal, a typed reply and a logout in the target's own
      # protocol, the two directions in turns, and more requests than a connection keeps
      # waiting (see FuzzState): [protocol][piece] then runs of [u16: bit 15 the server's |
      # length][bytes].
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" <<'PY'
import struct, sys
def f(cmd, seq, body=b""): return struct.pack(">IHI", 10 + len(body), cmd, seq) + body
def run(server, b): return struct.pack(">H", (0x8000 if server else 0) | len(b)) + b
turns = [(0, f(1, 1, b"\x07")), (1, f(2, 1)), (0, f(5, 2, b"\x00\x03")), (1, f(6, 2)), (0, f(5, 3, b"\x00\x00\x01\x00")),
         (1, f(8, 3, b"\x00\x00\x00\x03") + f(40, 4, b"\x01")), (0, f(10, 4, b"\x00\x00\x00\x2a")), (1, f(0, 42, b"\x00\x05")),
         (1, f(7, 5)), (0, f(9, 6))]
for piece in (1, 7, 200):
    open("%s/st-%d" % (sys.argv[1], piece), "wb").write(bytes([0, piece]) + b"".join(run(s, b) for s, b in turns))
ping = struct.pack(">HHI", 8, 1, 5)
open(sys.argv[1] + "/sp", "wb").write(bytes([1, 3]) + run(0, ping * 2) + run(1, ping) + run(0, ping) + run(1, ping * 2))
# More requests than a connection keeps waiting (1,024): the oldest are forgotten, and the
# responses to them come back unmatched while the newest pair.
asks = b"".join(struct.pack(">HHI", 8, 2 + i, i) for i in range(1100))
answers = b"".join(struct.pack(">HHI", 8, 2 + i, i) for i in list(range(80)) + list(range(1000, 1100)))
open(sys.argv[1] + "/sp-full", "wb").write(bytes([1, 200]) + run(0, asks) + run(1, answers))
PY
      run state "$seeds" ;;
    guess)
      # Seeds: each sample's first connection as the target's records (its two directions).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      for s in game svc im zgame bridge; do
        framedump -r "samples/$s.pcap" --streams "$seeds/$s" -q >/dev/null
        python3 - "$seeds/$s" "$seeds/$s.seed" <<'PY'
import os, struct, sys
d, out = sys.argv[1], sys.argv[2]
names = sorted(n for n in os.listdir(d) if n.endswith((".c2s", ".s2c")))[:2]
data = bytes([0x7f])
for n in names:
    b = open(os.path.join(d, n), "rb").read()[:4000]
    data += struct.pack(">H", len(b)) + b
open(out, "wb").write(data)
PY
        rm -rf "${seeds:?}/$s"
      done
      run guess "$seeds" ;;
    pipeline|ui)
      # Seeds: the samples and fixture captures, each cut after its packets that fit in 16 KB.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      # And zgame messages whose bodies inflate to 64 KiB and more (lines larger than any buffer).
      python3 scripts/make_large_fixtures.py --zgame "$seeds/zgame_large.pcap"
      python3 - "$seeds" samples/*.pcap Tests/FramedumpCoreTests/Fixtures/*.pcap Tests/FramedumpCoreTests/Fixtures/*.pcapng <<'PY'
import os, struct, sys
out = sys.argv[1]
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    if len(data) > 16384 and data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        at = 24
        while at + 16 <= len(data):
            incl = struct.unpack("<I", data[at + 8:at + 12])[0]
            if at + 16 + incl > 16384: break
            at += 16 + incl
        data = data[:at]
    open(os.path.join(out, os.path.basename(path)), "wb").write(data)
PY
      run "$1" "$seeds" ;;
    pcapng)
      # Seeds: the pcapng fixtures (several link types, sections of both byte orders, 2.0, ...).
      run pcapng Tests/FramedumpCoreTests/Fixtures/*.pcapng ;;
    pcap)
      # Seeds: the classic pcap fixtures with records above their snaplen (both byte orders,
      # nanoseconds, cut short), and a small capture libpcap reads whole.
      run pcap Tests/FramedumpCoreTests/Fixtures/over_snaplen*.pcap samples/game.pcap ;;
    display-filter)
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      printf 'game.Res == "success" and msg.dir == s2c' > "$seeds/1"
      printf 'svc.device.os matches "^i" || svc.user in {"u" "v"} && !(msg.id >= 3)' > "$seeds/2"
      run display-filter "$seeds" ;;
    ndjson-line)
      # Seeds: NDJSON lines of the samples, plain and --diffable (what `framedump diff` reads).
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      n=0
      for s in game svc im bridge; do
        for mode in "-T json" "--diffable"; do
          framedump -r "samples/$s.pcap" $mode 2>/dev/null | head -n 6 |
            while IFS= read -r line; do n=$((n + 1)); printf '%s' "$line" > "$seeds/$s-${mode#--}-$RANDOM$n"; done
        done
      done
      run ndjson-line "$seeds" ;;
    transform-*)
      # Seeds: bodies of the zgame sample compressed by the reference tools (python's zlib and
      # gzip, the lz4 command, openssl for AES), behind a variant byte.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      python3 - "$seeds" "${1#transform-}" <<'PY'
import base64, gzip, json, os, subprocess, sys, zlib
out, kind = sys.argv[1], sys.argv[2]
bodies = []
for line in open("samples/zgame.messages.json"):
    for b in __import__("re").findall(r'"body":"([0-9a-f]*)"', line):
        if 0 < len(b) < 6000: bodies.append(bytes.fromhex(b))
bodies = bodies[:12]
# And bodies that inflate to 64 KiB and 1 MiB (transform outputs larger than any buffer).
piece = bytes(range(256)) + b'say "hi" \\ \x01 ' * 16
bodies += [(piece * (n // len(piece) + 1))[:n] for n in (64 << 10, 1 << 20)]
def lz4(b):
    r = subprocess.run(["lz4", "-q", "-c"], input=b, stdout=subprocess.PIPE)
    return r.stdout if r.returncode == 0 else b
def aes(b, v):
    key = bytes(range(16)).hex()
    mode = ["-aes-128-cbc", "-aes-128-ecb", "-aes-128-ctr"][v % 4] if v % 4 < 3 else None
    if mode is None: return bytes(12) + b + bytes(16)
    args = ["openssl", "enc", mode, "-K", key] + ([] if "ecb" in mode else ["-iv", bytes(range(16)).hex()])
    r = subprocess.run(args, input=b, stdout=subprocess.PIPE)
    return r.stdout
for i, b in enumerate(bodies):
    v = i % 8
    wire = {"zlib": lambda: zlib.compress(b), "gzip": lambda: gzip.compress(b),
            "deflate": lambda: zlib.compress(b)[2:-4], "lz4": lambda: lz4(b),
            "lz4-block": lambda: lz4(b), "xor": lambda: b, "base64": lambda: base64.b64encode(b),
            "aes": lambda: aes(b, v), "chain": lambda: bytes([3]) + zlib.compress(b)}[kind]()
    open(os.path.join(out, "%d" % i), "wb").write(bytes([v]) + wire)
PY
      run "$1" "$seeds" ;;
    *)
      echo "unknown fuzz target '$1' (proto-parser, protobuf-wire, msgpack, socketio, text-header, hpack, grpc, websocket, http-head, page-request, tls, tls-sealed, kcp, link, reassembly, dissector, deframer, state, guess, pipeline, pcapng, pcap, display-filter, ndjson-line, transform-*, all)" >&2; exit 2 ;;
  esac
}

if [ "$target" = all ]; then
  for t in proto-parser protobuf-wire msgpack socketio text-header hpack grpc websocket http-head page-request tls tls-sealed kcp link reassembly dissector deframer state guess pipeline ui pcapng pcap display-filter ndjson-line \
           transform-zlib transform-gzip transform-deflate transform-lz4 transform-lz4-block transform-xor transform-base64 transform-aes transform-chain; do
    fuzz_one "$t"
  done
else
  fuzz_one "$target"
fi
