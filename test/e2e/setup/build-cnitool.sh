#!/usr/bin/env bash
# Copied from ../shared/tools/build-cnitool.sh (team tools, 2026-11); default output moved to the e2e cache.
# Build the CNI project's reference `cnitool` (containernetworking/cni v1.1.2,
# as packaged by Debian bookworm) fully offline, with Debian's Go 1.19 and the
# libcni sources from golang-github-appc-cni-dev in /usr/share/gocode.
#
# Debian's -dev package ships libcni but NOT cnitool (debian/rules excludes it),
# so the cnitool.go source is taken from the Debian *source* package
# (apt-get source golang-github-appc-cni).
#
# Usage: build-cnitool.sh [OUTPUT]      (default OUTPUT=/var/cache/cni-ts-e2e/bin/cnitool)
# Idempotent: rebuilds into a scratch dir and atomically replaces OUTPUT.
set -euo pipefail

OUT=${1:-/var/cache/cni-ts-e2e/bin/cnitool}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${CNITOOL_BUILD_DIR:-/var/cache/cni-ts-e2e/cnitool-build}

need_pkgs=()
command -v go >/dev/null || need_pkgs+=(golang-go)
[ -d /usr/share/gocode/src/github.com/containernetworking/cni/libcni ] || need_pkgs+=(golang-github-appc-cni-dev)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  apt-get install -y --no-install-recommends "${need_pkgs[@]}"
fi

rm -rf "$WORK"; mkdir -p "$WORK/gopath/src/cnitool" "$WORK/src"

# 1. get cnitool.go from the Debian source package.
src=""
if true; then
  if ! ls /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
       | xargs grep -qs 'deb-src'; then
    # deb-src for the same archive the machine already uses (its URIs line), no host named here
    uris=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
    [ -n "$uris" ] || uris=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    printf 'Types: deb-src\nURIs: %s\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uris" \
      > /etc/apt/sources.list.d/debian-src.sources
    apt-get update -qq || true
  fi
  ( cd "$WORK/src" && apt-get source --download-only -qq golang-github-appc-cni >/dev/null 2>&1 \
    && dpkg-source -x --no-check golang-github-appc-cni_*.dsc pkg >/dev/null 2>&1 ) || true
  [ -f "$WORK/src/pkg/cnitool/cnitool.go" ] && src="$WORK/src/pkg/cnitool/cnitool.go"
fi
[ -n "$src" ] || { echo "build-cnitool: could not get the Debian source of golang-github-appc-cni" >&2; exit 1; }
echo "build-cnitool: using Debian source $(ls "$WORK"/src/*.dsc)" >&2
cp "$src" "$WORK/gopath/src/cnitool/main.go"

# 2. GOPATH-mode build: libcni resolved from /usr/share/gocode, no network.
cd "$WORK/gopath/src/cnitool"
env GO111MODULE=off GOPATH="$WORK/gopath:/usr/share/gocode" GOPROXY=off GOFLAGS= \
    GOCACHE="$WORK/gocache" CGO_ENABLED=0 \
    go build -trimpath -o "$WORK/cnitool" .
install -D -m 0755 "$WORK/cnitool" "$OUT.tmp.$$"
mv -f "$OUT.tmp.$$" "$OUT"
echo "build-cnitool: installed $OUT ($(go version | awk '{print $3}'))"
