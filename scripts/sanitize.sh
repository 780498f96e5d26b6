#!/usr/bin/env bash
# The tests of the code that writes output buffers and hands them between threads (pipeline,
# shards, printers, large messages; the page's server, its connections and a filter stopped
# from another thread) under AddressSanitizer and ThreadSanitizer, each in a build
# of its own (.build-asan, .build-tsan); AddressSanitizer also runs the tests of the parsers that
# work on borrowed bytes (deframer, transforms, layers, TLS). Any report fails the run, and so
# does a sanitizer that cannot run under CI=true (elsewhere it is said and skipped).
#
# FRAMEDUMP_SANITIZED=1 makes the long shard properties take a fixed sample of their cases
# (TestSupport.sanitized); the plain `swift test` runs them whole. LimitTests are left out: they
# bound peak memory, which a sanitizer multiplies.
#
# Usage: scripts/sanitize.sh [address|thread|all] [TEST FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
threads="ShardPoolTests|LargeMessageTests|OutputEventsTests|OutputPipesTests|PageServerTests|UITests.testANewFilterStopsTheOneDecoding|UITests.testTheRingIsReadWhileItTurns"
parsers="GoldenTests|StatisticsTests|JSONTextTests|TransformTests|TransformSampleTests|WebSocketTests|TLSTests|TLSVersionsTests|KCPTests|DeframerTests|GRPCTests|HPACKTests|SocketIOTests|TextHeaderTests|UntilAndParentTests|FirstFrameChoiceTests|PhaseSwitchRuleTests"
address_filter="${2:-$threads|$parsers}"
thread_filter="${2:-$threads}"

run() {
  local sanitizer="$1" scratch="$2" marker="$3" options="$4" filter="$5"
  mkdir -p "$scratch"
  if ! swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >"$scratch/sanitize-build.log" 2>&1; then
    tail -20 "$scratch/sanitize-build.log"
    if [ "${CI:-}" = true ]; then echo "$sanitizer sanitizer: the build failed"; exit 1; fi
    echo "$sanitizer sanitizer: cannot build here, skipped"
    return 0
  fi
  local log status=0
  log="$(mktemp)"
  env "$options" FRAMEDUMP_SANITIZED=1 swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" \
    --filter "$filter" >"$log" 2>&1 || status=$?
  local executed
  executed="$(grep -E "Executed [0-9]+ tests?" "$log" | tail -1 || true)"
  echo "$sanitizer sanitizer:${executed:- no test ran}"
  if grep -q "$marker" "$log"; then
    echo "$sanitizer sanitizer reported $(grep -c "$marker" "$log") problems:"
    grep -A30 -m 3 "$marker" "$log"
    rm -f "$log"
    exit 1
  fi
  if [ "$status" != 0 ] || [ -z "$executed" ]; then
    grep -E "error|failed|Fatal|crashed" "$log" | head -20
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
}

case "$which" in
  address|all) run address .build-asan "ERROR: AddressSanitizer" "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1" "$address_filter" ;;&
  thread|all) run thread .build-tsan "WARNING: ThreadSanitizer" "TSAN_OPTIONS=halt_on_error=0" "$thread_filter" ;;
  address) ;;
  *) echo "usage: scripts/sanitize.sh [address|thread|all] [TEST FILTER]"; exit 2 ;;
esac
