/**
 * Mixed-node interop: on one host namespace, with ONE shared host-local store, container c1 is
 * ADDed by implementation A and container c2 by implementation B; then B CHECKs + DELs c1 and A
 * CHECKs + DELs c2 (Go = /usr/lib/cni 1.1.1, ours = the build under test), in both orders. Must
 * hold: distinct addresses (nothing handed out twice), CHECK and DEL succeed across
 * implementations, and nothing of either container is left: host veths, IFBs, reservations,
 * iptables/nft rules naming the container, tuning backup files, the container interface.
 * Table-driven: rows whose plugins are not built yet are printed skips.
 */
import { describe, expect } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { NetworkConfigList } from "../harness/conflist.ts";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { describeOutcome, runChain, type Attachment, type ChainOutcome } from "./lib/chain.ts";
import { createNode, type Node } from "./lib/node.ts";
import { GO_BIN_DIR, OUR_BIN, missingReason, rowTest } from "./lib/plugins.ts";

interface InteropRow {
  name: string;
  plugins: string[];
  list: (dataDir: string) => NetworkConfigList;
  /** Runtime capability args of container 1 or 2 (distinct host ports: a port is owned by one container). */
  capabilityArgs?: (container: 1 | 2) => Record<string, unknown>;
}

const hl = (dataDir: string, subnet: string) => ({ type: "host-local", dataDir, ranges: [[{ subnet }]], routes: [{ dst: "0.0.0.0/0" }] });
const bridge = (d: string, subnet: string, extra: Record<string, unknown> = {}) => ({ type: "bridge", bridge: "iobr0", isGateway: true, ipMasq: true, ipam: hl(d, subnet), ...extra });
const ptp = (d: string, subnet: string) => ({ type: "ptp", ipMasq: true, ipam: hl(d, subnet) });

const ROWS: InteropRow[] = [
  { name: "bridge + host-local (ipMasq)", plugins: ["bridge", "host-local"], list: (d) => ({ name: "io-br", cniVersion: "1.0.0", plugins: [bridge(d, "10.81.1.0/24")] }) },
  { name: "ptp + host-local (ipMasq)", plugins: ["ptp", "host-local"], list: (d) => ({ name: "io-ptp", cniVersion: "1.0.0", plugins: [ptp(d, "10.81.2.0/24")] }) },
  { name: "host-local store shared, 0.4.0 results", plugins: ["ptp", "host-local"], list: (d) => ({ name: "io-hl", cniVersion: "0.4.0", plugins: [ptp(d, "10.81.3.0/29")] }) },
  {
    name: "bridge → portmap",
    plugins: ["bridge", "host-local", "portmap"],
    capabilityArgs: (c) => ({ portMappings: [{ hostPort: 39079 + c, containerPort: 80, protocol: "tcp" }] }),
    list: (d) => ({ name: "io-pm", cniVersion: "1.0.0", plugins: [bridge(d, "10.81.4.0/24"), { type: "portmap", snat: true, capabilities: { portMappings: true } }] }),
  },
  { name: "bridge → firewall", plugins: ["bridge", "host-local", "firewall"], list: (d) => ({ name: "io-fw", cniVersion: "1.0.0", plugins: [bridge(d, "10.81.5.0/24"), { type: "firewall", backend: "iptables" }] }) },
  { name: "ptp → bandwidth", plugins: ["ptp", "host-local", "bandwidth"], list: (d) => ({ name: "io-bw", cniVersion: "1.0.0", plugins: [ptp(d, "10.81.6.0/24"), { type: "bandwidth", ingressRate: 800000, ingressBurst: 100000, egressRate: 800000, egressBurst: 100000 }] }) },
  {
    name: "bridge → tuning",
    plugins: ["bridge", "host-local", "tuning"],
    list: (d) => ({ name: "io-tu", cniVersion: "1.0.0", plugins: [bridge(d, "10.81.7.0/24"), { type: "tuning", mtu: 1400, promisc: true, sysctl: { "net.ipv4.conf.eth0.arp_notify": "1" } }] }),
  },
];

interface Impl {
  label: string;
  bin: string;
}
const GO: Impl = { label: "Go", bin: GO_BIN_DIR };
const OURS: Impl = { label: "ours", bin: OUR_BIN };

function firstIp(result: Record<string, unknown> | undefined): string {
  const ips = (result?.ips ?? []) as { address?: string }[];
  return String(ips[0]?.address ?? "").split("/")[0] ?? "";
}

/**
 * A CHECK outcome; Go 1.1.1's portmap CHECK of an IPv4-only container fails looking for an
 * ip6tables chain (upstream #819, fixed after 1.1.1): that exact failure is printed as XFAIL.
 */
