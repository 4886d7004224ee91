/**
 * Which addresses are configured anywhere on the node, in any network namespace: the evidence that
 * an address belongs to a live container, whatever runtime or plugin made it. Used where GC or an
 * operator must not take away what a live container still uses (meta/firewall/gc.ts, operator/).
 *
 * Namespaces are found as a runtime pins them — bind-mounted namespace files (nsfs mounts whose root
 * is `net:[…]` in /proc/self/mountinfo: `ip netns`, containerd, CRI-O, podman and Docker all do
 * this) — and as every process holds one (`/proc/<pid>/ns/net`); each namespace is read once.
 * Reading changes nothing; a namespace that goes away meanwhile is skipped.
 */
import { Handle } from "../netlink/handle.ts";
import { NetNS } from "../netns/netns.ts";
import { readDir, readTextFile, stat } from "../sys/file.ts";

/** Mount points of network namespace files in a mountinfo text (octal escapes decoded). */
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

/** Every network namespace reachable by a path, each once (bind mounts first, then processes). */
export function nodeNamespacePaths(): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (path: string): void => {
    try {
      const st = stat(path);
      const key = `${st.dev}:${st.ino}`;
      if (!seen.has(key)) {
        seen.add(key);
        out.push(path);
      }
    } catch {
      // gone meanwhile, or not reachable
    }
  };
  try {
    for (const path of nsfsNetMounts(readTextFile("/proc/self/mountinfo"))) add(path);
  } catch {
    // no mountinfo: processes only
  }
  for (const e of readDir("/proc")) if (/^\d+$/.test(e.name)) add(`/proc/${e.name}/ns/net`);
  return out;
}

/** Address text ("10.1.2.3", "fd00::2") → a namespace path where it is configured. */
export function nodeAddresses(): Map<string, string> {
  const holders = new Map<string, string>();
  for (const path of nodeNamespacePaths()) {
    try {
      using ns = NetNS.open(path);
      using nl = Handle.open(ns);
      for (const a of nl.addrList()) if (!holders.has(a.address)) holders.set(a.address, path);
    } catch {
      // a namespace that went away while we looked
    }
  }
  return holders;
}
