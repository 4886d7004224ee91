#!/usr/bin/env bash
# ADD/DEL medians of common chains for our plugins and the Go reference in one run, isolated in a
# private mount + network namespace (cni-bench.sh creates named netns and bridges; none of that
# reaches the real host). Usage: test/bench/bench-chains.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-15}
OURS=${CNI_BENCH_OURS:-$PWD/dist/bin}
GO=${CNI_BENCH_GO:-/usr/lib/cni}
exec unshare -m -n bash -c '
  set -e
  mount --make-rprivate /
  mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns
  ip link set lo up
  for impl in "ours:'"$OURS"'" "go:'"$GO"'"; do
    echo "== ${impl%%:*} (${impl#*:})"
    bash test/bench/cni-bench.sh "${impl#*:}" '"$ROUNDS"' 2>&1 | grep -v "^FAIL ADD portmap\|^FAIL ADD firewall\|^FAIL ADD tuning\|^FAIL ADD bandwidth" || true
  done'
