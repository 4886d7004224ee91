#!/usr/bin/env bash
# `make deb`: a Debian package built offline with dpkg-deb that takes the place of Debian's
# containernetworking-plugins (Provides/Conflicts/Replaces), so `apt-get install ./<file>.deb`
# swaps the Go plugins for ours where Debian installs them (podman looks there):
#   /usr/lib/cni/cni-plugins, /usr/lib/cni/cni-plugins-shim + a hard link to the shim per plugin name
#   /lib/systemd/system/cni-plugins.{service,socket}   (the resident agent, `cni-plugins serve`:
#     cni-plugins.socket is enabled and started on install, the agent starts on the first call)
#   /lib/systemd/system/cni-plugins-dhcp.socket, cni-dhcp.{service,socket}   (the dhcp daemon, in
#     the agent or on its own; not enabled)
#   /lib/systemd/system/cni-reload.service          (`cni-plugins reload --watch`; not enabled)
#   /usr/share/doc/cni-plugins-ts/{copyright,README.md}
#   DEBIAN/{postinst,prerm,postrm}                  (deploy/debian/: enable and start the socket on
#     install, keep an operator's `systemctl disable` across upgrades, restart running services on
#     upgrade, stop them on removal, remove the enablement links on purge; units that were enabled
#     for Debian's package stay enabled: same paths)
# Going back: `apt-get install containernetworking-plugins` removes this package again.
#
# Usage: deploy/deb.sh BINARY VERSION ARCH OUT_DIR PLUGIN...
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PKG=cni-plugins-ts
MAINTAINER=${DEB_MAINTAINER:-cni-plugins-ts maintainers <cni-plugins-ts@invalid>}

# Debian version: a release tag vX.Y.Z[-N-gHASH] gives X.Y.Z[+N.gHASH]; otherwise the package.json
# version plus the commit (`git describe --always --dirty`): 0.1.0+git561648a.dirty.
PKGVER=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$ROOT/package.json" | head -1)
case $VERSION in
  v[0-9]*) DEBVER=${VERSION#v}; DEBVER=${DEBVER/-/+}; DEBVER=${DEBVER//-/.} ;;
  *) DEBVER="$PKGVER+git$(printf %s "$VERSION" | tr -c 'A-Za-z0-9.+~' '.')" ;;
esac
DEB=$OUT/${PKG}_${DEBVER}_$ARCH.deb

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/cni-deb.XXXXXX")
chmod 0755 "$STAGE"   # the package's "./" entry
trap 'rm -rf "$STAGE"' EXIT
install -d -m 0755 "$STAGE/DEBIAN" "$STAGE/usr/lib/cni" "$STAGE/lib/systemd/system" "$STAGE/usr/share/doc/$PKG"
install_plugins "$STAGE/usr/lib/cni"
install_units "$STAGE/lib/systemd/system" /usr/lib/cni
{
  echo "This package: cni-plugins-ts $VERSION, CNI reference plugins in TypeScript."
  echo "License: Apache-2.0; the full text follows."
  echo
  cat "$ROOT/LICENSE"
} > "$STAGE/usr/share/doc/$PKG/copyright"
chmod 0644 "$STAGE/usr/share/doc/$PKG/copyright"
render_readme "$STAGE/usr/share/doc/$PKG/README.md"
for script in postinst prerm postrm; do
  install -m 0755 "$HERE/debian/$script" "$STAGE/DEBIAN/$script"
done

cat > "$STAGE/DEBIAN/control" <<CONTROL
Package: $PKG
Version: $DEBVER
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
Depends: libc6 (>= 2.17), iptables
Recommends: nftables
Provides: containernetworking-plugins (= 1.1.1), container-network-stack (= 1)
Conflicts: containernetworking-plugins
Replaces: containernetworking-plugins
Section: net
Priority: optional
Description: CNI reference plugins in TypeScript (drop-in for containernetworking-plugins)
$(printf 'The Container Network Interface reference plugins (%s) as one multi-call executable with a hard link per plugin name, installed in /usr/lib/cni like the containernetworking-plugins package. Same configuration, results and on-host effects as the Go plugins, for CNI spec 0.1.0 to 1.1.0.' "$(echo "${PLUGINS[*]}" | sed 's/ /, /g')" | fold -s -w 76 | sed -e 's/ *$//' -e 's/^/ /')
CONTROL

mkdir -p "$OUT"
SOURCE_DATE_EPOCH=$EPOCH dpkg-deb --root-owner-group -Zgzip -z6 --build "$STAGE" "$DEB.tmp" >/dev/null
mv "$DEB.tmp" "$DEB"
"$HERE/sha256sums.sh" "$OUT"
echo "deb: $DEB ($(du -h "$DEB" | cut -f1))"
