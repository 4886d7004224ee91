/** Which host links host-device refuses to move (pure judgement over links and routes; no root). */
import { describe, expect, test } from "bun:test";
import type { Link, RouteEntry } from "../../shared/netlink/index.ts";
import { IFF_LOOPBACK, IFF_UP } from "../../shared/netlink/constants/if-link.ts";
import { judgeHostDevice } from "./safety.ts";

function link(index: number, name: string, extra: Partial<Link> = {}): Link {
  return { index, name, flags: IFF_UP, hwType: 1, mtu: 1500, ...extra };
}
function route(extra: Partial<RouteEntry>): RouteEntry {
  return { family: 4, table: 254, scope: 0, protocol: 3, type: 1, flags: 0, ...extra };
}

const lo = link(1, "lo", { flags: IFF_UP | IFF_LOOPBACK });
const eth0 = link(2, "eth0");
const eth1 = link(3, "eth1");
const br0 = link(4, "br0", { kind: "bridge" });
const port = link(5, "veth1", { kind: "veth", masterIndex: 4 });
const links = [lo, eth0, eth1, br0, port];

describe("judgeHostDevice", () => {
  test("loopback is always refused, by flag or by name", () => {
    expect(judgeHostDevice(lo, links, [])?.kind).toBe("loopback");
    expect(judgeHostDevice(link(9, "lo", { flags: 0 }), links, [])?.kind).toBe("loopback");
  });
  test("a link with an IPv4 or IPv6 default route (any table, multipath too) is refused", () => {
    const v4 = route({ oif: 2, gw: "192.0.2.1" });
    expect(judgeHostDevice(eth0, links, [v4])).toEqual({ kind: "default-route", why: "it carries the host's IPv4 default route" });
    const v6 = route({ family: 6, table: 100, oif: 3 });
    expect(judgeHostDevice(eth1, links, [v6])?.why).toBe("it carries the host's IPv6 default route");
    const ecmp = route({ multipath: [{ oif: 2, flags: 0, weight: 1 }, { oif: 3, flags: 0, weight: 1 }] });
    expect(judgeHostDevice(eth1, links, [ecmp])?.kind).toBe("default-route");
    const zeroDst = route({ dst: { address: "0.0.0.0", prefixLen: 0 }, oif: 3 });
    expect(judgeHostDevice(eth1, links, [zeroDst])?.kind).toBe("default-route");
  });
  test("a non-default route does not make a link unsafe", () => {
    const r = route({ dst: { address: "10.0.0.0", prefixLen: 8 }, oif: 2 });
    expect(judgeHostDevice(eth0, links, [r, route({ oif: 3 })])).toBeUndefined();
  });
  test("a master with ports is refused; the port itself and a bridge without ports are not", () => {
    expect(judgeHostDevice(br0, links, [])).toEqual({ kind: "master", why: `it is the master of "veth1"` });
    expect(judgeHostDevice(port, links, [])).toBeUndefined();
    expect(judgeHostDevice(br0, [lo, br0], [])).toBeUndefined();
  });
});
