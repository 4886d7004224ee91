/**
 * Host-port conflicts: a mapping whose protocol and host port another container already forwards
 * on an overlapping host address (same address, or either side on every local address) is refused,
 * as are duplicates within one request.
 */
import { formatIP, ipEqual, parseIP, type IPFamily } from "../../shared/ip/ip.ts";
import type { ForeignPort } from "./backend.ts";
import { hasHostDst, type PortMapping } from "./config.ts";

function describe(protocol: string, port: number, hostIP: string): string {
  return `host port ${port}/${protocol}${hostIP ? ` on ${hostIP}` : ""}`;
}

/** True when both texts parse to the same address. */
export function sameHost(a: string, b: string): boolean {
  const x = parseIP(a);
  const y = parseIP(b);
  return x !== null && y !== null && ipEqual(x, y);
}

/** Problems (empty: none) for `mine` (mappings of one family) against ports forwarded by others. */
export function findConflicts(mine: readonly PortMapping[], foreign: readonly ForeignPort[], family: IPFamily): string[] {
  const problems: string[] = [];
  const hostOf = (m: PortMapping): string => (hasHostDst(m) ? formatIP(m.hostAddr!) : "");
  mine.forEach((m, i) => {
    const host = hostOf(m);
    for (const f of foreign) {
      if (f.protocol !== m.protocol || f.hostPort !== m.hostPort) continue;
      if (host !== "" && f.hostIP !== "" && !sameHost(host, f.hostIP)) continue;
      problems.push(`${describe(m.protocol, m.hostPort, host)} is already forwarded to ${f.owner}${f.hostIP ? ` (on ${f.hostIP})` : ""}`);
    }
    for (const other of mine.slice(0, i)) {
      if (other.protocol !== m.protocol || other.hostPort !== m.hostPort) continue;
      const oh = hostOf(other);
      if (host !== "" && oh !== "" && !sameHost(host, oh)) continue;
      problems.push(`${describe(m.protocol, m.hostPort, host)} is mapped twice in portMappings (IPv${family})`);
    }
  });
  return problems;
}
