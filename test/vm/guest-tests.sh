#!/bin/bash
# Runs INSIDE the VM (started by test/run.ts through test/vm/vm-run.sh, cwd = the shared repo):
# `bun test` over the given *.vm.test.ts files in a fresh network namespace of the guest, with
# the environment the integration harness expects (sandbox marker, VM-lane marker).
#   guest-tests.sh BUN JUNIT_OUT TIMEOUT_MS [NAME=VALUE...] -- FILE...
# NAME=VALUE: variables of the host's test environment (CNI_TEST_*) to set in the guest.
set -u
BUN=$1 OUT=$2 TIMEOUT_MS=$3; shift 3
while [ $# -gt 0 ] && [ "$1" != -- ]; do export "$1"; shift; done
[ "${1:-}" = -- ] && shift
echo "vm: kernel $(uname -r), $(nproc) cpu, $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) MiB; $# test file(s)"
mkdir -p "$(dirname "$OUT")" || exit 1
# test/harness/kernel.ts: never skip for a missing kernel feature here; fail instead.
export CNI_TEST_VM_LANE=1
# test/harness/sandbox.ts: the namespace we leave is the "host" the tests must not touch.
export CNI_TEST_THROWAWAY_NETNS=$(readlink /proc/self/ns/net)
exec unshare --net -- /bin/sh -c 'ip link set lo up && exec "$@"' sh \
  "$BUN" test "--timeout=$TIMEOUT_MS" --reporter=junit "--reporter-outfile=$OUT" "$@"
