#!/usr/bin/env bash
# Rewrites OUT_DIR/SHA256SUMS over the release files in OUT_DIR (the tarballs of `make dist` and the
# packages of `make deb`, the image archive of `make image`), so `cd OUT_DIR && sha256sum -c SHA256SUMS` checks whatever was built.
# Usage: deploy/sha256sums.sh OUT_DIR
set -euo pipefail
cd "$1"
shopt -s nullglob
files=(cni-plugins-ts-linux-*.tgz cni-plugins-ts_*.deb cni-plugins-ts-image-*.oci.tar)
(( ${#files[@]} > 0 )) || { echo "sha256sums.sh: no release files in $1" >&2; exit 1; }
sha256sum "${files[@]}" > SHA256SUMS.tmp
mv SHA256SUMS.tmp SHA256SUMS
