#!/usr/bin/env bash
# Fails when a source file imports the C library without its guard, or names Glibc or Darwin
# outside Sources/FramedumpCore/Support/Platform.swift: the tool builds on Linux and macOS
# (where iPhone captures are made), so every platform import sits behind
#   #if canImport(Glibc) / import Glibc / #elseif canImport(Darwin) / import Darwin / #endif
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r f; do
  # Each platform import must sit right under its #if/#elseif canImport line.
  if ! awk '
    /^import (Glibc|Darwin)$/ { if (prev !~ /^#(if|elseif) canImport\((Glibc|Darwin)\)$/) { print FILENAME ":" NR ": unguarded " $0; bad = 1 } }
    { prev = $0 }
    END { exit bad }' "$f"; then bad=1; fi
  # Glibc-only guards leave macOS without the C library: a Darwin branch is wanted.
  if grep -q '^#if canImport(Glibc)$' "$f" && ! grep -q '^#elseif canImport(Darwin)$' "$f"; then
    echo "$f: imports Glibc without a Darwin branch"; bad=1
  fi
  if [ "$f" != Sources/FramedumpCore/Support/Platform.swift ] && grep -nE '\b(Glibc|Darwin)\.' "$f"; then
    echo "$f: names the C library module (use Platform)"; bad=1
  fi
done < <(find Sources Tests -name '*.swift')
if [ "$bad" != 0 ]; then echo "portability check failed"; exit 1; fi
echo "portability check: every platform import guarded"
