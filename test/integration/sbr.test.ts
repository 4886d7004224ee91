/**
 * sbr chained after bridge + host-local (through the conflist runner), in throwaway namespaces,
 * observed with `ip -j rule` and `ip -j route show table all`: table selection, rules per address,
 * default routes and moved routes, `table`, static `gateways`, `addSourceHints`, DEL (also with
 * the interface or the netns gone), CHECK, and interop with the Go sbr (Debian 1.1.1): same rules
 * and tables, each DEL removes the other's rules.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList, type RuntimeConf } from "../harness/conflist.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { ipJson } from "../harness/ip-oracle.ts";
import { ipIn } from "../harness/meta-tuning-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

interface Rule {
  priority: number;
  src?: string;
  srclen?: number;
  table: string;
}
interface Route {
  dst: string;
  gateway?: string;
  dev?: string;
  table?: string;
  prefsrc?: string;
  scope?: string;
}

const rules = (netns: string, fam: "-4" | "-6" = "-4"): Rule[] => ipJson<Rule[]>(netns, fam, "rule", "list");
const routes = (netns: string, table: string, fam: "-4" | "-6" = "-4"): Route[] => ipJson<Route[]>(netns, fam, "route", "show", "table", table);
const sourceRules = (netns: string): Rule[] => [...rules(netns), ...rules(netns, "-6")].filter((r) => r.src !== undefined && r.src !== "all");

let n = 0;
interface Attachment {
  runner: ConflistRunner;
  list: NetworkConfigList;
  rt: RuntimeConf;
  netns: string;
  result: Record<string, any>;
  ip4: string;
  ip6?: string;
}

function chain(version: string, sbr: Record<string, unknown>, subnets: string[]): NetworkConfigList {
  n++;
  return {
    name: `sbr${n}`,
    cniVersion: version,
    plugins: [
      {
        type: "bridge",
        bridge: `sbrbr${process.pid % 1000}x${n}`,
        isGateway: true,
        ipam: {
          type: "host-local",
          dataDir: makeTempDir("sbr-ipam-"),
          ranges: subnets.map((subnet) => [{ subnet }]),
          routes: subnets.map((s) => ({ dst: s.includes(":") ? "::/0" : "0.0.0.0/0" })),
        },
      },
      { type: "sbr", ...sbr },
    ],
  };
}

async function attach(version: string, sbr: Record<string, unknown>, subnets = ["10.72.0.0/24"], prepare?: (netns: string) => void): Promise<Attachment> {
  const list = chain(version, sbr, subnets);
  const ns = await createContainerNetns();
  prepare?.(ns.path);
  const rt: RuntimeConf = { containerID: `sbr-${process.pid}-${n}`, netns: ns.path, ifName: "eth0" };
  const runner = new ConflistRunner({ cacheDir: makeTempDir("sbr-cache-") });
  const result = (await runner.add(list, rt)) as Record<string, any>;
  const ips = (result.ips as { address: string }[]).map((i) => i.address.split("/")[0]!);
  return { runner, list, rt, netns: ns.path, result, ip4: ips.find((i) => !i.includes(":"))!, ...(ips.some((i) => i.includes(":")) ? { ip6: ips.find((i) => i.includes(":"))! } : {}) };
}

/**
 * sbr's own CHECK with the cached result (a whole-list CHECK cannot pass: sbr moves the routes the
 * bridge's CHECK looks for in the main table — upstream behaves the same).
 */
async function sbrCheck(a: Attachment): Promise<void> {
  const conf = a.runner.buildPluginConfig(a.list, a.list.plugins[1]!, a.runner.cachedResult(a.list, a.rt), a.rt);
  expectSuccess(await execPlugin("sbr", { command: "CHECK", containerID: a.rt.containerID, netns: a.netns, ifName: "eth0", config: conf }), { silent: true });
}

