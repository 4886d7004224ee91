/**
 * The agent's releaser for NETLINK_NETFILTER sockets (shared/netlink/netfilter-release.ts): a call
 * that committed nf_tables changes (a DEL of bridge ipMasq, portmap or firewall rules) would wait
 * an RCU grace period in close(2); the worker thread instead keeps the descriptors and closes them
 * RELEASE_DELAY_MS after its last call, when the kernel's cleanup is long done and the close is
 * immediate — or at once when the thread retires, so none outlives the thread. At most
 * MAX_HELD_RELEASES are kept back (netfilter-release.ts).
 */
import { deferNetfilterReleases, holdRelease } from "../shared/netlink/netfilter-release.ts";
import { close } from "../shared/sys/libc.ts";

/** How long after a call the thread closes what it deferred (well past a grace period). */
export const RELEASE_DELAY_MS = 250;

/** Installs the releaser on this thread; `callEnded()` after every call, `closeNow()` before it retires. */
export function deferNetfilterCloses(): { callEnded(): void; closeNow(): void } {
  const pending: number[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const closeNow = () => {
    clearTimeout(timer);
    timer = undefined;
    for (const fd of pending.splice(0)) close(fd);
  };
  deferNetfilterReleases((fd) => holdRelease(pending, fd));
  return {
    callEnded() {
      if (pending.length === 0 || timer !== undefined) return;
      timer = setTimeout(closeNow, RELEASE_DELAY_MS);
    },
    closeNow,
  };
}
