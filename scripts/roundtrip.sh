#!/bin/sh
# The random round trip (#26) at length: FRAMEDUMP_ROUNDTRIP_CASES cases (5,000 by default)
# from FRAMEDUMP_ROUNDTRIP_SEED (by default the time, printed so a run can be repeated).
# Prints one line; exit 1 when a case failed (the log keeps each failure's seed and replay).
# Debug build: a release build of the tests (-c release -Xswiftc -enable-testing) rebuilds
# every dependency optimised, longer than the run it saves; ROUNDTRIP_RELEASE=1 asks for it.
set -u
cd "$(dirname "$0")/.."
cases=${FRAMEDUMP_ROUNDTRIP_CASES:-5000}
seed=${FRAMEDUMP_ROUNDTRIP_SEED:-$(date +%s)}
log=${ROUNDTRIP_LOG:-$(mktemp /tmp/roundtrip.XXXXXX)}
config=""
[ "${ROUNDTRIP_RELEASE:-0}" = 1 ] && config="-c release -Xswiftc -enable-testing"
start=$(date +%s)
# shellcheck disable=SC2086
if ! swift build --build-tests $config >"$log" 2>&1; then
    echo "roundtrip: build failed (see $log)"
    exit 2
fi
# shellcheck disable=SC2086
FRAMEDUMP_ROUNDTRIP_CASES=$cases FRAMEDUMP_ROUNDTRIP_SEED=$seed \
    swift test --skip-build $config --filter RoundTripPropertyTests >>"$log" 2>&1
status=$?
took=$(( $(date +%s) - start ))
summary=$(grep -o 'roundtrip: [0-9]* cases from seed [0-9]*, [0-9]* failed, [0-9]* frames' "$log" | tail -n 1)
if [ $status -eq 0 ] && [ -n "$summary" ]; then
    echo "PASS $summary, ${took}s wall (log: $log)"
else
    echo "FAIL ${summary:-roundtrip: no summary (crash?)}, seed $seed, ${took}s wall (failures and replay lines in $log)"
    exit 1
fi
