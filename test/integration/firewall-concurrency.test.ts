/**
 * The firewall layer under concurrency, mixed with the Go plugins 1.1.1: several bridge (ipMasq) +
 * host-local → portmap → firewall chains ADD and DEL at the same time, ours and Go's, each DEL run
 * by the other implementation for half of the containers. Our plugins read only the chains they
 * change and retry a restore that lost a race, so after every phase the tables must hold exactly
 * the rules of the containers that are up: per container one masquerade chain with its POSTROUTING
 * jump, one CNI-DN chain with its CNI-HOSTPORT-DNAT entry, two CNI-FORWARD rules; the shared chains
 * and jumps exactly once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { useHostSysctls } from "../harness/host-sysctl.ts";
import { ConflistRunner, type NetworkConfigList, type RuntimeConf } from "../harness/conflist.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, GO_BIN_DIR, hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { suiteTempDir } from "../harness/tempdir.ts";
import { formatChainName, formatComment } from "../../shared/firewall/naming.ts";
import { dnatChainName } from "../../meta/portmap/iptables-rules.ts";

const NET = "fw-conc";
const BRIDGE = "fwcbr0";

function sh(argv: string[]): string {
  const p = Bun.spawnSync({ cmd: argv, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${p.stderr.toString()}`);
  return p.stdout.toString();
}
/** `-A` lines of one table (IPv4, the variant Go uses: `iptables` is nf_tables here). */
const rules = (table: string): string[] => sh(["iptables-save", "-t", table]).split("\n").filter((l) => l.startsWith("-A "));
const chains = (table: string): string[] => sh(["iptables-save", "-t", table]).split("\n").filter((l) => l.startsWith(":"));
const count = (lines: string[], pred: (l: string) => boolean): number => lines.filter(pred).length;
const chainName = (decl: string): string => decl.slice(1).split(" ")[0]!;

