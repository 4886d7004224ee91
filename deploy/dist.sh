#!/usr/bin/env bash
# `make dist`: the release tarball, laid out like upstream's cni-plugins-linux-<arch>-<version>.tgz so
# that extracting it into /opt/cni/bin gives a working CNI bin directory:
#   cni-plugins          the multi-call executable
#   cni-plugins-shim     the exec shim (stored once)
#   <plugin>...          hard links to the shim inside the tar, one per plugin name
#   systemd/             the units of the resident agent, the dhcp daemon and the reload watcher
#                        (`cni-plugins reload --watch`), for /etc/systemd/system
#   LICENSE, README.md
# plus OUT/SHA256SUMS (deploy/sha256sums.sh). Offline. The archive's metadata is fixed (owners 0/0,
# mtimes = the commit time, fixed order, gzip -n), so the same build gives the same bytes.
#
# Usage: deploy/dist.sh BINARY VERSION ARCH OUT_DIR PLUGIN...
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
NAME=cni-plugins-ts-linux-$ARCH-$VERSION
TGZ=$OUT/$NAME.tgz

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/cni-dist.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
install_plugins "$STAGE"
install -d -m 0755 "$STAGE/systemd"
install_units "$STAGE/systemd" /opt/cni/bin
install -m 0644 "$ROOT/LICENSE" "$STAGE/LICENSE"
render_readme "$STAGE/README.md"

mkdir -p "$OUT"
# the shim before the plugin names, so the tar stores it under its own name and the names as links
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" --format=gnu \
  -cf - ./cni-plugins ./cni-plugins-shim $(printf './%s ' "${PLUGINS[@]}") ./systemd ./LICENSE ./README.md | gzip -n -6 > "$TGZ.tmp"
mv "$TGZ.tmp" "$TGZ"
"$HERE/sha256sums.sh" "$OUT"
echo "dist: $TGZ ($(du -h "$TGZ" | cut -f1)), $OUT/SHA256SUMS"
