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

# install_plugins DIR: DIR/cni-plugins (0755) and a hard link to it per plugin name.
install_plugins() {
  install -m 0755 "$BINARY" "$1/cni-plugins"
  local p
  for p in "${PLUGINS[@]}"; do ln "$1/cni-plugins" "$1/$p"; done
}

# render_readme FILE: the README shipped with the plugins (deploy/README.dist.md), mode 0644.
render_readme() {
  sed -e "s/@VERSION@/$VERSION/g" -e "s/@ARCH@/$ARCH/g" -e "s/@PLUGINS@/${PLUGINS[*]}/g" "$HERE/README.dist.md" > "$1"
  chmod 0644 "$1"
}
