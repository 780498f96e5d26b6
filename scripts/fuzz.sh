#!/usr/bin/env bash
# Fuzz the parsers of untrusted input for N seconds each:
#
#     scripts/fuzz.sh TARGET [SECONDS]      # one target (default 60 s)
#     scripts/fuzz.sh all [SECONDS]         # every target in turn
#
# Targets: proto-parser (.proto text), protobuf-wire (protobuf bodies, typed and schema-less).
# Each builds the `framedump-fuzz` harness (an in-process mutation fuzzer), seeds it with
# the inputs below, and runs it. A crash or hang leaves the input in fuzz-crash-TARGET
# (copy it to Tests/FramedumpCoreTests/Fixtures/fuzz/ as a regression input) and exits 1.
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
    *)
      echo "unknown fuzz target '$1' (proto-parser, protobuf-wire, all)" >&2; exit 2 ;;
  esac
}

if [ "$target" = all ]; then
  for t in proto-parser protobuf-wire; do fuzz_one "$t"; done
else
  fuzz_one "$target"
fi
