#!/usr/bin/env bash
# `make image`, step 1, once per architecture: the root filesystem of one platform of the image
# (deploy/Containerfile copies rootfs-$TARGETARCH), offline. The executable is linked against glibc
# (a Bun-compiled binary), so a FROM-scratch image needs the dynamic loader and the libraries it
# loads. For the host's architecture they are taken from this host as `ldd` lists them; for the
# other one from Debian's cross libc (libc6-<arch>-cross, /usr/<triplet>/lib) as the executable's
# ELF header names them (interpreter and NEEDED), placed where that architecture's loader looks
# (/lib/<triplet>). libc.so.6 is always included (shared/sys opens it with dlopen at run time,
# which neither ldd nor the header shows).
#   ROOTFS/bin/cni-plugins, ROOTFS/bin/cni-plugins-shim (static; the DaemonSet's agent container
#   starts with it), ROOTFS/<loader and libraries at their paths>, ROOTFS/tmp (empty, 1777)
# Usage: deploy/image-rootfs.sh BINARY ARCH ROOTFS_DIR
set -euo pipefail
BINARY=$1 ARCH=$2 ROOTFS=$3
HOST_ARCH=$(uname -m | sed -e s/x86_64/amd64/ -e s/aarch64/arm64/)
case $ARCH in
  amd64) TRIPLET=x86_64-linux-gnu ;;
  arm64) TRIPLET=aarch64-linux-gnu ;;
  *) echo "image-rootfs.sh: no image for ARCH=$ARCH (amd64, arm64)" >&2; exit 1 ;;
esac
rm -rf "$ROOTFS"
install -d -m 0755 "$ROOTFS/bin"
install -d -m 1777 "$ROOTFS/tmp"
install -m 0755 "$BINARY" "$ROOTFS/bin/cni-plugins"
install -m 0755 "$(dirname "$BINARY")/cni-plugins-shim" "$ROOTFS/bin/cni-plugins-shim"

# copy SOURCE PATH: the file itself (not a link) at PATH in the image
copy() { install -d "$ROOTFS$(dirname "$2")"; cp -L "$1" "$ROOTFS$2"; }
libs=()
if [[ $ARCH == "$HOST_ARCH" ]]; then
  # ldd lines: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)"
  mapfile -t libs < <(ldd "$BINARY" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
  for lib in "${libs[@]}"; do copy "$lib" "$lib"; done
else
  SYSROOT=/usr/$TRIPLET/lib
  [[ -d $SYSROOT ]] || { echo "image-rootfs.sh: $SYSROOT is missing (apt-get install libc6-$ARCH-cross)" >&2; exit 1; }
  interp=$(LC_ALL=C readelf -lW "$BINARY" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
  [[ -n $interp ]] || { echo "image-rootfs.sh: $BINARY names no program interpreter (static binary?)" >&2; exit 1; }
  copy "$SYSROOT/$(basename "$interp")" "$interp"
  libs+=("$interp")
  for name in $(LC_ALL=C readelf -dW "$BINARY" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') libc.so.6; do
    [[ -f $SYSROOT/$name ]] || { echo "image-rootfs.sh: $BINARY needs $name, not in $SYSROOT" >&2; exit 1; }
    [[ /lib/$TRIPLET/$name == "$interp" || " ${libs[*]} " == *" /lib/$TRIPLET/$name "* ]] && continue
    copy "$SYSROOT/$name" "/lib/$TRIPLET/$name"
    libs+=("/lib/$TRIPLET/$name")
  done
fi
(( ${#libs[@]} > 0 )) || { echo "image-rootfs.sh: found no libraries for $BINARY (static binary?)" >&2; exit 1; }
printf '%s\n' "${libs[@]}" | grep -q '/libc\.so\.6$' || { echo "image-rootfs.sh: $BINARY does not load libc.so.6; unexpected" >&2; exit 1; }
echo "image rootfs $ARCH: $ROOTFS ($(du -sh "$ROOTFS" | cut -f1); $(printf '%s ' "${libs[@]}"))"