/** Removes the chains of `table` that are not in `before` (and every jump to them), as found now. */
function removeNewChains(table: string, before: readonly string[]): void {
  const fresh = chains(table).map(chainName).filter((c) => !before.includes(c));
  if (fresh.length === 0) return;
  const jumps = rules(table).filter((l) => fresh.some((c) => l.endsWith(` -j ${c}`)));
  const input = [`*${table}`, ...jumps.map((l) => `-D${l.slice(2)}`), ...fresh.map((c) => `-F ${c}`), ...fresh.map((c) => `-X ${c}`), "COMMIT", ""].join("\n");
  const p = Bun.spawnSync({ cmd: ["iptables-restore", "--noflush", "--wait"], stdin: Buffer.from(input), stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`cleanup of ${table} failed: ${p.stderr.toString()}`);
}

describe.skipIf(!sandboxed() || !hasGoPlugin("bridge") || !hasGoPlugin("portmap") || !hasGoPlugin("firewall"))("firewall layer: concurrent ADD/DEL, ours and Go's", () => {
  useFixtureCleanup();
  const dataDir = suiteTempDir("fw-conc-");
  const cacheDir = suiteTempDir("fw-conc-cache-");
  const ours = new ConflistRunner({ cacheDir, path: [DIST_BIN] });
  const go = new ConflistRunner({ cacheDir, path: [GO_BIN_DIR] });
  const list: NetworkConfigList = {
    cniVersion: "1.0.0",
    name: NET,
    plugins: [
      { type: "bridge", bridge: BRIDGE, isGateway: true, ipMasq: true, ipam: { type: "host-local", dataDir, ranges: [[{ subnet: "10.93.0.0/24" }]] } },
      { type: "portmap", capabilities: { portMappings: true } },
      { type: "firewall" },
    ],
  };
  const up = new Map<string, { ns: ContainerNetns; rt: RuntimeConf; ip: string; port: number }>();
  let nextPort = 19100;

  const before = { nat: [] as string[], filter: [] as string[] };

  useHostSysctls({ "net.ipv4.ip_forward": "1" });
  beforeAll(() => {
    before.nat = chains("nat").map(chainName);
    before.filter = chains("filter").map(chainName);
  });
  afterAll(async () => {
    for (const [id, c] of up) {
      await ours.del(list, c.rt).catch(() => {});
      await c.ns.destroy();
      up.delete(id);
    }
    Bun.spawnSync({ cmd: ["ip", "link", "del", BRIDGE] });
    // The shared chains outlive their containers (as upstream): leave the tables as they were.
    removeNewChains("nat", before.nat);
    removeNewChains("filter", before.filter);
  });

  async function add(runner: ConflistRunner, id: string): Promise<void> {
    const ns = await createContainerNetns();
    const port = nextPort++;
    const rt: RuntimeConf = { containerID: id, netns: ns.path, ifName: "eth0", capabilityArgs: { portMappings: [{ hostPort: port, containerPort: 80, protocol: "tcp" }] } };
    const result = await runner.add(list, rt);
    const ip = (result.ips as { address: string }[])[0]!.address.split("/")[0]!;
    up.set(id, { ns, rt, ip, port });
  }

  async function del(runner: ConflistRunner, id: string): Promise<void> {
    const c = up.get(id)!;
    await runner.del(list, c.rt);
    up.delete(id);
    await c.ns.destroy();
  }

  /** Exactly the rules of the containers in `up`, nothing of the others in `gone`. */
  function expectExactly(gone: string[]): void {
    const nat = rules("nat");
    const filter = rules("filter");
    for (const [id, c] of up) {
      const masq = formatChainName(NET, id);
      const c4 = `"${formatComment(NET, id).replaceAll('"', '\\"')}"`;
      expect(nat.filter((l) => l.startsWith(`-A POSTROUTING `) && l.endsWith(`-j ${masq}`)), id).toEqual([`-A POSTROUTING -s ${c.ip}/32 -m comment --comment ${c4} -j ${masq}`]);
      expect(count(nat, (l) => l.startsWith(`-A ${masq} `)), id).toBe(2);
      const dn = dnatChainName(NET, id);
      expect(count(nat, (l) => l.startsWith("-A CNI-HOSTPORT-DNAT ") && l.endsWith(`-j ${dn}`)), id).toBe(1);
      expect(nat.filter((l) => l.startsWith(`-A ${dn} `)), id).toEqual([
        `-A ${dn} -s 10.93.0.0/24 -p tcp -m tcp --dport ${c.port} -j CNI-HOSTPORT-SETMARK`,
        `-A ${dn} -s 127.0.0.1/32 -p tcp -m tcp --dport ${c.port} -j CNI-HOSTPORT-SETMARK`,
        `-A ${dn} -p tcp -m tcp --dport ${c.port} -j DNAT --to-destination ${c.ip}:80`,
      ]);
      expect(filter.filter((l) => l.startsWith("-A CNI-FORWARD ") && l.includes(` ${c.ip}/32 `)), id).toEqual([
        `-A CNI-FORWARD -d ${c.ip}/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
        `-A CNI-FORWARD -s ${c.ip}/32 -j ACCEPT`,
      ]);
    }
    const natChains = chains("nat");
    for (const id of gone) {
      expect(natChains.some((l) => l.startsWith(`:${formatChainName(NET, id)} `)), id).toBe(false);
      expect(natChains.some((l) => l.startsWith(`:${dnatChainName(NET, id)} `)), id).toBe(false);
      expect(nat.some((l) => l.includes(`id: \\"${id}\\"`)), id).toBe(false);
    }
    // Only live containers' per-address rules; shared chains and jumps exactly once.
    expect(count(filter, (l) => l.startsWith("-A CNI-FORWARD ") && / -[ds] 10\.93\./.test(l))).toBe(2 * up.size);
    expect(count(nat, (l) => l.startsWith("-A CNI-HOSTPORT-DNAT "))).toBe(up.size);
    expect(count(nat, (l) => l === '-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ')).toBe(1);
    expect(count(nat, (l) => l === "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT")).toBe(1);
    expect(count(nat, (l) => l === "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT")).toBe(1);
    expect(count(nat, (l) => l.startsWith("-A CNI-HOSTPORT-SETMARK "))).toBe(1);
    expect(count(nat, (l) => l.startsWith("-A CNI-HOSTPORT-MASQ "))).toBe(1);
    expect(count(filter, (l) => l === '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD')).toBe(1);
    expect(count(filter, (l) => l.startsWith("-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\""))).toBe(1);
  }

  test("first container (shared chains), then concurrent ADDs, cross-implementation DELs mixed with ADDs, then all DELs", async () => {
    // The node's first container creates the shared chains; Go's own check-then-insert of shared
    // jumps is not atomic, so the concurrent phases start from a node that has them, as in practice.
    await add(ours, "warm");
    await del(go, "warm");
    expectExactly(["warm"]);

    await Promise.all([add(ours, "c0"), add(go, "c1"), add(ours, "c2"), add(go, "c3"), add(ours, "c4"), add(go, "c5")]);
    expectExactly([]);

    // Each implementation deletes containers the other one added, while new ones come up.
    await Promise.all([del(go, "c0"), del(ours, "c1"), add(ours, "c6"), add(go, "c7"), del(ours, "c3"), del(go, "c4")]);
    expectExactly(["c0", "c1", "c3", "c4"]);

    await Promise.all([...up.keys()].map((id, i) => del(i % 2 === 0 ? ours : go, id)));
    expectExactly(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
    expect(rules("nat").filter((l) => l.includes("10.93."))).toEqual([]);
  }, 240_000);
});