describe.skipIf(!sandboxed())("sbr (chained after bridge)", () => {
  useFixtureCleanup();

  for (const v of ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]) {
    test(`[${v}] rule from <ip> lookup 100, default route and routes moved to table 100, main emptied; DEL removes the rule`, async () => {
      const a = await attach(v, {});
      expect(a.result).toEqual(a.runner.calls[0]!.run.json); // passes prevResult through
      const mine = sourceRules(a.netns);
      expect(mine.map((r) => [r.src, r.table])).toEqual([[a.ip4, "100"]]);
      const t100 = routes(a.netns, "100");
      expect(t100).toContainEqual(expect.objectContaining({ dst: "default", gateway: "10.72.0.1", dev: "eth0" }));
      expect(t100).toContainEqual(expect.objectContaining({ dst: "10.72.0.0/24", dev: "eth0" }));
      expect(routes(a.netns, "main").filter((r) => r.dev === "eth0")).toEqual([]);
      if (v !== "0.3.0" && v !== "0.3.1") await sbrCheck(a);
      await a.runner.del(a.list, a.rt);
      expect(sourceRules(a.netns)).toEqual([]);
    });
  }

  test("[1.0.0] an existing rule using table 100 makes sbr pick 101", async () => {
    const a = await attach("1.0.0", {}, ["10.72.0.0/24"], (ns) => ipIn(ns, "rule", "add", "from", "192.0.2.1", "lookup", "100"));
    expect(sourceRules(a.netns).find((r) => r.src === a.ip4)?.table).toBe("101");
    expect(routes(a.netns, "101")).toContainEqual(expect.objectContaining({ dst: "default", gateway: "10.72.0.1" }));
    await a.runner.del(a.list, a.rt);
    expect(sourceRules(a.netns).map((r) => r.src)).toEqual(["192.0.2.1"]);
  });

  test("[1.0.0] dual stack: tables 100 (IPv4) and 101 (IPv6), each with its default route", async () => {
    const a = await attach("1.0.0", {}, ["10.72.0.0/24", "fd72::/64"]);
    const mine = sourceRules(a.netns).map((r) => [r.src, r.table]);
    expect(mine).toEqual(expect.arrayContaining([[a.ip4, "100"], [a.ip6, "101"]]));
    expect(routes(a.netns, "101", "-6")).toContainEqual(expect.objectContaining({ dst: "default", gateway: "fd72::1" }));
    expect(routes(a.netns, "main", "-6").filter((r) => r.dev === "eth0")).toEqual([]);
    await sbrCheck(a);
    await a.runner.del(a.list, a.rt);
    expect(sourceRules(a.netns)).toEqual([]);
  });

  test("[1.0.0] table: only the rule, routes untouched", async () => {
    const a = await attach("1.0.0", { table: 500 });
    expect(sourceRules(a.netns).map((r) => [r.src, r.table])).toEqual([[a.ip4, "500"]]);
    expect(routes(a.netns, "main").filter((r) => r.dev === "eth0").length).toBeGreaterThan(0);
    await sbrCheck(a);
    await a.runner.del(a.list, a.rt);
    expect(sourceRules(a.netns)).toEqual([]);
  });

  test("[1.0.0] static gateway overrides the prevResult gateway; addSourceHints keeps the subnet route with a src hint", async () => {
    const a = await attach("1.0.0", { gateways: ["10.72.0.254"], addSourceHints: true });
    expect(routes(a.netns, "100")).toContainEqual(expect.objectContaining({ dst: "default", gateway: "10.72.0.254" }));
    const main = routes(a.netns, "main").filter((r) => r.dev === "eth0");
    expect(main).toEqual([expect.objectContaining({ dst: "10.72.0.0/24", prefsrc: a.ip4, scope: "link" })]);
    await a.runner.del(a.list, a.rt);
  });

  test("gateways validation: more than one IPv4 gateway is refused", async () => {
    const ns = await createContainerNetns();
    const prev = { cniVersion: "1.0.0", ips: [{ address: "10.72.0.9/24", gateway: "10.72.0.1" }] };
    const run = await execPlugin("sbr", {
      command: "ADD",
      containerID: "sbr-val",
      netns: ns.path,
      ifName: "eth0",
      config: { cniVersion: "1.0.0", name: "s", type: "sbr", gateways: ["10.0.0.1", "10.0.0.2"], prevResult: prev },
    });
    expectCniError(run, { code: 7, msg: "gateways list contains multiple IPv4 addresses: 10.0.0.1 and 10.0.0.2" });
    expectCniError(await execPlugin("sbr", { command: "ADD", containerID: "sbr-val", netns: ns.path, ifName: "eth0", config: { cniVersion: "1.0.0", name: "s", type: "sbr" } }), {
      code: 999,
      msg: "This plugin must be called as chained plugin",
    });
  });

  test("[1.0.0] DEL after the interface is gone removes the rules (from prevResult); DEL with the netns gone creates nothing", async () => {
    const a = await attach("1.0.0", {});
    ipIn(a.netns, "link", "del", "eth0");
    const cached = a.runner.cachedResult(a.list, a.rt);
    const conf = a.runner.buildPluginConfig(a.list, a.list.plugins[1]!, cached, a.rt);
    const inv = (netns: string): PluginInvocation => ({ command: "DEL", containerID: a.rt.containerID, netns, ifName: "eth0", config: conf });
    expectSuccess(await execPlugin("sbr", inv(a.netns)), { silent: true });
    expect(sourceRules(a.netns)).toEqual([]);
    const missing = join(makeTempDir("sbr-gone-"), "netns");
    expectSuccess(await execPlugin("sbr", inv(missing)), { silent: true });
    expect(existsSync(missing)).toBe(false);
    await a.runner.del(a.list, a.rt);
  });
});

