/**
 * A private, unnamed network namespace (upstream `ns.TempNetNS`), e.g. a staging area where a
 * device is renamed out of sight of udev/NetworkManager and of both the host's and the container's
 * names.
 *
 * The namespace exists only through the returned handle: closing it destroys the namespace. A
 * physical device still inside then falls back to the initial namespace and a virtual one is
 * destroyed, so callers move their devices out before closing.
 */
import { CLONE_NEWNET } from "../sys/constants.ts";
import { unshare } from "../sys/libc.ts";
import { withNetNS } from "./enter.ts";
import { NetNS } from "./netns.ts";

/**
 * `unshare(CLONE_NEWNET)` on this thread, open the new namespace, and switch back (inside one
 * synchronous withNetNS window, which restores the original namespace or aborts).
 */
export function createTempNetNS(): NetNS {
  using self = NetNS.current();
  return withNetNS(self, () => {
    unshare(CLONE_NEWNET);
    return NetNS.current();
  });
}
