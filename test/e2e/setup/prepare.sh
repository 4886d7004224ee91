#!/usr/bin/env bash
# One-time (cached) preparation of the e2e lane's real runtimes, outside the repository:
#   $CNI_E2E_CACHE/bin/cnitool    (build-cnitool.sh: libcni v1.1.2 from Debian sources, offline)
#   $CNI_E2E_CACHE/bin/rc-crictl  (build-rc-crictl.sh: tiny CRI client; crictl is not in Debian 12)
#   a static busybox (test/harness/static-busybox.sh) for the images
# Packages come from test/setup-host.sh. Idempotent: existing binaries are kept.
# A build that fails is reported; the rows needing that tool then skip with the reason.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${CNI_E2E_CACHE:-/var/cache/cni-ts-e2e}
mkdir -p "$CACHE/bin"
rc=0
if [ ! -x "$CACHE/bin/cnitool" ]; then
  echo "e2e-prepare: building cnitool (about 15 s, once)" >&2
  CNITOOL_BUILD_DIR=$CACHE/cnitool-build "$HERE/build-cnitool.sh" "$CACHE/bin/cnitool" >&2 || { echo "e2e-prepare: cnitool build FAILED" >&2; rc=1; }
fi
if [ ! -x "$CACHE/bin/rc-crictl" ]; then
  echo "e2e-prepare: building rc-crictl (about 45 s, once)" >&2
  RC_CRICTL_BUILD_DIR=$CACHE/rc-crictl-build "$HERE/build-rc-crictl.sh" "$CACHE/bin/rc-crictl" >&2 || { echo "e2e-prepare: rc-crictl build FAILED" >&2; rc=1; }
fi
# busybox-static's binary for the images (the tests run without network, so fetch it now if needed)
bash "$HERE/../../harness/static-busybox.sh" > /dev/null || { echo "e2e-prepare: no static busybox" >&2; rc=1; }
exit $rc
