/**
 * Which attachments are live. With the operator's list (`--valid`), exactly the listed ones.
 * Without it, the node decides, most certain evidence first:
 * 1. a netns path recorded for the attachment (libcni cache entry, dhcp lease): live while it exists;
 * 2. an address it holds (reservation, cached result): live while some network namespace of the
 *    node has that address configured;
 * 3. neither recorded: unknown, which GC treats as live (nothing is collected on a guess).
 */
import { exists } from "../shared/sys/file.ts";
import { nodeAddresses } from "../shared/iface/node-addresses.ts";
import type { ValidSpec } from "./flags.ts";
import type { SeenAttachment } from "../shared/node-state/network-state.ts";

export type LiveState = "live" | "stale" | "unknown";

export interface Verdict {
  state: LiveState;
  why: string;
}

/** The node's network namespaces and the addresses configured in each. */
export interface NamespaceView {
  exists(path: string): boolean;
  /** A namespace path holding `address`, or undefined. */
  holder(address: string): string | undefined;
}

/** The real node: every namespace's addresses, read once. */
export function systemNamespaceView(): NamespaceView {
  let holders: Map<string, string> | undefined;
  return {
    exists,
    holder: (address) => (holders ??= nodeAddresses()).get(address),
  };
}

/** The verdict for one attachment. */
export function judge(a: SeenAttachment, valid: readonly ValidSpec[] | undefined, view: NamespaceView): Verdict {
  if (valid !== undefined) {
    const listed = valid.some((v) => v.containerID === a.containerID && (v.ifName === undefined || v.ifName === a.ifName));
    return listed ? { state: "live", why: "listed by --valid" } : { state: "stale", why: "not in the --valid list" };
  }
  if (a.netns.size > 0) {
    const present = [...a.netns].find((p) => view.exists(p));
    return present !== undefined ? { state: "live", why: `netns ${present} exists` } : { state: "stale", why: `netns ${[...a.netns].join(", ")} is gone` };
  }
  if (a.addresses.size > 0) {
    for (const ip of a.addresses) {
      const holder = view.holder(ip);
      if (holder !== undefined) return { state: "live", why: `${ip} is configured in ${holder}` };
    }
    return { state: "stale", why: `no network namespace holds ${[...a.addresses].join(", ")}` };
  }
  return { state: "unknown", why: "no netns or address recorded; counted as live (pass --valid to decide)" };
}
