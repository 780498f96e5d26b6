#!/bin/sh
# Regenerates scripts/framedump.1 (the man page) from the command's own help text, with
# swift-argument-parser's generate-manual plugin (works offline once the package is resolved).
# The tests check that the committed page lists every option and subcommand `--help` shows.
set -e
cd "$(dirname "$0")/.."
swift package generate-manual --configuration debug --date "${MANUAL_DATE:-2026-11-22}"
cp .build/plugins/GenerateManual/outputs/framedump/framedump.1 scripts/framedump.1
echo "wrote scripts/framedump.1 (read it with: man ./scripts/framedump.1)"
