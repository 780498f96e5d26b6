#!/usr/bin/env bash
# Builds framedump_VERSION_ARCH.deb (dpkg-deb) from scripts/install.sh's staged tree:
#
#     scripts/make_deb.sh [OUT_DIR]       # default: .build/deb
#
# Then `apt install ./framedump_*.deb` (or `dpkg -i`). The binary carries the Swift runtime, so
# the package depends only on libpcap, zlib, liblz4 and PCRE2.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/deb}"
# The one version: the number `framedump --version` prints.
version="$(sed -n 's/.*static let number = "\(.*\)".*/\1/p' Sources/FramedumpCore/Support/Version.swift)"
[ -n "$version" ] || { echo "no version in Sources/FramedumpCore/Support/Version.swift" >&2; exit 1; }
arch="$(dpkg --print-architecture)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
DESTDIR="$stage" scripts/install.sh --prefix /usr
install -d "$stage/DEBIAN" "$out"
size=$(du -sk "$stage/usr" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: framedump
Version: $version
Architecture: $arch
Maintainer: framedump developers <framedump@localhost>
Installed-Size: $size
Depends: libpcap0.8, zlib1g, liblz4-1, libpcre2-8-0, libstdc++6, libgcc-s1
Section: net
Priority: optional
Description: tcpdump for custom binary protocols
 Captures with libpcap, reassembles TCP (and UDP/KCP flows), decrypts TLS with a key log,
 cuts the streams into messages (length-prefixed headers, WebSocket) and decodes them
 against protocol descriptions loaded at run time, printing a tree or NDJSON.
CONTROL
deb="$out/framedump_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >&2
echo "$deb"
