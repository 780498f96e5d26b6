#!/usr/bin/env bash
# The command line on messages larger than every output buffer, many runs in a row: bodies that
# inflate to 70 KB, to 1 MiB and to exactly the 16 MiB --max-inflate default (zlib and LZ4),
# in NDJSON and the tree (with -x up to 1 MiB: a 16 MiB body's hex dump is gigabytes), on 2, 3
# and 5 shards, each run's output byte for byte the same as -j 1's and its exit status 0. (A line larger than a shard's buffer once overran it: a crash
# or corrupt NDJSON about one run in three.)
#
# Usage: scripts/large_bodies.sh [RUNS]     (default 100; a release build)
#        SIZES="16777216" scripts/large_bodies.sh 100     (only some body sizes)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-100}"
swift build -c release --product framedump >/dev/null
bin="$(swift build -c release --show-bin-path)/framedump"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
for size in ${SIZES:-70000 1048576 16777216}; do
  dir="$work/$size"
  python3 scripts/make_large_fixtures.py "$dir" "$size"
  tree="-x"
  [ "$size" -gt 1048576 ] && tree=""
  for mode in "-T json" "$tree"; do
    # shellcheck disable=SC2086
    "$bin" -r "$dir/sized.pcap" -d "$dir/bigz.dissector" $mode -j 1 >"$dir/one" 2>"$dir/one.err"
    grep -q '"message":"Blob"\|Blob (id 2)' "$dir/one" || { echo "$size $mode: nothing decoded"; exit 1; }
    ok=0
    for i in $(seq "$runs"); do
      jobs=$((2 + i % 3 + (i % 3 == 2 ? 1 : 0)))
      status=0
      # shellcheck disable=SC2086
      "$bin" -r "$dir/sized.pcap" -d "$dir/bigz.dissector" $mode -j "$jobs" >"$dir/many" 2>"$dir/many.err" || status=$?
      if [ "$status" != 0 ] || ! cmp -s "$dir/one" "$dir/many"; then
        echo "$size $mode -j $jobs run $i: exit $status, $(cmp "$dir/one" "$dir/many" 2>&1 | head -1)"
        fail=1
      else
        ok=$((ok + 1))
      fi
    done
    echo "bodies of $size bytes, $mode: $ok of $runs runs on 2, 3 and 5 shards exit 0 with -j 1's output ($(wc -c <"$dir/one") bytes)"
  done
done
exit "$fail"
