/**
 * Closing a NETLINK_NETFILTER socket costs an RCU grace period when an nf_tables commit happened
 * shortly before: on the socket's release the kernel first finishes the last commit's deferred
 * cleanup (net/netfilter/nf_tables_api.c, nft_rcv_nl_event → nf_tables_trans_destroy_flush_work,
 * which waits for the grace period the cleanup needs: 15-20 ms on the bench machine). So a call
 * that deletes rules and closes its socket waits that long in close(2). A plugin process pays it
 * at exit; a thread of the resident agent need not: the agent installs a releaser
 * (agent/worker-loop.ts) that closes such descriptors later, once the thread is idle and the
 * cleanup long done. There only sockets opened in the network namespace the releaser was
 * installed in (the agent's) are deferred, so that a descriptor kept open a little longer never
 * keeps a container's namespace alive.
 *
 * A plugin process keeps every such descriptor until it exits ({@link closeNetfilterSocketsAtExit},
 * cli/dispatch.ts): the cleanup of a commit then runs while the call goes on (bridge's DEL
 * removes its masquerade rules before the container's veth, whose deletion waits for the kernel
 * longer), instead of at the close right after the commit.
 */
import { THREAD_NETNS_PATH } from "../sys/constants.ts";
import { stat, type FileStat } from "../sys/file.ts";
import { close } from "../sys/libc.ts";

/**
 * At most this many descriptors are kept back at once by a releaser: a call that removes the rules
 * of many attachments (a GC) must not run out of descriptors. Past it the oldest is closed at once.
 */
export const MAX_HELD_RELEASES = 64;

/** Adds `fd` to `held` (a releaser's list), closing the oldest when more than MAX_HELD_RELEASES would be held. */
export function holdRelease(held: number[], fd: number): void {
  held.push(fd);
  if (held.length > MAX_HELD_RELEASES) close(held.shift()!);
}

let releaser: { take(fd: number): void; home: FileStat | "any" } | undefined;

/**
 * From now on, `take` receives the descriptors of deferrable sockets instead of their close
 * (undefined: close them at once). Sockets count as deferrable when opened in the calling
 * thread's present netns.
 */
export function deferNetfilterReleases(take: ((fd: number) => void) | undefined): void {
  releaser = take === undefined ? undefined : { take, home: stat(THREAD_NETNS_PATH) };
}

/**
 * For a plugin process: NETLINK_NETFILTER sockets, wherever opened, are not closed by the call;
 * the process's exit closes them.
 */
export function closeNetfilterSocketsAtExit(): void {
  const held: number[] = [];
  releaser = { take: (fd) => holdRelease(held, fd), home: "any" };
}

/** Whether a NETLINK_NETFILTER socket opened now, by this thread, may have its close deferred. */
export function releaseDeferrable(): boolean {
  if (releaser === undefined) return false;
  if (releaser.home === "any") return true;
  const here = stat(THREAD_NETNS_PATH);
  return here.dev === releaser.home.dev && here.ino === releaser.home.ino;
}

/** Hands `fd` to the releaser; false when none is installed (the caller closes it). */
export function deferRelease(fd: number): boolean {
  if (releaser === undefined) return false;
  releaser.take(fd);
  return true;
}
