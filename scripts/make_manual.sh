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
# A SYNOPSIS and DESCRIPTION that read like tcpdump's: how to run it first, then what it
# does, the dump options, the subcommands, and --version and --help last.
python3 - man/framedump.1 <<'PY'
import sys
path = sys.argv[1]
lines = open(path).read().split("\n")
start, desc = lines.index(".Sh SYNOPSIS"), lines.index(".Sh DESCRIPTION")
synopsis = [".Sh SYNOPSIS",
            ".Nm", ".Fl r Ar file", ".Op Ar options", ".Op Ar filter ...",
            ".Nm", ".Fl i Ar iface", ".Op Ar options", ".Op Ar filter ...",
            ".Nm", ".Fl D",
            ".Nm", ".Ar subcommand", ".Op Ar options",
            ".Nm", ".Op Fl -version | Fl -help"]
intro = [".Sh DESCRIPTION",
         ".Nm",
         "reads packets live from an interface or from pcap and pcapng files, reassembles each TCP",
         "connection (and KCP over UDP), cuts the byte streams into messages with the deframer a",
         "dissector file describes, and prints each message decoded: as an annotated tree, or as",
         "NDJSON for tools and for diffing two runs.",
         "Without a subcommand it runs",
         ".Em dump ,",
         "whose options follow; the subcommands check dissectors and captures, compare two runs,",
         "guess a layout, and serve the page."]
body = lines[desc + 1:]
# The top-level list opens with --version and --help: moved to its end.
head = body.index(".Bl -tag -width 6n")
first = body.index(".It Fl -version", head)
second = body.index(".It Fl h , -help", first)
end = second + 1
while not body[end].startswith(".It"): end += 1
moved = body[first:end]
del body[first:end]
close = len(body) - 1 - body[::-1].index(".El")
body[close:close] = moved
open(path, "w").write("\n".join(lines[:start] + synopsis + intro + body))
PY
cat man/framedump.1.extra >> man/framedump.1
echo "wrote man/framedump.1 (read it with: man ./man/framedump.1)"
