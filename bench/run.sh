#!/usr/bin/env bash
# The speed comparison: framedump (release build) against tshark with the hand-written Lua
# dissector on the same synthetic capture, plus the libpcap floor and peak memory at
# several capture sizes. Whole-process wall time and peak RSS via /usr/bin/time, median of
# RUNS runs.
#
# Usage: bench/run.sh [YARDSTICK_DIR]   (default: ../shared/bench beside the repository)
#   RUNS=3 SIZES="100000 1000000 5000000" SKIP_TSHARK=1 bench/run.sh
#   IM_MESSAGES=500000 (the im row: protobuf bodies; 0 leaves it out)
set -euo pipefail
cd "$(dirname "$0")/.."
yard=${1:-../shared/bench}
runs=${RUNS:-3}
sizes=${SIZES:-"100000 1000000 5000000"}
out=bench/out
mkdir -p "$out"

swift build -c release >/dev/null
bin=.build/release/framedump
cc -O2 "$yard/pcapread.c" -lpcap -o "$out/pcapread"

# median wall seconds and max RSS (MiB) of a command, output discarded
measure() {
  local walls=() rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" >/dev/null 2>&1 || true
    read -r w m <"$out/time.txt"
    walls+=("$w")
    (( m > rss )) && rss=$m
  done
  local med
  med=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$med $((rss / 1024))"
}

printf '| capture | command | wall (median of %s) | peak memory |\n|---|---|---|---|\n' "$runs"
for n in $sizes; do
  cap="$out/game-$n.pcap"
  [ -f "$cap" ] || python3 "$yard/genbench.py" "$cap" "$n" >/dev/null 2>&1
  row() { read -r w m < <(measure "$@"); printf '| %s msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="pcapread (libpcap floor)"; row "$out/pcapread" "$cap"
  label="framedump -q"; row "$bin" -r "$cap" -q
  label="framedump (tree)"; row "$bin" -r "$cap"
  label="framedump -T json"; row "$bin" -r "$cap" -T json
  if [ "$n" = 1000000 ] && [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark + game.lua -V"; row tshark -r "$cap" -X "lua_script:$yard/game.lua" -V
    label="tshark + game.lua -T json"; row tshark -r "$cap" -X "lua_script:$yard/game.lua" -T json
  fi
done

# im (seed 002): protobuf bodies decoded against Dissectors/im.proto, framedump against
# tshark's protobuf dissector given the same .proto (bench/im.lua cuts the 12-byte header).
im_n=${IM_MESSAGES:-500000}
if [ "$im_n" != 0 ]; then
  cap="$out/im-$im_n.pcap"
  [ -f "$cap" ] || python3 bench/genim.py "$cap" "$im_n" >/dev/null
  n=$im_n
  row() { read -r w m < <(measure "$@"); printf '| %s im msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (im)"; row "$bin" -r "$cap" -q
  label="framedump (tree, im)"; row "$bin" -r "$cap"
  label="framedump -T json (im)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    pb=(-X lua_script:bench/im.lua -o "uat:protobuf_search_paths:\"$PWD/Dissectors\",\"TRUE\""
        -o 'uat:protobuf_search_paths:"/usr/include","FALSE"')
    label="tshark + im.lua + protobuf -V"; row tshark -r "$cap" "${pb[@]}" -V
    label="tshark + im.lua + protobuf -T json"; row tshark -r "$cap" "${pb[@]}" -T json
  fi
fi
