/**
 * `route_localnet` for localhost hostPorts (upstream sets net.ipv4.conf.<if>.route_localnet=1 on
 * the interface routing the container's IPv4 address, and never turns it back off: #729).
 *
 * Here the change is recorded: when WE switch it from 0 to 1, a state file
 * `/run/cni/portmap/localnet/<netns inode>-<ifname>` lists the attachments (`<net>/<cid>`) that
 * rely on it; DEL removes the attachment and, when none is left, writes 0 back. When the sysctl
 * was already 1 (set by an admin or another tool) nothing is recorded and nothing is restored.
 * The martian guard rule (iptables-rules.ts / nftables-backend.ts) keeps containers from reaching
 * 127.0.0.0/8 services while the sysctl is on.
 */
import { parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import { containsIP } from "../../shared/ip/cidr.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { exists, joinPath, mkdirAll, readDir, readTextFile, replaceFile, stat, unlinkIfExists } from "../../shared/sys/file.ts";
import { sysctlGet, sysctlSet } from "../../shared/sysctl/sysctl.ts";

export const LOCALNET_STATE_DIR = "/run/cni/portmap/localnet";

function sysctlName(ifName: string): string {
  return `net/ipv4/conf/${ifName}/route_localnet`;
}

/** Identifies the current netns, so throwaway namespaces with the same interface names never share state. */
function netnsKey(): string {
  return String(stat("/proc/thread-self/ns/net").ino);
}

/** The interface the host routes `ip` through (longest-prefix match in the main table); undefined when none. */
export function routeInterface(ip: IPAddr): string | undefined {
  using h = Handle.open();
  let best: { len: number; oif: number } | undefined;
  for (const r of h.routeList({ family: 4 })) {
    if (r.oif === undefined) continue;
    const len = r.dst?.prefixLen ?? 0;
    if (r.dst !== undefined) {
      const net = parseIP(r.dst.address);
      if (net === null || !containsIP(net, len, ip)) continue;
    }
    if (best === undefined || len > best.len) best = { len, oif: r.oif };
  }
  if (best === undefined) return undefined;
  try {
    return h.linkByIndex(best.oif).name;
  } catch {
    return undefined;
  }
}

interface State {
  ifName: string;
  users: string[];
}

function readState(path: string): State | undefined {
  try {
    const s = JSON.parse(readTextFile(path)) as State;
    return Array.isArray(s.users) && typeof s.ifName === "string" ? s : undefined;
  } catch {
    return undefined;
  }
}

/** Replaces the state file atomically (0600, in a 0700 directory) through a scratch name of this process. */
function writeState(path: string, s: State): void {
  mkdirAll(LOCALNET_STATE_DIR, 0o700);
  replaceFile(path, JSON.stringify(s), 0o600);
}

/** Turns route_localnet on for `ifName` on behalf of `user`, remembering whether we changed it. */
export function enableRouteLocalnet(ifName: string, user: string): void {
  const path = joinPath(LOCALNET_STATE_DIR, `${netnsKey()}-${ifName}`);
  const state = readState(path);
  const current = sysctlGet(sysctlName(ifName), { ignoreMissing: true });
  if (current === undefined) return;
  if (current.trim() === "1" && state === undefined) return; // someone else's setting: leave it alone
  sysctlSet(sysctlName(ifName), "1");
  // A state file while the sysctl reads 0 is stale (its netns inode was reused, or the interface
  // was recreated): its users no longer rely on this interface.
  const users = new Set(current.trim() === "0" ? [] : (state?.users ?? []));
  users.add(user);
  writeState(path, { ifName, users: [...users] });
}

/** Drops `user` from every interface it relied on in this netns; restores 0 where nobody is left. */
export function releaseRouteLocalnet(user: string): void {
  if (!exists(LOCALNET_STATE_DIR)) return;
  const prefix = `${netnsKey()}-`;
  for (const { name } of readDir(LOCALNET_STATE_DIR)) {
    if (!name.startsWith(prefix) || name.includes(".tmp")) continue;
    const path = joinPath(LOCALNET_STATE_DIR, name);
    const state = readState(path);
    if (state === undefined || !state.users.includes(user)) continue;
    const users = state.users.filter((u) => u !== user);
    if (users.length > 0) {
      writeState(path, { ifName: state.ifName, users });
      continue;
    }
    sysctlSet(sysctlName(state.ifName), "0", { ignoreMissing: true });
    unlinkIfExists(path);
  }
}
