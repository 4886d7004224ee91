#!/usr/bin/env bash
# Prints the path of a statically linked busybox from Debian's busybox-static package: the one
# binary every lane copies into a VM initramfs or a container image, and runs in test netns.
#
# /bin/busybox is used when it qualifies (the usual case: busybox-static installed). It does not
# when Debian's `busybox` package replaced it: that one is dynamically linked, so it cannot run in
# an initramfs or an image without libc (the guest panics with "No working init found", the
# container cannot exec anything). Then busybox-static's .deb is fetched with `apt-get download`
# and unpacked with dpkg-deb into a cache (the host's packages stay as they are), once.
#
# A binary qualifies when it is an ELF without a program interpreter (statically linked), runs,
# and has every applet the lanes use. The cached copy is checked the same way on every call, so a
# damaged or foreign cache is replaced, never used.
#
# Usage: static-busybox.sh [--offline]
#   --offline   never download (a test netns has no network): fail when nothing qualifies
# Env: CNI_BUSYBOX_CANDIDATE (default /bin/busybox), CNI_BUSYBOX_CACHE (default
#      /var/cache/cni-ts-busybox as root, else /tmp/cni-ts-busybox-$UID).
# Exit 0 with the path on stdout; 1 with the reason on stderr.
set -uo pipefail

CANDIDATE=${CNI_BUSYBOX_CANDIDATE:-/bin/busybox}
if [ -z "${CNI_BUSYBOX_CACHE:-}" ]; then
  if [ "$(id -u)" = 0 ]; then CNI_BUSYBOX_CACHE=/var/cache/cni-ts-busybox; else CNI_BUSYBOX_CACHE=/tmp/cni-ts-busybox-$(id -u); fi
fi
CACHED=$CNI_BUSYBOX_CACHE/bin/busybox
OFFLINE=0
[ "${1:-}" = --offline ] && OFFLINE=1

# Applets used by test/vm/vm-run.sh's init, the e2e images and the test helpers.
APPLETS=(sh mount insmod switch_root poweroff cat cp mkdir httpd ping sleep ip)

# The little-endian number at byte $1 (length $2) of the ELF header read into b.
le() { local s="" k; for ((k = $1 + $2 - 1; k >= $1; k--)); do s+=${b[$k]}; done; echo $((16#$s)); }

# True when $1 is an ELF executable with no PT_INTERP program header (64-bit little-endian, as
# every amd64/arm64 busybox-static is).
elf_is_static() {
  local f=$1 hdr phoff phentsize phnum i type
  b=()
  [ -f "$f" ] && [ -x "$f" ] || return 1
  hdr=$(od -A n -t x1 -N 64 -v "$f" 2>/dev/null | tr -s ' \n' ' ')
  read -r -a b <<< "$hdr"
  [ "${#b[@]}" -eq 64 ] || return 1
  [ "${b[0]}${b[1]}${b[2]}${b[3]}" = 7f454c46 ] || return 1 # \x7fELF
  [ "${b[4]}" = 02 ] && [ "${b[5]}" = 01 ] || return 1        # ELFCLASS64, little-endian
  phoff=$(le 32 8) phentsize=$(le 54 2) phnum=$(le 56 2)
  for ((i = 0; i < phnum; i++)); do
    type=$(od -A n -t u4 -j $((phoff + i * phentsize)) -N 4 "$f" | tr -d ' ')
    [ "$type" = 3 ] && return 1 # PT_INTERP: needs a dynamic loader
  done
  return 0
}

# Why $1 does not qualify, or nothing.
why_not() {
  local f=$1 list a
  elf_is_static "$f" || { echo "$f is not a statically linked executable"; return; }
  list=$("$f" --list 2>/dev/null) || { echo "$f does not run"; return; }
  for a in "${APPLETS[@]}"; do
    grep -qx "$a" <<< "$list" || { echo "$f lacks the $a applet"; return; }
  done
}

if [ -z "$(why_not "$CANDIDATE")" ]; then echo "$CANDIDATE"; exit 0; fi
if [ -e "$CACHED" ] && [ -z "$(why_not "$CACHED")" ]; then echo "$CACHED"; exit 0; fi

reason="$(why_not "$CANDIDATE")"
if [ $OFFLINE = 1 ]; then
  echo "static-busybox: $reason, and no usable busybox-static in $CNI_BUSYBOX_CACHE (run test/setup-host.sh once with network)" >&2
  exit 1
fi
mkdir -p "$CNI_BUSYBOX_CACHE" || exit 1
exec 9>"$CNI_BUSYBOX_CACHE/.lock"
flock 9
if [ -e "$CACHED" ] && [ -z "$(why_not "$CACHED")" ]; then echo "$CACHED"; exit 0; fi
echo "static-busybox: $reason; unpacking busybox-static into $CNI_BUSYBOX_CACHE" >&2
work=$(mktemp -d "$CNI_BUSYBOX_CACHE/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
sandbox=(); [ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root) # _apt cannot write to $work
fetch() { (cd "$work" && apt-get download -q "${sandbox[@]}" busybox-static >&2); }
if ! fetch; then
  apt-get update -qq -o Acquire::Retries=3 >&2 || true
  fetch || { echo "static-busybox: apt-get download busybox-static failed" >&2; exit 1; }
fi
dpkg-deb -x "$work"/busybox-static_*.deb "$work/root" || exit 1
got=$work/root/bin/busybox
[ -e "$got" ] || got=$work/root/usr/bin/busybox
bad=$(why_not "$got")
[ -z "$bad" ] || { echo "static-busybox: the busybox-static package's binary does not qualify: $bad" >&2; exit 1; }
mkdir -p "$CNI_BUSYBOX_CACHE/bin" && cp "$got" "$CACHED.tmp" && mv -f "$CACHED.tmp" "$CACHED" || exit 1
echo "$CACHED"
