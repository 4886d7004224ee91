/**
 * loopback: brings `lo` up in the container on ADD and down on DEL (upstream
 * plugins/main/loopback/loopback.go). CNI_IFNAME is ignored.
 *
 * ADD refuses a `lo` that carries a non-loopback address. With a prevResult (chained), ADD passes it
 * through; otherwise it reports `lo` with its first IPv4 and IPv6 address — printed, like upstream,
 * in the 1.x shape labelled with the config's version (only a missing cniVersion gives the 0.1.0 shape).
 * STATUS and GC have nothing to do and succeed.
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { parsePrevResult } from "../../shared/cni/result/prevresult.ts";
import { printAsIs, type CmdArgs, type IPConfig, type PluginSpec, type Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { IFF_UP } from "../../shared/netlink/constants/if-link.ts";

const LOOPBACK_V4 = { first: 0x7f000000, last: 0x7fffffff };

function isLoopbackAddress(family: 4 | 6, address: string): boolean {
  if (family === 6) return address === "::1";
  const parts = address.split(".").map(Number);
  const n = ((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!;
  return n >= LOOPBACK_V4.first && n <= LOOPBACK_V4.last;
}

function add(args: CmdArgs): Result {
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const lo = nl.linkByName("lo");
  nl.linkSetUp(lo.index);
  const ips: IPConfig[] = [];
  for (const family of [4, 6] as const) {
    const addrs = nl.addrList({ index: lo.index, family });
    for (const a of addrs) {
      if (!isLoopbackAddress(family, a.address)) {
        throw new InternalError(`loopback interface found with non-loopback address ${JSON.stringify(a.address)}`);
      }
    }
    const first = addrs[0];
    if (first) ips.push({ address: `${first.address}/${first.prefixLen}`, interface: 0 });
  }
  const prev = args.config.prevResult;
  if (prev !== undefined && prev !== null) return parsePrevResult(prev, args.cniVersion);
  return printAsIs({
    interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox: args.netns }],
    ips,
  });
}

function check(args: CmdArgs): void {
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const lo = nl.linkByName("lo");
  if ((lo.flags & IFF_UP) === 0) throw new InternalError("loopback interface is down");
}

function del(args: CmdArgs): void {
  const ns = openNetnsForDel(args.netns);
  if (!ns) return;
  using owned = ns;
  using nl = Handle.open(owned);
  nl.linkSetDown(nl.linkByName("lo").index);
}

export const loopbackPlugin: PluginSpec = {
  name: "loopback",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status: () => undefined,
  gc: () => undefined,
};
