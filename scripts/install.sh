#!/usr/bin/env bash
# Builds the release binary and installs it under a prefix, with the man pages, shell
# completions and the example dissectors:
#
#     scripts/install.sh                  # /usr/local
#     scripts/install.sh --prefix DIR     # DIR/bin/framedump, DIR/share/man/man1/framedump.1, ...
#     DESTDIR=stage scripts/install.sh --prefix /usr    # staged (as scripts/make_deb.sh does)
#
# The Swift runtime is linked in (--static-swift-stdlib), so the installed binary needs only
# libpcap, zlib, liblz4 and PCRE2 at run time, not a Swift toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    *) echo "usage: scripts/install.sh [--prefix DIR]" >&2; exit 2 ;;
  esac
done
root="${DESTDIR:-}$prefix"
static=(-c release --static-swift-stdlib)
swift build "${static[@]}" --product framedump >&2
bin="$(swift build "${static[@]}" --show-bin-path)/framedump"
install -d "$root/bin" "$root/share/man/man1" "$root/share/man/man5" "$root/share/man/man7" "$root/share/framedump/Dissectors/examples" \
  "$root/share/bash-completion/completions" "$root/share/zsh/site-functions" "$root/share/fish/vendor_completions.d"
# Stripped: the symbols are for debugging the build, not for users (about 40% of the size).
install -m 755 -s "$bin" "$root/bin/framedump"
install -m 644 man/framedump.1 "$root/share/man/man1/framedump.1"
install -m 644 man/framedump-dissector.5 "$root/share/man/man5/framedump-dissector.5"
install -m 644 man/framedump-filters.7 "$root/share/man/man7/framedump-filters.7"
# The files of Dissectors/ (loaded by default), and Dissectors/examples/ (loaded when named).
find Dissectors -maxdepth 1 -type f -exec install -m 644 {} "$root/share/framedump/Dissectors/" \;
find Dissectors/examples -maxdepth 1 -type f -exec install -m 644 {} "$root/share/framedump/Dissectors/examples/" \;
"$bin" --generate-completion-script bash > "$root/share/bash-completion/completions/framedump"
"$bin" --generate-completion-script zsh > "$root/share/zsh/site-functions/_framedump"
"$bin" --generate-completion-script fish > "$root/share/fish/vendor_completions.d/framedump.fish"
echo "installed framedump under $root (dissector examples in $prefix/share/framedump/Dissectors)" >&2
