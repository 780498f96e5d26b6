#!/usr/bin/env bash
# The tests that take minutes in a debug build (the `guess` regressions on captures that never
# show a SYN), run in a release build of the tests. `swift test` skips them and says so.
#
# Usage: scripts/long_tests.sh [TEST FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-GuessTests.testNoSYN}"
FRAMEDUMP_LONG_TESTS=1 swift test -c release -Xswiftc -enable-testing --scratch-path .build-release-tests --filter "$filter"