function checkOutcome(o: ChainOutcome, impl: Impl): string {
  const msg = String((o.failed?.run.json as { msg?: unknown } | undefined)?.msg ?? "");
  if (!o.ok && impl === GO && o.failed?.type === "portmap" && msg.includes("could not check ipv6 dnat")) {
    process.stderr.write(`XFAIL interop: Go 1.1.1 portmap CHECK (upstream #819): ${msg}\n`);
    return "ok";
  }
  return describeOutcome(o);
}

/** Everything on the host or in the store that still names `cid`. */
function leftovers(node: Node, cid: string, netDir: string): string[] {
  const found: string[] = [];
  for (const tool of ["iptables-save", "ip6tables-save"]) {
    for (const line of node.sh([tool]).stdout.split("\n")) if (line.includes(cid)) found.push(`${tool}: ${line}`);
  }
  const nft = node.sh(["nft", "list", "ruleset"]).stdout;
  for (const line of nft.split("\n")) if (line.includes(cid)) found.push(`nft: ${line.trim()}`);
  for (const [ip, owner] of Object.entries(reservations(netDir))) if (owner.startsWith(cid)) found.push(`reservation ${ip}`);
  if (existsSync(`/run/cni/tuning/${cid}_eth0.json`)) found.push(`tuning backup /run/cni/tuning/${cid}_eth0.json`);
  return found;
}

function hostVethsAndIfbs(node: Node): string[] {
  const links = JSON.parse(node.sh(["ip", "-j", "-d", "link", "show"]).stdout || "[]") as { ifname: string; linkinfo?: { info_kind?: string } }[];
  return links.filter((l) => l.linkinfo?.info_kind === "veth" || l.linkinfo?.info_kind === "ifb").map((l) => l.ifname);
}

describe.skipIf(!sandboxed())("mixed-node interop: ADD with one implementation, CHECK + DEL with the other", () => {
  useFixtureCleanup();

  for (const row of ROWS) {
    for (const [a, b] of [[GO, OURS], [OURS, GO]] as const) {
      rowTest(`interop: ${row.name}: c1 ${a.label} ADD → ${b.label} CHECK/DEL; c2 ${b.label} ADD → ${a.label} CHECK/DEL`, missingReason(row.plugins, { go: true }), async () => {
        const node = await createNode();
        const dataDir = makeTempDir("cni-interop-store-");
        const list = row.list(dataDir);
        const netDir = join(dataDir, list.name);
        const attach = async (n: 1 | 2, cid: string): Promise<Attachment> => ({
          containerID: cid,
          netns: (await createContainerNetns()).path,
          ifName: "eth0",
          ...(row.capabilityArgs ? { capabilityArgs: row.capabilityArgs(n) } : {}),
        });
        const tag = `${a.label}${b.label}-${row.name.replace(/[^a-z]/g, "").slice(0, 12)}`;
        const c1 = await attach(1, `io-c1-${tag}`);
        const c2 = await attach(2, `io-c2-${tag}`);

        const add1 = await runChain(node, a.bin, list, c1, "ADD");
        expect(describeOutcome(add1)).toBe("ok");
        const add2 = await runChain(node, b.bin, list, c2, "ADD");
        expect(describeOutcome(add2)).toBe("ok");
        const ip1 = firstIp(add1.result);
        const ip2 = firstIp(add2.result);
        expect(ip1).not.toBe("");
        expect(ip2).not.toBe(ip1);
        expect(Object.keys(reservations(netDir)).sort()).toEqual([ip1, ip2].sort());

        expect(checkOutcome(await runChain(node, b.bin, list, c1, "CHECK", add1.result), b)).toBe("ok");
        expect(checkOutcome(await runChain(node, a.bin, list, c2, "CHECK", add2.result), a)).toBe("ok");
        expect(describeOutcome(await runChain(node, b.bin, list, c1, "DEL", add1.result))).toBe("ok");
        expect(leftovers(node, c1.containerID, netDir)).toEqual([]);
        expect(describeOutcome(await runChain(node, a.bin, list, c2, "DEL", add2.result))).toBe("ok");
        expect(leftovers(node, c2.containerID, netDir)).toEqual([]);
        expect(hostVethsAndIfbs(node)).toEqual([]);
        expect(reservations(netDir)).toEqual({});
        for (const c of [c1, c2]) {
          const inside = Bun.spawnSync(["nsenter", `--net=${c.netns}`, "ip", "link", "show", "eth0"], { stderr: "pipe" });
          expect(inside.exitCode).not.toBe(0);
        }
        await node.host.destroy();
      });
    }
  }
});
