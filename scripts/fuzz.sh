#!/usr/bin/env bash
# Fuzz the parsers of untrusted input for N seconds each:
#
#     scripts/fuzz.sh TARGET [SECONDS]      # one target (default 60 s)
#     scripts/fuzz.sh all [SECONDS]         # every target in turn
#
# Targets: proto-parser (.proto text), protobuf-wire (protobuf bodies, typed and schema-less),
# websocket (a WebSocket connection: handshake, frames, deflate, through the tree printer),
# http-head (handshake heads), link (link/IP/TCP decoding, defragmenting, reassembly), dissector (a dissector file and traffic decoded with it, through
# both printers), display-filter (-Y filters parsed and evaluated).
# Each builds the `framedump-fuzz` harness (an in-process mutation fuzzer), seeds it with
# the inputs below, and runs it. A crash or hang leaves the input in fuzz-crash-TARGET
# (copy it to Tests/FramedumpCoreTests/Fixtures/fuzz/TARGET-what, where `swift test` runs it
# through its target again) and exits 1.
#
# FUZZ_ENGINE=libfuzzer builds the same harness with `-sanitize=fuzzer` (coverage-guided
# libFuzzer, in .build-fuzz; the first build takes minutes) and runs it with
# -max_total_time=SECONDS; libFuzzer writes crash-* / timeout-* files itself.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:-all}"
seconds="${2:-60}"

engine="${FUZZ_ENGINE:-harness}"
if [ "$engine" = libfuzzer ]; then
  flags=(--scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DLIBFUZZER -Xswiftc -use-ld=lld)
else
  flags=()
fi
swift build "${flags[@]}" --product framedump-fuzz >/dev/null
bin="$(swift build "${flags[@]}" --show-bin-path)/framedump-fuzz"

run() {
  local t="$1"; shift
  if [ "$engine" = libfuzzer ]; then
    # libFuzzer takes corpus folders: gather the seeds into one.
    local corpus; corpus="$(mktemp -d)"
    for s in "$@"; do
      if [ -d "$s" ]; then find "$s" -type f -exec cp {} "$corpus/" \; ; else cp "$s" "$corpus/"; fi
    done
    FRAMEDUMP_FUZZ_TARGET="$t" "$bin" -max_total_time="$seconds" -timeout=10 "$corpus"
    rm -rf "$corpus"
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
        # The first byte picks typed or schema-less decoding (see FuzzEntry.protobufWire).
        { printf '\001'; cat "$seeds/kinds.bin"; } > "$seeds/typed.bin"
      fi
      run protobuf-wire "$seeds" ;;
    websocket|http-head)
      # Seeds: the WebSocket samples' reassembled streams, behind the 3 choice bytes.
      seeds="$(mktemp -d)"
      trap 'rm -rf "$seeds"' RETURN
      for s in bridge websocket-deflate; do
        "$(swift build --show-bin-path)/framedump" -r "samples/$s.pcap" --streams "$seeds/$s" -q >/dev/null 2>&1 || true
        for f in "$seeds/$s"/*.c2s; do [ -f "$f" ] && { printf '\001\100\007'; cat "$f"; } > "$seeds/$s.seed"; done
      done
      rm -rf "$seeds"/bridge "$seeds"/websocket-deflate
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
      for d in Dissectors/game.dissector Dissectors/svc.dissector Dissectors/bridge.dissector; do
        { cat "$d"; printf '\000\020'; head -c 600 samples/game.pcap | tail -c 300; } > "$seeds/$(basename "$d").seed"
      done
      run dissector "$seeds" ;;
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
          "$(swift build --show-bin-path)/framedump" -r "samples/$s.pcap" $mode 2>/dev/null | head -n 6 |
            while IFS= read -r line; do n=$((n + 1)); printf '%s' "$line" > "$seeds/$s-${mode#--}-$RANDOM$n"; done
        done
      done
      run ndjson-line "$seeds" ;;
    *)
      echo "unknown fuzz target '$1' (proto-parser, protobuf-wire, websocket, http-head, link, dissector, display-filter, ndjson-line, all)" >&2; exit 2 ;;
  esac
}

if [ "$target" = all ]; then
  for t in proto-parser protobuf-wire websocket http-head link dissector display-filter ndjson-line; do fuzz_one "$t"; done
else
  fuzz_one "$target"
fi
