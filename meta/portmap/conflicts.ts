/**
 * Host-port clashes. Within one request, a mapping given twice (same protocol and host port on
 * overlapping host addresses) is refused. A port another container already forwards is not: the
 * scheduler keeps live pods apart, so such rules were leaked by a container removed without DEL,
 * and refusing would keep its replacement from ever starting. The newest ADD's rules are evaluated
 * first (both backends), and the containers it shadows are named on stderr.
 */
import { formatIP, ipEqual, parseIP, type IPFamily } from "../../shared/ip/addr.ts";
import type { ForeignPort } from "./config.ts";
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

const hostOf = (m: PortMapping): string => (hasHostDst(m) ? formatIP(m.hostAddr!) : "");

/** True when both forward the same protocol and port on overlapping host addresses ("" = every local address). */
function clash(protocol: string, port: number, host: string, other: { protocol: string; hostPort: number }, otherHost: string): boolean {
  if (other.protocol !== protocol || other.hostPort !== port) return false;
  return host === "" || otherHost === "" || sameHost(host, otherHost);
}

/** Mappings of one request (one family) given twice: the problems, empty when there are none. */
export function duplicateMappings(mine: readonly PortMapping[], family: IPFamily): string[] {
  const problems: string[] = [];
  mine.forEach((m, i) => {
    if (mine.slice(0, i).some((o) => clash(m.protocol, m.hostPort, hostOf(m), o, hostOf(o)))) {
      problems.push(`${describe(m.protocol, m.hostPort, hostOf(m))} is mapped twice in portMappings (IPv${family})`);
    }
  });
  return problems;
}

/** The ports of `mine` that other containers' rules (`foreign`) also forward: one line per clash, naming the owner. */
export function shadowedPorts(mine: readonly PortMapping[], foreign: readonly ForeignPort[]): string[] {
  const out: string[] = [];
  for (const m of mine) {
    for (const f of foreign) {
      if (!clash(m.protocol, m.hostPort, hostOf(m), f, f.hostIP)) continue;
      out.push(`${describe(m.protocol, m.hostPort, hostOf(m))} was forwarded to ${f.owner}${f.hostIP ? ` (on ${f.hostIP})` : ""}`);
    }
  }
  return out;
}
