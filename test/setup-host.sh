#!/usr/bin/env bash
# Installs the system tools the test suites need, when they are missing (Debian/Ubuntu, apt).
#
# Idempotent and quiet when everything is present. As root it runs `apt-get update` once and
# `apt-get install -y --no-install-recommends` for the missing packages; a failed install stops with a
# clear message. As another user it only lists what is missing and carries on: the privileged part of
# `make test` asks for elevation itself (test/run.ts).
set -uo pipefail

# package -> a file that proves it is installed
declare -A PROBE=(
  [iproute2]=/usr/sbin/ip
  [iptables]=/usr/sbin/iptables
  [nftables]=/usr/sbin/nft
  [jq]=/usr/bin/jq
  [util-linux]=/usr/bin/unshare
  [procps]=/usr/bin/pgrep
  [containernetworking-plugins]=/usr/lib/cni/host-local
  [strace]=/usr/bin/strace
  [iputils-ping]=/usr/bin/ping
  [busybox-static]=/bin/busybox
  [dnsmasq-base]=/usr/sbin/dnsmasq
  # portmap #729 probe: a raw-socket SYN sender run in the container netns
  [python3]=/usr/bin/python3
  # firewall plugin: a private system bus + a real firewalld, both confined to the test netns
  [dbus]=/usr/bin/dbus-daemon
  [firewalld]=/usr/sbin/firewalld
  # e2e lane (test/e2e): real runtimes, and Go + Debian sources to build cnitool / rc-crictl offline
  [curl]=/usr/bin/curl
  [podman]=/usr/bin/podman
  [runc]=/usr/sbin/runc
  [containerd]=/usr/bin/containerd
  [golang-go]=/usr/bin/go
  [golang-github-appc-cni-dev]=/usr/share/gocode/src/github.com/containernetworking/cni/libcni
  [golang-google-grpc-dev]=/usr/share/gocode/src/google.golang.org/grpc
  [golang-github-gogo-protobuf-dev]=/usr/share/gocode/src/github.com/gogo/protobuf
  [dpkg-dev]=/usr/bin/dpkg-source
  # Docker (docker.io): CNI's documented way to network a container started with --network=none;
  # the test starts a private dockerd confined to the e2e sandbox (test/e2e/docker.test.ts)
  [docker.io]=/usr/sbin/dockerd
  # cluster-local IPAM: a real three-member etcd cluster on loopback, TLS certificates made with openssl
  [etcd-server]=/usr/bin/etcd
  [openssl]=/usr/bin/openssl
  # agent-lsm.vm.test.ts: an AppArmor profile loaded in the VM lane's guest (apparmor_parser, aa-exec),
  # which runs the host's binaries; the host's own kernel need not have AppArmor
  [apparmor]=/usr/sbin/apparmor_parser
  # agent metrics: a real Prometheus scraping the agent (test/harness/prometheus.ts)
  [prometheus]=/usr/bin/prometheus
  # agent traces: the OTLP protobuf the agent sends, decoded by protoc with the official message
  # definitions (test/harness/otlp-receiver.ts, test/fixtures/otlp)
  [protobuf-compiler]=/usr/bin/protoc
  # the build: build/check-x86-64-v2.sh disassembles the amd64 executable; the arm64 build's shim
  # is cross-compiled statically, and its image takes the loader and libc from the cross libc
  [binutils]=/usr/bin/objdump
  [gcc-aarch64-linux-gnu]=/usr/bin/aarch64-linux-gnu-gcc
  [libc6-dev-arm64-cross]=/usr/aarch64-linux-gnu/lib/libc.a
  # the arm64 lane: the arm64 build run by qemu-user (test/harness/aarch64-emulation.ts)
  [qemu-user-static]=/usr/bin/qemu-aarch64-static
  # the Debian package's maintainer scripts under a running systemd: a container booted with
  # systemd-nspawn from this host's root (test/e2e/deb-systemd.test.ts)
  [systemd]=/lib/systemd/systemd
  [systemd-container]=/usr/bin/systemd-nspawn
)
ORDER=(iproute2 iptables nftables jq util-linux procps containernetworking-plugins strace iputils-ping busybox-static dnsmasq-base python3 dbus firewalld curl podman runc containerd golang-go golang-github-appc-cni-dev golang-google-grpc-dev golang-github-gogo-protobuf-dev dpkg-dev docker.io etcd-server openssl apparmor prometheus protobuf-compiler binutils gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static systemd systemd-container)