describe.skipIf(!sandboxed() || !hasGoPlugin("sbr"))("sbr interop with the Go reference", () => {
  useFixtureCleanup();

  /** Rules and non-local IPv4 routes of every table, with the container address replaced by IP. */
  function snapshot(netns: string, ip: string): unknown {
    const all = ipJson<Route[]>(netns, "-4", "route", "show", "table", "all").filter((r) => r.table !== "local");
    return JSON.parse(JSON.stringify({ rules: rules(netns), routes: all }).replaceAll(ip, "IP"));
  }

  /** A bridge-only attachment; sbr is then run by hand by one implementation. */
  async function bridgeOnly(): Promise<Attachment> {
    const a = await attach("1.0.0", {});
    // attach() ran our sbr; start again in a fresh attachment without it.
    await a.runner.del(a.list, a.rt);
    a.list.plugins.pop();
    const ns = await createContainerNetns();
    const rt: RuntimeConf = { ...a.rt, netns: ns.path };
    const result = (await a.runner.add(a.list, rt)) as Record<string, any>;
    const ip4 = (result.ips as { address: string }[])[0]!.address.split("/")[0]!;
    return { ...a, rt, netns: ns.path, result, ip4 };
  }

  test("Go ADD and our ADD give the same rules and tables; each one's DEL removes the other's rules", async () => {
    const seen: unknown[] = [];
    for (const addByGo of [true, false]) {
      const a = await bridgeOnly();
      const conf = { cniVersion: "1.0.0", name: a.list.name, type: "sbr", prevResult: a.result };
      const inv = (command: string): PluginInvocation => ({ command, containerID: a.rt.containerID, netns: a.netns, ifName: "eth0", config: conf });
      const out = expectResult(await (addByGo ? execGoPlugin : execPlugin)("sbr", inv("ADD")));
      expect(out).toEqual(a.result);
      expect(sourceRules(a.netns).map((r) => [r.src, r.table])).toEqual([[a.ip4, "100"]]);
      seen.push(snapshot(a.netns, a.ip4));
      expectSuccess(await (addByGo ? execPlugin : execGoPlugin)("sbr", inv("CHECK")), { silent: true });
      expectSuccess(await (addByGo ? execPlugin : execGoPlugin)("sbr", inv("DEL")), { silent: true });
      expect(sourceRules(a.netns)).toEqual([]);
      await a.runner.del(a.list, a.rt);
    }
    expect(seen[1]).toEqual(seen[0]);
  });
});
