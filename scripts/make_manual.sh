#!/bin/sh
# Regenerates man/framedump.1 (the man page) from the command's own help text, with
# swift-argument-parser's generate-manual plugin (works offline once the package is resolved),
# then puts the project's own exit status, environment, files and examples
# (man/framedump.1.extra) in place of the plugin's generic exit status.
# The tests check that the committed page lists every option and subcommand `--help` shows.
set -e
cd "$(dirname "$0")/.."
swift package generate-manual --configuration debug --date "${MANUAL_DATE:-2026-11-23}"
page=.build/plugins/GenerateManual/outputs/framedump/framedump.1
sed '/^\.Sh "EXIT STATUS"/,$d' "$page" > man/framedump.1
cat man/framedump.1.extra >> man/framedump.1
echo "wrote man/framedump.1 (read it with: man ./man/framedump.1)"
