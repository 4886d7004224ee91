# Sourced by deploy/dist.sh and deploy/deb.sh: their arguments, paths, and the plugin tree both ship.
# Arguments: BINARY VERSION ARCH OUT_DIR PLUGIN...
set -euo pipefail
(( $# >= 5 )) || { echo "usage: $0 BINARY VERSION ARCH OUT_DIR PLUGIN..." >&2; exit 2; }
BINARY=$1 VERSION=$2 ARCH=$3 OUT=$4
shift 4
PLUGINS=("$@")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# File times in the archives: the commit's, not the build's.
EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}

# The exec shim built beside the executable (shim/cni-shim.c; docs/resident.md).
SHIM=$(dirname "$BINARY")/cni-plugins-shim
[[ -f $SHIM ]] || { echo "$0: $SHIM is missing (make build makes it)" >&2; exit 1; }

# install_plugins DIR: DIR/cni-plugins and DIR/cni-plugins-shim (0755), a hard link to the shim per
# plugin name.
install_plugins() {
  install -m 0755 "$BINARY" "$1/cni-plugins"
  install -m 0755 "$SHIM" "$1/cni-plugins-shim"
  local p
  for p in "${PLUGINS[@]}"; do ln "$1/cni-plugins-shim" "$1/$p"; done
}

# install_units DIR BINDIR: the systemd units in deploy/systemd/ (the resident agent's and the dhcp
# daemon's), their ExecStart pointing into BINDIR, mode 0644.
install_units() {
  local unit
  for unit in "$ROOT"/deploy/systemd/*.service "$ROOT"/deploy/systemd/*.socket; do
    sed -e "s#/opt/cni/bin/#$2/#g" "$unit" > "$1/$(basename "$unit")"
    chmod 0644 "$1/$(basename "$unit")"
  done
}

# render_readme FILE: the README shipped with the plugins (deploy/README.dist.md), mode 0644.
render_readme() {
  sed -e "s/@VERSION@/$VERSION/g" -e "s/@ARCH@/$ARCH/g" -e "s/@PLUGINS@/${PLUGINS[*]}/g" "$HERE/README.dist.md" > "$1"
  chmod 0644 "$1"
}
