#!/usr/bin/env bash
# The tests that run threads (connections sharded among threads; see docs/architecture.md, "Threads:
# connections sharded among cores"), under ThreadSanitizer in a build of their own (.build-tsan): any data race it reports
# fails the run. Give a test filter to run others.
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-ShardPoolTests|GoldenTests|WebSocketTests|StatisticsTests|FilterTests|OutputPipesTests|OutputEventsTests}"
swift build --build-tests --sanitize=thread --scratch-path .build-tsan
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
TSAN_OPTIONS="halt_on_error=0" swift test --skip-build --sanitize=thread --scratch-path .build-tsan \
  --filter "$filter" > "$log" 2>&1 || status=$?
grep -E "Executed [0-9]+ tests" "$log" | tail -1 || true
if grep -q "WARNING: ThreadSanitizer" "$log"; then
  echo "ThreadSanitizer reported $(grep -c 'WARNING: ThreadSanitizer' "$log") races:"
  grep -A24 -m 3 "WARNING: ThreadSanitizer" "$log"
  exit 1
fi
exit "$status"
