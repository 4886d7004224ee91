#!/usr/bin/env bash
# Copied from ../shared/tools/build-rc-crictl.sh (team tools, 2026-11); default output moved to the e2e cache.
# Build tools/rc-crictl (tiny CRI client, stand-in for crictl which Debian 12
# does not ship) fully offline: k8s.io/cri-api comes from the vendor/ tree of
# Debian's containerd 1.6.20 *source* package (apt-get source containerd),
# grpc 1.33 + gogo/protobuf from Debian -dev packages, Go 1.19 in GOPATH mode.
# Usage: build-rc-crictl.sh [OUTPUT]   (default /var/cache/cni-ts-e2e/bin/rc-crictl)
set -euo pipefail
OUT=${1:-/var/cache/cni-ts-e2e/bin/rc-crictl}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${RC_CRICTL_BUILD_DIR:-/var/cache/cni-ts-e2e/rc-crictl-build}
pkgs=()
for p in golang-go golang-google-grpc-dev golang-github-gogo-protobuf-dev dpkg-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || pkgs+=("$p")
done
[ ${#pkgs[@]} -eq 0 ] || apt-get install -y --no-install-recommends "${pkgs[@]}"
if ! ls /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | xargs grep -qs deb-src; then
  uris=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
  [ -n "$uris" ] || uris=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  printf 'Types: deb-src\nURIs: %s\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uris" \
    > /etc/apt/sources.list.d/debian-src.sources
  apt-get update -qq
fi
rm -rf "$WORK"; mkdir -p "$WORK/src" "$WORK/gopath/src/k8s.io" "$WORK/gopath/src/rc-crictl"
( cd "$WORK/src" && apt-get source --download-only -qq containerd >/dev/null 2>&1 \
  && dpkg-source -x --no-check containerd_*.dsc ctrd >/dev/null )
cp -r "$WORK/src/ctrd/vendor/k8s.io/cri-api" "$WORK/gopath/src/k8s.io/cri-api"
cp "$HERE/rc-crictl/main.go" "$WORK/gopath/src/rc-crictl/main.go"
cd "$WORK/gopath/src/rc-crictl"
env GO111MODULE=off GOPATH="$WORK/gopath:/usr/share/gocode" GOPROXY=off GOFLAGS= \
    GOCACHE="$WORK/gocache" CGO_ENABLED=0 go build -trimpath -o "$WORK/rc-crictl" .
install -D -m 0755 "$WORK/rc-crictl" "$OUT.tmp.$$" && mv -f "$OUT.tmp.$$" "$OUT"
echo "build-rc-crictl: installed $OUT"