# nsenter ships in util-linux on Debian 12 but in util-linux-extra / separately elsewhere.
missing=()
for pkg in "${ORDER[@]}"; do
  [[ -e "${PROBE[$pkg]}" ]] || missing+=("$pkg")
done
if ! command -v nsenter >/dev/null 2>&1 && [[ ! " ${missing[*]} " == *" util-linux "* ]]; then
  missing+=(util-linux)
fi

# The lanes copy busybox into VM initramfs and container images that have no libc, so they need
# busybox-static's binary; with Debian's dynamic `busybox` package installed, /bin/busybox is not it
# and test/harness/static-busybox.sh unpacks busybox-static into its cache (the tests themselves run
# without network). The host's own busybox package is left as it is.
static_busybox() {
  bash "$(dirname "${BASH_SOURCE[0]}")/harness/static-busybox.sh" > /dev/null \
    || echo "setup-host: warning: no static busybox; the VM and e2e lanes will fail" >&2
}

if (( ${#missing[@]} == 0 )); then
  static_busybox
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "setup-host: missing test tools: ${missing[*]}" >&2
  echo "setup-host: not root, so not installing them; the privileged test run will need them" >&2
  echo "setup-host: (install with: sudo apt-get install -y --no-install-recommends ${missing[*]})" >&2
  static_busybox
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-host: missing test tools: ${missing[*]}, and apt-get is not available to install them" >&2
  exit 1
fi

echo "setup-host: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# A slow or partly failing mirror must not stop us here; the install below reports real failures.
if ! apt-get update -qq -o Acquire::Retries=3 >&2; then
  echo "setup-host: warning: apt-get update failed; trying the install with the current package lists" >&2
fi
# Packages such as firewalld and containerd ship services that would take over the real host's
# firewall or start daemons: forbid service starts during the install (policy-rc.d, honoured by
# invoke-rc.d and deb-systemd-invoke) and undo the enablement afterwards. The tests start private
# instances of what they need, confined to their throwaway namespaces.
POLICY=/usr/sbin/policy-rc.d
policy_added=0
if [[ ! -e $POLICY ]]; then
  printf '#!/bin/sh\n# temporary, from cni-plugins-ts test/setup-host.sh\nexit 101\n' > "$POLICY" && chmod 0755 "$POLICY" && policy_added=1
fi
install_ok=1
apt-get install -y -qq --no-install-recommends -o Acquire::Retries=3 -o Dpkg::Use-Pty=0 "${missing[@]}" >&2 || install_ok=0
(( policy_added )) && rm -f "$POLICY"
if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
  for pkg in "${missing[@]}"; do
    case $pkg in
      firewalld|containerd|podman) systemctl disable --quiet "$pkg.service" 2>/dev/null || true ;;
      etcd-server) systemctl disable --quiet etcd.service 2>/dev/null || true ;;
      docker.io) systemctl disable --quiet docker.service docker.socket 2>/dev/null || true ;;
      prometheus) systemctl disable --quiet prometheus.service prometheus-node-exporter.service 2>/dev/null || true ;;
    esac
  done
fi
if (( ! install_ok )); then
  echo "setup-host: ERROR: apt-get install ${missing[*]} failed" >&2
  exit 1
fi

still=()
for pkg in "${missing[@]}"; do
  [[ -e "${PROBE[$pkg]}" ]] || still+=("$pkg")
done
if (( ${#still[@]} > 0 )); then
  echo "setup-host: ERROR: installed, but still missing: ${still[*]}" >&2
  exit 1
fi
echo "setup-host: installed ${missing[*]}" >&2
static_busybox
