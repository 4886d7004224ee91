/**
 * Waiting out IPv6 duplicate address detection (upstream `ip.SettleAddresses`, HEAD): poll the
 * link's IPv6 addresses until none is tentative. An address in DADFAILED state is an error at once
 * (a duplicate exists on the link). Running out of time is an error only while the link is
 * operationally up: on a link without carrier DAD never completes, and upstream then goes on.
 *
 * Synchronous: sleeps with Atomics.wait (no timers), so it can run with a handle in any netns.
 */
import { InternalError } from "../cni/errors.ts";
import type { Addr, AddrFilter } from "../netlink/addr.ts";
import { IFA_F_DADFAILED, IFA_F_TENTATIVE } from "../netlink/constants/if-addr.ts";
import { IF_OPER_UP } from "../netlink/constants/if-link.ts";
import type { Link } from "../netlink/link.ts";

/** Poll interval (upstream SETTLE_INTERVAL: 50 ms). */
export const SETTLE_INTERVAL_MS = 50;

let sleeper: Int32Array | undefined;

/** Blocks the thread for `ms` without timers or the event loop. */
export function sleepSync(ms: number): void {
  sleeper ??= new Int32Array(new SharedArrayBuffer(4));
  Atomics.wait(sleeper, 0, 0, ms);
}

/** What settling reads of the link's netns (a netlink Handle does). */
export interface AddressReader {
  addrList(filter: AddrFilter): Addr[];
  linkByIndex(index: number): Link;
}

/** Waits until link `index` has no tentative IPv6 address, at most `timeoutMs`. */
export function settleIPv6(nl: AddressReader, index: number, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const addrs = nl.addrList({ index, family: 6 });
    let tentative = false;
    for (const a of addrs) {
      if ((a.flags & IFA_F_DADFAILED) !== 0) {
        throw new InternalError(`link ${nl.linkByIndex(index).name} has address ${a.address} in DADFAILED state`);
      }
      if ((a.flags & IFA_F_TENTATIVE) !== 0) tentative = true;
    }
    if (!tentative) return;
    if (Date.now() >= deadline) {
      const link = nl.linkByIndex(index);
      if (link.operState !== IF_OPER_UP) return;
      throw new InternalError(`link ${link.name} still has tentative addresses after ${Math.round(timeoutMs / 1000)} seconds`);
    }
    sleepSync(SETTLE_INTERVAL_MS);
  }
}
