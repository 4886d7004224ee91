#!/usr/bin/env bash
# `make image`, step 1: the build context of deploy/Containerfile, offline. The executable is linked
# against glibc (a Bun-compiled binary), so a FROM-scratch image needs the dynamic loader and the
# libraries it loads; they are taken from this host as `ldd` lists them, with libc.so.6 always
# included (shared/sys opens it with dlopen at run time, which ldd cannot see).
#   CONTEXT/rootfs/bin/cni-plugins, CONTEXT/rootfs/bin/cni-plugins-shim (static; the DaemonSet's agent
#   container starts with it), CONTEXT/rootfs/<loader and libraries at their paths>,
#   CONTEXT/rootfs/tmp (empty, 1777), CONTEXT/Containerfile
# Usage: deploy/image-rootfs.sh BINARY CONTEXT_DIR
set -euo pipefail
BINARY=$1 CONTEXT=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$CONTEXT"
ROOTFS=$CONTEXT/rootfs
install -d -m 0755 "$ROOTFS/bin"
install -d -m 1777 "$ROOTFS/tmp"
install -m 0755 "$BINARY" "$ROOTFS/bin/cni-plugins"
install -m 0755 "$(dirname "$BINARY")/cni-plugins-shim" "$ROOTFS/bin/cni-plugins-shim"

# ldd lines: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)"
mapfile -t libs < <(ldd "$BINARY" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
(( ${#libs[@]} > 0 )) || { echo "image-rootfs.sh: ldd found no libraries for $BINARY (static binary?)" >&2; exit 1; }
libc=$(printf '%s\n' "${libs[@]}" | grep '/libc\.so\.6$' || true)
[[ -n $libc ]] || { echo "image-rootfs.sh: $BINARY does not load libc.so.6; unexpected" >&2; exit 1; }
for lib in "${libs[@]}"; do
  install -d "$ROOTFS$(dirname "$lib")"
  cp -L "$lib" "$ROOTFS$lib"   # the file itself at the path the loader or the binary asks for
done
cp "$HERE/Containerfile" "$CONTEXT/Containerfile"
echo "image context: $CONTEXT ($(du -sh "$ROOTFS" | cut -f1); $(printf '%s ' "${libs[@]}"))"
