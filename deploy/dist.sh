#!/usr/bin/env bash
# `make dist`: the release tarball, laid out like upstream's cni-plugins-linux-<arch>-<version>.tgz so
# that extracting it into /opt/cni/bin gives a working CNI bin directory:
#   cni-plugins          the multi-call executable (stored once)
#   <plugin>...          hard links to it inside the tar, one per plugin name
#   LICENSE, README.md
# plus OUT/SHA256SUMS (deploy/sha256sums.sh). Offline; reproducible for a given
# commit (owners 0/0, mtimes = the commit time, fixed order, gzip -n).
#
# Usage: deploy/dist.sh BINARY VERSION ARCH OUT_DIR PLUGIN...
set -euo pipefail
BINARY=$1 VERSION=$2 ARCH=$3 OUT=$4
shift 4
(( $# > 0 )) || { echo "dist.sh: no plugin names given" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
NAME=cni-plugins-ts-linux-$ARCH-$VERSION
TGZ=$OUT/$NAME.tgz
EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/cni-dist.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
install -m 0755 "$BINARY" "$STAGE/cni-plugins"
for p in "$@"; do ln "$STAGE/cni-plugins" "$STAGE/$p"; done
install -m 0644 "$ROOT/LICENSE" "$STAGE/LICENSE"
sed -e "s/@VERSION@/$VERSION/g" -e "s/@ARCH@/$ARCH/g" -e "s/@PLUGINS@/$*/g" "$HERE/README.dist.md" > "$STAGE/README.md"
chmod 0644 "$STAGE/README.md"

mkdir -p "$OUT"
# cni-plugins first, so the tar stores the executable under its own name and the plugin names as links
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" --format=gnu \
  -cf - ./cni-plugins $(printf './%s ' "$@") ./LICENSE ./README.md | gzip -n -6 > "$TGZ.tmp"
mv "$TGZ.tmp" "$TGZ"
"$HERE/sha256sums.sh" "$OUT"
echo "dist: $TGZ ($(du -h "$TGZ" | cut -f1)), $OUT/SHA256SUMS"
