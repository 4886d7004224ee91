/**
 * A private, unnamed network namespace used as a staging area while a device is renamed
 * (upstream `ns.TempNetNS`): renaming a device inside a namespace nobody else watches avoids races
 * with udev/NetworkManager and name clashes in both the host and the container.
 *
 * The namespace exists only through the returned handle: closing it destroys the namespace. A
 * physical device still inside then falls back to the initial namespace and a virtual one is
 * destroyed, so callers always move the device out before closing.
 */
import { withNetNS, NetNS } from "../../shared/netns/index.ts";
import { CLONE_NEWNET } from "../../shared/sys/constants.ts";
import { unshare } from "../../shared/sys/libc.ts";

/**
 * `unshare(CLONE_NEWNET)` on this thread, open the new namespace, and switch back (inside one
 * synchronous withNetNS window, which restores the original namespace or aborts).
 */
export function createTempNetns(): NetNS {
  using self = NetNS.current();
  return withNetNS(self, () => {
    unshare(CLONE_NEWNET);
    return NetNS.current();
  });
}
