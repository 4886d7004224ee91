#!/usr/bin/env bash
# Run a shell script inside a throw-away QEMU VM booted with Debian's stock kernel
# (linux-image-amd64) -- for the kernel features the build host may lack (ipvlan,
# 8021q, dummy, vrf, bridge vlan_filtering...). This is the project's VM test lane
# (test/vm/README.md); `bun test/run.ts vm` drives it.
#
# Provenance: copied from the team tool ../shared/tools/vm-run.sh (2026-11-22) so
# the project does not depend on ../shared at test time, then adapted: cache dir
# /var/cache/cni-ts-vm, apt-get update retried when the package lists are stale,
# guest output streamed live, guest uptime at script start reported (boot time),
# all host CPUs by default (multi-threaded TCG), 9p mounts with cache=loose (a
# 110 MB binary re-runs in ~0.2 s instead of 2-3 s).
#
# The guest sees the HOST's root filesystem read-only over 9p with a tmpfs overlay
# on top (so bun, node_modules, iproute2, the Go plugins... are all there, and
# every write is discarded), the Debian kernel's modules at /lib/modules (modprobe
# and module auto-loading work), fresh tmpfs on /tmp /run /var/lib/cni, and
# optionally one host directory shared READ-WRITE at the same path. No network
# device is given to the VM: its traffic stays inside it.
#
# Usage: vm-run.sh [-d DIR] [-m MB] [-c CPUS] [-t SECONDS] [-k] SCRIPT [ARGS...]
#   -d DIR   share DIR read-write into the guest at the same absolute path
#            (also the script's working directory)
#   -c CPUS  guest CPUs (default: the host's CPU count)
#   -m MB    guest memory (default 1536)
#   -k       try KVM (-enable-kvm). Default is TCG: on the build host /dev/kvm is
#            the PVM flavour (kvm_pvm) and a stock kernel hangs right after
#            "Probing EDD"; TCG boots in ~5 s.
#   -t SECS  wall-clock limit (default 300); exit 124 on timeout
#   env VM_DIR=DIR   cache for the kernel + base initramfs (default
#            /var/cache/cni-ts-vm as root, else /tmp/cni-ts-vm-$UID)
#   env VM_VERBOSE=1 prints the guest console (kernel log) to stderr afterwards
#   env VM_QUIET=1   no "vm-run:" progress lines
#   env VM_9P_CACHE=MODE  9p cache mode of every mount (default loose; none = off)
#   env VM_SHARE_MODE=cpio copies DIR into the initramfs instead of 9p (read-only
#            snapshot, results do not come back)
# Output: the script's stdout+stderr (via a second serial port), streamed while it
# runs; exit status: the script's exit status (or 124 timeout, 125 VM/infra
# failure).
set -uo pipefail
if [ -z "${VM_DIR:-}" ]; then
  if [ "$(id -u)" = 0 ]; then VM_DIR=/var/cache/cni-ts-vm; else VM_DIR=/tmp/cni-ts-vm-$(id -u); fi
fi
MEM=1536 CPUS=$(nproc 2>/dev/null || echo 1) TIMEOUT=300 ACCEL=tcg SHARE=""
while getopts "d:m:c:t:k" o; do
  case $o in d) SHARE=$(readlink -f "$OPTARG");; m) MEM=$OPTARG;; c) CPUS=$OPTARG;;
             t) TIMEOUT=$OPTARG;; k) ACCEL=kvm;; *) exit 125;; esac
done
shift $((OPTIND-1))
SCRIPT=${1:?usage: vm-run.sh [-d DIR] [-m MB] [-c CPUS] [-t SECS] [-k] SCRIPT [ARGS...]}; shift
[ -f "$SCRIPT" ] || { echo "vm-run: no script $SCRIPT" >&2; exit 125; }
[ -z "$SHARE" ] || [ -d "$SHARE" ] || { echo "vm-run: no dir $SHARE" >&2; exit 125; }
log() { [ "${VM_QUIET:-0}" = 1 ] || echo "vm-run: $*" >&2; }

# ---------------------------------------------------------------- one-time setup
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
command -v depmod >/dev/null || need+=(kmod)
apt_refreshed=0
apt_refresh() {  # once per run: stale package lists are the usual reason apt cannot find a package
  [ $apt_refreshed = 0 ] || return 1; apt_refreshed=1
  log "apt-get update"; apt-get update -qq -o Acquire::Retries=3 >&2
}
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_install() { apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 "${need[@]}" >&2; }
  apt_install || { apt_refresh && apt_install; } || { echo "vm-run: cannot install ${need[*]}" >&2; exit 125; }
