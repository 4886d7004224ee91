/**
 * Which attachments are live. With the operator's list (`--valid`), exactly the listed ones.
 * Without it, the node decides, most certain evidence first:
 * 1. a netns path recorded for the attachment (libcni cache entry, dhcp lease): live while it exists;
 * 2. an address it holds (reservation, cached result): live while some network namespace of the
 *    node has that address configured;
 * 3. neither recorded: unknown, which GC treats as live (nothing is collected on a guess).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { Handle } from "../shared/netlink/index.ts";
import { NetNS } from "../shared/netns/index.ts";
import type { ValidSpec } from "./flags.ts";
import type { SeenAttachment } from "./sources.ts";

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

/** Mount points of network namespace files (nsfs mounts whose root is `net:[…]`) in /proc/self/mountinfo. */
export function nsfsNetMounts(mountinfo: string): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split("\n")) {
    const [pre, post] = line.split(" - ");
    if (post === undefined || !post.startsWith("nsfs ")) continue;
    const f = pre!.split(" ");
    if (f[3]?.startsWith("net:[") === true && f[4] !== undefined) out.push(f[4].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
  }
  return out;
}

/**
 * Every network namespace reachable by a path, each once: bind-mounted namespace files anywhere
 * (`ip netns`, containerd, CRI-O, podman, Docker all pin namespaces so), then `/proc/<pid>/ns/net`.
 */
function namespacePaths(): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (path: string): void => {
    try {
      const st = statSync(path);
      const key = `${st.dev}:${st.ino}`;
      if (!seen.has(key)) {
        seen.add(key);
        out.push(path);
      }
    } catch {
      // gone meanwhile, or not a namespace file
    }
  };
  try {
    for (const path of nsfsNetMounts(readFileSync("/proc/self/mountinfo", "utf8"))) add(path);
  } catch {
    // no /proc/self/mountinfo: processes only
  }
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) add(`/proc/${pid}/ns/net`);
  return out;
}

/** The real node: every namespace's addresses, read once. */
export function systemNamespaceView(): NamespaceView {
  let holders: Map<string, string> | undefined;
  const load = (): Map<string, string> => {
    if (holders !== undefined) return holders;
    holders = new Map();
    for (const path of namespacePaths()) {
      try {
        using ns = NetNS.open(path);
        using nl = Handle.open(ns);
        for (const a of nl.addrList()) if (!holders.has(a.address)) holders.set(a.address, path);
      } catch {
        // a namespace that went away while we looked
      }
    }
    return holders;
  };
  return {
    exists: (path) => {
      try {
        statSync(path);
        return true;
      } catch {
        return false;
      }
    },
    holder: (address) => load().get(address),
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