fi
mkdir -p "$VM_DIR"
exec 8>"$VM_DIR/.lock"; flock 8          # serialise the one-time setup
kernel_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }
cached_pkg() { ls "$VM_DIR"/debs/linux-image-*.deb 2>/dev/null | head -1 | xargs -r basename | cut -d_ -f1; }
KPKG=$(kernel_pkg)
[ -n "$KPKG" ] || KPKG=$(cached_pkg)
if [ -z "$KPKG" ]; then apt_refresh; KPKG=$(kernel_pkg); fi
[ -n "$KPKG" ] || { echo "vm-run: cannot resolve linux-image-amd64 (apt-get update?)" >&2; exit 125; }
KVER=${KPKG#linux-image-}
KROOT=$VM_DIR/kernel-$KVER
if [ ! -f "$KROOT/.ready" ]; then
  log "fetching + unpacking $KPKG (once)"
  mkdir -p "$VM_DIR/debs"
  fetch() { (cd "$VM_DIR/debs" && apt-get download "$KPKG" >&2); }
  ls "$VM_DIR/debs/${KPKG}_"*.deb >/dev/null 2>&1 || fetch || { apt_refresh && fetch; } \
    || { echo "vm-run: apt-get download $KPKG failed" >&2; exit 125; }
  rm -rf "$KROOT"; dpkg-deb -x "$(ls "$VM_DIR/debs/${KPKG}_"*.deb | head -1)" "$KROOT" || exit 125
  depmod -b "$KROOT" "$KVER" || exit 125
  touch "$KROOT/.ready"
fi
KERNEL=$KROOT/boot/vmlinuz-$KVER
MODDIR=$KROOT/lib/modules/$KVER

# The initramfs has no libc: its busybox must be busybox-static's, whatever /bin/busybox is here
# (Debian's `busybox` package installs a dynamic one). The base image is keyed by that binary's
# hash, so an image built from another busybox (or by an older vm-run.sh) is never reused.
BUSYBOX=$(bash "$(dirname "$0")/../harness/static-busybox.sh") || { echo "vm-run: no static busybox" >&2; exit 125; }
BBSUM=$(sha256sum "$BUSYBOX" | cut -c1-16)
BASE=$VM_DIR/base-$KVER-$BBSUM.cpio.gz
if [ ! -f "$BASE" ] || [ "$0" -nt "$BASE" ]; then
  log "building base initramfs"
  rm -f "$VM_DIR"/base-*.cpio.gz
  R=$(mktemp -d); mkdir -p "$R"/{bin,proc,sys,dev,mods,lower,upper,newroot,vmrun}
  cp "$BUSYBOX" "$R/bin/busybox"
  # modules for virtio-9p + overlayfs, in dependency order
  : > "$R/mods/order"
  for m in virtio_pci 9pnet_virtio 9p overlay; do
    modprobe -d "$KROOT" -S "$KVER" --show-depends "$m" | awk '$1=="insmod"{print $2}'
  done | awk '!seen[$0]++' | while read -r f; do
    n=$(basename "$f" .ko); cp "$f" "$R/mods/"; echo "$n" >> "$R/mods/order"
  done
  cat > "$R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in $(cat /mods/order); do insmod /mods/$m.ko 2>/dev/null; done
fail() { echo "vm-init: $*"; cat /proc/modules; dmesg | tail -15; echo "__VM_RUN_EXIT__=125" > /dev/ttyS1; poweroff -f; }
. /vmrun/env
O=trans=virtio,version=9p2000.L,msize=262144${VM_9P_CACHE:+,cache=$VM_9P_CACHE}
mount -t 9p -o $O,ro hostroot /lower || fail "mount hostroot"
mount -t tmpfs -o size=75% tmpfs /upper && mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w /newroot || fail "overlay"
for d in tmp run var/lib/cni var/tmp; do mkdir -p /newroot/$d; mount -t tmpfs tmpfs /newroot/$d; done
mkdir -p /newroot/lib/modules && mount -t 9p -o $O,ro modules /newroot/lib/modules || fail "mount modules"
if [ -n "$VM_SHARE" ]; then
  mkdir -p "/newroot$VM_SHARE"
  if [ "$VM_SHARE_MODE" = cpio ]; then cp -a /vmrun/share/. "/newroot$VM_SHARE/"
  else mount -t 9p -o $O share "/newroot$VM_SHARE" || fail "mount share"; fi
fi
mkdir -p /newroot/run/vmrun && cp /vmrun/script /vmrun/env /vmrun/stage2 /vmrun/args /bin/busybox /newroot/run/vmrun/
for d in proc sys dev; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /bin/bash /run/vmrun/stage2
INIT
  chmod +x "$R/init"
  (cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$BASE.tmp" && mv "$BASE.tmp" "$BASE"
  rm -rf "$R"
fi

flock -u 8; exec 8>&-
# ---------------------------------------------------------------- per-run part
RUN=$(mktemp -d "$VM_DIR/run.XXXXXX")
trap 'rm -rf "$RUN"' EXIT
mkdir -p "$RUN/root/vmrun"
cp "$SCRIPT" "$RUN/root/vmrun/script"
: > "$RUN/root/vmrun/args"; for a in "$@"; do printf '%s\0' "$a" >> "$RUN/root/vmrun/args"; done
printf 'VM_SHARE=%q\nVM_SHARE_MODE=%q\nVM_9P_CACHE=%q\n' "$SHARE" "${VM_SHARE_MODE:-9p}" "${VM_9P_CACHE-loose}" > "$RUN/root/vmrun/env"
if [ -n "$SHARE" ] && [ "${VM_SHARE_MODE:-9p}" = cpio ]; then cp -a "$SHARE" "$RUN/root/vmrun/share"; fi
cat > "$RUN/root/vmrun/stage2" <<'STAGE2'
. /run/vmrun/env
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mount -t devpts devpts /dev/pts 2>/dev/null; ln -sf /proc/self/fd /dev/fd 2>/dev/null
# as on any system (nft -f - opens /dev/stdin)
ln -sf /proc/self/fd/0 /dev/stdin; ln -sf /proc/self/fd/1 /dev/stdout; ln -sf /proc/self/fd/2 /dev/stderr
hostname vm-run 2>/dev/null; ip link set lo up 2>/dev/null
stty -F /dev/ttyS1 raw -echo 2>/dev/null
cd "${VM_SHARE:-/}"
mapfile -d '' ARGS < /run/vmrun/args 2>/dev/null || ARGS=()
echo "__VM_RUN_UP__=$(cut -d' ' -f1 /proc/uptime)" > /dev/ttyS1
/bin/bash /run/vmrun/script "${ARGS[@]}" > /dev/ttyS1 2>&1 < /dev/null
echo "__VM_RUN_EXIT__=$?" > /dev/ttyS1
sync
/run/vmrun/busybox poweroff -f
STAGE2
(cd "$RUN/root" && find . | cpio -o -H newc --quiet | gzip -1) > "$RUN/extra.cpio.gz"
cat "$BASE" "$RUN/extra.cpio.gz" > "$RUN/initrd.gz"

QEMU=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
  ${VM_BIOS:+-bios "$VM_BIOS"}
  -m "$MEM" -smp "$CPUS" -kernel "$KERNEL" -initrd "$RUN/initrd.gz"
  -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init"
  -serial "file:$RUN/console.log" -serial "file:$RUN/output.log"
  -nic none
  -fsdev "local,id=hostroot,path=/,security_model=passthrough,readonly=on,multidevs=remap"
  -device "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot"
  -fsdev "local,id=modules,path=$KROOT/lib/modules,security_model=passthrough,readonly=on"
  -device "virtio-9p-pci,fsdev=modules,mount_tag=modules")
if [ -n "$SHARE" ] && [ "${VM_SHARE_MODE:-9p}" != cpio ]; then
  QEMU+=(-fsdev "local,id=share,path=$SHARE,security_model=passthrough"
         -device "virtio-9p-pci,fsdev=share,mount_tag=share")
fi
if [ "$ACCEL" = kvm ]; then QEMU+=(-accel kvm -cpu host,-arch-capabilities); else QEMU+=(-accel tcg -cpu max); fi

log "booting $KPKG ($ACCEL, ${MEM}M, $CPUS cpu)${SHARE:+, share $SHARE}"
s=$(date +%s%N)
: > "$RUN/output.log"
timeout --kill-after=5 "$TIMEOUT" "${QEMU[@]}" > "$RUN/qemu.log" 2>&1 < /dev/null &
QPID=$!
# Stream the guest's output while it runs; the markers are ours, not the script's.
tail -n +1 -s 0.2 -f --pid=$QPID "$RUN/output.log" | while IFS= read -r line; do
  line=${line%$'\r'}
  case $line in
    __VM_RUN_EXIT__=*) ;;
    __VM_RUN_UP__=*) log "guest up: script starts $(( ($(date +%s%N)-s)/1000000 )) ms after qemu start (guest uptime ${line#*=} s)" ;;
    *) printf '%s\n' "$line" ;;
  esac
done
wait $QPID; qrc=$?
ms=$(( ($(date +%s%N)-s)/1000000 ))
rc=$(tr -d '\r' < "$RUN/output.log" | sed -n 's/^__VM_RUN_EXIT__=\([0-9]*\)$/\1/p' | tail -1)
if [ "${VM_VERBOSE:-0}" = 1 ] || [ -z "$rc" ]; then
  { echo "---- guest console:"; tr -d '\r' < "$RUN/console.log" | tail -40; echo "---- qemu:"; cat "$RUN/qemu.log"; } >&2
fi
if [ -z "$rc" ]; then
  if [ $qrc = 124 ] || [ $qrc = 137 ]; then rc=124; log "timeout after ${TIMEOUT}s"; else rc=125; log "VM died (qemu rc=$qrc)"; fi
fi
log "exit $rc after $ms ms (boot+script+poweroff)"
exit "$rc"
